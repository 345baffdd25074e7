package config

import (
	"math"
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
//
// It also records how late each poll comes after the moment it was
// scheduled for (the queue, the reconcile rate, the workers and the
// observation's own round trips), and keeps the recent worst of that as
// Lag, which the poll interval hook subtracts from the longest interval it
// schedules: without it an object scheduled at the far end of the jitter
// was observed a little after poll+jitter (every run of BenchmarkScale
// recorded intervals in the bucket above 70 s at poll 1m, jitter 10s).
type Observations struct {
	mu    sync.Mutex
	last  map[types.UID]observed
	calls int
	// lag is the worst lateness seen, as of lagAt; it halves every
	// lagHalfLife after that.
	lag   time.Duration
	lagAt time.Time

	intervals, lateness *prometheus.HistogramVec
}

// observed is what Observations keeps of one resource: when it was last
// observed, and when its next poll is due (zero: not scheduled).
type observed struct {
	at, due time.Time
}

// lagHalfLife is how fast a lateness stops counting: one poll at the
// default, so a wave of creates that delays polls for a while shortens
// the schedule for about as long, not for good.
const lagHalfLife = time.Minute

// NewObservations returns an empty recorder.
func NewObservations() *Observations {
	return &Observations{
		last: map[types.UID]observed{},
		intervals: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "provider_postgresql_observation_interval_seconds",
			Help: "Time between two successful observations of one managed resource, by kind. " +
				"Intervals above the poll interval plus its jitter mean the reconcile rate cannot keep up with the number of resources.",
			// Fine around the default poll (1m, jitter 10s): whether the
			// longest stays within 70 s is the question.
			Buckets: []float64{5, 15, 30, 45, 60, 65, 68, 70, 72, 75, 90, 120, 180, 300, 600, 1800},
		}, []string{"kind"}),
		lateness: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "provider_postgresql_poll_lateness_seconds",
			Help: "How long after the moment it was scheduled for a poll observed its managed resource, by kind: " +
				"the time spent in the queue, waiting for the reconcile rate and a worker, and reading the server. " +
				"The provider schedules polls earlier by the recent worst of it, so intervals stay within the poll interval plus its jitter.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300},
		}, []string{"kind"}),
	}
}

// pruneEvery is how many observations pass between two sweeps of the
// resources not observed for long (deleted ones, mostly).
const pruneEvery = 1000

// Observed records an observation of mg at now; poll is its poll interval.
// When it comes at or after the poll scheduled for it (Scheduled), its
// lateness is recorded too; one that comes earlier (a change woke it) was
// not that poll.
func (o *Observations) Observed(mg resource.Managed, now time.Time, poll time.Duration) {
	kind := reflect.TypeOf(mg).Elem().Name()
	o.mu.Lock()
	prev, seen := o.last[mg.GetUID()]
	o.last[mg.GetUID()] = observed{at: now}
	late := time.Duration(-1)
	if seen && !prev.due.IsZero() && !now.Before(prev.due) {
		late = now.Sub(prev.due)
		if late > o.lagAsOf(now) {
			o.lag, o.lagAt = late, now
		}
	}
	o.calls++
	if o.calls%pruneEvery == 0 {
		// A resource not observed for ten poll intervals is gone or
		// stuck; its next observation, if any, starts afresh.
		for uid, t := range o.last {
			if now.Sub(t.at) > 10*poll {
				delete(o.last, uid)
			}
		}
	}
	o.mu.Unlock()
	if seen {
		o.intervals.WithLabelValues(kind).Observe(now.Sub(prev.at).Seconds())
	}
	if late >= 0 {
		o.lateness.WithLabelValues(kind).Observe(late.Seconds())
	}
}

// Scheduled records that mg, observed last, is next polled at due.
func (o *Observations) Scheduled(mg resource.Managed, due time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if e, ok := o.last[mg.GetUID()]; ok {
		e.due = due
		o.last[mg.GetUID()] = e
	}
}

// Lag is how late polls have recently come at worst, as of now: the
// largest lateness seen, halved for every lagHalfLife since.
func (o *Observations) Lag(now time.Time) time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.lagAsOf(now)
}

func (o *Observations) lagAsOf(now time.Time) time.Duration {
	if o.lag <= 0 {
		return 0
	}
	since := now.Sub(o.lagAt)
	if since <= 0 {
		return o.lag
	}
	return time.Duration(float64(o.lag) * math.Exp2(-float64(since)/float64(lagHalfLife)))
}

// Describe implements prometheus.Collector.
func (o *Observations) Describe(ch chan<- *prometheus.Desc) {
	o.intervals.Describe(ch)
	o.lateness.Describe(ch)
}

// Collect implements prometheus.Collector.
func (o *Observations) Collect(ch chan<- prometheus.Metric) {
	o.intervals.Collect(ch)
	o.lateness.Collect(ch)
}
