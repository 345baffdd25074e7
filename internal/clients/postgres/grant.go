package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	xperrors "github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// A GrantTarget is what a grant is on.
type GrantTarget struct {
	Kind ObjectKind
	// Database is the target itself for KindDatabase; for the other kinds
	// it is where the session runs, and not part of the statements.
	Database string
	// Tablespace is the target of KindTablespace.
	Tablespace string
	// Schema is the target itself for KindSchema, else the schema holding
	// the objects.
	Schema string
	// Objects are tables or sequences by name, functions by signature
	// ("name(argtypes)"); ignored when AllInSchema.
	Objects     []string
	AllInSchema bool
}

// An ObservedObject is one target object and what the grantee holds on it.
type ObservedObject struct {
	// Name as the spec gives it (a signature for functions).
	Name string
	// Ref is the object as a statement names it, quoted by the provider
	// from catalog names (objectRef).
	Ref  string
	Held Held
	// Owner is the role that owns the object: GRANT and REVOKE on it need
	// its privileges.
	Owner string
}

// An ObservedGrant is the grantee and the target objects as the catalog
// shows them.
type ObservedGrant struct {
	ServerVersion int
	RoleExists    bool
	// ParentExists says whether the database (KindDatabase), tablespace
	// (KindTablespace) or schema (the other kinds) exists.
	ParentExists bool
	// SchemaOwner owns the schema holding the objects ("" for
	// KindDatabase, KindTablespace): naming an object in it asks for USAGE on it.
	SchemaOwner string
	Objects     []ObservedObject
	// Missing lists named objects that do not exist.
	Missing []string
}

// Owners returns the roles whose privileges GRANT and REVOKE on objects
// need: each object's owner, and the schema's owner, whose USAGE lets a
// statement name objects in it. A superuser admin holds them all; a
// non-superuser one acts as them (see ActingAs).
func (o *ObservedGrant) Owners(objects []ObservedObject) []RoleNeed {
	var needs []RoleNeed
	seen := map[string]bool{"": true}
	add := func(r string) {
		if !seen[r] {
			seen[r] = true
			needs = append(needs, RoleNeed{Role: r, Inherit: true})
		}
	}
	add(o.SchemaOwner)
	for _, obj := range objects {
		add(obj.Owner)
	}
	return needs
}

// The observation queries return the server's identity and version, whether
// the grantee and the parent exist, the schema's owner, and one row per
// target object (none when there is none) with the grantee's privileges on
// it and its owner. Each privilege ends in "+" when held with grant option.
// $1 is the grantee, $2 the database or schema, $3 the named objects.
// Objects are found through the catalog by name, never by resolving a
// qualified name, which would ask the admin for USAGE on the schema.
const grantHeaderSQL = `SELECT (SELECT system_identifier::pg_catalog.text FROM pg_catalog.pg_control_system()),
       pg_catalog.current_setting('server_version_num')::pg_catalog.int4,
       EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = $1),
       %s, %s,
       o.name, o.objname, o.args, coalesce(o.found, false),
       coalesce(ARRAY(SELECT a.privilege_type || CASE WHEN a.is_grantable THEN '+' ELSE '' END
                        FROM pg_catalog.aclexplode(o.acl) AS a
                       WHERE a.grantee = (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = $1)), '{}'),
       coalesce(pg_catalog.pg_get_userbyid(o.owner)::pg_catalog.text, '')
  FROM (SELECT 1) AS one
  LEFT JOIN (%s) AS o ON true`

const (
	schemaExistsSQL = `EXISTS (SELECT FROM pg_catalog.pg_namespace WHERE nspname = $2)`
	schemaOwnerSQL  = `coalesce((SELECT pg_catalog.pg_get_userbyid(nspowner)::pg_catalog.text FROM pg_catalog.pg_namespace WHERE nspname = $2), '')`
	schemaOIDSQL    = `(SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = $2)`
	tableKinds      = `('r', 'p', 'v', 'm', 'f')`
)

