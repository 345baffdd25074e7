package postgres

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	xperrors "github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// TestGuardAndGrantAreOneDecision is the race a namespace would try: it
// asks for membership of a role that does not exist yet, under the name
// another namespace's role is about to get. The check passes (no such
// role: no one's), and the role is created, by another of the provider's
// sessions, between the check and the GRANT. The GRANT must never make
// the member a member of the other namespace's role: the creation waits
// for the name's lock (Registry.LockRoleNames), held by the guarded
// transaction, whose GRANT then finds no role.
func TestGuardAndGrantAreOneDecision(t *testing.T) {
	suite.Versions(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := NewRegistry(RegistryOptions{MaxConnsPerPool: 4, MaxConns: 8})
	defer r.Close()
	tg := target("uid-guard", "postgres")
	p, err := r.Pool(ctx, tg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Exec(ctx, "CREATE ROLE guard_member"); err != nil {
		t.Fatal(err)
	}
	// The boundary's rule for a role: none of that name yet, or one
	// carrying this namespace's marker.
	guard := func(group string) func(TxQuerier) error {
		return func(q TxQuerier) error {
			var marker *string
			err := q.QueryRow(ctx, `SELECT pg_catalog.shobj_description(oid, 'pg_authid') FROM pg_catalog.pg_roles WHERE rolname = $1`, group).Scan(&marker)
			if err != nil && err.Error() == "no rows in result set" {
				return nil
			}
			if err != nil {
				return err
			}
			if _, m := ParseMarker(*marker); m.UID != "mine" {
				return xperrors.Errorf("role %q belongs to %q", group, m.UID)
			}
			return nil
		}
	}
	defer afterGuard.Store(nil)
	for round := range 20 {
		group := fmt.Sprintf("guard_victim_%d", round)
		var wg sync.WaitGroup
		var created error
		hook := func() {
			// Another namespace's role of that name, created now by
			// another session of the provider.
			wg.Add(1)
			go func() {
				defer wg.Done()
				unlock, err := r.LockRoleNames(ctx, tg, []string{group})
				if err != nil {
					created = err
					return
				}
				defer unlock()
				created = Exec(ctx, p, CreateRoleStatements(group, DefaultRoleAttributes(), "", Mark{UID: "theirs"}))
			}()
			time.Sleep(100 * time.Millisecond)
		}
		afterGuard.Store(&hook)
		unlock, err := r.LockRoleNames(ctx, tg, []string{group})
		if err != nil {
			t.Fatal(err)
		}
		grantErr := ExecGuarded(ctx, p, guard(group), []string{"GRANT " + QuoteIdentifier(group) + " TO guard_member"})
		unlock()
		wg.Wait()
		if created != nil {
			t.Fatalf("round %d: the other namespace's role was not created: %v", round, created)
		}
		var member bool
		if err := p.QueryRow(ctx, "SELECT pg_catalog.pg_has_role('guard_member', $1, 'MEMBER')", group).Scan(&member); err != nil {
			t.Fatal(err)
		}
		if member {
			t.Fatalf("round %d: guard_member became a member of another namespace's role %s (grant error: %v)", round, group, grantErr)
		}
		if grantErr == nil {
			t.Fatalf("round %d: the GRANT of a role that did not exist at the check succeeded", round)
		}
	}
	if n := r.roles.heldRoleNames(); n != 0 {
		t.Errorf("%d role names are still locked or waited for after every round: the registry keeps locks nobody holds", n)
	}
}
