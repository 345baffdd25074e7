package poll

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

func schemaIn(uid, db string) *v1alpha1.PostgreSQLSchema {
	s := &v1alpha1.PostgreSQLSchema{}
	s.Status.AtProvider.InstanceUID, s.Status.AtProvider.Database = uid, db
	return s
}

func grantIn(uid, db string, t v1alpha1.GrantObjectType) *v1alpha1.PostgreSQLGrant {
	g := &v1alpha1.PostgreSQLGrant{}
	g.Spec.ForProvider.ObjectType = t
	g.Spec.ForProvider.Database = ptr.To(db)
	g.Status.AtProvider.InstanceUID, g.Status.AtProvider.Database = uid, db
	return g
}

func dpIn(uid, db string) *v1alpha1.PostgreSQLDefaultPrivileges {
	d := &v1alpha1.PostgreSQLDefaultPrivileges{}
	d.Status.AtProvider.InstanceUID, d.Status.AtProvider.Database = uid, db
	return d
}

func TestDatabaseGroup(t *testing.T) {
	cases := map[string]struct {
		mg   resource.Managed
		want string
	}{
		"Schema":                  {mg: schemaIn("u1", "shop"), want: "u1/shop"},
		"TableGrant":              {mg: grantIn("u1", "shop", v1alpha1.GrantObjectTable), want: "u1/shop"},
		"DefaultPrivileges":       {mg: dpIn("u1", "shop"), want: "u1/shop"},
		"DatabaseGrantRunsAtHome": {mg: grantIn("u1", "shop", v1alpha1.GrantObjectDatabase), want: ""},
		"MembershipRunsAtHome":    {mg: grantIn("u1", "", v1alpha1.GrantObjectMembership), want: ""},
		"NotObservedYet":          {mg: schemaIn("", ""), want: ""},
		"DatabaseNotKnownYet":     {mg: schemaIn("u1", ""), want: ""},
		"RoleRunsAtHome":          {mg: &v1alpha1.PostgreSQLRole{}, want: ""},
		"OtherInstanceOtherGroup": {mg: grantIn("u2", "shop", v1alpha1.GrantObjectSequence), want: "u2/shop"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, databaseGroup(tc.mg)); diff != "" {
				t.Errorf("databaseGroup (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPhased: an object of a group is polled on the group's grid, within
// the bounds of the random jitter it replaces, and stays on it.
func TestPhased(t *testing.T) {
	const poll, jitter = time.Minute, 10 * time.Second
	base := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	for _, g := range []string{"u1/shop", "u1/billing", "u2/shop"} {
		t.Run(g, func(t *testing.T) {
			var first time.Time
			for i := range 600 {
				// Observations at any moment of ten minutes, 1 s apart.
				now := base.Add(time.Duration(i) * time.Second)
				d := phased(now, poll, jitter, g)
				if d <= jitter || d > poll+jitter {
					t.Fatalf("observed at %s: next in %s, want in (%s, %s]", now.Format(time.TimeOnly), d, jitter, poll+jitter)
				}
				next := now.Add(d)
				if first.IsZero() {
					first = next
				}
				if off := next.Sub(first) % poll; off != 0 {
					t.Fatalf("observed at %s: next at %s, %s off the grid of %s", now.Format(time.TimeOnly), next.Format(time.TimeOnly), off, first.Format(time.TimeOnly))
				}
			}
			// On the grid (observed a little late), it stays a poll apart.
			late := first.Add(300 * time.Millisecond)
			if got := phased(late, poll, jitter, g); got != poll-300*time.Millisecond {
				t.Errorf("observed 300 ms after its moment: next in %s, want %s", got, poll-300*time.Millisecond)
			}
		})
	}
}

// TestPhasedSpreadsGroups: many databases' moments spread over the poll as
// random jitter would, not in a burst.
func TestPhasedSpreadsGroups(t *testing.T) {
	const poll, jitter, groups = time.Minute, 10 * time.Second, 600
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	perSecond := map[int64]int{}
	for i := range groups {
		d := phased(now, poll, jitter, fmt.Sprintf("6f1c0e52-5a8e-4c59-9d7e-%012d/db%d", i, i))
		perSecond[int64(d/time.Second)]++
	}
	// 600 groups over 60 s: 10 a second on average.
	for s, n := range perSecond {
		if n > 30 {
			t.Errorf("%d of %d databases are polled in second %d of the poll: not spread", n, groups, s)
		}
	}
	if len(perSecond) < 50 {
		t.Errorf("the databases' polls fall in %d distinct seconds of 60: not spread", len(perSecond))
	}
}

func TestPollIntervalHook(t *testing.T) {
	const poll, jitter = time.Minute, 10 * time.Second
	c := Schedule{Jitter: jitter}
	// The clock is the test's: whether moments seconds apart share a grid
	// point depends on where they fall against it, and on a wall clock
	// this test failed one run in thirty. point is one of u1/shop's grid
	// points; an observation at first, or up to poll-1s after it, lands
	// on point.
	base := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	point := base.Add(phased(base, poll, jitter, "u1/shop"))
	first := point.Add(-poll - jitter + time.Second)
	var now time.Time
	hook := c.hook(nil, func() time.Time { return now })
	// Three objects of one database, observed seconds apart, are next
	// polled at the same moment.
	for i, mg := range []resource.Managed{schemaIn("u1", "shop"), grantIn("u1", "shop", v1alpha1.GrantObjectSchema), dpIn("u1", "shop")} {
		now = first.Add(time.Duration(i) * 1100 * time.Millisecond)
		if got := now.Add(hook(mg, poll)); !got.Equal(point) {
			t.Errorf("object %d of u1/shop, observed at %s: next polled at %s, want %s with the others", i, now.Format(time.StampMilli), got.Format(time.StampMilli), point.Format(time.StampMilli))
		}
	}
	// Observed later than that, an object lands on the next grid point,
	// a poll later: never between two of the group's moments.
	now = point.Add(-poll - jitter + 20*time.Millisecond).Add(poll)
	if got := now.Add(hook(schemaIn("u1", "shop"), poll)); !got.Equal(point.Add(poll)) {
		t.Errorf("observed at %s: next polled at %s, want %s", now.Format(time.StampMilli), got.Format(time.StampMilli), point.Add(poll).Format(time.StampMilli))
	}
	hook = c.Hook(nil)
	// Objects of no group keep random jitter.
	seen := map[time.Duration]bool{}
	for range 20 {
		d := hook(&v1alpha1.PostgreSQLRole{}, poll)
		if d < poll-jitter || d > poll+jitter {
			t.Fatalf("a role: next poll in %s, want within %s of %s", d, jitter, poll)
		}
		seen[d] = true
	}
	if len(seen) < 2 {
		t.Errorf("a role's polls are not jittered: %v", seen)
	}
	// Without jitter, polls are exactly the interval, groups or not.
	if d := (Schedule{}).Hook(nil)(schemaIn("u1", "shop"), poll); d != poll {
		t.Errorf("without jitter: next poll in %s, want %s", d, poll)
	}
	// Something due sooner still wins.
	soon := c.Hook(func(resource.Managed, time.Time) time.Duration { return 5 * time.Second })
	if d := soon(schemaIn("u1", "shop"), poll); d != 5*time.Second {
		t.Errorf("with a wake due in 5s: next poll in %s", d)
	}
}

// TestPollsLateStayWithinJitter: when every poll comes late by the same
// second or two (the queue, the round trips), the time between two
// observations of an object still stays within poll+jitter, for an object
// polled at random and one polled on its database's grid, and the polls do
// not come more often than poll-jitter. Polls much later than that (a busy
// provider) shorten the schedule by a quarter of the jitter at most.
func TestPollsLateStayWithinJitter(t *testing.T) {
	const poll, jitter = time.Minute, 10 * time.Second
	for name, tc := range map[string]struct {
		mg   resource.Managed
		late time.Duration
		// within: every interval within poll+jitter.
		within bool
	}{
		"Random":     {mg: &v1alpha1.PostgreSQLRole{}, late: 2 * time.Second, within: true},
		"Phased":     {mg: schemaIn("u1", "shop"), late: 2 * time.Second, within: true},
		"RandomBusy": {mg: &v1alpha1.PostgreSQLRole{}, late: 30 * time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			now := time.Date(2026, 12, 3, 3, 0, 0, 0, time.UTC)
			c := Schedule{Jitter: jitter, Observations: NewObservations()}
			hook := c.hook(nil, func() time.Time { return now })
			var longest, shortest, sum time.Duration
			const polls = 500
			for i := range polls {
				d := hook(tc.mg, poll)
				now = now.Add(d + tc.late)
				// The first poll is scheduled before any lateness was
				// seen: it may end up late by all of it.
				if i == 0 {
					continue
				}
				longest, sum = max(longest, d+tc.late), sum+d
				if shortest == 0 || d+tc.late < shortest {
					shortest = d + tc.late
				}
			}
			if tc.within && longest > poll+jitter {
				t.Errorf("polls %s late: the longest interval between two observations is %s, want within %s", tc.late, longest, poll+jitter)
			}
			if shortest < poll-jitter {
				t.Errorf("polls %s late: the shortest interval is %s, want at least %s", tc.late, shortest, poll-jitter)
			}
			// Scheduled on average a poll less half the jitter's shortening
			// at most (an eighth of it), give or take the draw.
			if mean := sum / (polls - 1); mean < poll-jitter/8-time.Second {
				t.Errorf("polls %s late: next polls scheduled %s ahead on average, want about %s", tc.late, mean, poll-jitter/8)
			}
		})
	}
}

// TestJitterBoundedByThePoll: a resource polled more often than the jitter
// (its crossplane.io/poll-interval annotation, a short --poll) is still
// polled, never scheduled in the past (which would mean never again): at
// random within a quarter of its interval, or on its database's grid, at
// most a quarter of the interval past it.
func TestJitterBoundedByThePoll(t *testing.T) {
	const poll, jitter = 5 * time.Second, 10 * time.Second
	for name, tc := range map[string]struct {
		mg       resource.Managed
		min, max time.Duration
	}{
		"Random": {mg: &v1alpha1.PostgreSQLRole{}, min: poll - poll/4, max: poll + poll/4},
		// The grid point is the latest before poll+jitter: after the
		// jitter, a poll ahead at most.
		"Phased": {mg: schemaIn("u1", "shop"), min: poll / 4, max: poll + poll/4},
	} {
		t.Run(name, func(t *testing.T) {
			now := time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)
			hook := Schedule{Jitter: jitter}.hook(nil, func() time.Time { return now })
			for range 200 {
				now = now.Add(137 * time.Millisecond)
				if d := hook(tc.mg, poll); d < tc.min || d > tc.max {
					t.Fatalf("a %s poll with --poll-jitter %s: next poll in %s, want within [%s, %s]", poll, jitter, d, tc.min, tc.max)
				}
			}
		})
	}
}
