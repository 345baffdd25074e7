// Package reconciler is how the provider runs crossplane-runtime's managed
// reconciler: the wrapper every controller's reconciles go through
// (requeues), the event filter on a controller's own kind (OwnChanges),
// and the API writes it saves or makes safe: a create's status left to the
// observation that follows at once (created.go), a status write that
// changes nothing not sent (nowrite.go), conflicts noted and retried
// without back-off (conflicts.go), the critical annotations carried over a
// conflict (annotations.go). Each is a departure from stock
// crossplane-runtime or controller-runtime behaviour; docs/architecture.md
// lists them with the tests that hold them.
package reconciler

import (
	"context"
	"maps"
	"slices"
	"time"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"github.com/ayatori/provider-postgresql/internal/controller/poll"
	"github.com/ayatori/provider-postgresql/internal/controller/reference"
)

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

// Wrap wraps a managed reconciler the way every controller of the
// provider runs it: with API conflicts requeued silently, and its requeues
// adjusted by requeues (below); w is how long a reconcile that waits for
// another object sleeps when nothing wakes it. The global rate limit
// is the work queue's (queue.Fair), not crossplane-runtime's rate-limited
// reconciler, which booked a token for every reconcile it turned away.
func Wrap(w Waits, r reconcile.Reconciler) reconcile.Reconciler {
	return errors.WithSilentRequeueOnConflict(requeues{r: r, waits: w})
}

// Waits is how long a reconcile that stopped to wait for another object
// (reference.Wait) sleeps unless that object wakes it sooner.
type Waits struct {
	// Unwatched: for an object on the server that no managed resource
	// stands for, whose appearance wakes nothing.
	Unwatched time.Duration
	// Watched: for a managed resource not observed yet
	// (reference.Awaited), whose observation wakes the waiters; this
	// only guards against a lost event.
	Watched time.Duration
}

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
//   - a requeue after a delay (a poll) gets poll.Priority.
type requeues struct {
	r     reconcile.Reconciler
	waits Waits
}

func (q requeues) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	created, res, o, err := q.once(ctx, req, true)
	if err == nil && created.observeNow() {
		// The create's status was left to this observation (created.go).
		_, res, o, err = q.once(ctx, req, false)
	}
	return adjust(res, err, o, q.waits)
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
	return created, res, outcome{waiting: note.Waiting(), woken: note.Woken(), conflicted: conflicts.conflicted()}, err
}

// outcome is what a reconcile noted about itself.
type outcome struct {
	// waiting: it stopped to wait for another object (reference.Wait);
	// woken: for a managed resource whose observation wakes it
	// (reference.Awaited).
	waiting, woken bool
	// conflicted: one of its writes met a newer version of the object.
	conflicted bool
}

// adjust is requeues' decision, given the managed reconciler's result and
// what the reconcile noted.
func adjust(res reconcile.Result, err error, o outcome, w Waits) (reconcile.Result, error) {
	//nolint:staticcheck // crossplane-runtime still returns Requeue.
	requeued := res.Requeue && res.RequeueAfter == 0
	if o.conflicted && (err == nil && requeued || err != nil && kerrors.IsConflict(err)) {
		return reconcile.Result{RequeueAfter: conflictRetry}, nil
	}
	if err != nil {
		return res, err
	}
	if o.waiting && requeued {
		after := w.Unwatched
		if o.woken {
			after = w.Watched
		}
		return reconcile.Result{RequeueAfter: after, Priority: ptr.To(poll.Priority)}, nil
	}
	if res.RequeueAfter > 0 && !res.Requeue { //nolint:staticcheck // As above.
		res.Priority = ptr.To(poll.Priority)
	}
	return res, nil
}
