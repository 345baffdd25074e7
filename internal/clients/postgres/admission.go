package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// ErrDatabaseBusy says that as many reconciles as a database may hold are at work
// in it already; this one is retried with back-off.
var ErrDatabaseBusy = errors.New("database busy")

// enterWait is how long a reconcile waits for its turn in a database
// before it gives its worker back. The objects of a database are polled
// together and take turns on its session in milliseconds; a turn that
// takes longer is waiting on something in the database, a lock most
// likely.
const enterWait = 250 * time.Millisecond

// admission bounds the reconciles at work in each database other than an
// Instance's own, so that one database, whatever its owner does in it,
// holds a bounded share of every controller's workers: its pool's
// sessions plus one waiting for them.
type admission struct {
	mu    sync.Mutex
	slots map[string]chan struct{}
	busy  int64
	// logins counts the connections logging in to each database.
	logins map[string]int
}

// databaseKey is the key of t's database in admission.
func databaseKey(t Target) string { return t.InstanceUID + "\x00" + t.Endpoint.Database }

// login records a connection starting (+1) or ending (-1) its login to
// the database of key.
func (a *admission) login(key string, delta int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.logins == nil {
		a.logins = map[string]int{}
	}
	if a.logins[key] += delta; a.logins[key] <= 0 {
		delete(a.logins, key)
	}
}

// loggingIn says whether a connection is logging in to the database of
// key.
func (a *admission) loggingIn(key string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.logins[key] > 0
}

func (a *admission) slot(key string, size int) chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.slots == nil {
		a.slots = map[string]chan struct{}{}
	}
	s, ok := a.slots[key]
	if !ok {
		s = make(chan struct{}, size)
		a.slots[key] = s
	}
	return s
}

// Enter admits a reconcile to work in t's database and returns the
// function that lets it go; a database of the Instance's own is not
// bounded. When the database holds its share of reconciles for longer
// than enterWait while no connection waits for a slot under the cap or
// logs in to the database, Enter returns ErrDatabaseBusy at once rather than tie the caller's
// worker to a database that may be stalled.
func (r *Registry) Enter(ctx context.Context, t Target) (func(), error) {
	if !t.inTenantDatabase() {
		return func() {}, nil
	}
	size := int(r.opts.MaxConnsPerDatabase) + 1
	key := databaseKey(t)
	s := r.admit.slot(key, size)
	wait := time.NewTimer(enterWait)
	defer wait.Stop()
	for {
		select {
		case s <- struct{}{}:
			return sync.OnceFunc(func() { <-s }), nil
		case <-wait.C:
			if r.slots.queued() > 0 || r.admit.loggingIn(key) {
				// Connections wait for a slot under the cap
				// (--max-conns), or one is logging in to the database:
				// those at work in it are not held by the database but
				// by the provider or the server being busy (a login
				// through a checkpoint's I/O takes longer than a turn),
				// and turning this one away would only fail it and
				// write its status twice (at 5,000 objects, a poll of
				// every object of a database at once often waits so).
				wait.Reset(enterWait)
				continue
			}
			r.admit.mu.Lock()
			r.admit.busy++
			r.admit.mu.Unlock()
			return nil, errors.Errorf("%w: %d reconciles have been at work in database %q for over %s, waiting on it (a lock held in it, most likely); "+
				"this one gives its worker to other databases and is retried", ErrDatabaseBusy, size, t.Endpoint.Database, enterWait)
		case <-ctx.Done():
			return nil, errors.Wrapf(ctx.Err(), "cannot wait for a turn in database %q", t.Endpoint.Database)
		}
	}
}

// BusyRefusals returns how many reconciles Enter turned away.
func (r *Registry) BusyRefusals() int64 {
	r.admit.mu.Lock()
	defer r.admit.mu.Unlock()
	return r.admit.busy
}