func grantQuery(t GrantTarget) (string, bool) {
	named := !t.AllInSchema
	parent, owner := schemaExistsSQL, schemaOwnerSQL
	var objects string
	switch t.Kind {
	case KindDatabase:
		parent, owner = `EXISTS (SELECT FROM pg_catalog.pg_database WHERE datname = $2)`, `''`
		objects = `SELECT datname::pg_catalog.text AS name, datname::pg_catalog.text AS objname, '{}'::pg_catalog.text[] AS args, true AS found, coalesce(datacl, pg_catalog.acldefault('d', datdba)) AS acl, datdba AS owner
		             FROM pg_catalog.pg_database WHERE datname = $2`
		named = false
	case KindTablespace:
		parent, owner = `EXISTS (SELECT FROM pg_catalog.pg_tablespace WHERE spcname = $2)`, `''`
		objects = `SELECT spcname::pg_catalog.text AS name, spcname::pg_catalog.text AS objname, '{}'::pg_catalog.text[] AS args, true AS found, coalesce(spcacl, pg_catalog.acldefault('t', spcowner)) AS acl, spcowner AS owner
		             FROM pg_catalog.pg_tablespace WHERE spcname = $2`
		named = false
	case KindSchema:
		objects = `SELECT nspname::pg_catalog.text AS name, nspname::pg_catalog.text AS objname, '{}'::pg_catalog.text[] AS args, true AS found, coalesce(nspacl, pg_catalog.acldefault('n', nspowner)) AS acl, nspowner AS owner
		             FROM pg_catalog.pg_namespace WHERE nspname = $2`
		named = false
	case KindTable, KindSequence:
		kinds, def := tableKinds, "r"
		if t.Kind == KindSequence {
			kinds, def = `('S')`, "s"
		}
		if named {
			objects = `SELECT s.name, s.name AS objname, '{}'::pg_catalog.text[] AS args, c.oid IS NOT NULL AS found,
			                  coalesce(c.relacl, pg_catalog.acldefault('` + def + `', c.relowner)) AS acl, c.relowner AS owner
			             FROM pg_catalog.unnest($3::pg_catalog.text[]) AS s(name)
			             LEFT JOIN pg_catalog.pg_class c ON c.relname = s.name AND c.relkind IN ` + kinds + ` AND c.relnamespace = ` + schemaOIDSQL
		} else {
			objects = `SELECT c.relname::pg_catalog.text AS name, c.relname::pg_catalog.text AS objname, '{}'::pg_catalog.text[] AS args, true AS found,
			                  coalesce(c.relacl, pg_catalog.acldefault('` + def + `', c.relowner)) AS acl, c.relowner AS owner
			             FROM pg_catalog.pg_class c WHERE c.relkind IN ` + kinds + ` AND c.relnamespace = ` + schemaOIDSQL
		}
	case KindFunction:
		// The argument types by schema and name, in order, which the
		// statement names them by (FunctionRef): quoted here, not by
		// the server.
		ref := `p.proname::pg_catalog.text AS objname,
		        ARRAY(SELECT v.x FROM pg_catalog.unnest(p.proargtypes::pg_catalog.oid[]) WITH ORDINALITY AS a(typ, i)
		                JOIN pg_catalog.pg_type ty ON ty.oid = a.typ JOIN pg_catalog.pg_namespace tn ON tn.oid = ty.typnamespace
		                CROSS JOIN LATERAL (VALUES (1, tn.nspname::pg_catalog.text), (2, ty.typname::pg_catalog.text)) AS v(k, x)
		               ORDER BY a.i, v.k) AS args`
		if named {
			// Each signature arrives split (see functionSignatures): the
			// name as the catalog spells it and the argument types, each
			// resolved with to_regtype (an unknown one as oid 0, which no
			// function takes). The spec's text never becomes SQL.
			objects = `SELECT s.name, ` + ref + `, p.oid IS NOT NULL AS found, coalesce(p.proacl, pg_catalog.acldefault('f', p.proowner)) AS acl, p.proowner AS owner
			             FROM pg_catalog.jsonb_to_recordset($3::pg_catalog.jsonb) AS s(name pg_catalog.text, proname pg_catalog.text, args pg_catalog.text[])
			             LEFT JOIN pg_catalog.pg_proc p ON p.proname = s.proname AND p.pronamespace = ` + schemaOIDSQL + `
			                                AND p.proargtypes = pg_catalog.array_to_string(ARRAY(SELECT coalesce(pg_catalog.to_regtype(u.a)::pg_catalog.oid, 0) FROM pg_catalog.unnest(s.args) WITH ORDINALITY AS u(a, i) ORDER BY u.i), ' ')::pg_catalog.oidvector`
		} else {
			// ALL FUNCTIONS IN SCHEMA leaves procedures out.
			objects = `SELECT p.proname || '(' || pg_catalog.pg_get_function_identity_arguments(p.oid) || ')' AS name, ` + ref + `, true AS found,
			                  coalesce(p.proacl, pg_catalog.acldefault('f', p.proowner)) AS acl, p.proowner AS owner
			             FROM pg_catalog.pg_proc p WHERE p.prokind <> 'p' AND p.pronamespace = ` + schemaOIDSQL
		}
	}
	return fmt.Sprintf(grantHeaderSQL, parent, owner, objects), named
}

