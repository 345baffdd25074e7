package postgres

import (
	"context"
	"net"
	"slices"
	"strconv"
	"sync"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// roleLocks serializes what the provider decides about a role name on one
// server: a check of whose a role is (the boundary's) and the GRANT or
// CREATE ROLE it allows run under the name's lock, so that no other of the
// provider's reconciles creates a role of that name in between.
//
// The lock lives in the provider, not on the server. It used to be an
// advisory lock in the maintenance database, which every login may connect
// to by default and where any session may take any key (pg_locks shows
// them): a tenant's login holding the key of a name another namespace was
// about to create kept that role from ever being created, and tied up the
// maintenance sessions every namespace's work goes through. Only one
// replica reconciles at a time (leader election), so the provider's own
// sessions are all the lock has to order; CREATE ROLE's own uniqueness and
// the ownership marker decide against anyone else.
type roleLocks struct {
	mu    sync.Mutex
	names map[string]*roleLock
}

// A roleLock is held by whoever took a token from it.
type roleLock struct {
	token chan struct{}
	users int
}

// roleServer keys a server's role names: roles are shared by every database
// of a server, and two Instances may reach the same one.
func roleServer(t Target) string {
	return net.JoinHostPort(t.Endpoint.Hostaddr, strconv.Itoa(t.Endpoint.Port))
}

// LockRoleNames takes the provider's lock on each of names on t's server
// and returns the function that lets them go. Names are taken in order, so
// two callers never wait on each other crosswise. It waits as long as ctx
// allows: a holder only runs one short transaction.
func (r *Registry) LockRoleNames(ctx context.Context, t Target, names []string) (func(), error) {
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	server := roleServer(t)
	held := make([]string, 0, len(sorted))
	release := func() {
		for _, n := range held {
			r.roles.unlock(server + "\x00" + n)
		}
	}
	for _, n := range sorted {
		if err := r.roles.lock(ctx, server+"\x00"+n); err != nil {
			release()
			return nil, errors.Wrapf(err, "cannot take the provider's lock on role name %q", n)
		}
		held = append(held, n)
	}
	return sync.OnceFunc(release), nil
}

func (l *roleLocks) lock(ctx context.Context, key string) error {
	l.mu.Lock()
	if l.names == nil {
		l.names = map[string]*roleLock{}
	}
	rl, ok := l.names[key]
	if !ok {
		rl = &roleLock{token: make(chan struct{}, 1)}
		l.names[key] = rl
	}
	rl.users++
	l.mu.Unlock()
	select {
	case rl.token <- struct{}{}:
		return nil
	case <-ctx.Done():
		l.done(key, rl)
		return ctx.Err()
	}
}

func (l *roleLocks) unlock(key string) {
	l.mu.Lock()
	rl := l.names[key]
	l.mu.Unlock()
	<-rl.token
	l.done(key, rl)
}

// done forgets a lock nobody holds or waits for, so that the map holds
// only the names at work.
func (l *roleLocks) done(key string, rl *roleLock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if rl.users--; rl.users == 0 {
		delete(l.names, key)
	}
}

// heldRoleNames returns how many names are locked or waited for.
func (l *roleLocks) heldRoleNames() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.names)
}
