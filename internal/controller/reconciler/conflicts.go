package reconciler

import (
	"context"
	"sync/atomic"
	"time"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// conflictRetry is how soon a reconcile that lost a write to a newer
// version of its object runs again: the first step of the error back-off,
// whatever step the object's back-off had reached.
//
// A conflict is no failure: the provider read its object from a cache
// that had not yet seen a newer version, most often its own status write
// of the reconcile before. crossplane-runtime answers it with a
// rate-limited requeue (Requeue: true) and counts on the event of the
// newer version to retry at once. OwnChanges drops that event when only
// the status changed, so the retry would wait for the back-off, which
// earlier failures of the same object (a refusal, a missing reference)
// may have grown to a minute: an object just created then stayed Creating
// that long (a CI run of TestHostileNamespace caught it).
const conflictRetry = time.Second

// A conflictNote records whether a reconcile's writes met a conflict.
type conflictNote struct{ seen atomic.Bool }

type conflictNoteKey struct{}

// withConflictNote returns a context whose writes through a client from
// NewClient record their conflicts, and the note that holds them.
func withConflictNote(ctx context.Context) (context.Context, *conflictNote) {
	n := &conflictNote{}
	return context.WithValue(ctx, conflictNoteKey{}, n), n
}

func (n *conflictNote) conflicted() bool { return n != nil && n.seen.Load() }

// noteConflict records err in ctx's note when it is a conflict, and
// returns it unchanged.
func noteConflict(ctx context.Context, err error) error {
	if kerrors.IsConflict(err) {
		if n, ok := ctx.Value(conflictNoteKey{}).(*conflictNote); ok {
			n.seen.Store(true)
		}
	}
	return err
}

// NewClient is the manager's client: controller-runtime's, whose writes
// note their conflicts in the reconcile's context (see conflictRetry), and
// which does not send a managed resource's status write that would change
// nothing (unchangedStatus). It is built as client.New builds it for the
// options the provider passes (ClientOptions: no dry run, field owner or
// validation).
func NewClient(cfg *rest.Config, o client.Options) (client.Client, error) {
	c, err := client.NewWithWatch(cfg, o)
	if err != nil {
		return nil, errors.Wrap(err, "cannot create the manager's client")
	}
	return notingConflicts(c, newWriteLedger(time.Now)), nil
}

// generationStamper is a kind whose status records the generation it
// describes (v1alpha1's StampGeneration).
type generationStamper interface{ StampGeneration() }

// notingConflicts wraps c so that its updates and patches, of objects and
// of their status, note their conflicts in the caller's context and their
// results in l, a status update that would change nothing, or that records
// a create the observation will follow at once (deferCreating), is not
// sent, and a read from a cache that has not yet seen the provider's own last
// write of the object waits a moment for it (writeLedger.catchUp).
func notingConflicts(c client.WithWatch, l *writeLedger) client.WithWatch {
	done := func(ctx context.Context, o client.Object, base string, err error) error {
		if err == nil {
			l.wrote(o, base)
		}
		return noteConflict(ctx, err)
	}
	return interceptor.NewClient(c, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, o, opts...); err != nil {
				return err
			}
			return l.catchUp(ctx, o, func() error { return c.Get(ctx, key, o, opts...) })
		},
		Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
			base := o.GetResourceVersion()
			if err := done(ctx, o, base, c.Update(ctx, o, opts...)); err != nil {
				return err
			}
			pendingWritten(ctx, o)
			return nil
		},
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			base := o.GetResourceVersion()
			return done(ctx, o, base, c.Patch(ctx, o, p, opts...))
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, o client.Object, opts ...client.SubResourceUpdateOption) error {
			// A status written in a reconcile describes the generation the
			// reconcile read, failures included, and so does each of its
			// conditions: crossplane-runtime stamps only those it sets
			// itself, not the Ready condition an external client sets.
			if s, ok := o.(generationStamper); ok && sub == "status" {
				s.StampGeneration()
			}
			if sub == "status" && len(opts) == 0 && (unchangedStatus(ctx, c, l, o) || deferCreating(ctx, o)) {
				return nil
			}
			base := o.GetResourceVersion()
			return done(ctx, o, base, c.SubResource(sub).Update(ctx, o, opts...))
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			base := o.GetResourceVersion()
			return done(ctx, o, base, c.SubResource(sub).Patch(ctx, o, p, opts...))
		},
	})
}
