// Package inventory reads what a running PostgreSQL server holds (its
// roles, databases, schemas and extensions) and describes it as the
// provider's managed resources, read-only: Observe-only manifests whose
// plans are empty, so that a server set up by hand, by Terraform or by
// another provider is adopted without a statement sent, and a list of what
// the API cannot express, each with its reason.
//
// Reading costs a fixed number of queries for the server and a fixed
// number per database, whatever the number of objects: the catalogs are
// read whole, never once per object.
package inventory

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
)

// A Server is what one PostgreSQL server holds, as read.
type Server struct {
	// Version is server_version_num.
	Version int
	// Admin is the role the inventory logged in as.
	Admin     string
	Roles     []Role
	Databases []Database
}

// Objects is how many objects were read: roles, databases, and the
// schemas, extensions, grants and default privileges of each (a
// privilege counted once per grantee and object).
func (s *Server) Objects() int {
	n := len(s.Roles) + len(s.Databases)
	for _, d := range s.Databases {
		n += len(d.Schemas) + len(d.Extensions) + len(d.Grants) + len(d.Defaults)
	}
	return n
}

// A Role is a row of pg_roles with its memberships and settings.
type Role struct {
	Name                                                         string
	Login, Inherit, CreateDB, CreateRole, Replication, BypassRLS bool
	Superuser                                                    bool
	ConnectionLimit                                              int32
	// ValidUntil is nil for no expiry (NULL or infinity).
	ValidUntil *time.Time
	// Config is the role's settings in every database (rolconfig), as
	// name=value.
	Config []string
	// DatabaseConfig is the role's settings in one database, as
	// "database: name=value".
	DatabaseConfig []string
	// Comment is the role's comment without an ownership marker.
	Comment string
	// Managed: the comment carries the provider's ownership marker.
	Managed bool
	// MemberOf are the roles it is a member of.
	MemberOf []string
	// AdminOf are the roles it is a member of WITH ADMIN OPTION.
	AdminOf []string
	// System: a role PostgreSQL predefines (pg_*).
	System bool
}

// A Database is a row of pg_database, with what was read inside it.
type Database struct {
	Name, Owner, Encoding, Collate, Ctype string
	ConnectionLimit                       int32
	AllowConnections, IsTemplate          bool
	Comment                               string
	Managed                               bool
	// Config is the database's settings for every role (ALTER DATABASE …
	// SET), as name=value.
	Config []string
	// ACL: privileges were granted or revoked on the database (datacl is
	// set); without, PUBLIC holds CONNECT and TEMPORARY by default.
	ACL bool
	// Unread says why nothing inside the database was read ("" when it
	// was).
	Unread     string
	Schemas    []Schema
	Extensions []Extension
	// Grants are the privileges granted on the database and on what is
	// inside it, one privilege a row, but the owner's own.
	Grants []Grant
	// Defaults are the default privileges set in the database, one
	// privilege a row.
	Defaults []Default
}

// A Grant is one privilege one grantee holds on one object, from the
// object's ACL.
type Grant struct {
	// Kind is Database, Schema, Table, Sequence, Function or Column.
	Kind string
	// Schema holds the object ("" for a database).
	Schema string
	// Object is the table, sequence or column (table.column), or the
	// function's signature ("" for a database or a schema).
	Object string
	// Grantee is a role's name, or PUBLIC.
	Grantee   string
	Privilege string
	Grantable bool
}

// A Default is one privilege of pg_default_acl: what Owner's new objects
// of ObjectType (in Schema, or in every schema) give Grantee.
type Default struct {
	Owner, Schema string
	// ObjectType is pg_default_acl's defaclobjtype: r, S, f, T or n.
	ObjectType         string
	Grantee, Privilege string
	Grantable          bool
}

// A Schema is a row of pg_namespace of a database.
type Schema struct {
	Name, Owner, Comment string
	Managed              bool
	// Extension names the extension that created the schema, if one did.
	Extension string
}

// An Extension installed in a database.
type Extension struct {
	Name, Version, Schema string
}

// An Opener says how to open a session to a database of the server as
// its admin. Read pins the session's settings before it connects.
type Opener func(ctx context.Context, database string) (*pgx.ConnConfig, error)

