package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"

	xperrors "github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// DefaultExtensionSchema is where an extension goes when neither the spec
// nor its control file names a schema. The schema is always named: the
// admin's sessions search pg_catalog alone (sessionParams), where an
// unnamed CREATE EXTENSION would put it.
const DefaultExtensionSchema = "public"

// ExtensionSpec is an extension wanted in a database. Empty Version and
// Schema mean "as the server chooses at creation, then left alone".
type ExtensionSpec struct {
	Name    string
	Version string
	Schema  string
}

// InstalledExtension is an extension installed in a database.
type InstalledExtension struct {
	Name    string
	Version string
	Schema  string
}

// ObserveExtensions reads the named extensions installed in the database q
// is connected to.
func ObserveExtensions(ctx context.Context, q RowsQuerier, names []string) (map[string]InstalledExtension, error) {
	rows, err := q.Query(ctx, `SELECT e.extname::pg_catalog.text, e.extversion, n.nspname::pg_catalog.text
  FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
 WHERE e.extname = ANY($1)`, names)
	if err != nil {
		return nil, xperrors.Wrap(ClassifyConnectError(err), "cannot read extensions")
	}
	got := map[string]InstalledExtension{}
	for rows.Next() {
		var e InstalledExtension
		if err := rows.Scan(&e.Name, &e.Version, &e.Schema); err != nil {
			return nil, xperrors.Wrap(err, "cannot read extensions")
		}
		got[e.Name] = e
	}
	return got, xperrors.Wrap(rows.Err(), "cannot read extensions")
}

// ExtensionFacts are what the server says of an extension about to be
// installed or updated, and of the schema its script runs in.
type ExtensionFacts struct {
	// Trusted: the version's control file says trusted, so PostgreSQL
	// lets a database owner install it itself (13+).
	Trusted bool
	// FixedSchema is the schema the control file requires, "" when the
	// extension may go anywhere.
	FixedSchema string
	// Schema is the schema the script runs in.
	Schema string
	// Writable are the schemas the script resolves names in (Schema, and
	// the schemas of the installed extensions it requires, which CREATE
	// EXTENSION puts on its search_path too) in which roles other than
	// superusers and the admin may create objects.
	Writable []SchemaWriters
	// Requires are the extensions the version requires.
	Requires []string
}

// SchemaWriters are the roles other than superusers and the admin that may
// create objects in a schema: its owner and those granted CREATE ("PUBLIC"
// for everyone).
type SchemaWriters struct {
	Schema string
	// Roles, comma-separated.
	Roles string
}

