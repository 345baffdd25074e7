package pending

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/activation"
	"github.com/ayatori/provider-postgresql/internal/controller/management"
)

var descStatements = prometheus.NewDesc("provider_postgresql_plan_statements",
	"Statements a resource's plan holds: what its next step would send, or, observed read-only (observe_only=\"true\"), what widening its management policies would send. Only resources with a plan are reported.",
	[]string{"kind", "namespace", "name", "observe_only"}, nil)

var descPending = prometheus.NewDesc("provider_postgresql_plans_pending",
	"Resources of a kind that have a plan: changes their next step would send, or, observed read-only (observe_only=\"true\"), what widening their management policies would send. Reported for every kind, zero included.",
	[]string{"kind", "observe_only"}, nil)

// Metrics reports the resources that have a plan, read from their status
// at each scrape (as role.CredentialMetrics): a resource whose plan is
// sent or deleted simply stops being reported.
type Metrics struct {
	// Kube lists the resources; the manager's cache in the provider.
	Kube client.Reader
	// Lists are the kinds that plan, by kind name: each returns an empty
	// list of its kind.
	Lists map[string]func() resource.ManagedList
}

// Describe implements prometheus.Collector.
func (m Metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- descStatements
	ch <- descPending
}

// Collect implements prometheus.Collector.
func (m Metrics) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for kind, newList := range m.Lists {
		l := newList()
		if err := activation.List(ctx, m.Kube, l, client.UnsafeDisableDeepCopy); err != nil {
			ch <- prometheus.NewInvalidMetric(descStatements, err)
			return
		}
		var observeOnly, managed float64
		for _, mg := range l.GetItems() {
			pl, ok := mg.(v1alpha1.Planned)
			if !ok || pl.GetPlan() == nil {
				continue
			}
			p := pl.GetPlan()
			n := float64(len(p.Statements)) + float64(p.Omitted)
			o := management.ObserveOnly(mg)
			if o {
				observeOnly++
			} else {
				managed++
			}
			ch <- prometheus.MustNewConstMetric(descStatements, prometheus.GaugeValue, n, kind, mg.GetNamespace(), mg.GetName(), strconv.FormatBool(o))
		}
		ch <- prometheus.MustNewConstMetric(descPending, prometheus.GaugeValue, observeOnly, kind, "true")
		ch <- prometheus.MustNewConstMetric(descPending, prometheus.GaugeValue, managed, kind, "false")
	}
}