// A functionSignature is a function named as a grant's objects name it,
// "name(argtype, ...)", split into the name as the catalog spells it and
// the argument types as written.
type functionSignature struct {
	Name    string   `json:"name"`
	Proname string   `json:"proname"`
	Args    []string `json:"args"`
}

// splitSignature splits "name(type, ...)". An unquoted name folds to lower
// case, as PostgreSQL folds it; a double-quoted one keeps its case. ok is
// false when sig is not of that form; such a function is never found.
func splitSignature(sig string) (name string, args []string, ok bool) {
	s := strings.TrimSpace(sig)
	var rest string
	if strings.HasPrefix(s, `"`) {
		var b strings.Builder
		i := 1
		for ; i < len(s); i++ {
			if s[i] != '"' {
				b.WriteByte(s[i])
				continue
			}
			if i+1 < len(s) && s[i+1] == '"' {
				b.WriteByte('"')
				i++
				continue
			}
			break
		}
		if i >= len(s) {
			return "", nil, false
		}
		name, rest = b.String(), strings.TrimSpace(s[i+1:])
	} else {
		open := strings.IndexByte(s, '(')
		if open < 0 {
			return "", nil, false
		}
		name, rest = foldIdentifier(strings.TrimSpace(s[:open])), s[open:]
	}
	if name == "" || !strings.HasPrefix(rest, "(") || !strings.HasSuffix(rest, ")") {
		return "", nil, false
	}
	return name, splitArgs(rest[1 : len(rest)-1]), true
}