// App names the inventory's sessions in pg_stat_activity.
const App = "kubectl-pg inventory"

// connect opens a session to database with the provider's startup pins:
// the inventory runs as the admin inside databases whose owners decide
// what a new session starts with (ALTER DATABASE … SET search_path, role,
// statement_timeout), and the startup packet outranks them.
func connect(ctx context.Context, open Opener, database string) (*pgx.Conn, error) {
	cfg, err := open(ctx, database)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot connect to database %q", database)
	}
	postgres.PinSession(&cfg.Config)
	cfg.RuntimeParams["application_name"] = App
	c, err := pgx.ConnectConfig(ctx, cfg)
	return c, errors.Wrapf(err, "cannot connect to database %q", database)
}

// Progress is told what the inventory reads, as it goes.
type Progress func(format string, args ...any)

// rolesSQL reads every role with its memberships and settings. On 16+ a
// membership may be granted several times by different grantors: one
// entry per group, with ADMIN OPTION if any grant has it.
const rolesSQL = `SELECT r.rolname::pg_catalog.text, r.rolcanlogin, r.rolinherit, r.rolcreatedb, r.rolcreaterole,
       r.rolreplication, r.rolbypassrls, r.rolsuper, r.rolconnlimit, r.rolvaliduntil, coalesce(r.rolconfig, '{}'),
       coalesce(pg_catalog.shobj_description(r.oid, 'pg_authid'), ''),
       coalesce(ARRAY(SELECT g.rolname::pg_catalog.text FROM pg_catalog.pg_auth_members m JOIN pg_catalog.pg_roles g ON g.oid = m.roleid
                       WHERE m.member = r.oid GROUP BY g.rolname ORDER BY 1), '{}'),
       coalesce(ARRAY(SELECT g.rolname::pg_catalog.text FROM pg_catalog.pg_auth_members m JOIN pg_catalog.pg_roles g ON g.oid = m.roleid
                       WHERE m.member = r.oid AND m.admin_option GROUP BY g.rolname ORDER BY 1), '{}'),
       coalesce(ARRAY(SELECT d.datname::pg_catalog.text || ': ' || c.setting FROM pg_catalog.pg_db_role_setting s
                       JOIN pg_catalog.pg_database d ON d.oid = s.setdatabase, LATERAL pg_catalog.unnest(s.setconfig) AS c(setting)
                       WHERE s.setrole = r.oid ORDER BY 1), '{}'),
       r.rolname ~ '^pg_' AND r.oid < 16384
  FROM pg_catalog.pg_roles r
 ORDER BY 1`

// databasesSQL reads every database with its settings for every role.
const databasesSQL = `SELECT d.datname::pg_catalog.text, pg_catalog.pg_get_userbyid(d.datdba)::pg_catalog.text,
       pg_catalog.pg_encoding_to_char(d.encoding)::pg_catalog.text, d.datcollate::pg_catalog.text, d.datctype::pg_catalog.text,
       d.datconnlimit, d.datallowconn, d.datistemplate,
       coalesce(pg_catalog.shobj_description(d.oid, 'pg_database'), ''),
       coalesce((SELECT s.setconfig FROM pg_catalog.pg_db_role_setting s WHERE s.setdatabase = d.oid AND s.setrole = 0), '{}'),
       pg_catalog.has_database_privilege(d.oid, 'CONNECT'), d.datacl IS NOT NULL
  FROM pg_catalog.pg_database d
 ORDER BY 1`

// schemasSQL reads a database's schemas, but PostgreSQL's own and the
// temporary ones, with the extension that created each (if any).
const schemasSQL = `SELECT n.nspname::pg_catalog.text, pg_catalog.pg_get_userbyid(n.nspowner)::pg_catalog.text,
       coalesce(pg_catalog.obj_description(n.oid, 'pg_namespace'), ''),
       coalesce((SELECT e.extname::pg_catalog.text FROM pg_catalog.pg_depend dep JOIN pg_catalog.pg_extension e ON e.oid = dep.refobjid
                  WHERE dep.classid = 'pg_catalog.pg_namespace'::pg_catalog.regclass AND dep.objid = n.oid
                    AND dep.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass AND dep.deptype = 'e' LIMIT 1), '')
  FROM pg_catalog.pg_namespace n
 WHERE n.nspname !~ '^pg_' AND n.nspname <> 'information_schema'
 ORDER BY 1`

