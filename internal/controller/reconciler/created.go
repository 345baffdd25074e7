package reconciler

import (
	"github.com/ayatori/provider-postgresql/internal/controller/management"

	"context"
	"sync/atomic"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
)

// After a successful create crossplane-runtime writes the status Creating
// and asks for a requeue; the reconcile that follows observes the new
// object and writes Available. A PostgreSQL object exists the moment its
// statement commits, so Creating stood for a few milliseconds, at the
// price of a status write (decoded, validated and stored by the API
// server, sent to every watcher) and a trip through the work queue for
// every new role, database, schema, grant and default privileges. On the
// 2-core machines this project targets the API server's work per object
// is what bounds a wave of new objects (docs/performance.md).
//
// So the status write that records a create is not sent, and the
// observation runs at once in the same worker (requeues), which writes
// the status as it is: Available, or whatever it finds. The create's
// event and annotations are written as before. The observation passes no
// rate limiter of its own: it is the second half of the create.

// A createNote records that a reconcile created its external resource, and
// whether the status write recording it was left to the observation; and,
// before that, that its observation found nothing and a create follows.
type createNote struct {
	created, deferred, follows atomic.Bool
	// pending is what the create-pending write stored (pendingWritten),
	// nil before it.
	pending atomic.Pointer[pendingWrite]
}

// A pendingWrite is what crossplane-runtime's create-pending write of a
// reconcile stored: the external name in it.
type pendingWrite struct{ externalName string }

type createNoteKey struct{}

// withCreateNote returns a context in which Created and deferCreating
// note, and the note.
func withCreateNote(ctx context.Context) (context.Context, *createNote) {
	n := &createNote{}
	return context.WithValue(ctx, createNoteKey{}, n), n
}

// Created records that the reconcile of ctx has created its external
// resource: the external clients' Create calls it on success.
func Created(ctx context.Context) {
	if n, ok := ctx.Value(createNoteKey{}).(*createNote); ok {
		n.created.Store(true)
	}
}

// Missing records that the observation of the reconcile of ctx found no
// external resource for mg: unless its policies do not create,
// crossplane-runtime now adds its finalizer and then writes the
// create-pending annotation before it creates (Finalizer). (An object
// being deleted never reaches the finalizer's addition.)
func Missing(ctx context.Context, mg resource.Managed) {
	if n, ok := ctx.Value(createNoteKey{}).(*createNote); ok && management.Creates(mg) {
		n.follows.Store(true)
	}
}

// createFollows reports whether the reconcile of ctx goes on to write the
// create-pending annotation (Missing).
func createFollows(ctx context.Context) bool {
	n, ok := ctx.Value(createNoteKey{}).(*createNote)
	return ok && n.follows.Load()
}

// A new object was written twice before its create: once by
// crossplane-runtime's finalizer (with the external name, left to that
// write by the initializers), and at once after by the create-pending
// annotation, which crossplane-runtime writes with a conflict check
// before it creates anything. Both are writes of the object's metadata,
// each a write of the API server and etcd and a watch event to every
// watcher; nothing happens between them but the decision to create.
//
// So when the observation found nothing and a create follows (Missing),
// Finalizer adds the finalizer to the object and leaves it to the
// create-pending write, which carries it to the server with the external
// name: no external resource is ever created before its finalizer is
// stored, since that write must succeed before crossplane-runtime creates.
// If it does not (a conflict), nothing was created and the next reconcile
// adds the finalizer again. An object that exists, or that will not be
// created, gets its finalizer written at once, as before.

// Finalizer is crossplane-runtime's managed resource finalizer, written
// with kube, but for an object about to be created (above).
func Finalizer(kube client.Client) resource.Finalizer {
	return createFinalizer{resource.NewAPIFinalizer(kube, managed.FinalizerName)}
}

type createFinalizer struct{ resource.Finalizer }

func (f createFinalizer) AddFinalizer(ctx context.Context, obj resource.Object) error {
	if !meta.FinalizerExists(obj, managed.FinalizerName) && createFollows(ctx) {
		meta.AddFinalizer(obj, managed.FinalizerName)
		return nil
	}
	return f.Finalizer.AddFinalizer(ctx, obj)
}

// deferCreating reports whether o's status is the one crossplane-runtime
// writes after the create of the reconcile of ctx (createRecorded), in
// which case it is left to the observation that follows, and noted so.
func deferCreating(ctx context.Context, o client.Object) bool {
	n, ok := ctx.Value(createNoteKey{}).(*createNote)
	if !ok || !n.created.Load() || !createRecorded(o) {
		return false
	}
	n.deferred.Store(true)
	return true
}

// observeNow reports whether the reconcile left its create's status to
// the observation that should follow at once.
func (n *createNote) observeNow() bool { return n != nil && n.deferred.Load() }

// createRecorded reports whether o's status is the one crossplane-runtime
// writes last when a create succeeded: Ready Creating, Synced True.
func createRecorded(o client.Object) bool {
	c, ok := o.(resource.Conditioned)
	if !ok {
		return false
	}
	return c.GetCondition(xpv2.TypeReady).Reason == xpv2.ReasonCreating && c.GetCondition(xpv2.TypeSynced).Status == corev1.ConditionTrue
}

// After a successful create crossplane-runtime writes the
// external-create-succeeded annotation, a second write of the object's
// metadata right after the create-pending one, so that a later reconcile
// can tell a create that finished from one a crash cut short (the
// create-pending annotation without a later succeeded or failed one).
// This provider's creates need no such record: every external name is
// deterministic (crossplane-runtime then proceeds past a create it cannot
// confirm, WithDeterministicExternalName), and what a create cut short
// left on the server is recognised there, by the ownership marker written
// in the create's own transaction or by the staging name of a database
// (docs/kinds/database.md), and finished or refused by the observation.
// (A grant or default privileges, which have no marker, are found by
// what they grant; granting again changes nothing.) So when nothing but
// that annotation would change (the external name is the one the
// create-pending write stored), the write is not sent: one API write,
// and a watch event to every watcher, less per new object. The
// create-pending annotation stays on the object as the record of the
// provider's last create, and a failed create's annotation is still
// written.

// pendingWritten records, in the note of the reconcile of ctx, what the
// create-pending write that was just sent stored in o.
func pendingWritten(ctx context.Context, o client.Object) {
	n, ok := ctx.Value(createNoteKey{}).(*createNote)
	if !ok || !n.follows.Load() || meta.GetExternalCreatePending(o).IsZero() {
		return
	}
	n.pending.Store(&pendingWrite{externalName: meta.GetExternalName(o)})
}

// succeededUnrecorded reports whether o's critical annotations, about to
// be written after a successful create in the reconcile of ctx, hold the
// external name its create-pending write stored; if so it takes the
// create-succeeded annotation off o, whose metadata is then the stored
// one again.
func succeededUnrecorded(ctx context.Context, o client.Object) bool {
	n, ok := ctx.Value(createNoteKey{}).(*createNote)
	if !ok {
		return false
	}
	// The version may have moved on: a grant records what it is about to
	// grant in its status before granting it. What matters is that the
	// stored object holds the external name.
	p := n.pending.Load()
	if p == nil || p.externalName != meta.GetExternalName(o) {
		return false
	}
	succeeded, failed := meta.GetExternalCreateSucceeded(o), meta.GetExternalCreateFailed(o)
	// The annotations hold seconds: a create's records often share one.
	if succeeded.IsZero() || meta.GetExternalCreatePending(o).After(succeeded) || failed.After(succeeded) {
		return false
	}
	meta.RemoveAnnotations(o, meta.AnnotationKeyExternalCreateSucceeded)
	return true
}
