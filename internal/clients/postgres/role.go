package postgres

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	xperrors "github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// RoleAttributes are what the provider manages of a role.
type RoleAttributes struct {
	Login       bool
	Inherit     bool
	CreateDB    bool
	CreateRole  bool
	Replication bool
	BypassRLS   bool
	// ConnectionLimit is -1 for no limit.
	ConnectionLimit int32
	// ValidUntil is when the password stops working; nil means never.
	ValidUntil *time.Time
	// Config holds the role's settings (ALTER ROLE … SET), by name.
	Config map[string]string
	// MemberOf lists the roles this role is a member of, sorted.
	MemberOf []string
	// WithoutSet lists the roles of MemberOf whose membership must not
	// let this role act as them: a new membership of them is granted WITH
	// SET FALSE (PostgreSQL 16+). One that exists keeps the options it
	// has. Wanted only; never observed.
	WithoutSet []string
	// Comment is the role's comment without the provider's marker.
	Comment string
}

// DefaultRoleAttributes are those of a plain CREATE ROLE.
func DefaultRoleAttributes() RoleAttributes {
	return RoleAttributes{Inherit: true, ConnectionLimit: -1}
}

// ObservedRole is a role as the catalog shows it.
type ObservedRole struct {
	RoleAttributes
	Superuser bool
	// Owner is the UID in the provider's ownership marker, or "" when the
	// role carries none.
	Owner string
	// Seal is the ownership marker's seal, "" when it has none.
	Seal string
	// Verifier is the stored password verifier ("" for none), when
	// VerifierRead.
	Verifier     string
	VerifierRead bool
}

// roleColumnsSQL are the columns of a role r (all NULL-safe, for a role
// that does not exist): existence, attributes, settings, comment and
// memberships. %[1]s is the password verifier column: pg_authid can only
// be read by superusers. %[2]s is the role's name as the query has it.
//
// The memberships are found by r's OID and again by its name: on 16+ a
// managed-service admin is a member (ADMIN OPTION) of every role it
// created, so almost every row of pg_auth_members names it, and the
// planner, estimating any member by that, expected half the table to
// match r and read all of it (6× the time of the whole observation at
// 5,000 roles). The member named by a constant it estimates from the
// statistics, and reads the index.
const roleColumnsSQL = `r.oid IS NOT NULL,
       coalesce(r.rolcanlogin, false), coalesce(r.rolinherit, false), coalesce(r.rolcreatedb, false),
       coalesce(r.rolcreaterole, false), coalesce(r.rolreplication, false), coalesce(r.rolbypassrls, false),
       coalesce(r.rolsuper, false), coalesce(r.rolconnlimit, -1), r.rolvaliduntil,
       coalesce(r.rolconfig, '{}'),
       coalesce(pg_catalog.shobj_description(r.oid, 'pg_authid'), ''),
       ARRAY(SELECT g.rolname::pg_catalog.text FROM pg_catalog.pg_auth_members m JOIN pg_catalog.pg_roles g ON g.oid = m.roleid
              WHERE m.member = r.oid AND m.member = pg_catalog.to_regrole(pg_catalog.quote_ident(%[2]s))::pg_catalog.oid ORDER BY 1),
       %[1]s`

const (
	noVerifierSQL = "NULL::pg_catalog.text"
	verifierSQL   = "(SELECT a.rolpassword FROM pg_catalog.pg_authid a WHERE a.oid = r.oid)"
)

// observeRoleSQL reads a role and the identity of the server in one round
// trip. It always returns a row: the role's columns are NULL when it does
// not exist.
const observeRoleSQL = `SELECT (SELECT system_identifier::pg_catalog.text FROM pg_catalog.pg_control_system()),
       ` + roleColumnsSQL + `
  FROM (SELECT 1) AS one
  LEFT JOIN pg_catalog.pg_roles r ON r.rolname = $1`

var (
	observeRoleQuery             = fmt.Sprintf(observeRoleSQL, noVerifierSQL, "$1")
	observeRoleWithVerifierQuery = fmt.Sprintf(observeRoleSQL, verifierSQL, "$1")
)

