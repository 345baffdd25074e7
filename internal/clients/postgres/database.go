package postgres

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	xperrors "github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// DatabaseSettings are what the provider manages of a database.
type DatabaseSettings struct {
	// Owner role. Empty means "leave as created" when desired.
	Owner string
	// ConnectionLimit is -1 for no limit.
	ConnectionLimit  int32
	AllowConnections bool
	IsTemplate       bool
	// Comment without the provider's marker.
	Comment string
	// RevokePublic keeps PUBLIC from holding any privilege on the
	// database (CONNECT, TEMPORARY), when desired.
	RevokePublic bool
}

// DefaultTemplate is the template a database is copied from when none is
// named. Not the server's own default, template1: PostgreSQL copies a
// template only while no other session is connected to it, every login
// may connect to template1 unless PUBLIC's CONNECT on it was revoked, and
// one idle session there stopped every CREATE DATABASE on the server ("source
// database "template1" is being accessed by other users"). template0
// accepts no connections (datallowconn is false), holds what a fresh
// template1 holds, and takes any encoding and locale.
const DefaultTemplate = "template0"

// DatabaseCreateOptions are the settings CREATE DATABASE takes once. Empty
// fields are left to the server's defaults (those of the template).
type DatabaseCreateOptions struct {
	Template       string
	Encoding       string
	LCCollate      string
	LCCtype        string
	LocaleProvider string
	ICULocale      string
	Strategy       string
	Tablespace     string
	// KeepAdminConnect grants the admin CONNECT on a database whose
	// PUBLIC privileges are revoked: a non-superuser admin needs it to
	// manage what is inside once the database is its owner's.
	KeepAdminConnect bool
}

// ObservedDatabase is a database as the catalog shows it.
type ObservedDatabase struct {
	DatabaseSettings
	Encoding  string
	LCCollate string
	LCCtype   string
	// Owner UID from the provider's marker, "" when there is none.
	MarkerOwner string
	// MarkerSeal is the marker's seal, "" when it has none.
	MarkerSeal string
	// PublicPrivileges are the privileges PUBLIC holds on the database.
	PublicPrivileges []string
	// AdminCanConnect says whether the observing admin may connect to the
	// database. A non-superuser admin may not once PUBLIC's CONNECT is
	// revoked (a tenant's database), and then cannot manage what is inside.
	AdminCanConnect bool
	// OwnerAttributes are the owner's attributes among SUPERUSER,
	// CREATEROLE, REPLICATION and BYPASSRLS, then its memberships, direct
	// or not, of predefined (pg_*) roles and of roles with one of those
	// attributes, each as MemberOfPrefix + the role: powers that
	// membership of the owner role must never hand to a tenant. Read at
	// every observation, so powers given after binding show too.
	OwnerAttributes []string
}

// MemberOfPrefix marks an owner's membership among OwnerAttributes, as
// observeDatabaseSQL writes it.
const MemberOfPrefix = "member of "

// observeDatabaseSQL reads a database and the identity of the server in
// one round trip. It always returns a row: the database's
// columns are NULL when it does not exist.
//
// The owner's powerful memberships are found by walking its memberships
// up pg_auth_members (indexed by member), not by asking pg_has_role of
// every role on the server: that was a scan of every role at every
// observation of every database. Prepared, as pgx runs it, on
// PostgreSQL 15 (pgbench -M prepared, one session): the whole query took
// 0.25 ms at 200 roles and 0.43 ms at 2,200 with the scan, 0.24 and 0.22
// with the walk. A superuser is a member of every role (pg_has_role
// says so without a membership), so its list is still every powerful
// role.
const observeDatabaseSQL = `SELECT (SELECT system_identifier::pg_catalog.text FROM pg_catalog.pg_control_system()),
       d.oid IS NOT NULL,
       coalesce(pg_catalog.pg_get_userbyid(d.datdba)::pg_catalog.text, ''), coalesce(pg_catalog.pg_encoding_to_char(d.encoding)::pg_catalog.text, ''),
       coalesce(d.datcollate, ''), coalesce(d.datctype, ''),
       coalesce(d.datconnlimit, -1), coalesce(d.datallowconn, false), coalesce(d.datistemplate, false),
       coalesce(pg_catalog.shobj_description(d.oid, 'pg_database'), ''),
       coalesce(ARRAY(SELECT p.privilege_type FROM pg_catalog.aclexplode(coalesce(d.datacl, pg_catalog.acldefault('d', d.datdba))) AS p
                       WHERE p.grantee = 0 ORDER BY 1), '{}'),
       d.oid IS NULL OR pg_catalog.has_database_privilege(d.oid, 'CONNECT'),
       coalesce((SELECT ARRAY(SELECT a.name FROM (VALUES ('SUPERUSER', r.rolsuper), ('CREATEROLE', r.rolcreaterole),
                                                        ('REPLICATION', r.rolreplication), ('BYPASSRLS', r.rolbypassrls)) AS a(name, has)
                              WHERE a.has)
                        || CASE WHEN r.rolsuper
                                THEN ARRAY(SELECT 'member of ' || g.rolname::pg_catalog.text FROM pg_catalog.pg_roles g
                                            WHERE g.oid <> r.oid AND g.rolname <> 'pg_database_owner'
                                              AND (g.rolname LIKE 'pg\_%' OR g.rolsuper OR g.rolcreaterole OR g.rolreplication OR g.rolbypassrls)
                                            ORDER BY 1)
                                ELSE ARRAY(WITH RECURSIVE up AS (
                                             SELECT m.roleid AS oid FROM pg_catalog.pg_auth_members m WHERE m.member = r.oid
                                             UNION SELECT m.roleid FROM pg_catalog.pg_auth_members m JOIN up ON m.member = up.oid)
                                           SELECT 'member of ' || g.rolname::pg_catalog.text FROM up JOIN pg_catalog.pg_roles g ON g.oid = up.oid
                                            WHERE g.oid <> r.oid AND g.rolname <> 'pg_database_owner'
                                              AND (g.rolname LIKE 'pg\_%' OR g.rolsuper OR g.rolcreaterole OR g.rolreplication OR g.rolbypassrls)
                                            ORDER BY 1) END
                   FROM pg_catalog.pg_roles r WHERE r.oid = d.datdba), '{}')
  FROM (SELECT 1) AS one
  LEFT JOIN pg_catalog.pg_database d ON d.datname = $1`