// extensionFactsSQL reads, for each extension ($1) at a version ($2, ""
// for the default) going to a schema ($3, "" for the control file's or
// DefaultExtensionSchema), whether that version is trusted, the schema its
// control file fixes, the schema its script runs in, and, for that schema
// and the schemas of the installed extensions the version requires (its
// script's search_path holds them all), who besides superusers and the
// admin may create objects there (pg_database_owner stands for the
// database's owner, which may be either); and what the version requires.
// The control files are read from the server's disk, so it runs only
// before a change.
const extensionFactsSQL = `WITH me AS (
  SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolsuper OR r.rolname = CURRENT_USER
  UNION ALL
  SELECT pg_catalog.to_regrole('pg_database_owner')::pg_catalog.oid FROM pg_catalog.pg_database d
   WHERE d.datname = pg_catalog.current_database() AND d.datdba IN (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolsuper OR r.rolname = CURRENT_USER))
SELECT w.name, COALESCE(v.trusted, false), COALESCE(v.schema::pg_catalog.text, ''), s.name, ws.schemas, ws.roles,
       COALESCE(v.requires::pg_catalog.text[], '{}')
  FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.text[]), pg_catalog.unnest($2::pg_catalog.text[]), pg_catalog.unnest($3::pg_catalog.text[])) AS w(name, version, schema)
  LEFT JOIN pg_catalog.pg_available_extensions d ON d.name = w.name
  LEFT JOIN pg_catalog.pg_available_extension_versions v ON v.name = w.name AND v.version = COALESCE(NULLIF(w.version, ''), d.default_version)
  CROSS JOIN LATERAL (SELECT COALESCE(NULLIF(w.schema, ''), v.schema::pg_catalog.text, '` + DefaultExtensionSchema + `') AS name) AS s
  CROSS JOIN LATERAL (
    SELECT COALESCE(pg_catalog.array_agg(x.nsp ORDER BY x.nsp), '{}') AS schemas, COALESCE(pg_catalog.array_agg(x.roles ORDER BY x.nsp), '{}') AS roles
      FROM (SELECT p.nspname::pg_catalog.text AS nsp, pg_catalog.string_agg(DISTINCT y.r, ', ' ORDER BY y.r) AS roles
              FROM pg_catalog.pg_namespace p
              CROSS JOIN LATERAL (
                SELECT o.rolname::pg_catalog.text AS r FROM pg_catalog.pg_roles o
                 WHERE o.oid = p.nspowner AND o.oid NOT IN (SELECT oid FROM me WHERE oid IS NOT NULL)
                UNION ALL
                SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE g.rolname::pg_catalog.text END
                  FROM pg_catalog.aclexplode(p.nspacl) AS a LEFT JOIN pg_catalog.pg_roles g ON g.oid = a.grantee
                 WHERE a.privilege_type = 'CREATE' AND (a.grantee = 0 OR a.grantee NOT IN (SELECT oid FROM me WHERE oid IS NOT NULL))) AS y
             WHERE p.nspname = s.name
                OR p.oid IN (SELECT e.extnamespace FROM pg_catalog.pg_extension e WHERE e.extname = ANY(v.requires))
             GROUP BY p.nspname) AS x) AS ws`

// ObserveExtensionFacts reads the facts of the extensions to be installed
// or updated (PendingExtensions) in the database q is connected to: the
// schema a script runs in is the one asked for, or, for an update, the one
// the extension is in.
func ObserveExtensionFacts(ctx context.Context, q RowsQuerier, pending []ExtensionSpec, got map[string]InstalledExtension) (map[string]ExtensionFacts, error) {
	names, versions, schemas := make([]string, len(pending)), make([]string, len(pending)), make([]string, len(pending))
	for i, p := range pending {
		names[i], versions[i], schemas[i] = p.Name, p.Version, p.Schema
		if g, ok := got[p.Name]; ok {
			schemas[i] = g.Schema
		}
	}
	rows, err := q.Query(ctx, extensionFactsSQL, names, versions, schemas)
	if err != nil {
		return nil, xperrors.Wrap(ClassifyConnectError(err), "cannot read what the server says of the extensions")
	}
	defer rows.Close()
	out := map[string]ExtensionFacts{}
	for rows.Next() {
		var name string
		var f ExtensionFacts
		var schemas, roles []string
		if err := rows.Scan(&name, &f.Trusted, &f.FixedSchema, &f.Schema, &schemas, &roles, &f.Requires); err != nil {
			return nil, xperrors.Wrap(err, "cannot read what the server says of the extensions")
		}
		for i := range min(len(schemas), len(roles)) {
			f.Writable = append(f.Writable, SchemaWriters{Schema: schemas[i], Roles: roles[i]})
		}
		out[name] = f
	}
	return out, xperrors.Wrap(rows.Err(), "cannot read what the server says of the extensions")
}

// PendingExtensions returns the wanted extensions that are missing, at
// another version or in another schema: those ExtensionStatements has
// statements for.
func PendingExtensions(want []ExtensionSpec, got map[string]InstalledExtension) []ExtensionSpec {
	var out []ExtensionSpec
	for _, w := range want {
		g, ok := got[w.Name]
		if !ok || w.Version != "" && w.Version != g.Version || w.Schema != "" && w.Schema != g.Schema {
			out = append(out, w)
		}
	}
	return out
}