// roleScan holds what roleColumnsSQL returns, to be scanned into.
type roleScan struct {
	o          ObservedRole
	exists     bool
	validUntil pgtype.Timestamptz
	config     []string
	comment    string
	verifier   *string
}

func (s *roleScan) dest() []any {
	o := &s.o
	return []any{&s.exists, &o.Login, &o.Inherit, &o.CreateDB, &o.CreateRole, &o.Replication,
		&o.BypassRLS, &o.Superuser, &o.ConnectionLimit, &s.validUntil, &s.config, &s.comment, &o.MemberOf, &s.verifier}
}

// role returns the scanned role, nil when it does not exist.
func (s *roleScan) role(withVerifier bool) *ObservedRole {
	if !s.exists {
		return nil
	}
	o := s.o
	if s.validUntil.Valid && s.validUntil.InfinityModifier == pgtype.Finite {
		t := s.validUntil.Time.UTC()
		o.ValidUntil = &t
	}
	o.Config = map[string]string{}
	for _, kv := range s.config {
		k, v, _ := strings.Cut(kv, "=")
		o.Config[k] = v
	}
	var m Mark
	o.Comment, m = ParseMarker(s.comment)
	o.Owner, o.Seal = m.UID, m.Seal
	if withVerifier {
		o.Verifier = ""
		if s.verifier != nil {
			o.Verifier = *s.verifier
		}
		o.VerifierRead = true
	}
	return &o
}

// RoleExists reports whether the server has a role of that name.
func RoleExists(ctx context.Context, q Querier, name string) (bool, error) {
	var ok bool
	err := q.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = $1)", name).Scan(&ok)
	return ok, xperrors.Wrapf(err, "cannot look up role %q", name)
}

// ObserveRole reads a role, and the system identifier of the server it
// asked. The role is nil when it does not exist. With withVerifier (only
// for a superuser login) the same round trip reads the role's stored
// password verifier.
func ObserveRole(ctx context.Context, q Querier, name string, withVerifier bool) (*ObservedRole, string, error) {
	query := observeRoleQuery
	if withVerifier {
		query = observeRoleWithVerifierQuery
	}
	var system string
	var s roleScan
	if err := q.QueryRow(ctx, query, name).Scan(append([]any{&system}, s.dest()...)...); err != nil {
		return nil, "", xperrors.Wrapf(ClassifyConnectError(err), "cannot read role %s", QuoteIdentifier(name))
	}
	return s.role(withVerifier), system, nil
}

// NoSelfGrantSQL turns off, for the transaction, what PostgreSQL 16+'s
// createrole_self_grant would give a non-superuser admin on every role it
// creates (INHERIT or SET membership): a server or admin with that set
// would otherwise accumulate every tenant's privileges. The WHERE keeps
// set_config from naming a setting 15 does not know.
const NoSelfGrantSQL = `SELECT pg_catalog.set_config('createrole_self_grant', '', true) WHERE pg_catalog.current_setting('server_version_num')::pg_catalog.int4 >= 160000`

// CreateRoleStatements returns the statements that create a role with the
// given attributes, password verifier (may be empty) and ownership marker.
// They run in one transaction, so the role never exists without its marker.
func CreateRoleStatements(name string, a RoleAttributes, verifier string, mark Mark) []string {
	id := QuoteIdentifier(name)
	var opts []string
	def := DefaultRoleAttributes()
	opts = append(opts, flagDiff(a, def)...)
	if a.ConnectionLimit != def.ConnectionLimit {
		opts = append(opts, "CONNECTION LIMIT "+strconv.Itoa(int(a.ConnectionLimit)))
	}
	if a.ValidUntil != nil {
		opts = append(opts, "VALID UNTIL "+QuoteLiteral(a.ValidUntil.UTC().Format(time.RFC3339)))
	}
	if verifier != "" {
		opts = append(opts, "PASSWORD "+QuoteLiteral(verifier))
	}
	create := "CREATE ROLE " + id
	if len(opts) > 0 {
		create += " WITH " + strings.Join(opts, " ")
	}
	stmts := []string{NoSelfGrantSQL, create, "COMMENT ON ROLE " + id + " IS " + QuoteLiteral(WithMarker(a.Comment, mark))}
	// Memberships before settings: a role setting (SET role) names a
	// role the new one must already be a member of.
	for _, g := range a.MemberOf {
		stmts = append(stmts, grantMembership(g, id, a.WithoutSet))
	}
	for _, k := range sortedKeys(a.Config) {
		stmts = append(stmts, "ALTER ROLE "+id+" SET "+k+" TO "+QuoteLiteral(a.Config[k]))
	}
	return stmts
}