// ObserveDatabase reads a database, and the system identifier of the
// server it asked. The database is nil when it does not exist.
func ObserveDatabase(ctx context.Context, q Querier, name string) (*ObservedDatabase, string, error) {
	o := &ObservedDatabase{}
	var system, comment string
	var exists bool
	err := q.QueryRow(ctx, observeDatabaseSQL, name).Scan(&system, &exists, &o.Owner, &o.Encoding, &o.LCCollate, &o.LCCtype,
		&o.ConnectionLimit, &o.AllowConnections, &o.IsTemplate, &comment, &o.PublicPrivileges, &o.AdminCanConnect, &o.OwnerAttributes)
	if err != nil {
		return nil, "", xperrors.Wrapf(ClassifyConnectError(err), "cannot read database %s", QuoteIdentifier(name))
	}
	if !exists {
		return nil, system, nil
	}
	var m Mark
	o.Comment, m = ParseMarker(comment)
	o.MarkerOwner, o.MarkerSeal = m.UID, m.Seal
	return o, system, nil
}

// databaseSessionsSQL counts the sessions connected to a database, the
// asking session excluded, and names the roles they logged in as unless
// the asking role may end any session.
const databaseSessionsSQL = `SELECT (SELECT pg_catalog.count(*) FROM pg_catalog.pg_stat_activity a WHERE a.datid = d.oid AND a.pid <> pg_catalog.pg_backend_pid())::pg_catalog.int4,
       CASE WHEN pg_catalog.pg_has_role(current_user, 'pg_signal_backend', 'USAGE') OR (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user)
            THEN '{}'
            ELSE coalesce(ARRAY(SELECT DISTINCT a.usename::pg_catalog.text FROM pg_catalog.pg_stat_activity a
                                 WHERE a.datid = d.oid AND a.pid <> pg_catalog.pg_backend_pid() AND a.usename IS NOT NULL ORDER BY 1), '{}') END
  FROM pg_catalog.pg_database d WHERE d.datname = $1`

// DatabaseSessions returns how many sessions are connected to the database
// name (the caller's own excluded) and, unless the caller may end any
// session (a superuser, or a member of pg_signal_backend), the roles they
// logged in as: a non-superuser admin needs their privileges to end them.
// No sessions for a database that does not exist.
//
// Only a drop asks. Reading the server's sessions copies the status of
// every backend slot: it was two thirds of the time of a database's
// observation, at every poll, when ObserveDatabase read them too
// (docs/performance.md).
func DatabaseSessions(ctx context.Context, q Querier, name string) (int, []string, error) {
	var n int
	var roles []string
	err := q.QueryRow(ctx, databaseSessionsSQL, name).Scan(&n, &roles)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, xperrors.Wrapf(err, "cannot read the sessions connected to database %s", QuoteIdentifier(name))
	}
	return n, roles, nil
}

// stagingPrefix starts the name a database is created under before it
// takes its own (StagingDatabaseName).
const stagingPrefix = "provider_postgresql_creating_"

