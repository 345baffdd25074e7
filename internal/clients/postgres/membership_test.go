package postgres

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestActingAsSharesMemberships: a non-superuser CREATEROLE admin (what
// managed services give) acting as one role from several sessions at once,
// as the schema, grant and default privileges controllers do for one
// owner, never has the temporary membership revoked under another's
// statement, and holds none once all are done. Each ActingAs used to grant
// and revoke its own: the first to finish revoked it for all, and the
// others failed ("must be member of role", "permission denied for
// schema" in the controllers; here 13 of 90 failed, their grants too); a
// managed-admin run of TestCreatesGoStraightToAvailable failed about one
// time in three.
func TestActingAsSharesMemberships(t *testing.T) {
	suite.Versions(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := adminConn(ctx, t)
	if _, err := admin.Exec(ctx, "CREATE ROLE acting_admin LOGIN CREATEDB CREATEROLE PASSWORD 'pw-acting'"); err != nil {
		t.Fatal(err)
	}
	r := NewRegistry(RegistryOptions{MaxConnsPerPool: 4, MaxConnsPerDatabase: 4, MaxConns: 8})
	defer r.Close()
	pool := func(database string) Execer {
		tg := target("uid-acting", database)
		tg.Credentials = Credentials{Username: "acting_admin", Password: "pw-acting"}
		p, err := r.Pool(ctx, tg)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Two pools of the same server: a membership is the server's.
	pools := []Execer{pool("postgres"), pool("template1")}
	// Created by the admin, as the provider creates tenants' roles: on 16+
	// that gives it ADMIN OPTION, and no SET or INHERIT.
	if _, err := pools[0].Exec(ctx, "CREATE ROLE acting_owner"); err != nil {
		t.Fatal(err)
	}
	// A table of the role's: reading it takes its privileges (INHERIT),
	// where SET ROLE takes SET: the two are one grant of the role, which
	// a user asking for more widens.
	if _, err := admin.Exec(ctx, "CREATE TABLE acting_t (); ALTER TABLE acting_t OWNER TO acting_owner"); err != nil {
		t.Fatal(err)
	}
	type work struct {
		need []RoleNeed
		db   Execer
		stmt string
	}
	works := []work{
		{need: []RoleNeed{{Role: "acting_owner", Set: true}}, db: pools[1], stmt: "SET ROLE acting_owner; SELECT pg_sleep(0.002); RESET ROLE"},
		{need: []RoleNeed{{Role: "acting_owner", Inherit: true}}, db: pools[0], stmt: "SELECT count(*), pg_sleep(0.002) FROM public.acting_t"},
		{need: []RoleNeed{{Role: "acting_owner", Set: true, Inherit: true}}, db: pools[0], stmt: "SET ROLE acting_owner; SELECT pg_sleep(0.002); RESET ROLE"},
	}

	const workers, rounds = 6, 15
	var mu sync.Mutex
	var failures []string
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wk := works[w%len(works)]
			for i := range rounds {
				err := ActingAs(ctx, wk.db, wk.need, func() error {
					// What needs the membership, held for a moment as a
					// statement of a controller is.
					_, err := wk.db.Exec(ctx, wk.stmt)
					return err
				})
				if err != nil {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("worker %d round %d: %v", w, i, err))
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for i, f := range failures {
		if i == 5 {
			t.Errorf("... %d failures in all", len(failures))
			break
		}
		t.Error(f)
	}

	// Nothing is left: the admin may neither SET ROLE to it nor use its
	// privileges any more.
	for _, n := range []RoleNeed{{Set: true}, {Inherit: true}} {
		var held, leftover bool
		var version int
		if err := pools[0].QueryRow(ctx, hasNeedSQL, "acting_owner", n.Set, n.Inherit).Scan(&held, &version, &leftover); err != nil {
			t.Fatal(err)
		}
		if held {
			t.Errorf("the admin still holds the temporary membership of acting_owner (%+v)", n)
		}
	}
	memberships.mu.Lock()
	left := len(memberships.held)
	memberships.mu.Unlock()
	if left != 0 {
		t.Errorf("%d temporary memberships still tracked, want none", left)
	}
}

// TestActingAsRevokesALeftover: a provider killed between granting its
// admin a temporary membership and revoking it leaves the membership
// behind. The next ActingAs of that role, in a provider started afresh,
// takes it as its own and revokes it when done; a membership the platform
// gave the admin (granted by someone else) is left alone.
func TestActingAsRevokesALeftover(t *testing.T) {
	suite.Versions(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := adminConn(ctx, t)
	if _, err := admin.Exec(ctx, "CREATE ROLE leftover_admin LOGIN CREATEDB CREATEROLE PASSWORD 'pw-leftover'"); err != nil {
		t.Fatal(err)
	}
	r := NewRegistry(RegistryOptions{MaxConnsPerPool: 2, MaxConnsPerDatabase: 2, MaxConns: 4})
	defer r.Close()
	tg := target("uid-leftover", "postgres")
	tg.Credentials = Credentials{Username: "leftover_admin", Password: "pw-leftover"}
	p, err := r.Pool(ctx, tg)
	if err != nil {
		t.Fatal(err)
	}
	var version int
	if err := p.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		t.Fatal(err)
	}
	need := RoleNeed{Role: "leftover_owner", Set: true, Inherit: true}
	grant, _ := MembershipGrants(need, version)
	for _, stmt := range []string{"CREATE ROLE leftover_owner", grant} {
		if _, err := p.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	// The platform's own role and grant: by the superuser, not by the
	// admin.
	if _, err := admin.Exec(ctx, "CREATE ROLE leftover_platform; GRANT leftover_platform TO leftover_admin"); err != nil {
		t.Fatal(err)
	}
	platform := RoleNeed{Role: "leftover_platform", Inherit: true}
	if err := ActingAs(ctx, p, []RoleNeed{need, platform}, func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	// What the Instance's poll does with the leftovers it lists.
	inheritOnly, _ := MembershipGrants(RoleNeed{Role: "leftover_swept", Inherit: true}, version)
	for _, stmt := range []string{"CREATE ROLE leftover_swept", inheritOnly} {
		if _, err := p.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	if err := RevokeLeftovers(ctx, p, []string{"leftover_swept"}); err != nil {
		t.Fatal(err)
	}
	for role, want := range map[string]bool{"leftover_owner": false, "leftover_platform": true, "leftover_swept": false} {
		var member bool
		if err := admin.QueryRow(ctx, "SELECT pg_has_role('leftover_admin', $1, 'USAGE')", role).Scan(&member); err != nil {
			t.Fatal(err)
		}
		if member != want {
			t.Errorf("after ActingAs, the admin holds %s's privileges: %v, want %v", role, member, want)
		}
	}
}