// UpdateRoleStatements returns the statements that bring an observed role
// to the desired attributes: only those for what differs, none at all when
// the role is up to date.
func UpdateRoleStatements(name string, want RoleAttributes, got ObservedRole, mark Mark) []string {
	id := QuoteIdentifier(name)
	var stmts []string
	opts := flagDiff(want, got.RoleAttributes)
	if want.ConnectionLimit != got.ConnectionLimit {
		opts = append(opts, "CONNECTION LIMIT "+strconv.Itoa(int(want.ConnectionLimit)))
	}
	if !sameTime(want.ValidUntil, got.ValidUntil) {
		v := "infinity"
		if want.ValidUntil != nil {
			v = want.ValidUntil.UTC().Format(time.RFC3339)
		}
		opts = append(opts, "VALID UNTIL "+QuoteLiteral(v))
	}
	if len(opts) > 0 {
		stmts = append(stmts, "ALTER ROLE "+id+" WITH "+strings.Join(opts, " "))
	}
	for _, k := range sortedKeys(want.Config) {
		if v, ok := got.Config[k]; !ok || v != want.Config[k] {
			stmts = append(stmts, "ALTER ROLE "+id+" SET "+k+" TO "+QuoteLiteral(want.Config[k]))
		}
	}
	for _, k := range sortedKeys(got.Config) {
		if _, ok := want.Config[k]; !ok {
			stmts = append(stmts, "ALTER ROLE "+id+" RESET "+k)
		}
	}
	for _, g := range want.MemberOf {
		if !slices.Contains(got.MemberOf, g) {
			stmts = append(stmts, grantMembership(g, id, want.WithoutSet))
		}
	}
	for _, g := range got.MemberOf {
		if !slices.Contains(want.MemberOf, g) {
			stmts = append(stmts, "REVOKE "+QuoteIdentifier(g)+" FROM "+id)
		}
	}
	if want.Comment != got.Comment || got.Owner != mark.UID || got.Seal != mark.Seal {
		stmts = append(stmts, "COMMENT ON ROLE "+id+" IS "+QuoteLiteral(WithMarker(want.Comment, mark)))
	}
	return stmts
}

// grantMembership is the GRANT making role id a member of group, WITH SET
// FALSE when withoutSet lists group.
func grantMembership(group, id string, withoutSet []string) string {
	s := "GRANT " + QuoteIdentifier(group) + " TO " + id
	if slices.Contains(withoutSet, group) {
		s += " WITH SET FALSE"
	}
	return s
}

// SetPasswordStatement returns the statement that sets a role's password
// verifier.
func SetPasswordStatement(name, verifier string) string {
	return "ALTER ROLE " + QuoteIdentifier(name) + " PASSWORD " + QuoteLiteral(verifier)
}

// RemovePasswordStatement returns the statement that leaves a role with no
// password: no password login of it succeeds, whatever pg_hba.conf asks.
func RemovePasswordStatement(name string) string {
	return "ALTER ROLE " + QuoteIdentifier(name) + " PASSWORD NULL"
}

// ReassignOwnedStatements returns the statements that hand what role owns in
// the current database to heir, then revoke its remaining privileges.
func ReassignOwnedStatements(role, heir string) []string {
	return []string{
		"REASSIGN OWNED BY " + QuoteIdentifier(role) + " TO " + QuoteIdentifier(heir),
		"DROP OWNED BY " + QuoteIdentifier(role),
	}
}

