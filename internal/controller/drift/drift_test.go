package drift

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

// events records the events raised, as "Reason: message".
type events []string

func (e *events) Event(_ runtime.Object, ev event.Event) {
	*e = append(*e, string(ev.Reason)+": "+ev.Message)
}
func (e *events) WithAnnotations(...string) event.Recorder { return e }

var t0 = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

// step is one observation: at minutes after t0, of generation gen.
type step struct {
	minutes     int
	gen         int64
	found       Fields
	inSync      bool
	observeOnly bool
}

func TestObserve(t *testing.T) {
	ten, five := Fields{"connectionLimit": "10"}, Fields{"connectionLimit": "5"}
	cases := map[string]struct {
		reason      string
		steps       []step
		wantEvents  []string
		wantLast    *v1alpha1.Drift
		wantCounted float64
	}{
		"Steady": {
			reason: "In sync at every poll: nothing to report.",
			steps:  []step{{0, 1, ten, true, false}, {1, 1, ten, true, false}},
		},
		"SpecChange": {
			reason: "A new generation that differs is the provider's to apply, not drift.",
			steps:  []step{{0, 1, ten, true, false}, {1, 2, ten, false, false}, {2, 2, five, true, false}},
		},
		"ChangedByHandThenCorrected": {
			reason: "Same generation, another value: DriftDetected once, DriftCorrected when back.",
			steps:  []step{{0, 1, ten, true, false}, {1, 1, five, false, false}, {2, 1, five, false, false}, {3, 1, ten, true, false}},
			wantEvents: []string{
				"DriftDetected: connectionLimit: 10 → 5, changed on the server; being corrected",
				"DriftCorrected: set back: connectionLimit to 10",
			},
			wantLast:    &v1alpha1.Drift{DetectedAt: mt(1), Fields: []v1alpha1.DriftField{{Field: "connectionLimit", Was: "10", Found: "5"}}, CorrectedAt: mtp(3), Reported: true},
			wantCounted: 1,
		},
		"NotInSyncForAnotherReason": {
			reason: "Out of sync with the same values (a rotation due): no drift.",
			steps:  []step{{0, 1, ten, true, false}, {1, 1, ten, false, false}},
		},
		"ObserveOnly": {
			reason: "An import reports each change against the last observation, and never a correction.",
			steps:  []step{{0, 1, ten, false, true}, {1, 1, five, false, true}, {2, 1, five, false, true}},
			wantEvents: []string{
				"DriftDetected: connectionLimit: 10 → 5, changed on the server; not corrected: its managementPolicies only observe",
			},
			wantLast:    &v1alpha1.Drift{DetectedAt: mt(1), Fields: []v1alpha1.DriftField{{Field: "connectionLimit", Was: "10", Found: "5"}}, Reported: true},
			wantCounted: 1,
		},
		"NoBaselineYet": {
			reason: "A first observation out of sync sets no baseline: there is nothing to compare with.",
			steps:  []step{{0, 1, five, false, false}, {1, 1, ten, true, false}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			Detected.Reset()
			var ev events
			st := &v1alpha1.DriftStatus{}
			mg := &v1alpha1.PostgreSQLRole{}
			for _, s := range tc.steps {
				mg.SetGeneration(s.gen)
				r := Recorder{Kind: "PostgreSQLRole", Events: &ev, Now: func() time.Time { return t0.Add(time.Duration(s.minutes) * time.Minute) }}
				r.Observe(mg, st, Observation{Found: s.found, InSync: s.inSync, ObserveOnly: s.observeOnly})
			}
			if diff := cmp.Diff(tc.wantEvents, []string(ev)); diff != "" {
				t.Errorf("%s\nevents (-want +got):\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantLast, st.LastDrift); diff != "" {
				t.Errorf("%s\nlastDrift (-want +got):\n%s", tc.reason, diff)
			}
			if got := testutil.ToFloat64(Detected.WithLabelValues("PostgreSQLRole", "connectionLimit")); got != tc.wantCounted {
				t.Errorf("%s\ncounted %v, want %v", tc.reason, got, tc.wantCounted)
			}
		})
	}
}

// TestFlappingIsRateLimited: a value flipped by hand before every one of
// 100 polls a minute apart, and put back by the provider in between, is
// counted each time but raises one DriftDetected (and one DriftCorrected)
// per EventInterval at most.
func TestFlappingIsRateLimited(t *testing.T) {
	Detected.Reset()
	var ev events
	st := &v1alpha1.DriftStatus{}
	mg := &v1alpha1.PostgreSQLRole{}
	mg.SetGeneration(1)
	minute := 0
	r := Recorder{Kind: "PostgreSQLRole", Events: &ev, Now: func() time.Time { return t0.Add(time.Duration(minute) * time.Minute) }}
	r.Observe(mg, st, Observation{Found: Fields{"connectionLimit": "10"}, InSync: true})
	for i := range 100 {
		minute = 2*i + 1
		r.Observe(mg, st, Observation{Found: Fields{"connectionLimit": "5"}})
		minute = 2*i + 2
		r.Observe(mg, st, Observation{Found: Fields{"connectionLimit": "10"}, InSync: true})
	}
	if got := testutil.ToFloat64(Detected.WithLabelValues("PostgreSQLRole", "connectionLimit")); got != 100 {
		t.Errorf("counted %v drifts, want 100", got)
	}
	// 200 minutes, one event per ten minutes at most: 20 of each.
	var detected, corrected int
	for _, e := range ev {
		switch {
		case len(e) > 13 && e[:13] == "DriftDetected":
			detected++
		case len(e) > 14 && e[:14] == "DriftCorrected":
			corrected++
		}
	}
	if detected != 20 || corrected != 20 {
		t.Errorf("%d DriftDetected and %d DriftCorrected events over 200 minutes of flapping, want 20 and 20", detected, corrected)
	}
}

func mt(minutes int) metav1.Time {
	return metav1.Time{Time: t0.Add(time.Duration(minutes) * time.Minute)}
}

func mtp(minutes int) *metav1.Time {
	m := mt(minutes)
	return &m
}
