// Package config holds what every controller of the provider is set up
// with. It is its own package so that the per-kind controller packages and
// the package that registers them can both use it.
package config

import (
	"cmp"
	"context"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/crossplane/crossplane-runtime/v2/pkg/statemetrics"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/controller/reference"
)

// The defaults of the flags that decide how much work the provider does at
// once (docs/performance.md says why each is what it is).
const (
	// DefaultMaxReconcileRate bounds reconciles per second, every kind
	// together: at 5,000 objects and a one-minute poll, 83 per second
	// observe each once per poll, and the rest is left for changes.
	DefaultMaxReconcileRate = 100
	// DefaultMaxConcurrentReconciles is each controller's concurrency.
	// Reconciles wait on a handful of server connections (--max-conns),
	// so more workers would only queue there.
	DefaultMaxConcurrentReconciles = 10
	// DefaultMinPollInterval is the shortest poll interval a resource's
	// crossplane.io/poll-interval annotation may ask for: whoever may
	// annotate a resource could otherwise keep the provider observing it
	// in a loop, at the expense of every other resource under the global
	// rate.
	DefaultMinPollInterval = 5 * time.Second
)

// Config is what every controller of the provider is set up with.
type Config struct {
	controller.Options

	// Namespace is the provider's own namespace, where Instance admin
	// credentials and CA bundles live.
	Namespace string

	// PollJitter is added at random to each managed resource's poll interval.
	PollJitter time.Duration

	// MinPollInterval is the shortest interval a crossplane.io/poll-interval
	// annotation may ask for (shorter ones are raised to it); zero means
	// DefaultMinPollInterval.
	MinPollInterval time.Duration

	// Pools is the connection pool registry every controller shares.
	Pools *postgres.Registry

	// Observations, when set, records the intervals between observations.
	Observations *Observations

	// InstanceSecrets reads the Instances' admin credentials and CA
	// bundles (InstanceSecrets); the controllers' setup sets it when nil.
	InstanceSecrets client.Reader

	// ServiceAccountTokenFile is the token a credentialVault's Kubernetes
	// auth logs in with; empty: the pod's own.
	ServiceAccountTokenFile string
}

// ManagedReconcilerOptions returns the options every managed reconciler of
// the provider shares, and registers the kind's state metrics recorder.
// list is an empty list of the kind, for the recorder.
func ManagedReconcilerOptions(mgr ctrl.Manager, c Config, name string, list resource.ManagedList) ([]managed.ReconcilerOption, error) {
	o := []managed.ReconcilerOption{
		managed.WithLogger(c.Logger.WithValues("controller", name)),
		managed.WithRecorder(event.NewAPIRecorder(mgr.GetEventRecorderFor(name), c.EventFilterFunctions...)), //nolint:staticcheck // crossplane-runtime's recorder takes record.EventRecorder.
		managed.WithPollInterval(c.PollInterval),
		managed.WithPollIntervalHook(c.PollIntervalHook(nil)),
		managed.WithMinPollInterval(cmp.Or(c.MinPollInterval, DefaultMinPollInterval)),
		// Every kind declares its own managementPolicies default.
		managed.WithManagementPolicies(),
		// The grace period exists for eventually consistent cloud APIs:
		// PostgreSQL's catalog shows a created object at once, and waiting
		// would only delay deleting a freshly created resource.
		managed.WithCreationGracePeriod(0),
		// Names are chosen in the spec, never by the server, so after a
		// create interrupted by a crash the next Observe can look the
		// object up; its ownership marker then decides whether it is
		// ours (otherwise: Conflict), instead of crossplane-runtime
		// refusing to proceed until someone removes an annotation.
		managed.WithDeterministicExternalName(true),
		managed.WithCriticalAnnotationUpdater(CriticalAnnotationUpdater(mgr.GetClient(), mgr.GetAPIReader())),
		// A new object's finalizer goes with its create-pending
		// annotation (created.go).
		managed.WithFinalizer(Finalizer(mgr.GetClient())),
	}
	if c.ChangeLogOptions != nil {
		// --enable-changelogs: one entry per create, update and delete
		// on the server (package changelog).
		o = append(o, managed.WithChangeLogger(c.ChangeLogOptions.ChangeLogger))
	}
	if c.MetricOptions != nil {
		if c.MetricOptions.MRMetrics != nil {
			o = append(o, managed.WithMetricRecorder(c.MetricOptions.MRMetrics))
		}
		if c.MetricOptions.MRStateMetrics != nil {
			rec := statemetrics.NewMRStateRecorder(uncopiedLists{mgr.GetClient()}, c.Logger, c.MetricOptions.MRStateMetrics, list, c.MetricOptions.PollStateMetricInterval)
			if err := mgr.Add(rec); err != nil {
				return nil, errors.Wrap(err, "cannot add the state metrics recorder")
			}
		}
	}
	return o, nil
}