// extensionsSQL reads a database's extensions.
const extensionsSQL = `SELECT e.extname::pg_catalog.text, e.extversion::pg_catalog.text, n.nspname::pg_catalog.text
  FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
 ORDER BY 1`

// grantee names an ACL item's grantee, PUBLIC for 0.
const grantee = `CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.pg_get_userbyid(a.grantee)::pg_catalog.text END`

// databaseGrantsSQL reads the privileges granted on every database, but
// its owner's own.
const databaseGrantsSQL = `SELECT d.datname::pg_catalog.text, ` + grantee + `, a.privilege_type::pg_catalog.text, a.is_grantable
  FROM pg_catalog.pg_database d, LATERAL pg_catalog.aclexplode(d.datacl) AS a
 WHERE d.datacl IS NOT NULL AND a.grantee <> d.datdba
 ORDER BY 1, 2, 3`

// insideGrantsSQL reads the privileges granted on a database's schemas,
// tables (views and the like included), sequences, functions and
// columns, but their owners' own; PostgreSQL's own schemas are left out.
const insideGrantsSQL = `WITH ns AS (SELECT oid, nspname, nspowner, nspacl FROM pg_catalog.pg_namespace WHERE nspname !~ '^pg_' AND nspname <> 'information_schema')
SELECT 'Schema', n.nspname::pg_catalog.text, '', ` + grantee + `, a.privilege_type::pg_catalog.text, a.is_grantable
  FROM ns n, LATERAL pg_catalog.aclexplode(n.nspacl) AS a
 WHERE n.nspacl IS NOT NULL AND a.grantee <> n.nspowner
UNION ALL
SELECT CASE c.relkind WHEN 'S' THEN 'Sequence' ELSE 'Table' END, n.nspname::pg_catalog.text, c.relname::pg_catalog.text, ` + grantee + `,
       a.privilege_type::pg_catalog.text, a.is_grantable
  FROM pg_catalog.pg_class c JOIN ns n ON n.oid = c.relnamespace, LATERAL pg_catalog.aclexplode(c.relacl) AS a
 WHERE c.relacl IS NOT NULL AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S') AND a.grantee <> c.relowner
UNION ALL
SELECT 'Function', n.nspname::pg_catalog.text, p.proname::pg_catalog.text || '(' || pg_catalog.oidvectortypes(p.proargtypes) || ')', ` + grantee + `,
       a.privilege_type::pg_catalog.text, a.is_grantable
  FROM pg_catalog.pg_proc p JOIN ns n ON n.oid = p.pronamespace, LATERAL pg_catalog.aclexplode(p.proacl) AS a
 WHERE p.proacl IS NOT NULL AND p.prokind = 'f' AND a.grantee <> p.proowner
UNION ALL
SELECT 'Column', n.nspname::pg_catalog.text, c.relname::pg_catalog.text || '.' || t.attname::pg_catalog.text, ` + grantee + `,
       a.privilege_type::pg_catalog.text, a.is_grantable
  FROM pg_catalog.pg_attribute t JOIN pg_catalog.pg_class c ON c.oid = t.attrelid JOIN ns n ON n.oid = c.relnamespace,
       LATERAL pg_catalog.aclexplode(t.attacl) AS a
 WHERE t.attacl IS NOT NULL AND NOT t.attisdropped
 ORDER BY 1, 2, 3, 4, 5`

// defaultsSQL reads a database's default privileges, but the owner's own
// (a global entry lists them).
const defaultsSQL = `SELECT pg_catalog.pg_get_userbyid(d.defaclrole)::pg_catalog.text, coalesce(n.nspname::pg_catalog.text, ''), d.defaclobjtype::pg_catalog.text,
       ` + grantee + `, a.privilege_type::pg_catalog.text, a.is_grantable
  FROM pg_catalog.pg_default_acl d LEFT JOIN pg_catalog.pg_namespace n ON n.oid = d.defaclnamespace,
       LATERAL pg_catalog.aclexplode(d.defaclacl) AS a
 WHERE a.grantee <> d.defaclrole
 ORDER BY 1, 2, 3, 4, 5`

