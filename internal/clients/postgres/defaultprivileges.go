package postgres

import (
	"context"
	"strings"

	xperrors "github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// DefaultPrivilegesTarget says whose future objects of which kind, and
// where, default privileges apply to.
type DefaultPrivilegesTarget struct {
	// Owner is the role creating the objects (FOR ROLE).
	Owner string
	// Schema limits the entry to objects created there; "" for anywhere.
	Schema string
	// Kind is KindTable, KindSequence, KindFunction, KindType or
	// KindSchema.
	Kind ObjectKind
}

// defaclObjType is pg_default_acl.defaclobjtype per kind.
var defaclObjType = map[ObjectKind]string{KindTable: "r", KindSequence: "S", KindFunction: "f", KindType: "T", KindSchema: "n"}

// defaclKeyword is the ON clause of ALTER DEFAULT PRIVILEGES per kind.
var defaclKeyword = map[ObjectKind]string{KindTable: "TABLES", KindSequence: "SEQUENCES", KindFunction: "FUNCTIONS", KindType: "TYPES", KindSchema: "SCHEMAS"}

// ObservedDefaultPrivileges is a grantee's entry in pg_default_acl.
type ObservedDefaultPrivileges struct {
	ServerVersion int
	RoleExists    bool
	OwnerExists   bool
	SchemaExists  bool
	Held          Held
}

// observeDefaultPrivilegesSQL reads the grantee's own entry for exactly
// this owner, schema (0 for none) and object type: another entry never
// makes it look applied (provider-sql #458).
const observeDefaultPrivilegesSQL = `SELECT (SELECT system_identifier::pg_catalog.text FROM pg_catalog.pg_control_system()),
       pg_catalog.current_setting('server_version_num')::pg_catalog.int4,
       EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = $1),
       EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = $2),
       $3::pg_catalog.text = '' OR EXISTS (SELECT FROM pg_catalog.pg_namespace WHERE nspname = $3::pg_catalog.text),
       coalesce(ARRAY(SELECT a.privilege_type || CASE WHEN a.is_grantable THEN '+' ELSE '' END
                        FROM pg_catalog.pg_default_acl d CROSS JOIN LATERAL pg_catalog.aclexplode(d.defaclacl) AS a
                       WHERE d.defaclrole = (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = $2)
                         AND d.defaclnamespace = CASE WHEN $3::pg_catalog.text = '' THEN 0::pg_catalog.oid
                                                      ELSE (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = $3::pg_catalog.text) END
                         AND d.defaclobjtype = $4::pg_catalog."char"
                         AND a.grantee = (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = $1)), '{}')`

// ObserveDefaultPrivileges reads role's default privileges for t in the
// database q is connected to, and the system identifier of the server, in
// one round trip.
func ObserveDefaultPrivileges(ctx context.Context, q Querier, role string, t DefaultPrivilegesTarget) (*ObservedDefaultPrivileges, string, error) {
	o := &ObservedDefaultPrivileges{}
	var system string
	var items []string
	err := q.QueryRow(ctx, observeDefaultPrivilegesSQL, role, t.Owner, t.Schema, defaclObjType[t.Kind]).
		Scan(&system, &o.ServerVersion, &o.RoleExists, &o.OwnerExists, &o.SchemaExists, &items)
	if err != nil {
		return nil, "", xperrors.Wrap(ClassifyConnectError(err), "cannot read default privileges")
	}
	o.Held = parseACLItems(items)
	return o, system, nil
}

func alterDefault(t DefaultPrivilegesTarget) string {
	s := "ALTER DEFAULT PRIVILEGES FOR ROLE " + QuoteIdentifier(t.Owner)
	if t.Schema != "" {
		s += " IN SCHEMA " + QuoteIdentifier(t.Schema)
	}
	return s
}

// DefaultPrivilegesStatements turns a plan into statements.
func DefaultPrivilegesStatements(role string, t DefaultPrivilegesTarget, p PrivilegePlan, grantOption bool) []string {
	var stmts []string
	on, to := " ON "+defaclKeyword[t.Kind], QuoteIdentifier(role)
	if len(p.Revoke) > 0 {
		stmts = append(stmts, alterDefault(t)+" REVOKE "+strings.Join(p.Revoke, ", ")+on+" FROM "+to)
	}
	if len(p.RevokeGrantOption) > 0 {
		stmts = append(stmts, alterDefault(t)+" REVOKE GRANT OPTION FOR "+strings.Join(p.RevokeGrantOption, ", ")+on+" FROM "+to)
	}
	if len(p.Grant) > 0 {
		s := alterDefault(t) + " GRANT " + strings.Join(p.Grant, ", ") + on + " TO " + to
		if grantOption {
			s += " WITH GRANT OPTION"
		}
		stmts = append(stmts, s)
	}
	return stmts
}
