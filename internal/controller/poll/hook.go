// Package poll is when the provider looks at a resource again: the poll
// interval hook (jitter, the shared moments of a database's objects,
// lateness taken into account), the work queue priority of a poll, and
// the record of the intervals between observations it exports as metrics.
package poll

import (
	"hash/fnv"
	"math/rand/v2"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

// A Schedule is how every managed resource's next poll is chosen.
type Schedule struct {
	// Jitter is added at random to each resource's poll interval.
	Jitter time.Duration
	// Observations, when set, records the intervals between observations.
	Observations *Observations
}

// Hook returns a poll interval hook that adds up to ±Jitter at random to the poll interval and, with wake, polls sooner
// when wake says something is due sooner (a positive duration from now).
// crossplane-runtime calls it after each successful observation, which it
// records in Observations, with the moment of the next poll; the far end
// of the jitter is brought in by how late polls recently came
// (Observations.Lag, up to a quarter of the jitter), so the time between
// two observations stays within poll+jitter when the queue delays them a
// little.
//
// Objects observed over a session into one database of an Instance
// (v1alpha1.DatabaseUser) are polled together instead: see phased.
func (s Schedule) Hook(wake func(resource.Managed, time.Time) time.Duration) managed.PollIntervalHook {
	return s.hook(wake, time.Now)
}

// hook is Hook on the given clock: tests choose
// the moments of observation, because whether two moments share a grid
// point of phased depends on where they fall against it.
func (s Schedule) hook(wake func(resource.Managed, time.Time) time.Duration, clock func() time.Time) managed.PollIntervalHook {
	return func(mg resource.Managed, poll time.Duration) time.Duration {
		// At most a quarter of the interval: a resource's own
		// crossplane.io/poll-interval may be shorter than --poll-jitter,
		// and a jitter larger than the interval would schedule the next
		// poll in the past, which controller-runtime takes as no poll at
		// all.
		jitter := min(s.Jitter, poll/4)
		now := clock()
		// The longest interval scheduled is shortened by how late polls
		// come now, so the interval between two observations, lateness
		// included, stays within poll+jitter. By a quarter of the jitter
		// at most: polls later than that wait for a busy provider (a wave
		// of creates), and polling more often would only add to it.
		var lag time.Duration
		if s.Observations != nil {
			s.Observations.Observed(mg, now, poll)
			lag = min(s.Observations.Lag(now), jitter/4)
		}
		d := poll
		g := databaseGroup(mg)
		switch {
		case jitter > 0 && g != "":
			d = phased(now, poll, jitter-lag, g)
		case jitter > 0:
			// Anywhere in [poll-jitter, poll+jitter-lag].
			d += time.Duration(rand.Float64()*float64(2*jitter-lag)) - jitter //nolint:gosec // jitter needs no secure randomness.
		}
		if wake != nil {
			if w := wake(mg, now); w > 0 && w < d {
				d = w
			}
		}
		if s.Observations != nil {
			s.Observations.Scheduled(mg, now.Add(d))
		}
		return d
	}
}

// phased is how long after now an object of group g is polled next: at
// the latest time, no later than now+poll+jitter, that lies on g's grid
// (every poll, from an offset the hash of g picks). So every object of g
// is polled at the same moments, whenever each was last looked at, and
// the groups' moments are spread over the poll as evenly as random jitter
// spreads single objects. The first poll after a change is between jitter
// and poll+jitter away; after that an object keeps to the grid, one poll
// apart.
//
// The groups are the databases of a server: a database's schemas, grants
// and default privileges are observed over a session into that database,
// and under the --max-conns cap, with many databases, a session that sits
// idle is soon closed to let another database in. Observed at the same
// moment, they share one session per poll, where each used to open its
// own (docs/performance.md).
func phased(now time.Time, poll, jitter time.Duration, g string) time.Duration {
	if poll <= 0 {
		return poll
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(g))
	offset := int64(h.Sum64() % uint64(poll)) //nolint:gosec // poll is positive.
	latest := now.Add(poll + jitter).UnixNano()
	next := latest - ((latest-offset)%int64(poll)+int64(poll))%int64(poll)
	return time.Duration(next - now.UnixNano())
}

// databaseGroup is the poll group of mg: the Instance and database its
// observations run in, "" for an object observed over the Instance's own
// pool, or before its first observation has recorded where.
func databaseGroup(mg resource.Managed) string {
	u, ok := mg.(v1alpha1.DatabaseUser)
	if !ok {
		return ""
	}
	uid, db := u.ObservedIn()
	if uid == "" || db == "" {
		return ""
	}
	return uid + "/" + db
}

// Priority is the work queue priority of a resource that has nothing
// to do until a later time (its next poll, a scheduled rotation, or the
// fallback look of a waiting resource): below the 0 that a change to a
// resource enqueues with. Every reconcile takes a token of the global
// rate, polls included, so in a wave of new objects the polls of objects
// already Ready would otherwise take turns with the work that creates
// (docs/performance.md). A change to a resource raises its priority
// again at once (controller-runtime's priority queue keeps the highest).
//
// It is exactly the priority of the resources a starting provider finds
// (controller-runtime's handler.LowPriority): above it, polls of the
// resources already seen would overtake, forever, those not seen yet
// after a restart (a CI run of TestRestartMidwayConverges caught that
// with -10); equal, they are served in the order they were queued.
const Priority = handler.LowPriority

// Hold is how long past its due time a poll of a provider polling every
// interval may be held while changes wait in another controller's queue
// (queue.Shared): four polls. A wave of creates on 2 cores can take
// minutes; within it, objects already Ready are observed about every
// Hold+interval instead of every interval, and a steady stream of changes
// delays drift detection by at most that much, never indefinitely.
func Hold(interval time.Duration) time.Duration { return 4 * interval }
