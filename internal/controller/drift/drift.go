// Package drift tells an out-of-band change on the server from a change
// of the spec, and reports it: an event naming each field and its values
// (DriftDetected, then DriftCorrected once the provider has put it back),
// status.atProvider.lastDrift, and the counter
// provider_postgresql_drift_detected_total{kind,field}.
//
// The rule: Observe records, whenever it finds the server as the spec asks
// (or, for an Observe-only resource, at every observation), the values of
// the fields the kind manages and the generation they answer to: the
// baseline. A later observation of the same generation that finds other
// values found a change nobody made through this resource. A new
// generation is a spec change: what differs then is the provider's to
// apply, not drift.
package drift

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

// Events of drift.
const (
	ReasonDetected  event.Reason = "DriftDetected"
	ReasonCorrected event.Reason = "DriftCorrected"
)

// EventInterval is the least time between two DriftDetected events of one
// resource: a value that flaps at every poll updates the status and the
// counter each time, but raises an event (and its correction's) at most
// this often.
const EventInterval = 10 * time.Minute

// Detected counts each out-of-band change found, by kind and field.
var Detected = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "provider_postgresql_drift_detected_total",
	Help: "Out-of-band changes found on the server (a field that differed from what the provider last found or made it, with the spec unchanged), by kind and field.",
}, []string{"kind", "field"})

// Fields are the values of the fields a kind manages, as the server has
// them, by field name (as in the spec); lists are comma-joined.
type Fields map[string]string

// Declare exports the counter of each of fields of the recorder's kind at
// zero, so that rates and alerts see the first drift as an increase.
func (r Recorder) Declare(fields ...string) {
	for _, f := range fields {
		Detected.WithLabelValues(r.Kind, f)
	}
}

// An Observation is what a kind's Observe tells the recorder.
type Observation struct {
	// Found are the managed fields as the server has them now.
	Found Fields
	// InSync: the server is as the spec asks (the observation is up to
	// date); ignored for an Observe-only resource.
	InSync bool
	// ObserveOnly: the resource only observes (an import): every change
	// is reported against the previous observation, none is corrected.
	ObserveOnly bool
}

// A Recorder reports the drift of one kind.
type Recorder struct {
	Kind string
	// Events raises the events; none are raised when nil (a controller's
	// decision table).
	Events event.Recorder
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Observe updates st, mg's drift status, with what an observation found,
// and reports a drift found or corrected.
func (r Recorder) Observe(mg resource.Managed, st *v1alpha1.DriftStatus, o Observation) {
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	gen := mg.GetGeneration()
	baseline := func() { st.DriftBaseline = &v1alpha1.DriftBaseline{Generation: gen, Fields: maps.Clone(o.Found)} }
	b := st.DriftBaseline
	switch {
	case b == nil:
		if o.InSync || o.ObserveOnly {
			baseline()
		}
		return
	case o.ObserveOnly:
		if changed := diff(b.Fields, o.Found); len(changed) > 0 {
			r.detected(mg, st, changed, now, "not corrected: its managementPolicies only observe")
		}
		baseline()
		return
	case o.InSync:
		if d := st.LastDrift; d != nil && d.CorrectedAt == nil && b.Generation == gen {
			d.CorrectedAt = &metav1.Time{Time: now}
			if d.Reported {
				r.event(mg, event.Normal(ReasonCorrected, "set back: "+describe(d.Fields, true)))
			}
		}
		baseline()
		return
	case b.Generation != gen:
		// The spec changed: applying it is the provider's own change.
		return
	}
	changed := diff(b.Fields, o.Found)
	if len(changed) == 0 {
		// Not in sync for a reason that is not a field the server holds
		// (a rotation due, a password to set): no drift.
		return
	}
	if d := st.LastDrift; d != nil && d.CorrectedAt == nil && slices.Equal(d.Fields, changed) {
		// The same drift, still being corrected: already reported.
		return
	}
	r.detected(mg, st, changed, now, "being corrected")
}

// detected records and counts a drift of the fields changed, and raises
// its event unless one was raised less than EventInterval ago.
func (r Recorder) detected(mg resource.Managed, st *v1alpha1.DriftStatus, changed []v1alpha1.DriftField, now time.Time, what string) {
	d := &v1alpha1.Drift{DetectedAt: metav1.Time{Time: now}, Fields: changed}
	for _, f := range changed {
		Detected.WithLabelValues(r.Kind, f.Field).Inc()
	}
	if last := st.LastDriftEvent; last == nil || now.Sub(last.Time) >= EventInterval {
		d.Reported = true
		st.LastDriftEvent = &metav1.Time{Time: now}
		r.event(mg, event.Normal(ReasonDetected, describe(changed, false)+", changed on the server; "+what))
	}
	st.LastDrift = d
}

func (r Recorder) event(mg resource.Managed, e event.Event) {
	if r.Events != nil {
		r.Events.Event(mg, e)
	}
}

// diff lists the fields whose value differs between was and now, sorted;
// a field one of them lacks (a setting added or removed) has the value "".
func diff(was, now Fields) []v1alpha1.DriftField {
	keys := maps.Clone(was)
	maps.Copy(keys, now)
	var out []v1alpha1.DriftField
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if was[k] != now[k] {
			out = append(out, v1alpha1.DriftField{Field: k, Was: was[k], Found: now[k]})
		}
	}
	return out
}

// describe is "connectionLimit: 10 → 5; comment: "a" → "b"", or, back,
// "connectionLimit to 10".
func describe(fs []v1alpha1.DriftField, back bool) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		if back {
			parts[i] = fmt.Sprintf("%s to %s", f.Field, shown(f.Was))
			continue
		}
		parts[i] = fmt.Sprintf("%s: %s → %s", f.Field, shown(f.Was), shown(f.Found))
	}
	return strings.Join(parts, "; ")
}

func shown(v string) string {
	if v == "" {
		return `""`
	}
	return v
}
