package inventory

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

// The kinds of an inventory's privileges, as the summary names them.
const (
	KindGrant   = "grant"
	KindDefault = "default privilege"
)

// maxObjects is how many objects one PostgreSQLGrant names
// (spec.forProvider.objects).
const maxObjects = 256

// function is a signature the API takes (objects of objectType Function).
var function = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}[(][a-z0-9_ ,.\[\]"]*[)]$`)

// publicByDefault are the privileges PUBLIC holds on an object of a kind
// without anyone granting them: left as they are, and not a loss.
var publicByDefault = map[string][]string{
	"Database": {"CONNECT", "TEMPORARY"},
	"Function": {"EXECUTE"},
	"f":        {"EXECUTE"},
	"T":        {"USAGE"},
}

// A grantKey is one grantee's privileges on one object, with or without
// the grant option.
type grantKey struct {
	kind, schema, object, grantee string
	grantable                     bool
}

// describeGrants turns d's grants into PostgreSQLGrants in namespace ns:
// one per grantee and database or schema, and one per grantee, schema,
// kind and set of privileges for tables, sequences and functions, which
// names the objects that share them.
func describeGrants(d Database, ns, instance string, names *namer, skip func(kind, name, reason string)) []Manifest {
	privs := map[grantKey][]string{}
	var keys []grantKey
	for _, g := range d.Grants {
		where := d.Name
		if g.Schema != "" {
			where += "." + g.Schema
		}
		if g.Object != "" {
			where += "." + g.Object
		}
		what := fmt.Sprintf("%s on %s to %s", g.Privilege, where, g.Grantee)
		if why, keep := grantTaken(g); !keep {
			if why != "" {
				skip(KindGrant, what, why)
			}
			continue
		}
		k := grantKey{kind: g.Kind, schema: g.Schema, object: g.Object, grantee: g.Grantee, grantable: g.Grantable}
		if _, ok := privs[k]; !ok {
			keys = append(keys, k)
		}
		privs[k] = append(privs[k], g.Privilege)
	}
	// Objects of a kind in a schema that give a grantee the same
	// privileges go in one grant.
	type group struct {
		k       grantKey
		privs   []string
		objects []string
	}
	type shared struct {
		k     grantKey
		privs string
	}
	var groups []*group
	// open is the group still taking objects, for each grantee, schema,
	// kind and set of privileges: one look-up an object, whatever the
	// number of groups (a schema of thousands of tables).
	open := map[shared]*group{}
	for _, k := range keys {
		p := privs[k]
		slices.Sort(p)
		if k.object == "" {
			groups = append(groups, &group{k: k, privs: p})
			continue
		}
		key := shared{k: grantKey{kind: k.kind, schema: k.schema, grantee: k.grantee, grantable: k.grantable}, privs: strings.Join(p, ",")}
		g := open[key]
		if g == nil || len(g.objects) == maxObjects {
			g = &group{k: key.k, privs: p}
			groups = append(groups, g)
			open[key] = g
		}
		g.objects = append(g.objects, k.object)
	}
	var out []Manifest
	for _, g := range groups {
		p := v1alpha1.PostgreSQLGrantParameters{
			Role: ptr.To(g.k.grantee), ObjectType: v1alpha1.GrantObjectType(g.k.kind), Database: ptr.To(d.Name), Objects: g.objects,
		}
		if g.k.schema != "" {
			p.Schema = ptr.To(g.k.schema)
		}
		for _, x := range g.privs {
			p.Privileges = append(p.Privileges, v1alpha1.Privilege(x))
		}
		if g.k.grantable {
			p.WithGrantOption = ptr.To(true)
		}
		o := &v1alpha1.PostgreSQLGrant{
			TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: v1alpha1.PostgreSQLGrantKind},
			Spec:     v1alpha1.PostgreSQLGrantSpec{ManagementPolicies: observeOnly(), InstanceRef: v1alpha1.InstanceReference{Name: instance}, ForProvider: p},
		}
		o.SetNamespace(ns)
		o.SetName(names.name(ns, KindGrant, grantName(d.Name, g.k)))
		out = append(out, Manifest{Path: path.Join(ns, "grants", o.GetName()+".yaml"), Object: o})
	}
	return out
}

// grantTaken reports whether g is described and, when it is not, why
// ("" for what PUBLIC holds without a grant, left as it is and not a
// loss).
func grantTaken(g Grant) (string, bool) {
	switch {
	case g.Grantee == "PUBLIC" && slices.Contains(publicByDefault[g.Kind], g.Privilege),
		g.Grantee == "PUBLIC" && g.Kind == "Schema" && g.Schema == "public" && g.Privilege == "USAGE":
		// The public schema's USAGE is PUBLIC's since PostgreSQL 15.
		return "", false
	case g.Grantee == "PUBLIC":
		return "a grant to PUBLIC: a PostgreSQLGrant names one role", false
	case g.Kind == "Column":
		return "a column's privilege: the API grants on whole tables only", false
	case !pgName.MatchString(g.Grantee):
		return "the grantee's name is outside what the API takes (" + pgName.String() + ")", false
	case g.Schema != "" && !schemaName.MatchString(g.Schema):
		return "the schema's name is outside what the API takes (" + schemaName.String() + ")", false
	case (g.Kind == "Table" || g.Kind == "Sequence") && !schemaName.MatchString(g.Object):
		return "the object's name is outside what the API takes (" + schemaName.String() + ")", false
	case g.Kind == "Function" && !function.MatchString(g.Object):
		return "the function's signature is outside what the API takes", false
	}
	return "", true
}

// grantName is the PostgreSQL-like name a grant's resource name is made
// from: database, schema, grantee, and the kind for objects.
func grantName(db string, k grantKey) string {
	parts := []string{db}
	if k.schema != "" {
		parts = append(parts, k.schema)
	}
	parts = append(parts, k.grantee)
	if k.kind != "Database" && k.kind != "Schema" {
		parts = append(parts, strings.ToLower(k.kind)+"s")
	}
	if k.grantable {
		parts = append(parts, "grantable")
	}
	return strings.Join(parts, "_")
}

// defaultKinds maps pg_default_acl's object types to the API's.
var defaultKinds = map[string]v1alpha1.DefaultPrivilegesObjectType{
	"r": v1alpha1.DefaultPrivilegesTables, "S": v1alpha1.DefaultPrivilegesSequences, "f": v1alpha1.DefaultPrivilegesFunctions,
	"T": v1alpha1.DefaultPrivilegesTypes, "n": v1alpha1.DefaultPrivilegesSchemas,
}

// describeDefaults turns d's default privileges into
// PostgreSQLDefaultPrivileges in namespace ns: one per owner, schema,
// object type, grantee and grant option.
func describeDefaults(d Database, ns, instance string, names *namer, skip func(kind, name, reason string)) []Manifest {
	type key struct {
		owner, schema, objType, grantee string
		grantable                       bool
	}
	privs := map[key][]string{}
	var keys []key
	for _, x := range d.Defaults {
		in := "every schema"
		if x.Schema != "" {
			in = "schema " + x.Schema
		}
		what := fmt.Sprintf("%s on %s's new %s in %s of %s, to %s", x.Privilege, x.Owner, objectTypeWord(x.ObjectType), in, d.Name, x.Grantee)
		_, known := defaultKinds[x.ObjectType]
		switch {
		case x.Grantee == "PUBLIC" && slices.Contains(publicByDefault[x.ObjectType], x.Privilege):
			continue
		case x.Grantee == "PUBLIC":
			skip(KindDefault, what, "a default privilege for PUBLIC: a PostgreSQLDefaultPrivileges names one role")
			continue
		case !known:
			skip(KindDefault, what, "an object type the API has no value for")
			continue
		case !pgName.MatchString(x.Grantee) || !pgName.MatchString(x.Owner):
			skip(KindDefault, what, "the owner's or the grantee's name is outside what the API takes ("+pgName.String()+")")
			continue
		case x.Schema != "" && !schemaName.MatchString(x.Schema):
			skip(KindDefault, what, "the schema's name is outside what the API takes ("+schemaName.String()+")")
			continue
		}
		k := key{owner: x.Owner, schema: x.Schema, objType: x.ObjectType, grantee: x.Grantee, grantable: x.Grantable}
		if _, ok := privs[k]; !ok {
			keys = append(keys, k)
		}
		privs[k] = append(privs[k], x.Privilege)
	}
	var out []Manifest
	for _, k := range keys {
		p := v1alpha1.PostgreSQLDefaultPrivilegesParameters{
			Role: ptr.To(k.grantee), Owner: ptr.To(k.owner), Database: ptr.To(d.Name), ObjectType: defaultKinds[k.objType], WithGrantOption: k.grantable,
		}
		if k.schema != "" {
			p.Schema = ptr.To(k.schema)
		}
		ps := privs[k]
		slices.Sort(ps)
		for _, x := range ps {
			p.Privileges = append(p.Privileges, v1alpha1.Privilege(x))
		}
		o := &v1alpha1.PostgreSQLDefaultPrivileges{
			TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: v1alpha1.PostgreSQLDefaultPrivilegesKind},
			Spec:     v1alpha1.PostgreSQLDefaultPrivilegesSpec{ManagementPolicies: observeOnly(), InstanceRef: v1alpha1.InstanceReference{Name: instance}, ForProvider: p},
		}
		parts := []string{d.Name, k.owner}
		if k.schema != "" {
			parts = append(parts, k.schema)
		}
		parts = append(parts, k.grantee, strings.ToLower(string(p.ObjectType)))
		if k.grantable {
			parts = append(parts, "grantable")
		}
		o.SetNamespace(ns)
		o.SetName(names.name(ns, KindDefault, strings.Join(parts, "_")))
		out = append(out, Manifest{Path: path.Join(ns, "defaultprivileges", o.GetName()+".yaml"), Object: o})
	}
	return out
}

func objectTypeWord(t string) string {
	if k, ok := defaultKinds[t]; ok {
		return strings.ToLower(string(k))
	}
	return "objects of type " + t
}