// StagingDatabaseName is the name the database of the resource with uid
// is created under, closed to connections, until one transaction marks it
// and renames it to its own name. CREATE DATABASE cannot share a
// transaction with anything: created under its own name, a database whose
// marker a crash prevented was indistinguishable from one someone else
// created, and was handed to a person as a Conflict. Under this name,
// owned by the admin and closed to every session, it can only be what this
// resource's create left, and its next create finishes it. 61 bytes, under
// PostgreSQL's 63.
func StagingDatabaseName(uid string) string {
	return stagingPrefix + strings.ReplaceAll(uid, "-", "")
}

// A DatabaseCreate is how a database is created: Create under its staging
// name, then Finish in one transaction.
type DatabaseCreate struct {
	// Create is CREATE DATABASE under the staging name, with connections
	// refused so that no session can hold the rename up; "" when the
	// staging database exists already (a create that was cut short).
	Create string
	// Finish marks the staging database as the resource's, closes it to
	// PUBLIC if asked, renames it to its name, opens it to connections
	// and gives it to its owner: one transaction, so the database appears
	// under its name complete or not at all.
	Finish []string
}

// Statements are the statements in the order they are sent.
func (c DatabaseCreate) Statements() []string {
	if c.Create == "" {
		return slices.Clone(c.Finish)
	}
	return append([]string{c.Create}, c.Finish...)
}

// CreateDatabaseStatements returns how database name is created through
// staging (StagingDatabaseName), with CREATE DATABASE left out when staged
// says the staging database is there already.
func CreateDatabaseStatements(name, staging string, staged bool, s DatabaseSettings, o DatabaseCreateOptions, mark Mark) DatabaseCreate {
	tmp, id := QuoteIdentifier(staging), QuoteIdentifier(name)
	var opts []string
	add := func(kw, v string, quote func(string) string) {
		if v != "" {
			opts = append(opts, kw+" "+quote(v))
		}
	}
	add("TEMPLATE", o.Template, QuoteIdentifier)
	add("ENCODING", o.Encoding, QuoteLiteral)
	add("LC_COLLATE", o.LCCollate, QuoteLiteral)
	add("LC_CTYPE", o.LCCtype, QuoteLiteral)
	add("LOCALE_PROVIDER", o.LocaleProvider, QuoteIdentifier)
	add("ICU_LOCALE", o.ICULocale, QuoteLiteral)
	add("STRATEGY", o.Strategy, QuoteIdentifier)
	add("TABLESPACE", o.Tablespace, QuoteIdentifier)
	if s.ConnectionLimit != -1 {
		opts = append(opts, "CONNECTION LIMIT "+strconv.Itoa(int(s.ConnectionLimit)))
	}
	var c DatabaseCreate
	if !staged {
		c.Create = "CREATE DATABASE " + tmp + " WITH " + strings.Join(append(opts, "ALLOW_CONNECTIONS false"), " ")
	}
	c.Finish = []string{"COMMENT ON DATABASE " + tmp + " IS " + QuoteLiteral(WithMarker(s.Comment, mark))}
	if s.RevokePublic {
		c.Finish = append(c.Finish, revokePublicOnDatabase(tmp))
	}
	c.Finish = append(c.Finish, "ALTER DATABASE "+tmp+" RENAME TO "+id)
	var open []string
	if s.AllowConnections {
		open = append(open, "ALLOW_CONNECTIONS true")
	}
	if s.IsTemplate {
		open = append(open, "IS_TEMPLATE true")
	}
	if len(open) > 0 {
		c.Finish = append(c.Finish, "ALTER DATABASE "+id+" WITH "+strings.Join(open, " "))
	}
	// Given away last: the admin, its owner until then, needs no
	// membership of the owner for what comes before.
	if s.Owner != "" {
		c.Finish = append(c.Finish, "ALTER DATABASE "+id+" OWNER TO "+QuoteIdentifier(s.Owner))
		// After the owner is given the database: a new owner takes the
		// old one's place in every entry of the ACL, the admin's own
		// grants included.
		if s.RevokePublic && o.KeepAdminConnect {
			c.Finish = append(c.Finish, "GRANT CONNECT ON DATABASE "+id+" TO CURRENT_USER")
		}
	}
	return c
}

// stagingSQL reads what tells a staging database left by the provider from
// one someone else made: it is the admin's and refuses connections, which
// only the provider's create does to it, and carries no marker or the
// resource's own.
const stagingSQL = `SELECT d.datdba = (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = current_user) AND NOT d.datallowconn,
       coalesce(pg_catalog.shobj_description(d.oid, 'pg_database'), '')
  FROM pg_catalog.pg_database d WHERE d.datname = $1`

