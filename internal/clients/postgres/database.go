package postgres

import (
	"context"
	"sort"
	"strconv"
	"strings"

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
	// Sessions is the number of sessions connected to the database, the
	// observer's own excluded.
	Sessions int
	// SessionRoles are the roles those sessions logged in as, unless the
	// observer may end any session (a superuser, or a member of
	// pg_signal_backend): a non-superuser admin needs their privileges to
	// terminate them.
	SessionRoles []string
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

// observeDatabaseSQL reads a database, its open sessions and the identity
// of the server in one round trip. It always returns a row: the database's
// columns are NULL when it does not exist.
const observeDatabaseSQL = `SELECT (SELECT system_identifier::pg_catalog.text FROM pg_catalog.pg_control_system()),
       d.oid IS NOT NULL,
       coalesce(pg_catalog.pg_get_userbyid(d.datdba)::pg_catalog.text, ''), coalesce(pg_catalog.pg_encoding_to_char(d.encoding)::pg_catalog.text, ''),
       coalesce(d.datcollate, ''), coalesce(d.datctype, ''),
       coalesce(d.datconnlimit, -1), coalesce(d.datallowconn, false), coalesce(d.datistemplate, false),
       coalesce(pg_catalog.shobj_description(d.oid, 'pg_database'), ''),
       (SELECT pg_catalog.count(*) FROM pg_catalog.pg_stat_activity a WHERE a.datid = d.oid AND a.pid <> pg_catalog.pg_backend_pid())::pg_catalog.int4,
       CASE WHEN pg_catalog.pg_has_role(current_user, 'pg_signal_backend', 'USAGE') OR (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user)
            THEN '{}'
            ELSE coalesce(ARRAY(SELECT DISTINCT a.usename::pg_catalog.text FROM pg_catalog.pg_stat_activity a
                                 WHERE a.datid = d.oid AND a.pid <> pg_catalog.pg_backend_pid() AND a.usename IS NOT NULL ORDER BY 1), '{}') END,
       coalesce(ARRAY(SELECT p.privilege_type FROM pg_catalog.aclexplode(coalesce(d.datacl, pg_catalog.acldefault('d', d.datdba))) AS p
                       WHERE p.grantee = 0 ORDER BY 1), '{}'),
       d.oid IS NULL OR pg_catalog.has_database_privilege(d.oid, 'CONNECT'),
       coalesce((SELECT ARRAY(SELECT a.name FROM (VALUES ('SUPERUSER', r.rolsuper), ('CREATEROLE', r.rolcreaterole),
                                                        ('REPLICATION', r.rolreplication), ('BYPASSRLS', r.rolbypassrls)) AS a(name, has)
                              WHERE a.has)
                        || ARRAY(SELECT 'member of ' || g.rolname::pg_catalog.text FROM pg_catalog.pg_roles g
                                  WHERE g.oid <> r.oid AND g.rolname <> 'pg_database_owner'
                                    AND (g.rolname LIKE 'pg\_%' OR g.rolsuper OR g.rolcreaterole OR g.rolreplication OR g.rolbypassrls)
                                    AND pg_catalog.pg_has_role(r.oid, g.oid, 'MEMBER')
                                  ORDER BY 1)
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
		&o.ConnectionLimit, &o.AllowConnections, &o.IsTemplate, &comment, &o.Sessions, &o.SessionRoles, &o.PublicPrivileges, &o.AdminCanConnect, &o.OwnerAttributes)
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

// CreateDatabaseStatements returns CREATE DATABASE and the COMMENT that
// marks it. CREATE DATABASE cannot run in a transaction block, so the two
// run one after the other: a crash between them leaves a database without
// the marker, which the next observation reports as Conflict for a person
// to resolve rather than adopting it.
func CreateDatabaseStatements(name string, s DatabaseSettings, o DatabaseCreateOptions, mark Mark) []string {
	id := QuoteIdentifier(name)
	var opts []string
	add := func(kw, v string, quote func(string) string) {
		if v != "" {
			opts = append(opts, kw+" "+quote(v))
		}
	}
	add("OWNER", s.Owner, QuoteIdentifier)
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
	if !s.AllowConnections {
		opts = append(opts, "ALLOW_CONNECTIONS false")
	}
	if s.IsTemplate {
		opts = append(opts, "IS_TEMPLATE true")
	}
	create := "CREATE DATABASE " + id
	if len(opts) > 0 {
		create += " WITH " + strings.Join(opts, " ")
	}
	stmts := []string{create, "COMMENT ON DATABASE " + id + " IS " + QuoteLiteral(WithMarker(s.Comment, mark))}
	if s.RevokePublic {
		stmts = append(stmts, revokePublicOnDatabase(id))
	}
	return stmts
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
