package reference

import (
	"context"
	"sync/atomic"
)

// A reconcile that stops because something it refers to does not exist yet
// is not failing: it waits, and the watches of WakeWaiting reconcile it
// again the moment that thing appears. Retrying it through the error
// back-off instead (1 s, 2 s, 4 s, … up to a minute) costs a reconcile, a
// status write and an event per retry while the wave it belongs to is
// still being created, which is most of the reconciles of a large apply
// (BenchmarkScale). So the waiting sites mark the reconcile's context with
// Wait, and the controller's reconciler (config.Reconciler) requeues a
// marked reconcile once, after a fixed delay, rather than with back-off.

type noteKey struct{}

// A Note records whether a reconcile stopped to wait for another object.
type Note struct{ waiting atomic.Bool }

// Waiting reports whether a waiting site marked the reconcile.
func (n *Note) Waiting() bool { return n != nil && n.waiting.Load() }

// WithNote returns a context whose reconcile can be marked as waiting, and
// the Note that records it.
func WithNote(ctx context.Context) (context.Context, *Note) {
	n := &Note{}
	return context.WithValue(ctx, noteKey{}, n), n
}

// Wait marks ctx's reconcile (if it carries a Note) as waiting for another
// object to exist, and returns err, the message that says for what.
func Wait(ctx context.Context, err error) error {
	if n, ok := ctx.Value(noteKey{}).(*Note); ok && err != nil {
		n.waiting.Store(true)
	}
	return err
}