// Read reads the server open reaches: the roles and databases from the
// database home, then each database that allows connections and that
// inside wants (nil: every one), one session at a time.
func Read(ctx context.Context, open Opener, home string, inside func(database string) bool, progress Progress) (*Server, error) {
	if progress == nil {
		progress = func(string, ...any) {}
	}
	c, err := connect(ctx, open, home)
	if err != nil {
		return nil, err
	}
	defer c.Close(context.WithoutCancel(ctx)) //nolint:errcheck // Read only; nothing to lose.
	s := &Server{}
	if err := c.QueryRow(ctx, "SELECT pg_catalog.current_setting('server_version_num')::pg_catalog.int4, current_user::pg_catalog.text").Scan(&s.Version, &s.Admin); err != nil {
		return nil, errors.Wrap(err, "cannot read the server's version")
	}
	if s.Roles, err = readRoles(ctx, c); err != nil {
		return nil, err
	}
	progress("read %d roles", len(s.Roles))
	if s.Databases, err = readDatabases(ctx, c); err != nil {
		return nil, err
	}
	if err := readDatabaseGrants(ctx, c, s.Databases); err != nil {
		return nil, err
	}
	progress("read %d databases", len(s.Databases))
	var read []*Database
	for i := range s.Databases {
		if d := &s.Databases[i]; d.Unread == "" && (inside == nil || inside(d.Name)) {
			read = append(read, d)
		}
	}
	for i, d := range read {
		progress("reading inside database %q (%d of %d)", d.Name, i+1, len(read))
		if err := readInside(ctx, open, d); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func readRoles(ctx context.Context, c *pgx.Conn) ([]Role, error) {
	rows, err := c.Query(ctx, rolesSQL)
	if err != nil {
		return nil, errors.Wrap(err, "cannot read the roles")
	}
	var out []Role
	for rows.Next() {
		var r Role
		var until pgtype.Timestamptz
		if err := rows.Scan(&r.Name, &r.Login, &r.Inherit, &r.CreateDB, &r.CreateRole, &r.Replication, &r.BypassRLS, &r.Superuser,
			&r.ConnectionLimit, &until, &r.Config, &r.Comment, &r.MemberOf, &r.AdminOf, &r.DatabaseConfig, &r.System); err != nil {
			rows.Close()
			return nil, errors.Wrap(err, "cannot read the roles")
		}
		if until.Valid && until.InfinityModifier == pgtype.Finite {
			t := until.Time.UTC()
			r.ValidUntil = &t
		}
		r.Comment, r.Managed = unmarked(r.Comment)
		out = append(out, r)
	}
	return out, errors.Wrap(rows.Err(), "cannot read the roles")
}

func readDatabases(ctx context.Context, c *pgx.Conn) ([]Database, error) {
	rows, err := c.Query(ctx, databasesSQL)
	if err != nil {
		return nil, errors.Wrap(err, "cannot read the databases")
	}
	var out []Database
	for rows.Next() {
		var d Database
		var connect bool
		if err := rows.Scan(&d.Name, &d.Owner, &d.Encoding, &d.Collate, &d.Ctype, &d.ConnectionLimit, &d.AllowConnections, &d.IsTemplate,
			&d.Comment, &d.Config, &connect, &d.ACL); err != nil {
			rows.Close()
			return nil, errors.Wrap(err, "cannot read the databases")
		}
		d.Comment, d.Managed = unmarked(d.Comment)
		switch {
		case !d.AllowConnections:
			d.Unread = "it does not allow connections (ALLOW_CONNECTIONS false)"
		case !connect:
			d.Unread = "the admin has no CONNECT privilege on it"
		}
		out = append(out, d)
	}
	return out, errors.Wrap(rows.Err(), "cannot read the databases")
}

// readDatabaseGrants reads the privileges granted on the databases into
// dbs.
func readDatabaseGrants(ctx context.Context, c *pgx.Conn, dbs []Database) error {
	rows, err := c.Query(ctx, databaseGrantsSQL)
	if err != nil {
		return errors.Wrap(err, "cannot read the databases' privileges")
	}
	byName := map[string]*Database{}
	for i := range dbs {
		byName[dbs[i].Name] = &dbs[i]
	}
	for rows.Next() {
		var db string
		g := Grant{Kind: "Database"}
		if err := rows.Scan(&db, &g.Grantee, &g.Privilege, &g.Grantable); err != nil {
			rows.Close()
			return errors.Wrap(err, "cannot read the databases' privileges")
		}
		if d := byName[db]; d != nil {
			d.Grants = append(d.Grants, g)
		}
	}
	return errors.Wrap(rows.Err(), "cannot read the databases' privileges")
}

// readInside reads d's schemas, extensions, grants and default privileges
// in a session of its own.
func readInside(ctx context.Context, open Opener, d *Database) error {
	c, err := connect(ctx, open, d.Name)
	if err != nil {
		return err
	}
	defer c.Close(context.WithoutCancel(ctx)) //nolint:errcheck // Read only; nothing to lose.
	rows, err := c.Query(ctx, schemasSQL)
	if err != nil {
		return errors.Wrapf(err, "cannot read the schemas of database %q", d.Name)
	}
	for rows.Next() {
		var s Schema
		if err := rows.Scan(&s.Name, &s.Owner, &s.Comment, &s.Extension); err != nil {
			rows.Close()
			return errors.Wrapf(err, "cannot read the schemas of database %q", d.Name)
		}
		s.Comment, s.Managed = unmarked(s.Comment)
		d.Schemas = append(d.Schemas, s)
	}
	if err := rows.Err(); err != nil {
		return errors.Wrapf(err, "cannot read the schemas of database %q", d.Name)
	}
	rows, err = c.Query(ctx, extensionsSQL)
	if err != nil {
		return errors.Wrapf(err, "cannot read the extensions of database %q", d.Name)
	}
	for rows.Next() {
		var e Extension
		if err := rows.Scan(&e.Name, &e.Version, &e.Schema); err != nil {
			rows.Close()
			return errors.Wrapf(err, "cannot read the extensions of database %q", d.Name)
		}
		d.Extensions = append(d.Extensions, e)
	}
	if err := rows.Err(); err != nil {
		return errors.Wrapf(err, "cannot read the extensions of database %q", d.Name)
	}
	rows, err = c.Query(ctx, insideGrantsSQL)
	if err != nil {
		return errors.Wrapf(err, "cannot read the privileges in database %q", d.Name)
	}
	for rows.Next() {
		var g Grant
		if err := rows.Scan(&g.Kind, &g.Schema, &g.Object, &g.Grantee, &g.Privilege, &g.Grantable); err != nil {
			rows.Close()
			return errors.Wrapf(err, "cannot read the privileges in database %q", d.Name)
		}
		d.Grants = append(d.Grants, g)
	}
	if err := rows.Err(); err != nil {
		return errors.Wrapf(err, "cannot read the privileges in database %q", d.Name)
	}
	rows, err = c.Query(ctx, defaultsSQL)
	if err != nil {
		return errors.Wrapf(err, "cannot read the default privileges in database %q", d.Name)
	}
	for rows.Next() {
		var x Default
		if err := rows.Scan(&x.Owner, &x.Schema, &x.ObjectType, &x.Grantee, &x.Privilege, &x.Grantable); err != nil {
			rows.Close()
			return errors.Wrapf(err, "cannot read the default privileges in database %q", d.Name)
		}
		d.Defaults = append(d.Defaults, x)
	}
	return errors.Wrapf(rows.Err(), "cannot read the default privileges in database %q", d.Name)
}

// unmarked splits an object's comment from the provider's ownership
// marker: the comment as a resource states it, and whether a marker was
// there.
func unmarked(stored string) (string, bool) {
	comment, m := postgres.ParseMarker(stored)
	return comment, m.UID != ""
}

// setting splits a name=value setting.
func setting(kv string) (string, string) {
	name, value, _ := strings.Cut(kv, "=")
	return name, value
}