// UnsafeExtensions says which of the pending extensions the admin must not
// install or update, and why: one whose script runs with the admin's
// superuser power (not trusted) with a schema where someone else may
// create objects on its search_path: its own, or that of an extension it
// requires (installed, or created in the same step). Such a script
// resolves names there, so objects a database owner placed first would
// run as the admin (PostgreSQL's documentation: "Security Considerations
// for Extensions"). A trusted
// extension is one PostgreSQL lets the database owner install itself, so
// the admin installing it hands the owner nothing it could not take.
// Moving an extension (SET SCHEMA) runs no script. It returns "" when all
// are safe.
func UnsafeExtensions(pending []ExtensionSpec, got map[string]InstalledExtension, facts map[string]ExtensionFacts) string {
	var refused []string
	for _, p := range pending {
		g, installed := got[p.Name]
		if installed && (p.Version == "" || p.Version == g.Version) {
			continue // Only a move.
		}
		f := facts[p.Name]
		writable := f.Writable
		// A required extension created in the same step puts the
		// schema it goes to on the script's search_path too.
		for _, r := range f.Requires {
			if _, installed := got[r]; installed || !slices.ContainsFunc(pending, func(e ExtensionSpec) bool { return e.Name == r }) {
				continue
			}
			for _, w := range facts[r].Writable {
				if w.Schema == facts[r].Schema && !slices.Contains(writable, w) {
					writable = append(writable, w)
				}
			}
		}
		if f.Trusted || len(writable) == 0 {
			continue
		}
		var where []string
		for _, w := range writable {
			what := fmt.Sprintf("role(s) %s may create objects in schema %q", w.Roles, w.Schema)
			if w.Schema != f.Schema {
				what += " (of an extension it requires)"
			}
			where = append(where, what)
		}
		refused = append(refused, fmt.Sprintf("%q (%s)", p.Name, strings.Join(where, "; ")))
	}
	if len(refused) == 0 {
		return ""
	}
	return fmt.Sprintf("extension(s) %s are not trusted: their scripts run with the admin's superuser privileges and resolve names in schemas others can write to, "+
		"where objects they placed first would run as the admin. Nothing was installed. Name a schema only the admin can create objects in "+
		"(spec.forProvider.extensions[].schema), or install them by hand after checking the schema", strings.Join(refused, ", "))
}

// ExtensionStatements returns the statements that make the wanted
// extensions present at the wanted version and schema: none when they
// already are. Nothing is ever dropped. A new extension is created in the
// schema asked for, else the one its control file fixes (facts, when
// read), else DefaultExtensionSchema.
func ExtensionStatements(want []ExtensionSpec, got map[string]InstalledExtension, facts map[string]ExtensionFacts) []string {
	var stmts []string
	for _, w := range want {
		id := QuoteIdentifier(w.Name)
		g, ok := got[w.Name]
		if !ok {
			schema := w.Schema
			if schema == "" {
				schema = facts[w.Name].FixedSchema
			}
			if schema == "" {
				schema = DefaultExtensionSchema
			}
			s := "CREATE EXTENSION IF NOT EXISTS " + id + " SCHEMA " + QuoteIdentifier(schema)
			if w.Version != "" {
				s += " VERSION " + QuoteLiteral(w.Version)
			}
			stmts = append(stmts, s)
			continue
		}
		if w.Version != "" && w.Version != g.Version {
			stmts = append(stmts, "ALTER EXTENSION "+id+" UPDATE TO "+QuoteLiteral(w.Version))
		}
		if w.Schema != "" && w.Schema != g.Schema {
			stmts = append(stmts, "ALTER EXTENSION "+id+" SET SCHEMA "+QuoteIdentifier(w.Schema))
		}
	}
	return stmts
}