// uncopiedLists lists from the cache without copying what it holds. The
// state metrics recorder lists every managed resource of its kind at each
// interval and only counts their conditions: with copies, 5,000 objects
// every 5 s were a thousand deep copies a second, and a sixth of the live
// heap at any moment (a heap profile at 5,000 objects).
type uncopiedLists struct{ client.Client }

func (c uncopiedLists) List(ctx context.Context, l client.ObjectList, opts ...client.ListOption) error {
	return c.Client.List(ctx, l, append(opts, client.UnsafeDisableDeepCopy)...)
}

// PollIntervalHook returns a poll interval hook that adds up to
// ±PollJitter at random to the poll interval and, with wake, polls sooner
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
func (c Config) PollIntervalHook(wake func(resource.Managed, time.Time) time.Duration) managed.PollIntervalHook {
	return c.pollIntervalHook(wake, time.Now)
}

// pollIntervalHook is PollIntervalHook on the given clock: tests choose
// the moments of observation, because whether two moments share a grid
// point of phased depends on where they fall against it.
func (c Config) pollIntervalHook(wake func(resource.Managed, time.Time) time.Duration, clock func() time.Time) managed.PollIntervalHook {
	return func(mg resource.Managed, poll time.Duration) time.Duration {
		// At most a quarter of the interval: a resource's own
		// crossplane.io/poll-interval may be shorter than --poll-jitter,
		// and a jitter larger than the interval would schedule the next
		// poll in the past, which controller-runtime takes as no poll at
		// all.
		jitter := min(c.PollJitter, poll/4)
		now := clock()
		// The longest interval scheduled is shortened by how late polls
		// come now, so the interval between two observations, lateness
		// included, stays within poll+jitter. By a quarter of the jitter
		// at most: polls later than that wait for a busy provider (a wave
		// of creates), and polling more often would only add to it.
		var lag time.Duration
		if c.Observations != nil {
			c.Observations.Observed(mg, now, poll)
			lag = min(c.Observations.Lag(now), jitter/4)
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
		if c.Observations != nil {
			c.Observations.Scheduled(mg, now.Add(d))
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

// OwnChanges is the event filter of every managed controller on its own
// kind: an object is reconciled when what it asks for changes (spec,
// labels, annotations, its deletion, which bumps metadata.generation), when
// its finalizers change, or when also lets an update through, not when
// only its status does. The status is the controller's own output, and
// crossplane-runtime requeues after every reconcile by itself (through
// the back-off after a create or an error, at the next poll otherwise),
// so the event of its own status write only bought another reconcile,
// with a round trip to the server, each time a condition changed. also is
// for what another controller records in the status that this one acts
// on.
//
// Where crossplane-runtime counts on that event, the filter lets it
// through or stands in for it:
//   - The observation that follows a create runs at once in the
//     create's own reconcile (created.go), so no event is needed for
//     it, and none passes: not the external-create-succeeded annotation,
//     which crossplane-runtime's own filter lets through (written just
//     before the status, the reconcile it woke read the object from a
//     cache that had not yet seen that write, and its own status write
//     conflicted: without it, refused status writes of databases in a
//     wave of 200 halved, docs/performance.md), and not a status that looks like a create's
//     record, which anyone with access to the status could write after
//     each observation to keep the controller observing. A failed create
//     is retried with back-off, as before.
//   - A write that conflicts with a newer version, read from a cache that
//     had not seen it yet, is retried after conflictRetry (requeues), not
//     when the newer version's event arrives: that event is often the
//     controller's own status write, which this filter drops.
//
// Finalizers pass because crossplane-runtime adds its finalizer after the
// first Observe, with an Update whose reply resets the status observed so
// far: it counts on that Update's event for the reconcile that records it.
// Not when they come with the create-pending annotation (a new object's,
// Finalizer): that reconcile creates and observes in the same worker, and
// the write carries nothing but its own changes (notCreatePending).
// Every update of an object being deleted passes: a deletion that waits
// (for users, heirs, a tenant) writes its status and is then woken by
// another object, possibly before its own write has reached the cache;
// crossplane-runtime answers the resulting conflict with a requeue that
// the error back-off would otherwise delay, where the event of the newer
// version retries it at once. Deletions are rare; waves of them cost what
// they did before this filter.
// A resync (the same resourceVersion) passes, as the safety net it is
// meant to be.
func OwnChanges(also ...predicate.Predicate) builder.ForOption {
	return builder.WithPredicates(ownChanges(also...))
}

// UpdatesWhere passes the updates for which f, given the object before and
// after, says true, and no other event.
func UpdatesWhere(f func(was, now client.Object) bool) predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(ctrlevent.CreateEvent) bool { return false },
		DeleteFunc:  func(ctrlevent.DeleteEvent) bool { return false },
		GenericFunc: func(ctrlevent.GenericEvent) bool { return false },
		UpdateFunc: func(e ctrlevent.UpdateEvent) bool {
			return e.ObjectOld != nil && e.ObjectNew != nil && f(e.ObjectOld, e.ObjectNew)
		},
	}
}

func ownChanges(also ...predicate.Predicate) predicate.Predicate {
	resync := UpdatesWhere(func(was, now client.Object) bool { return was.GetResourceVersion() == now.GetResourceVersion() })
	finalizers := UpdatesWhere(func(was, now client.Object) bool { return !slices.Equal(was.GetFinalizers(), now.GetFinalizers()) })
	deleting := UpdatesWhere(func(_, now client.Object) bool { return now.GetDeletionTimestamp() != nil })
	metadata := predicate.And(notCreatePending(), predicate.Or(labelsOrAnnotationsChanged(), finalizers))
	return predicate.Or(append([]predicate.Predicate{predicate.GenerationChangedPredicate{}, metadata, deleting, resync}, also...)...)
}

// labelsOrAnnotationsChanged is crossplane-runtime's
// resource.DesiredStateChanged without the generation, and but for the
// external-create-succeeded annotation, which it lets through and this
// filter does not (OwnChanges says why).
func labelsOrAnnotationsChanged() predicate.Predicate {
	return predicate.Or(
		predicate.LabelChangedPredicate{},
		UpdatesWhere(func(was, now client.Object) bool {
			return !maps.Equal(withoutCreateRecords(was.GetAnnotations()), withoutCreateRecords(now.GetAnnotations()))
		}),
	)
}

// notCreatePending passes every update but crossplane-runtime's
// create-pending write: the update that sets a new create-pending time.
// It carries only what the reconcile that writes it put on the object (a
// change by anyone else in between makes it a conflict): the finalizer and
// the external name of a new object (Finalizer). That reconcile creates at
// once and observes what it created in the same worker, so its event
// would only queue a second observation behind it.
func notCreatePending() predicate.Predicate {
	return UpdatesWhere(func(was, now client.Object) bool {
		return was.GetAnnotations()[meta.AnnotationKeyExternalCreatePending] == now.GetAnnotations()[meta.AnnotationKeyExternalCreatePending]
	})
}

// createAnnotations are the annotations in which crossplane-runtime
// records its creates.
var createAnnotations = []string{meta.AnnotationKeyExternalCreatePending, meta.AnnotationKeyExternalCreateSucceeded, meta.AnnotationKeyExternalCreateFailed}

// withoutCreateRecords is a copy of annotations without createAnnotations.
func withoutCreateRecords(annotations map[string]string) map[string]string {
	out := maps.Clone(annotations)
	for _, k := range createAnnotations {
		delete(out, k)
	}
	return out
}

// Reconciler wraps a managed reconciler the way every controller of the
// provider runs it: under the global rate limit, with API conflicts
// requeued silently, and its requeues adjusted by requeues (below).
func Reconciler(name string, c Config, r reconcile.Reconciler) reconcile.Reconciler {
	return ratelimiter.NewReconciler(name, errors.WithSilentRequeueOnConflict(requeues{r: r, after: c.waitRequeue()}), c.GlobalRateLimiter)
}

// maxWaitRequeue bounds how long a waiting resource sleeps when nothing
// wakes it (it waits for an object the provider does not manage): the
// longest step of the error back-off it replaces.
const maxWaitRequeue = time.Minute

// waitRequeue is how long a reconcile that waits for another object is
// left before it looks again, unless the object appearing wakes it
// sooner: the poll interval, at most a minute.
func (c Config) waitRequeue() time.Duration {
	if c.PollInterval > 0 && c.PollInterval < maxWaitRequeue {
		return c.PollInterval
	}
	return maxWaitRequeue
}

// PollPriority is the work queue priority of a resource that has nothing
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
const PollPriority = handler.LowPriority

// requeues runs the managed reconciler, once more at once when a create
// left its status to the observation (created.go), and adjusts what it
// asks of the work queue:
//   - a reconcile marked by reference.Wait is requeued once, after a fixed
//     delay, rather than with back-off. crossplane-runtime asks for a
//     rate-limited requeue (Requeue: true) on every error;
//     controller-runtime, given RequeueAfter and no error instead, also
//     forgets the item's back-off, so a real error after the wait starts
//     again from the shortest step.
//   - a reconcile whose write met a conflict is retried after
//     conflictRetry, also without back-off, whether crossplane-runtime
//     swallowed the conflict or returned it.
//   - a requeue after a delay (a poll) gets PollPriority.
type requeues struct {
	r     reconcile.Reconciler
	after time.Duration
}

func (q requeues) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	created, res, o, err := q.once(ctx, req, true)
	if err == nil && created.observeNow() {
		// The create's status was left to this observation (created.go).
		_, res, o, err = q.once(ctx, req, false)
	}
	return adjust(res, err, o, q.after)
}

// once runs the managed reconciler once, with the notes it may leave: a
// create note only if creates may leave their status to an observation
// that follows (not in that observation itself, which may create again).
func (q requeues) once(ctx context.Context, req reconcile.Request, deferCreate bool) (*createNote, reconcile.Result, outcome, error) {
	ctx, note := reference.WithNote(ctx)
	ctx, conflicts := withConflictNote(ctx)
	var created *createNote
	if deferCreate {
		ctx, created = withCreateNote(ctx)
	}
	res, err := q.r.Reconcile(ctx, req)
	return created, res, outcome{waiting: note.Waiting(), conflicted: conflicts.conflicted()}, err
}

// outcome is what a reconcile noted about itself.
type outcome struct {
	// waiting: it stopped to wait for another object (reference.Wait).
	waiting bool
	// conflicted: one of its writes met a newer version of the object.
	conflicted bool
}

// adjust is requeues' decision, given the managed reconciler's result and
// what the reconcile noted.
func adjust(res reconcile.Result, err error, o outcome, after time.Duration) (reconcile.Result, error) {
	//nolint:staticcheck // crossplane-runtime still returns Requeue.
	requeued := res.Requeue && res.RequeueAfter == 0
	if o.conflicted && (err == nil && requeued || err != nil && kerrors.IsConflict(err)) {
		return reconcile.Result{RequeueAfter: conflictRetry}, nil
	}
	if err != nil {
		return res, err
	}
	if o.waiting && requeued {
		return reconcile.Result{RequeueAfter: after, Priority: ptr.To(PollPriority)}, nil
	}
	if res.RequeueAfter > 0 && !res.Requeue { //nolint:staticcheck // As above.
		res.Priority = ptr.To(PollPriority)
	}
	return res, nil
}

// Deletes reports whether mg's management policies let the provider
// delete what it manages: "*" or Delete.
func Deletes(mg resource.Managed) bool {
	return allows(mg, xpv2.ManagementActionDelete)
}

// Creates reports whether mg's management policies let the provider
// create what it manages: "*" or Create.
func Creates(mg resource.Managed) bool {
	return allows(mg, xpv2.ManagementActionCreate)
}

// allows reports whether mg's management policies hold "*" or action.
func allows(mg resource.Managed, action xpv2.ManagementAction) bool {
	for _, p := range mg.GetManagementPolicies() {
		if p == xpv2.ManagementActionAll || p == action {
			return true
		}
	}
	return false
}

// ObserveOnly reports whether mg's management policies let the provider
// only read (an import): neither "*", Create nor Update.
func ObserveOnly(mg resource.Managed) bool {
	for _, p := range mg.GetManagementPolicies() {
		if p == xpv2.ManagementActionAll || p == xpv2.ManagementActionCreate || p == xpv2.ManagementActionUpdate {
			return false
		}
	}
	return true
}
