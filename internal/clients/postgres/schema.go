package postgres

import (
	"context"
	"slices"
	"strings"

	xperrors "github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// SchemaSettings are what the provider manages of a schema.
type SchemaSettings struct {
	// Owner role. Empty means "leave as created" when desired.
	Owner string
	// Comment without the provider's marker.
	Comment string
	// RevokePublic keeps PUBLIC from holding any privilege on the schema.
	RevokePublic bool
}

// ObservedSchema is a schema as the catalog shows it.
type ObservedSchema struct {
	Owner   string
	Comment string
	// MarkerOwner is the UID in the provider's marker, "" when none.
	MarkerOwner string
	// MarkerSeal is the marker's seal, "" when it has none.
	MarkerSeal string
	// PublicPrivileges are the privileges PUBLIC holds on the schema.
	PublicPrivileges []string
}

// observeSchemaSQL reads a schema and the identity of the server in one
// round trip; the schema's columns are NULL when it does not exist.
const observeSchemaSQL = `SELECT (SELECT system_identifier::pg_catalog.text FROM pg_catalog.pg_control_system()),
       n.oid IS NOT NULL,
       coalesce(pg_catalog.pg_get_userbyid(n.nspowner)::pg_catalog.text, ''),
       coalesce(pg_catalog.obj_description(n.oid, 'pg_namespace'), ''),
       coalesce(ARRAY(SELECT a.privilege_type FROM pg_catalog.aclexplode(n.nspacl) AS a WHERE a.grantee = 0 ORDER BY 1), '{}')
  FROM (SELECT 1) AS one
  LEFT JOIN pg_catalog.pg_namespace n ON n.nspname = $1`

// ObserveSchema reads a schema of the database q is connected to, and the
// system identifier of the server. The schema is nil when it does not
// exist.
func ObserveSchema(ctx context.Context, q Querier, name string) (*ObservedSchema, string, error) {
	o := &ObservedSchema{}
	var system, comment string
	var exists bool
	if err := q.QueryRow(ctx, observeSchemaSQL, name).Scan(&system, &exists, &o.Owner, &comment, &o.PublicPrivileges); err != nil {
		return nil, "", xperrors.Wrapf(ClassifyConnectError(err), "cannot read schema %s", QuoteIdentifier(name))
	}
	if !exists {
		return nil, system, nil
	}
	var m Mark
	o.Comment, m = ParseMarker(comment)
	o.MarkerOwner, o.MarkerSeal = m.UID, m.Seal
	return o, system, nil
}

// CreateSchemaStatements create a schema and mark it, in one transaction.
func CreateSchemaStatements(name string, s SchemaSettings, mark Mark) []string {
	id := QuoteIdentifier(name)
	create := "CREATE SCHEMA " + id
	if s.Owner != "" {
		create += " AUTHORIZATION " + QuoteIdentifier(s.Owner)
	}
	// A new schema grants PUBLIC nothing, so RevokePublic needs no
	// statement here.
	return []string{create, "COMMENT ON SCHEMA " + id + " IS " + QuoteLiteral(WithMarker(s.Comment, mark))}
}

// UpdateSchemaStatements bring an observed schema to the desired settings:
// none at all when it is up to date.
func UpdateSchemaStatements(name string, want SchemaSettings, got ObservedSchema, mark Mark) []string {
	id := QuoteIdentifier(name)
	var stmts []string
	if want.Owner != "" && want.Owner != got.Owner {
		stmts = append(stmts, "ALTER SCHEMA "+id+" OWNER TO "+QuoteIdentifier(want.Owner))
	}
	if want.Comment != got.Comment || got.MarkerOwner != mark.UID || got.MarkerSeal != mark.Seal {
		stmts = append(stmts, "COMMENT ON SCHEMA "+id+" IS "+QuoteLiteral(WithMarker(want.Comment, mark)))
	}
	// The privilege keywords come from the closed set, not from the
	// server's text.
	var public []string
	for _, p := range got.PublicPrivileges {
		if slices.Contains(AllPrivileges(KindSchema, 0), p) {
			public = append(public, p)
		}
	}
	if want.RevokePublic && len(public) > 0 {
		stmts = append(stmts, "REVOKE "+strings.Join(public, ", ")+" ON SCHEMA "+id+" FROM PUBLIC")
	}
	return stmts
}

// DropSchemaStatement drops a schema: RESTRICT unless cascade.
func DropSchemaStatement(name string, cascade bool) string {
	s := "DROP SCHEMA IF EXISTS " + QuoteIdentifier(name)
	if cascade {
		return s + " CASCADE"
	}
	return s + " RESTRICT"
}
