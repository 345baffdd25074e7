package config

import (
	"reflect"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
)

// Observations records, for each managed resource, the time between two of
// its successful observations: whether the provider keeps up with --poll.
// Above what the reconcile rate can observe in one poll interval, the
// intervals grow beyond it, and drift is seen later than promised.
type Observations struct {
	mu    sync.Mutex
	last  map[types.UID]time.Time
	calls int

	intervals *prometheus.HistogramVec
}

// NewObservations returns an empty recorder.
func NewObservations() *Observations {
	return &Observations{
		last: map[types.UID]time.Time{},
		intervals: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "provider_postgresql_observation_interval_seconds",
			Help: "Time between two successful observations of one managed resource, by kind. " +
				"Intervals above the poll interval plus its jitter mean the reconcile rate cannot keep up with the number of resources.",
			// Fine around the default poll (1m, jitter 10s).
			Buckets: []float64{5, 15, 30, 45, 60, 65, 70, 75, 90, 120, 180, 300, 600, 1800},
		}, []string{"kind"}),
	}
}

// pruneEvery is how many observations pass between two sweeps of the
// resources not observed for long (deleted ones, mostly).
const pruneEvery = 1000

// Observed records an observation of mg at now; poll is its poll interval.
func (o *Observations) Observed(mg resource.Managed, now time.Time, poll time.Duration) {
	kind := reflect.TypeOf(mg).Elem().Name()
	o.mu.Lock()
	prev, seen := o.last[mg.GetUID()]
	o.last[mg.GetUID()] = now
	o.calls++
	if o.calls%pruneEvery == 0 {
		// A resource not observed for ten poll intervals is gone or
		// stuck; its next observation, if any, starts afresh.
		for uid, t := range o.last {
			if now.Sub(t) > 10*poll {
				delete(o.last, uid)
			}
		}
	}
	o.mu.Unlock()
	if seen {
		o.intervals.WithLabelValues(kind).Observe(now.Sub(prev).Seconds())
	}
}

// Describe implements prometheus.Collector.
func (o *Observations) Describe(ch chan<- *prometheus.Desc) { o.intervals.Describe(ch) }

// Collect implements prometheus.Collector.
func (o *Observations) Collect(ch chan<- prometheus.Metric) { o.intervals.Collect(ch) }
