package poll

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
//
// It also records how late each poll comes after the moment it was
// scheduled for (the queue, the reconcile rate, the workers and the
// observation's own round trips), and keeps the worst of it over the last
// minute or two as Lag, which the poll interval hook subtracts (up to a
// quarter of the jitter) from the longest interval it schedules: without
// it an object scheduled at the far end of the jitter was observed a
// little after poll+jitter.
type Observations struct {
	mu    sync.Mutex
	last  map[types.UID]observed
	calls int
	// lagNow is the worst lateness seen in the window that began at
	// lagFrom, lagBefore the worst of the window before it.
	lagNow, lagBefore time.Duration
	lagFrom           time.Time

	intervals, lateness *prometheus.HistogramVec
}

// observed is what Observations keeps of one resource: when it was last
// observed, and when its next poll is due (zero: not scheduled).
type observed struct {
	at, due time.Time
}

// lagWindow is how long a lateness counts: between one and two windows.
// One poll at the default, so the polls made late by a wave of creates
// stop shortening the schedule a minute or two after the wave, not ten.
const lagWindow = time.Minute

// NewObservations returns an empty recorder. Its metrics are exported for
// each of kinds from the start, empty, so that dashboards and alert rules
// find them before the first poll.
func NewObservations(kinds ...string) *Observations {
	o := &Observations{
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
				"The provider schedules polls earlier by the worst of it over the last minute or two, up to a quarter of the jitter, so intervals stay within the poll interval plus its jitter.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300},
		}, []string{"kind"}),
	}
	for _, k := range kinds {
		o.intervals.WithLabelValues(k)
		o.lateness.WithLabelValues(k)
	}
	return o
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
		o.rotateLag(now)
		o.lagNow = max(o.lagNow, late)
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

// Lag is how late polls have come at worst recently, as of now: over the
// current window of lagWindow and the one before it.
func (o *Observations) Lag(now time.Time) time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.rotateLag(now)
	return max(o.lagNow, o.lagBefore)
}

// rotateLag moves the lateness windows on to the one now falls in.
func (o *Observations) rotateLag(now time.Time) {
	switch since := now.Sub(o.lagFrom); {
	case since < lagWindow:
	case since < 2*lagWindow:
		o.lagBefore, o.lagNow, o.lagFrom = o.lagNow, 0, o.lagFrom.Add(lagWindow)
	default:
		o.lagBefore, o.lagNow, o.lagFrom = 0, 0, now
	}
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