// DropOwnedStatements returns the statement that drops what role owns in
// the current database and revokes its privileges there.
func DropOwnedStatements(role string) []string {
	return []string{"DROP OWNED BY " + QuoteIdentifier(role)}
}

// DropRoleStatement returns the statement that drops a role.
func DropRoleStatement(name string) string {
	return "DROP ROLE IF EXISTS " + QuoteIdentifier(name)
}

func flagDiff(want, got RoleAttributes) []string {
	var opts []string
	flag := func(w, g bool, on, off string) {
		if w != g {
			if w {
				opts = append(opts, on)
			} else {
				opts = append(opts, off)
			}
		}
	}
	flag(want.Login, got.Login, "LOGIN", "NOLOGIN")
	flag(want.Inherit, got.Inherit, "INHERIT", "NOINHERIT")
	flag(want.CreateDB, got.CreateDB, "CREATEDB", "NOCREATEDB")
	flag(want.CreateRole, got.CreateRole, "CREATEROLE", "NOCREATEROLE")
	flag(want.Replication, got.Replication, "REPLICATION", "NOREPLICATION")
	flag(want.BypassRLS, got.BypassRLS, "BYPASSRLS", "NOBYPASSRLS")
	return opts
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Truncate(time.Second).Equal(b.Truncate(time.Second))
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ownsInSQL lists the databases in which a role owns objects, from the
// shared catalog pg_shdepend, so one query from any database answers for
// all of them.
const ownsInSQL = `SELECT coalesce(pg_catalog.array_agg(DISTINCT d.datname ORDER BY d.datname), '{}')
  FROM pg_catalog.pg_shdepend s JOIN pg_catalog.pg_database d ON d.oid = s.dbid
 WHERE s.refclassid = 'pg_catalog.pg_authid'::pg_catalog.regclass AND s.deptype = 'o'
   AND s.refobjid = (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = $1)`

// dependentDatabasesSQL lists the databases in which a role owns objects
// or holds privileges (pg_shdepend, shared, so one query from any database
// answers for all), the current one too when it has dependencies on
// shared objects (databases, tablespaces), with each database's owner and
// whether the session user may connect to it.
const dependentDatabasesSQL = `WITH deps AS (
  SELECT DISTINCT s.dbid FROM pg_catalog.pg_shdepend s
   WHERE s.refclassid = 'pg_catalog.pg_authid'::pg_catalog.regclass AND s.deptype IN ('o', 'a')
     AND s.refobjid = (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = $1))
SELECT d.datname::pg_catalog.text, pg_catalog.pg_get_userbyid(d.datdba)::pg_catalog.text, pg_catalog.has_database_privilege(d.oid, 'CONNECT')
  FROM pg_catalog.pg_database d
 WHERE d.oid IN (SELECT dbid FROM deps)
    OR (d.datname = pg_catalog.current_database() AND EXISTS (SELECT FROM deps WHERE dbid = 0))
 ORDER BY 1`

// A DependentDatabase is a database in which a role owns objects or
// holds privileges.
type DependentDatabase struct {
	Name  string
	Owner string
	// CanConnect says whether the session user may connect to it now.
	CanConnect bool
}

// DependentDatabases returns the databases REASSIGN or DROP OWNED BY role
// has something to do in.
func DependentDatabases(ctx context.Context, q RowsQuerier, role string) ([]DependentDatabase, error) {
	rows, err := q.Query(ctx, dependentDatabasesSQL, role)
	if err != nil {
		return nil, xperrors.Wrapf(ClassifyConnectError(err), "cannot read where role %s owns objects or holds privileges", QuoteIdentifier(role))
	}
	defer rows.Close()
	var out []DependentDatabase
	for rows.Next() {
		var d DependentDatabase
		if err := rows.Scan(&d.Name, &d.Owner, &d.CanConnect); err != nil {
			return nil, xperrors.Wrap(err, "cannot read a database")
		}
		out = append(out, d)
	}
	return out, xperrors.Wrapf(rows.Err(), "cannot read where role %s owns objects or holds privileges", QuoteIdentifier(role))
}

// privilegeOwnersSQL lists the owners of the objects in the current
// database (and of shared ones) on which role holds privileges: what DROP
// OWNED revokes, as their grantor, which a non-superuser admin is only
// while it acts as the owner.
const privilegeOwnersSQL = `SELECT coalesce(pg_catalog.array_agg(DISTINCT pg_catalog.pg_get_userbyid(o.owner)::pg_catalog.text ORDER BY pg_catalog.pg_get_userbyid(o.owner)::pg_catalog.text)
                           FILTER (WHERE o.owner IS NOT NULL), '{}')
  FROM pg_catalog.pg_shdepend s
  CROSS JOIN LATERAL (SELECT CASE s.classid
      WHEN 'pg_catalog.pg_class'::pg_catalog.regclass THEN (SELECT relowner FROM pg_catalog.pg_class WHERE oid = s.objid)
      WHEN 'pg_catalog.pg_namespace'::pg_catalog.regclass THEN (SELECT nspowner FROM pg_catalog.pg_namespace WHERE oid = s.objid)
      WHEN 'pg_catalog.pg_proc'::pg_catalog.regclass THEN (SELECT proowner FROM pg_catalog.pg_proc WHERE oid = s.objid)
      WHEN 'pg_catalog.pg_type'::pg_catalog.regclass THEN (SELECT typowner FROM pg_catalog.pg_type WHERE oid = s.objid)
      WHEN 'pg_catalog.pg_default_acl'::pg_catalog.regclass THEN (SELECT defaclrole FROM pg_catalog.pg_default_acl WHERE oid = s.objid)
      WHEN 'pg_catalog.pg_database'::pg_catalog.regclass THEN (SELECT datdba FROM pg_catalog.pg_database WHERE oid = s.objid)
      WHEN 'pg_catalog.pg_language'::pg_catalog.regclass THEN (SELECT lanowner FROM pg_catalog.pg_language WHERE oid = s.objid)
      WHEN 'pg_catalog.pg_largeobject_metadata'::pg_catalog.regclass THEN (SELECT lomowner FROM pg_catalog.pg_largeobject_metadata WHERE oid = s.objid)
      WHEN 'pg_catalog.pg_foreign_data_wrapper'::pg_catalog.regclass THEN (SELECT fdwowner FROM pg_catalog.pg_foreign_data_wrapper WHERE oid = s.objid)
      WHEN 'pg_catalog.pg_foreign_server'::pg_catalog.regclass THEN (SELECT srvowner FROM pg_catalog.pg_foreign_server WHERE oid = s.objid)
      WHEN 'pg_catalog.pg_tablespace'::pg_catalog.regclass THEN (SELECT spcowner FROM pg_catalog.pg_tablespace WHERE oid = s.objid)
    END AS owner) AS o
 WHERE s.refclassid = 'pg_catalog.pg_authid'::pg_catalog.regclass AND s.deptype = 'a'
   AND s.refobjid = (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = $1)
   AND s.dbid IN (0, (SELECT oid FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database()))`

// PrivilegeOwners returns, as needs, the owners of the objects on which
// role holds privileges in the database q runs in: DROP OWNED revokes
// them as their grantor (see ActingAs).
func PrivilegeOwners(ctx context.Context, q Querier, role string) ([]RoleNeed, error) {
	var owners []string
	if err := q.QueryRow(ctx, privilegeOwnersSQL, role).Scan(&owners); err != nil {
		return nil, xperrors.Wrapf(ClassifyConnectError(err), "cannot read who granted role %s its privileges", QuoteIdentifier(role))
	}
	needs := make([]RoleNeed, len(owners))
	for i, o := range owners {
		needs[i] = RoleNeed{Role: o, Inherit: true}
	}
	return needs, nil
}

// DatabasesOwnedIn returns the databases in which role owns objects (what
// DROP OWNED there would drop).
func DatabasesOwnedIn(ctx context.Context, q Querier, role string) ([]string, error) {
	var dbs []string
	err := q.QueryRow(ctx, ownsInSQL, role).Scan(&dbs)
	return dbs, xperrors.Wrapf(ClassifyConnectError(err), "cannot read where role %s owns objects", QuoteIdentifier(role))
}
