package postgres

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	xperrors "github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// A RoleNeed is what statements ask of the session user about one role.
type RoleNeed struct {
	Role string
	// Set: the user must be able to SET ROLE to it (up to 15: be a
	// member), to make it an object's owner (CREATE DATABASE … OWNER,
	// ALTER … OWNER TO).
	Set bool
	// Inherit: the user must hold its privileges, to act as the owner of
	// what it owns (ALTER DATABASE, COMMENT ON, REVOKE … FROM PUBLIC,
	// CREATE EXTENSION in it).
	Inherit bool
}

// hasNeedSQL reads whether the session user meets a need already: it is
// a superuser, or it holds the role's privileges (USAGE) and, where asked,
// may SET ROLE to it (16+) or is its member (up to 15). Then the server's
// version, and whether a non-superuser holds a membership of the role
// that it granted itself (selfGrantedSQL): only ActingAs grants those, so
// one found before this process granted anything was left by a provider
// killed between its grant and its revoke.
const hasNeedSQL = `SELECT r.rolsuper OR ((NOT $2 OR CASE WHEN pg_catalog.current_setting('server_version_num')::pg_catalog.int4 >= 160000
                                              THEN pg_catalog.pg_has_role(current_user, $1, 'SET')
                                              ELSE pg_catalog.pg_has_role(current_user, $1, 'MEMBER') END)
                         AND (NOT $3 OR pg_catalog.pg_has_role(current_user, $1, 'USAGE'))),
       pg_catalog.current_setting('server_version_num')::pg_catalog.int4,
       NOT r.rolsuper AND EXISTS (SELECT FROM ` + selfGrantedSQL + ` AND g.rolname = $1)
  FROM pg_catalog.pg_roles r WHERE r.rolname = current_user`

// selfGrantedSQL selects, as m and g, the memberships of role r in roles g
// that r granted itself with INHERIT or SET (16+; their option columns
// are read through to_jsonb so that the query parses on 15): what
// ActingAs grants a non-superuser admin for the length of a step.
const selfGrantedSQL = `pg_catalog.pg_auth_members m JOIN pg_catalog.pg_roles g ON g.oid = m.roleid
                 WHERE m.member = r.oid AND m.grantor = r.oid
                   AND coalesce((pg_catalog.to_jsonb(m)->>'inherit_option')::pg_catalog.bool OR (pg_catalog.to_jsonb(m)->>'set_option')::pg_catalog.bool, true)`

