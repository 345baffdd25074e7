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
	// checked is what the server last said of each database: whether the
	// provider's sessions in it wait on a lock (Registry.stalled).
	checked map[string]lockCheck
}

// A lockCheck is what the server said of a database at a moment.
type lockCheck struct {
	at      time.Time
	stalled bool
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
// bounded. When the database has held its share of reconciles for longer
// than enterWait and the provider's sessions in it wait on a lock there,
// Enter returns ErrDatabaseBusy rather than tie the caller's worker to a
// stalled database. Those at work taking long for any other reason (a
// connection waiting for a slot under the cap or logging in, a statement
// slowed by a checkpoint's I/O) is progress: it waits on.
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
			if r.slots.queued() > 0 || r.admit.loggingIn(key) || !r.stalled(ctx, t, key) {
				// Connections wait for a slot under the cap
				// (--max-conns), or one is logging in to the database:
				// those at work in it are not held by the database but
				// by the provider or the server being busy (a login
				// through a checkpoint's I/O takes longer than a turn),
				// and turning this one away would only fail it and
				// write its status twice (at 5,000 objects, a poll of
				// every object of a database at once often waits so).
				// Likewise when the server says none of the provider's
				// sessions in the database waits on a lock.
				wait.Reset(enterWait)
				continue
			}
			r.admit.mu.Lock()
			r.admit.busy++
			r.admit.mu.Unlock()
			return nil, errors.Errorf("%w: %d reconciles have been at work in database %q for over %s, and the provider's sessions there wait on a lock "+
				"(a transaction or an advisory lock held in it; or the server did not say within %s); this one gives its worker to other databases and is retried",
				ErrDatabaseBusy, size, t.Endpoint.Database, enterWait, lockCheckTimeout)
		case <-ctx.Done():
			return nil, errors.Wrapf(ctx.Err(), "cannot wait for a turn in database %q", t.Endpoint.Database)
		}
	}
}

// lockCheckTimeout bounds the question stalled asks of the server: a
// server that does not answer in it counts as stalling the database.
const lockCheckTimeout = time.Second

// stalled reports whether the provider's sessions in t's database wait on
// a lock there (a tenant's open transaction, an advisory lock): sessions
// of the admin, named as the provider's, waiting for a heavyweight lock.
// It asks the server through the Instance's own database, at most once
// per enterWait for each database, and says yes when it cannot ask (no
// home database, no answer within lockCheckTimeout): the database is then
// turned away from as before.
func (r *Registry) stalled(ctx context.Context, t Target, key string) bool {
	r.admit.mu.Lock()
	if c, ok := r.admit.checked[key]; ok && time.Since(c.at) < enterWait {
		r.admit.mu.Unlock()
		return c.stalled
	}
	r.admit.mu.Unlock()
	stalled := true
	if t.HomeDatabase != "" {
		home := t
		home.Endpoint.Database = t.HomeDatabase
		ctx, cancel := context.WithTimeout(ctx, lockCheckTimeout)
		defer cancel()
		if p, err := r.Pool(ctx, home); err == nil {
			var waiting int
			err := p.QueryRow(ctx, "SELECT pg_catalog.count(*) FROM pg_catalog.pg_stat_activity WHERE datname = $1 AND usename = CURRENT_USER AND application_name = $2 AND wait_event_type = 'Lock'",
				t.Endpoint.Database, ApplicationName).Scan(&waiting)
			stalled = err != nil || waiting > 0
		}
	}
	r.admit.mu.Lock()
	defer r.admit.mu.Unlock()
	if r.admit.checked == nil {
		r.admit.checked = map[string]lockCheck{}
	}
	if len(r.admit.checked) > 256 {
		// What is past its use: databases once contended, some dropped.
		for k, c := range r.admit.checked {
			if time.Since(c.at) >= enterWait {
				delete(r.admit.checked, k)
			}
		}
	}
	r.admit.checked[key] = lockCheck{at: time.Now(), stalled: stalled}
	return stalled
}

// BusyRefusals returns how many reconciles Enter turned away.
func (r *Registry) BusyRefusals() int64 {
	r.admit.mu.Lock()
	defer r.admit.mu.Unlock()
	return r.admit.busy
}
