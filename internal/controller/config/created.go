package config

import (
	"context"
	"sync/atomic"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
// whether the status write recording it was left to the observation.
type createNote struct{ created, deferred atomic.Bool }

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