// An Execer runs statements outside a transaction and reads rows.
type Execer interface {
	Querier
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// ActingAs runs fn with the memberships PostgreSQL asks of the session
// user for what fn does to the roles in needs. A superuser, or an admin
// that has them already, runs fn at once. A non-superuser admin with
// CREATEROLE, as managed services give, is granted each missing one for fn
// alone, with only the options it needs on 16+ (SET to give ownership,
// INHERIT to act as an owner), and every grant is revoked afterwards, even
// when fn fails: the admin does not accumulate tenants' roles.
//
// A membership belongs to the server, not to a session, and the
// controllers act on one role from several sessions at once (a schema
// owned by a role, its default privileges, a grant on it). So the
// temporary memberships are shared (memberships): the first ActingAs of a
// role on a server grants it, the last one revokes it, and one that
// starts while another's revoke is under way waits for it and grants
// again. Revoked by whoever finished first, the membership vanished under
// the others' statements ("must be member of role", "permission denied
// for schema"), failing a create on a managed server now and then.
func ActingAs(ctx context.Context, db Execer, needs []RoleNeed, fn func() error) error {
	var held []*membership
	defer func() {
		// Given back even when the reconcile was cancelled.
		for _, m := range held {
			_ = m.release(ctx, db)
		}
	}()
	for _, n := range needs {
		if n.Role == "" {
			continue
		}
		m, err := memberships.acquire(ctx, db, n)
		if err != nil {
			return err
		}
		held = append(held, m)
	}
	err := fn()
	var failed []string
	for _, m := range held {
		if rerr := m.release(ctx, db); rerr != nil {
			failed = append(failed, rerr.Error())
		}
	}
	held = nil
	if len(failed) > 0 {
		err = xperrors.Join(err, xperrors.Errorf("cannot revoke the admin's temporary membership: %s", strings.Join(failed, "; ")))
	}
	return err
}

// RevokeLeftovers revokes the temporary memberships of roles (found by
// ObserveServer as LeftoverMemberships) that a provider killed between
// ActingAs's grant and its revoke left its admin, unless this process is
// using one of them at the moment: then its last user revokes it.
func RevokeLeftovers(ctx context.Context, db Execer, roles []string) error {
	var errs []error
	for _, r := range roles {
		// Asking for neither option: the leftover is taken over as it
		// is, and never widened before it is revoked.
		errs = append(errs, ActingAs(ctx, db, []RoleNeed{{Role: r}}, func() error { return nil }))
	}
	return xperrors.Join(errs...)
}

// memberships are the temporary memberships ActingAs holds, process-wide.
var memberships = &membershipTable{held: map[membershipKey]*membership{}}

// A membershipKey names one role's membership for one admin on one
// server.
type membershipKey struct {
	server, user, role string
}

type membershipTable struct {
	mu   sync.Mutex
	held map[membershipKey]*membership
}

// A membership is one temporary membership and its users.
type membership struct {
	table *membershipTable
	key   membershipKey
	// users is guarded by table.mu.
	users int
	// mu is held while the membership is checked and granted, or revoked;
	// it guards ready and revoke.
	mu sync.Mutex
	// ready: need checked, and granted where it was missing.
	ready bool
	// need is what the users so far asked for: a later user that asks for
	// more (SET where INHERIT was granted) has the grant widened, since
	// the admin's one grant of the role carries both options.
	need RoleNeed
	// revoke gives back what was granted ("" when the admin held it).
	revoke string
}

// acquire returns n's membership for the session user of db, granted if
// it was missing and no other ActingAs holds it.
func (t *membershipTable) acquire(ctx context.Context, db Execer, n RoleNeed) (*membership, error) {
	k := membershipKey{role: n.Role}
	k.server, k.user = serverOf(db)
	t.mu.Lock()
	m := t.held[k]
	if m == nil {
		m = &membership{table: t, key: k}
		t.held[k] = m
	}
	m.users++
	t.mu.Unlock()

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ready && (m.need.Set || !n.Set) && (m.need.Inherit || !n.Inherit) {
		return m, nil
	}
	if m.ready {
		n = RoleNeed{Role: n.Role, Set: n.Set || m.need.Set, Inherit: n.Inherit || m.need.Inherit}
	}
	var ok, leftover bool
	var version int
	err := db.QueryRow(ctx, hasNeedSQL, n.Role, n.Set, n.Inherit).Scan(&ok, &version, &leftover)
	if err == nil && ok && leftover {
		// A temporary membership a killed provider could not revoke:
		// used as this one's, and revoked with it.
		_, m.revoke = MembershipGrants(n, version)
	} else if err == nil && !ok {
		grant, revoke := MembershipGrants(n, version)
		beforeStatement()
		if _, gerr := db.Exec(ctx, grant); gerr != nil {
			err = xperrors.Wrapf(describePgError(gerr), "the admin may not act as role %s and cannot grant itself membership of it: it needs SUPERUSER, or CREATEROLE "+
				"(and on PostgreSQL 16+ ADMIN OPTION on the role, which it has on roles it created)", QuoteIdentifier(n.Role))
		} else {
			m.revoke = revoke
		}
	} else if err != nil {
		err = xperrors.Wrapf(describePgError(err), "cannot read whether the admin may act as role %s", QuoteIdentifier(n.Role))
	}
	if err != nil {
		t.leave(m)
		t.forget(m)
		return nil, err
	}
	m.ready, m.need = true, n
	return m, nil
}

// release ends one use of m; the last one revokes what was granted. An
// acquire that starts meanwhile finds m, waits for the revoke (m.mu) and
// grants again; m leaves the table only once revoked and unused.
func (m *membership) release(ctx context.Context, db Execer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	defer m.table.forget(m)
	if !m.table.leave(m) || !m.ready {
		return nil
	}
	m.ready, m.need = false, RoleNeed{}
	revoke := m.revoke
	m.revoke = ""
	if revoke == "" {
		return nil
	}
	rctx, cancel := cleanupContext(ctx)
	defer cancel()
	beforeStatement()
	_, err := db.Exec(rctx, revoke)
	return describePgError(err)
}

// leave ends one use of m and reports whether it was the last.
func (t *membershipTable) leave(m *membership) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	m.users--
	return m.users == 0
}

// forget drops m from the table if no one uses it; the caller holds m.mu,
// having revoked what m granted.
func (t *membershipTable) forget(m *membership) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if m.users == 0 && t.held[m.key] == m {
		delete(t.held, m.key)
	}
}

// serverOf names the server and user db's sessions log in to, which a
// membership belongs to. An Execer that does not say shares memberships
// only with itself.
func serverOf(db Execer) (server, user string) {
	if p, ok := db.(interface{ Config() *pgxpool.Config }); ok {
		c := p.Config().ConnConfig
		return net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port))), c.User
	}
	if c, ok := db.(interface{ Config() *pgx.ConnConfig }); ok {
		cc := c.Config()
		return net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port))), cc.User
	}
	return fmt.Sprintf("%p", db), ""
}

// MembershipGrants returns the statements that grant the session user
// the temporary membership a need asks for, on a server of version
// (server_version_num), and revoke it.
func MembershipGrants(n RoleNeed, version int) (grant, revoke string) {
	id := QuoteIdentifier(n.Role)
	grant = "GRANT " + id + " TO CURRENT_USER"
	if version >= 160000 {
		grant += " WITH INHERIT " + strings.ToUpper(boolWord(n.Inherit)) + ", SET " + strings.ToUpper(boolWord(n.Set))
	}
	return grant, "REVOKE " + id + " FROM CURRENT_USER"
}

func boolWord(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
