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
//
// How long that delay is depends on what is awaited. A managed resource
// of the namespace that is not created or not observed yet (Awaited)
// wakes its waiters through the watches the moment it is observed, so
// the delay only guards against a lost event and is long: looking every
// minute instead cost each schema, grant and default privileges of a
// 5,000-object apply two to four reconciles more while their database
// queued, which made a large apply slower per object than a small one.
// An object on the server that no managed resource stands for (a
// database or role named directly, which someone may create by hand)
// wakes nothing: its waiters look again after the short delay.

type noteKey struct{}

// A Note records whether a reconcile stopped to wait for another object,
// and whether that object's observation wakes it.
type Note struct{ waiting, woken atomic.Bool }

// Waiting reports whether a waiting site marked the reconcile.
func (n *Note) Waiting() bool { return n != nil && n.waiting.Load() }

// Woken reports whether every wait marked was for a managed resource
// whose observation wakes the reconcile (Awaited).
func (n *Note) Woken() bool { return n.Waiting() && n.woken.Load() }

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
		n.woken.Store(false)
	}
	return err
}

// Awaited is Wait for a managed resource of the namespace that has not
// observed its object yet: WakeWaiting's watches reconcile ctx's resource
// again when it does.
func Awaited(ctx context.Context, err error) error {
	if n, ok := ctx.Value(noteKey{}).(*Note); ok && err != nil {
		if !n.waiting.Load() {
			n.woken.Store(true)
		}
		n.waiting.Store(true)
	}
	return err
}