// ObserveStagingDatabase reports whether the staging database of the
// resource with uid exists; an error when it does but is not what the
// provider's create leaves (someone made a database of that name).
func ObserveStagingDatabase(ctx context.Context, q Querier, uid string) (bool, error) {
	staging := StagingDatabaseName(uid)
	var ours bool
	var comment string
	err := q.QueryRow(ctx, stagingSQL, staging).Scan(&ours, &comment)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if _, m := ParseMarker(comment); !ours || (m.UID != "" && m.UID != uid) {
		return true, xperrors.Errorf("database %q, the name this resource's database is created under before it takes its own, exists but was not left by this provider "+
			"(it is not the admin's, accepts connections or is marked for another resource); drop it once you know what it holds", staging)
	}
	return true, nil
}

// DropStagingDatabase drops the staging database of the resource with uid
// when one that the provider left exists: a create cut short, whose
// resource is going away or lost the name to another database.
func DropStagingDatabase(ctx context.Context, db Execer, uid string) error {
	staged, err := ObserveStagingDatabase(ctx, db, uid)
	if err != nil || !staged {
		return err
	}
	return ExecEach(ctx, db, []string{DropDatabaseStatement(StagingDatabaseName(uid), false)})
}

func revokePublicOnDatabase(id string) string {
	return "REVOKE ALL ON DATABASE " + id + " FROM PUBLIC"
}

// UpdateDatabaseStatements returns the statements that bring an observed
// database to the desired settings: none when it is up to date. An empty
// desired owner leaves the owner alone.
func UpdateDatabaseStatements(name string, want DatabaseSettings, got ObservedDatabase, mark Mark) []string {
	id := QuoteIdentifier(name)
	var stmts []string
	if want.Owner != "" && want.Owner != got.Owner {
		stmts = append(stmts, "ALTER DATABASE "+id+" OWNER TO "+QuoteIdentifier(want.Owner))
	}
	var opts []string
	if want.ConnectionLimit != got.ConnectionLimit {
		opts = append(opts, "CONNECTION LIMIT "+strconv.Itoa(int(want.ConnectionLimit)))
	}
	if want.AllowConnections != got.AllowConnections {
		opts = append(opts, "ALLOW_CONNECTIONS "+strconv.FormatBool(want.AllowConnections))
	}
	if want.IsTemplate != got.IsTemplate {
		opts = append(opts, "IS_TEMPLATE "+strconv.FormatBool(want.IsTemplate))
	}
	if len(opts) > 0 {
		stmts = append(stmts, "ALTER DATABASE "+id+" WITH "+strings.Join(opts, " "))
	}
	if want.Comment != got.Comment || got.MarkerOwner != mark.UID || got.MarkerSeal != mark.Seal {
		stmts = append(stmts, "COMMENT ON DATABASE "+id+" IS "+QuoteLiteral(WithMarker(want.Comment, mark)))
	}
	if want.RevokePublic && len(got.PublicPrivileges) > 0 {
		stmts = append(stmts, revokePublicOnDatabase(id))
	}
	// CONNECT alone (no membership, no other privilege): what the admin
	// needs to manage schemas, grants and extensions inside.
	if !got.AdminCanConnect {
		stmts = append(stmts, "GRANT CONNECT ON DATABASE "+id+" TO CURRENT_USER")
	}
	return stmts
}

// DropDatabaseStatement returns the statement that drops a database,
// terminating its sessions when force is true.
func DropDatabaseStatement(name string, force bool) string {
	s := "DROP DATABASE IF EXISTS " + QuoteIdentifier(name)
	if force {
		s += " WITH (FORCE)"
	}
	return s
}

// NearMatches returns up to five of the available names closest to name: those
// containing it or contained in it, and those within two edits, closest
// first.
func NearMatches(name string, available []string) []string {
	type scored struct {
		n string
		d int
	}
	var c []scored
	for _, a := range available {
		d := editDistance(name, a)
		if d <= 2 || strings.Contains(a, name) || strings.Contains(name, a) {
			c = append(c, scored{a, d})
		}
	}
	sort.Slice(c, func(i, j int) bool {
		if c[i].d != c[j].d {
			return c[i].d < c[j].d
		}
		return c[i].n < c[j].n
	})
	var out []string
	for i := 0; i < len(c) && i < 5; i++ {
		out = append(out, c[i].n)
	}
	return out
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// CodeDuplicateDatabase is the SQLSTATE of a rename to a name taken.
const CodeDuplicateDatabase = "42P04"

// CreateDatabase runs c, the create of the database of the resource with
// uid. When another database took the name between the observation and
// the rename, the staging database, empty and never entered, is dropped
// again and the error says so; the next observation finds the other
// database and reports it as a conflict.
func CreateDatabase(ctx context.Context, db DB, uid string, c DatabaseCreate) error {
	if c.Create != "" {
		if err := ExecEach(ctx, db, []string{c.Create}); err != nil {
			return err
		}
	}
	err := Exec(ctx, db, c.Finish)
	if IsCode(err, CodeDuplicateDatabase) {
		return xperrors.Join(err, DropStagingDatabase(ctx, db, uid))
	}
	return err
}
