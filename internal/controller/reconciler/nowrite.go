package reconciler

import (
	"context"
	"reflect"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
)

// crossplane-runtime's managed reconciler writes a resource's status at the
// end of every reconcile, a poll of an up-to-date resource included. The
// API server answers a write that changes nothing without storing it, but
// still serves it in full (decoding, admission, conversion): at 5,000
// resources polled once a minute, 83 requests a second that change nothing,
// and most of a wave's status writes. unchangedStatus lets the manager's
// client skip such a write: the object is exactly as the cache holds it, at
// the version the cache holds.
//
// The cache may lag behind the provider's own last write of the object (a
// reconcile may start from the version before it). The server would then
// refuse the write as a conflict, and the reconcile would run again on the
// newer version; skipping it would leave the older answer standing. So a
// write is skipped only once the cache shows the provider's last write of
// that object (writeLedger). A write by anyone else brings an event that
// reconciles the object again anyway.

// ledgerSweepAfter is how long a write stays in the ledger once recorded:
// by then the cache has seen it, or the object is gone.
const ledgerSweepAfter = 5 * time.Minute

// A writeLedger holds, for each object the provider wrote, the
// resourceVersion its last write returned, until the cache shows it.
type writeLedger struct {
	mu        sync.Mutex
	last      map[types.UID]written
	swept     time.Time
	now       func() time.Time
	sweepSize int
}

type written struct {
	version string
	// replaced are the versions the provider's own consecutive writes
	// replaced, the one just before version last: a cache that shows
	// one of them has not yet seen version.
	replaced []string
	at       time.Time
}

// maxReplaced bounds the versions a ledger entry remembers.
const maxReplaced = 8

func newWriteLedger(now func() time.Time) *writeLedger {
	return &writeLedger{last: map[types.UID]written{}, now: now, sweepSize: 1024}
}

// wrote records a successful write of o, made from version base of it.
func (l *writeLedger) wrote(o client.Object, base string) {
	if o.GetUID() == "" || o.GetResourceVersion() == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	w := written{version: o.GetResourceVersion(), at: now}
	if base != "" && base != w.version {
		// A write made from the provider's own last one extends what the
		// cache may still show; one made from another version starts over.
		if prev, ok := l.last[o.GetUID()]; ok && prev.version == base {
			w.replaced = append(w.replaced, prev.replaced[max(0, len(prev.replaced)-maxReplaced+1):]...)
		}
		w.replaced = append(w.replaced, base)
	}
	l.last[o.GetUID()] = w
	// Entries of objects deleted since are dropped now and then, so the
	// ledger stays the size of a few minutes of writes.
	if len(l.last) >= l.sweepSize && now.Sub(l.swept) > time.Minute {
		for uid, w := range l.last {
			if now.Sub(w.at) > ledgerSweepAfter {
				delete(l.last, uid)
			}
		}
		l.swept = now
	}
}

// settled reports whether the cache, holding uid at version, shows the
// provider's last write of it (or there was none to wait for).
func (l *writeLedger) settled(uid types.UID, version string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	w, ok := l.last[uid]
	if !ok {
		return true
	}
	if w.version != version {
		return false
	}
	delete(l.last, uid)
	return true
}

// behind reports whether the cache, holding uid at version, shows a
// version that the provider's own last writes of it replaced.
func (l *writeLedger) behind(uid types.UID, version string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	w, ok := l.last[uid]
	return ok && slices.Contains(w.replaced, version)
}

// maxCatchUp bounds how long a read waits for the cache to show the
// provider's own last write of an object: far longer than an informer
// takes, short of conflictRetry.
const maxCatchUp = 500 * time.Millisecond

// catchUp, given o as just read from the cache, reads it again with get
// until the cache no longer shows a version that the provider's own last
// write replaced, or maxCatchUp has passed; it then returns what get last
// read (the older version if the wait ran out).
//
// A reconcile often starts at once after the one before it: the event of
// one of that reconcile's own writes queued it while it ran. The cache
// may not yet show the last of those writes, usually the status; the
// reconcile would then observe PostgreSQL and write its status from the
// version before, and the API server would refuse it as a conflict, to be
// retried a second later (conflictRetry). In a wave of 200 new roles and
// databases 0.34 writes per object were refused so. Only a version the provider itself
// replaced is waited out: the cache holding it is certain to be behind,
// whatever the cache holds otherwise (a write by anyone else included)
// is read at once.
func (l *writeLedger) catchUp(ctx context.Context, o client.Object, get func() error) error {
	if !l.behind(o.GetUID(), o.GetResourceVersion()) {
		return nil
	}
	deadline := time.Now().Add(maxCatchUp)
	for step := time.Millisecond; ; step = min(2*step, 20*time.Millisecond) {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(step):
		}
		if err := get(); err != nil {
			return err
		}
		if !l.behind(o.GetUID(), o.GetResourceVersion()) || time.Now().After(deadline) {
			return nil
		}
	}
}

// unchangedStatus reports whether writing o's status would change nothing:
// o is a managed resource, the cache (read through c) holds it at o's
// resourceVersion, that version is the provider's last write of it, and o
// equals the cached object in every field.
func unchangedStatus(ctx context.Context, c client.Reader, l *writeLedger, o client.Object) bool {
	if _, ok := o.(resource.Managed); !ok || o.GetResourceVersion() == "" {
		return false
	}
	cur, ok := reflect.New(reflect.TypeOf(o).Elem()).Interface().(client.Object)
	if !ok {
		return false
	}
	// Read only: compared, never changed or kept.
	if err := c.Get(ctx, client.ObjectKeyFromObject(o), cur, client.UnsafeDisableDeepCopy); err != nil {
		return false
	}
	if cur.GetUID() != o.GetUID() || cur.GetResourceVersion() != o.GetResourceVersion() || !l.settled(o.GetUID(), o.GetResourceVersion()) {
		return false
	}
	// The cache sets the kind on what it returns; o may not have it.
	cur.GetObjectKind().SetGroupVersionKind(o.GetObjectKind().GroupVersionKind())
	return equality.Semantic.DeepEqual(o, cur)
}

// UncopiedLists lists from the cache without copying what it holds. The
// state metrics recorder lists every managed resource of its kind at each
// interval and only counts their conditions: with copies, 5,000 objects
// every 5 s were a thousand deep copies a second, and a sixth of the live
// heap at any moment (a heap profile at 5,000 objects).
type UncopiedLists struct{ client.Client }

// List lists without copying what the cache holds.
func (c UncopiedLists) List(ctx context.Context, l client.ObjectList, opts ...client.ListOption) error {
	return c.Client.List(ctx, l, append(opts, client.UnsafeDisableDeepCopy)...)
}