// foldIdentifier lower-cases the ASCII letters of an unquoted identifier,
// as PostgreSQL does (and nothing else).
func foldIdentifier(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// splitArgs splits a list of types on the commas outside parentheses and
// double quotes ("numeric(10,2), text" is two types).
func splitArgs(list string) []string {
	var args []string
	depth, quoted, start := 0, false, 0
	for i := 0; i < len(list); i++ {
		switch c := list[i]; {
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth == 0:
			args = append(args, strings.TrimSpace(list[start:i]))
			start = i + 1
		}
	}
	if last := strings.TrimSpace(list[start:]); last != "" || len(args) > 0 {
		args = append(args, last)
	}
	return args
}

// functionSignatures is the $3 of a query on named functions.
func functionSignatures(sigs []string) (string, error) {
	out := make([]functionSignature, 0, len(sigs))
	for _, sig := range sigs {
		name, args, ok := splitSignature(sig)
		if !ok {
			// Matches no function: reported as missing under its name.
			name, args = "", nil
		}
		if args == nil {
			args = []string{}
		}
		out = append(out, functionSignature{Name: sig, Proname: name, Args: args})
	}
	b, err := json.Marshal(out)
	return string(b), xperrors.Wrap(err, "cannot encode the function signatures")
}

// ObserveGrant reads what role holds on t, and the system identifier of the
// server, in one round trip. Run it in t's database (any database for
// KindDatabase and KindTablespace).
func ObserveGrant(ctx context.Context, q RowsQuerier, role string, t GrantTarget) (*ObservedGrant, string, error) {
	query, named := grantQuery(t)
	parent := t.Schema
	switch t.Kind {
	case KindDatabase:
		parent = t.Database
	case KindTablespace:
		parent = t.Tablespace
	}
	args := []any{role, parent}
	switch {
	case named && t.Kind == KindFunction:
		sigs, err := functionSignatures(t.Objects)
		if err != nil {
			return nil, "", err
		}
		args = append(args, sigs)
	case named:
		args = append(args, t.Objects)
	}
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, "", xperrors.Wrap(ClassifyConnectError(err), "cannot read privileges")
	}
	defer rows.Close()
	o := &ObservedGrant{}
	var system string
	for rows.Next() {
		var name, objname *string
		var args, items []string
		var found bool
		var owner string
		if err := rows.Scan(&system, &o.ServerVersion, &o.RoleExists, &o.ParentExists, &o.SchemaOwner, &name, &objname, &args, &found, &items, &owner); err != nil {
			return nil, "", xperrors.Wrap(err, "cannot read privileges")
		}
		switch {
		case name == nil:
		case !found:
			o.Missing = append(o.Missing, *name)
		default:
			o.Objects = append(o.Objects, ObservedObject{Name: *name, Ref: objectRef(t, *objname, args), Held: parseACLItems(items), Owner: owner})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, "", xperrors.Wrap(ClassifyConnectError(err), "cannot read privileges")
	}
	// The server returns the objects in no set order (a join may hash):
	// sorted, the statements built from them are the same from one
	// observation to the next, as a plan promises.
	slices.SortFunc(o.Objects, func(a, b ObservedObject) int { return strings.Compare(a.Name, b.Name) })
	slices.Sort(o.Missing)
	return o, system, nil
}

// objectRef names an object of t's kind in statements: the database or
// schema itself, or the object qualified by t's schema, a function with
// its argument types as schema-qualified names (args holds each type's
// schema and name in turn). Everything is quoted here: no text the server
// computed becomes SQL, so no function a database owner shadows could
// write the statement.
func objectRef(t GrantTarget, name string, args []string) string {
	switch t.Kind {
	case KindDatabase, KindSchema, KindTablespace:
		return QuoteIdentifier(name)
	case KindFunction:
		types := make([]string, 0, len(args)/2)
		for i := 0; i+1 < len(args); i += 2 {
			types = append(types, pgx.Identifier{args[i], args[i+1]}.Sanitize())
		}
		return pgx.Identifier{t.Schema, name}.Sanitize() + "(" + strings.Join(types, ", ") + ")"
	}
	return pgx.Identifier{t.Schema, name}.Sanitize()
}

// on returns the ON clause of a statement on t: the objects by their
// server-quoted refs, or all of them in the schema.
func on(t GrantTarget, refs []string) string {
	if t.AllInSchema && !t.Kind.single() {
		kind := map[ObjectKind]string{KindTable: "TABLES", KindSequence: "SEQUENCES", KindFunction: "FUNCTIONS"}[t.Kind]
		return "ALL " + kind + " IN SCHEMA " + QuoteIdentifier(t.Schema)
	}
	kw := string(t.Kind)
	if t.Kind == KindFunction {
		// ROUTINE names functions and procedures alike.
		kw = "ROUTINE"
	}
	return kw + " " + strings.Join(refs, ", ")
}

// GrantStatement grants privileges on the objects named by refs (ignored
// for all objects in a schema).
func GrantStatement(role string, t GrantTarget, refs, privileges []string, grantOption bool) string {
	s := "GRANT " + strings.Join(privileges, ", ") + " ON " + on(t, refs) + " TO " + QuoteIdentifier(role)
	if grantOption {
		s += " WITH GRANT OPTION"
	}
	return s
}

// RevokeStatement revokes privileges (or only their grant option) on the
// objects named by refs.
func RevokeStatement(role string, t GrantTarget, refs, privileges []string, grantOptionOnly bool) string {
	s := "REVOKE "
	if grantOptionOnly {
		s += "GRANT OPTION FOR "
	}
	return s + strings.Join(privileges, ", ") + " ON " + on(t, refs) + " FROM " + QuoteIdentifier(role)
}

// PlanStatements turns a plan for the objects of t into statements.
func PlanStatements(role string, t GrantTarget, objects []ObservedObject, p PrivilegePlan, grantOption bool) []string {
	var stmts []string
	all := make([]string, len(objects))
	for i, o := range objects {
		all[i] = o.Ref
	}
	if len(p.Revoke) > 0 && len(all) > 0 {
		stmts = append(stmts, RevokeStatement(role, t, all, p.Revoke, false))
	}
	if len(p.RevokeGrantOption) > 0 && len(all) > 0 {
		stmts = append(stmts, RevokeStatement(role, t, all, p.RevokeGrantOption, true))
	}
	if len(p.Grant) > 0 {
		refs := make([]string, 0, len(p.GrantOn))
		for _, i := range p.GrantOn {
			refs = append(refs, objects[i].Ref)
		}
		stmts = append(stmts, GrantStatement(role, t, refs, p.Grant, grantOption))
	}
	return stmts
}

// A Membership is a role's membership in another, as wanted or observed.
type Membership struct {
	Member bool
	Admin  bool
	// Inherit and Set are the PostgreSQL 16+ options; nil means "server
	// default" when wanted and "unknown" (before 16) when observed.
	Inherit *bool
	Set     *bool
}

// An ObservedMembership is role's membership in group.
type ObservedMembership struct {
	Membership
	ServerVersion int
	RoleExists    bool
	GroupExists   bool
}

// observeMembershipSQL reads a membership. to_jsonb reads the PostgreSQL 16
// options where they exist, so one query serves every version. With
// several grantors (16+), the INHERIT and SET options are those of the
// admin's own grant where there is one: the one its GRANT changes
// (recorded as the bootstrap superuser's, oid 10, for a superuser).
// Compared over every grant, an option another grantor gave would differ
// from the spec for good, and the same GRANT would be sent at every poll.
// Without one of its own, an option holds if any grant gives it.
const observeMembershipSQL = `SELECT (SELECT system_identifier::pg_catalog.text FROM pg_catalog.pg_control_system()),
       pg_catalog.current_setting('server_version_num')::pg_catalog.int4,
       EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = $1),
       EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = $2),
       pg_catalog.count(m.roleid) > 0,
       coalesce(pg_catalog.bool_or(m.admin_option), false),
       coalesce(pg_catalog.bool_or((pg_catalog.to_jsonb(m) ->> 'inherit_option')::pg_catalog.bool) FILTER (WHERE m.grantor = me.grantor),
                pg_catalog.bool_or((pg_catalog.to_jsonb(m) ->> 'inherit_option')::pg_catalog.bool)),
       coalesce(pg_catalog.bool_or((pg_catalog.to_jsonb(m) ->> 'set_option')::pg_catalog.bool) FILTER (WHERE m.grantor = me.grantor),
                pg_catalog.bool_or((pg_catalog.to_jsonb(m) ->> 'set_option')::pg_catalog.bool))
  FROM (SELECT CASE WHEN r.rolsuper THEN 10::pg_catalog.oid ELSE r.oid END AS grantor
          FROM pg_catalog.pg_roles r WHERE r.rolname = CURRENT_USER) AS me
  LEFT JOIN pg_catalog.pg_auth_members m ON m.member = (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = $1)
                             AND m.roleid = (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = $2)`

// ObserveMembership reads role's membership in group, and the system
// identifier of the server, in one round trip.
func ObserveMembership(ctx context.Context, q Querier, role, group string) (*ObservedMembership, string, error) {
	o := &ObservedMembership{}
	var system string
	err := q.QueryRow(ctx, observeMembershipSQL, role, group).Scan(&system, &o.ServerVersion, &o.RoleExists, &o.GroupExists,
		&o.Member, &o.Admin, &o.Inherit, &o.Set)
	if err != nil {
		return nil, "", xperrors.Wrap(ClassifyConnectError(err), "cannot read the membership")
	}
	return o, system, nil
}

// MembershipStatements returns the statements that bring got to want for
// role in group on a server of the given version. appliedAdmin says
// whether the grant gave the admin option: one it did not give is never
// revoked. The 16+ options need a 16+ server.
func MembershipStatements(role, group string, want, got Membership, appliedAdmin bool, version int) ([]string, error) {
	if version < Version16 && (want.Inherit != nil || want.Set != nil) {
		return nil, xperrors.Errorf("the inherit and set options of a membership need PostgreSQL 16 or newer; the server is %s", versionString(version))
	}
	g, r := QuoteIdentifier(group), QuoteIdentifier(role)
	var opts []string
	if want.Admin && !got.Admin {
		opts = append(opts, "ADMIN OPTION")
	}
	if version >= Version16 {
		// Re-granting an existing membership with new options updates them
		// (PostgreSQL 16+).
		opts = append(opts, option("INHERIT", want.Inherit, got.Inherit, got.Member)...)
		opts = append(opts, option("SET", want.Set, got.Set, got.Member)...)
	}
	var stmts []string
	if !got.Member || len(opts) > 0 {
		s := "GRANT " + g + " TO " + r
		if len(opts) > 0 {
			s += " WITH " + strings.Join(opts, ", ")
		}
		stmts = append(stmts, s)
	}
	if !want.Admin && got.Admin && appliedAdmin {
		stmts = append(stmts, "REVOKE ADMIN OPTION FOR "+g+" FROM "+r)
	}
	return stmts, nil
}

// option returns the WITH option kw when want is set and differs from what
// an existing membership has.
func option(kw string, want, got *bool, member bool) []string {
	if want == nil || member && got != nil && *got == *want {
		return nil
	}
	return []string{kw + " " + strings.ToUpper(strconv.FormatBool(*want))}
}

// RevokeMembershipStatement ends role's membership in group.
func RevokeMembershipStatement(role, group string) string {
	return "REVOKE " + QuoteIdentifier(group) + " FROM " + QuoteIdentifier(role)
}

func versionString(v int) string {
	return fmt.Sprintf("%d.%d", v/10000, v%10000)
}
