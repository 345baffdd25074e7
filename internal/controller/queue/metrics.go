package queue

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// depthGauge counts a controller's queued objects.
type depthGauge = prometheus.Gauge

var (
	depthOnce sync.Once
	depths    = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "provider_postgresql_work_queue_items",
		Help: "Objects a controller's work queue holds: ready for a worker, waiting for their time (a poll, a back-off), or waiting for a worker to finish with them.",
	}, []string{"controller"})
)

// depthOf returns controller name's gauge, registered with the
// controller-runtime registry the provider's /metrics serves.
func depthOf(name string) depthGauge {
	depthOnce.Do(func() { metrics.Registry.MustRegister(depths) })
	return depths.WithLabelValues(name)
}
