package postgres

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

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
// may SET ROLE to it (16+) or is its member (up to 15).
const hasNeedSQL = `SELECT r.rolsuper OR ((NOT $2 OR CASE WHEN current_setting('server_version_num')::int >= 160000
                                              THEN pg_has_role(current_user, $1, 'SET')
                                              ELSE pg_has_role(current_user, $1, 'MEMBER') END)
                         AND (NOT $3 OR pg_has_role(current_user, $1, 'USAGE'))),
       current_setting('server_version_num')::int
  FROM pg_roles r WHERE r.rolname = current_user`

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
func ActingAs(ctx context.Context, db Execer, needs []RoleNeed, fn func() error) error {
	var revokes []string
	defer func() {
		// Revoked even when the reconcile was cancelled.
		for _, r := range revokes {
			rctx, cancel := cleanupContext(ctx)
			_, _ = db.Exec(rctx, r)
			cancel()
		}
	}()
	for _, n := range needs {
		if n.Role == "" {
			continue
		}
		var ok bool
		var version int
		if err := db.QueryRow(ctx, hasNeedSQL, n.Role, n.Set, n.Inherit).Scan(&ok, &version); err != nil {
			return xperrors.Wrapf(describePgError(err), "cannot read whether the admin may act as role %s", QuoteIdentifier(n.Role))
		}
		if ok {
			continue
		}
		grant, revoke := MembershipGrants(n, version)
		if _, err := db.Exec(ctx, grant); err != nil {
			return xperrors.Wrapf(describePgError(err), "the admin may not act as role %s and cannot grant itself membership of it: it needs SUPERUSER, or CREATEROLE "+
				"(and on PostgreSQL 16+ ADMIN OPTION on the role, which it has on roles it created)", QuoteIdentifier(n.Role))
		}
		revokes = append(revokes, revoke)
	}
	err := fn()
	var failed []string
	for _, r := range revokes {
		rctx, cancel := cleanupContext(ctx)
		if _, rerr := db.Exec(rctx, r); rerr != nil {
			failed = append(failed, describePgError(rerr).Error())
		}
		cancel()
	}
	revokes = nil
	if len(failed) > 0 {
		err = xperrors.Join(err, xperrors.Errorf("cannot revoke the admin's temporary membership: %s", strings.Join(failed, "; ")))
	}
	return err
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
