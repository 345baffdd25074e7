package poll

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

// histograms gathers o's observation intervals by kind as (count, sum).
func histograms(t *testing.T, o *Observations) map[string][2]float64 {
	t.Helper()
	return histogramsOf(t, o, "provider_postgresql_observation_interval_seconds")
}

// histogramsOf gathers o's histogram family name by kind as (count, sum).
func histogramsOf(t *testing.T, o *Observations, name string) map[string][2]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(o)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][2]float64{}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			out[label(m, "kind")] = [2]float64{float64(m.GetHistogram().GetSampleCount()), m.GetHistogram().GetSampleSum()}
		}
	}
	return out
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func TestObservations(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	role := func(uid string) *v1alpha1.PostgreSQLRole {
		return &v1alpha1.PostgreSQLRole{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}}
	}
	db := &v1alpha1.PostgreSQLDatabase{ObjectMeta: metav1.ObjectMeta{UID: "d"}}
	cases := map[string]struct {
		observe func(o *Observations)
		want    map[string][2]float64
	}{
		"FirstObservationIsNoInterval": {
			observe: func(o *Observations) { o.Observed(role("a"), t0, time.Minute) },
			want:    map[string][2]float64{},
		},
		"IntervalsPerObjectByKind": {
			observe: func(o *Observations) {
				o.Observed(role("a"), t0, time.Minute)
				o.Observed(role("b"), t0.Add(10*time.Second), time.Minute)
				o.Observed(db, t0, time.Minute)
				o.Observed(role("a"), t0.Add(60*time.Second), time.Minute)
				o.Observed(role("b"), t0.Add(100*time.Second), time.Minute)
				o.Observed(db, t0.Add(65*time.Second), time.Minute)
			},
			want: map[string][2]float64{"PostgreSQLRole": {2, 150}, "PostgreSQLDatabase": {1, 65}},
		},
		"PrunedObjectStartsAfresh": {
			// a is seen once, then not for over ten polls while another
			// is: the sweep forgets it, so its late return makes no
			// interval (it may have been deleted; this may be a new one).
			observe: func(o *Observations) {
				o.Observed(role("a"), t0, time.Second)
				o.Observed(db, t0, time.Second)
				for range pruneEvery {
					o.Observed(db, t0.Add(time.Minute), time.Second)
				}
				o.Observed(role("a"), t0.Add(2*time.Minute), time.Second)
			},
			want: map[string][2]float64{"PostgreSQLDatabase": {pruneEvery, 60}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := NewObservations()
			tc.observe(o)
			got := histograms(t, o)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("intervals (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPollLateness: a poll that comes at or after the moment scheduled for
// it records how late it came, one woken earlier records nothing, and the
// worst recent lateness (Lag) counts for one to two lagWindows.
func TestPollLateness(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	role := func(uid string) *v1alpha1.PostgreSQLRole {
		return &v1alpha1.PostgreSQLRole{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}}
	}
	lateTwice := func(o *Observations) {
		o.Observed(role("a"), t0, time.Minute)
		o.Scheduled(role("a"), t0.Add(time.Minute))
		o.Observed(role("a"), t0.Add(68*time.Second), time.Minute)
		o.Scheduled(role("a"), t0.Add(68*time.Second+time.Minute))
		o.Observed(role("a"), t0.Add(68*time.Second+time.Minute+time.Second), time.Minute)
	}
	cases := map[string]struct {
		observe func(o *Observations)
		at      time.Time
		want    map[string][2]float64
		lag     time.Duration
	}{
		"NotScheduled": {
			observe: func(o *Observations) {
				o.Observed(role("a"), t0, time.Minute)
				o.Observed(role("a"), t0.Add(time.Minute), time.Minute)
			},
			at:   t0.Add(time.Minute),
			want: map[string][2]float64{},
		},
		"LateBy3s": {
			observe: func(o *Observations) {
				o.Observed(role("a"), t0, time.Minute)
				o.Scheduled(role("a"), t0.Add(time.Minute))
				o.Observed(role("a"), t0.Add(63*time.Second), time.Minute)
			},
			at:   t0.Add(63 * time.Second),
			want: map[string][2]float64{"PostgreSQLRole": {1, 3}},
			lag:  3 * time.Second,
		},
		"WokenEarly": {
			observe: func(o *Observations) {
				o.Observed(role("a"), t0, time.Minute)
				o.Scheduled(role("a"), t0.Add(time.Minute))
				o.Observed(role("a"), t0.Add(20*time.Second), time.Minute)
				// Its next poll was not scheduled: the one after it is
				// no poll either.
				o.Observed(role("a"), t0.Add(90*time.Second), time.Minute)
			},
			at:   t0.Add(90 * time.Second),
			want: map[string][2]float64{},
		},
		"LagIsTheWorstOfTheLastWindowOrTwo": {
			// 8 s late at t0+68s (the first window starts there), 1 s
			// late 70 s later (the second window): the 8 s still counts.
			observe: lateTwice,
			at:      t0.Add(68*time.Second + 110*time.Second),
			want:    map[string][2]float64{"PostgreSQLRole": {2, 9}},
			lag:     8 * time.Second,
		},
		"LagForgetsAWindowAgo": {
			// In the third window the first window's 8 s is forgotten,
			// the second's 1 s is not.
			observe: lateTwice,
			at:      t0.Add(68*time.Second + 2*lagWindow + time.Second),
			want:    map[string][2]float64{"PostgreSQLRole": {2, 9}},
			lag:     time.Second,
		},
		"LagForgetsEverythingAfterTwoQuietWindows": {
			observe: lateTwice,
			at:      t0.Add(68*time.Second + 3*lagWindow + time.Second),
			want:    map[string][2]float64{"PostgreSQLRole": {2, 9}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := NewObservations()
			tc.observe(o)
			if diff := cmp.Diff(tc.want, histogramsOf(t, o, "provider_postgresql_poll_lateness_seconds")); diff != "" {
				t.Errorf("lateness (-want +got):\n%s", diff)
			}
			if got := o.Lag(tc.at); got != tc.lag {
				t.Errorf("Lag: got %s, want %s", got, tc.lag)
			}
		})
	}
}
