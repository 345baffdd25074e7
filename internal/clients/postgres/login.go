package postgres

import (
	"context"
	"fmt"
	"strings"

	xperrors "github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// An ObservedLogin is a role as the catalog shows it, with the number of
// sessions logged in as it.
type ObservedLogin struct {
	Name string
	// Role is nil when the role does not exist.
	Role *ObservedRole
	// Sessions logged in as the role (pg_stat_activity.usename), the
	// observer's own excluded.
	Sessions int
}

// observeLoginsSQL reads roles by name, in the order given, with the
// sessions logged in as each, in one round trip.
const observeLoginsSQL = `SELECT n.name,
       ` + roleColumnsSQL + `,
       (SELECT pg_catalog.count(*) FROM pg_catalog.pg_stat_activity a WHERE a.usename = n.name AND a.pid <> pg_catalog.pg_backend_pid())
  FROM pg_catalog.unnest($1::pg_catalog.text[]) WITH ORDINALITY AS n(name, i)
  LEFT JOIN pg_catalog.pg_roles r ON r.rolname = n.name
 ORDER BY n.i`

var (
	observeLoginsQuery             = fmt.Sprintf(observeLoginsSQL, noVerifierSQL, "n.name")
	observeLoginsWithVerifierQuery = fmt.Sprintf(observeLoginsSQL, verifierSQL, "n.name")
)

// ObserveLogins reads the roles names in one round trip, in that order,
// each with its session count. With withVerifier (superuser only) their
// stored password verifiers are read too.
func ObserveLogins(ctx context.Context, q RowsQuerier, names []string, withVerifier bool) ([]ObservedLogin, error) {
	query := observeLoginsQuery
	if withVerifier {
		query = observeLoginsWithVerifierQuery
	}
	rows, err := q.Query(ctx, query, names)
	if err != nil {
		return nil, xperrors.Wrap(ClassifyConnectError(err), "cannot read the login roles")
	}
	defer rows.Close()
	out := make([]ObservedLogin, 0, len(names))
	for rows.Next() {
		var l ObservedLogin
		var s roleScan
		if err := rows.Scan(append(append([]any{&l.Name}, s.dest()...), &l.Sessions)...); err != nil {
			return nil, xperrors.Wrap(err, "cannot read a login role")
		}
		l.Role = s.role(withVerifier)
		out = append(out, l)
	}
	return out, xperrors.Wrap(rows.Err(), "cannot read the login roles")
}

// LoginAttributes are those of a login role that acts for role base,
// whose desired attributes are want: it logs in (or not), inherits base's
// privileges as its only membership, and its sessions start as base (SET
// role; or as the role base's settings name), so what they create is
// owned by base and stays usable by the other login. want's connection limit, expiry and settings apply to it,
// as they apply to sessions that log in.
func LoginAttributes(base string, want RoleAttributes, login bool) RoleAttributes {
	a := DefaultRoleAttributes()
	a.Login = login
	a.ConnectionLimit = want.ConnectionLimit
	a.ValidUntil = want.ValidUntil
	// Sessions act as base, unless base's own settings name the role its
	// sessions act as (a tenant's login acts as the database owner).
	a.Config = map[string]string{"role": base}
	for k, v := range want.Config {
		a.Config[k] = v
	}
	a.MemberOf = []string{base}
	a.Comment = "login of role " + base
	return a
}

// endSessionsSQL ends the sessions logged in as a role, but the caller's
// own, and counts those it ended.
const endSessionsSQL = `SELECT pg_catalog.count(*) FILTER (WHERE pg_catalog.pg_terminate_backend(a.pid))
  FROM pg_catalog.pg_stat_activity a WHERE a.usename = $1 AND a.pid <> pg_catalog.pg_backend_pid()`

// EndSessionsStatement is EndSessions' query as a plan shows it: the
// role in place of its parameter, as the server logs it.
func EndSessionsStatement(role string) string {
	return strings.Replace(endSessionsSQL, "$1", QuoteLiteral(role), 1)
}

// LoginStatements return the statements that give role name the
// attributes want and the password verifier: CREATE ROLE when it does not
// exist (got nil), otherwise only what differs and the password.
func LoginStatements(name string, want RoleAttributes, verifier string, got *ObservedRole, mark Mark) []string {
	if got == nil {
		return CreateRoleStatements(name, want, verifier, mark)
	}
	return append(UpdateRoleStatements(name, want, *got, mark), SetPasswordStatement(name, verifier))
}

// EndSessions ends the sessions logged in as role and returns how many it
// ended. The caller needs the role's privileges (or pg_signal_backend).
func EndSessions(ctx context.Context, q Querier, role string) (int, error) {
	var n int
	if err := q.QueryRow(ctx, endSessionsSQL, role).Scan(&n); err != nil {
		return 0, xperrors.Wrapf(describePgError(err), "cannot end the sessions of role %s", QuoteIdentifier(role))
	}
	return n, nil
}

// EndAccessStatements return the statements that take from a role what
// lets anyone log in as it or act, through it, as another role: LOGIN and
// its memberships. None when it has neither.
func EndAccessStatements(name string, got ObservedRole) []string {
	id := QuoteIdentifier(name)
	var stmts []string
	if got.Login {
		stmts = append(stmts, "ALTER ROLE "+id+" NOLOGIN")
	}
	for _, g := range got.MemberOf {
		stmts = append(stmts, "REVOKE "+QuoteIdentifier(g)+" FROM "+id)
	}
	return stmts
}
