package inventory

import (
	"fmt"
	"hash/fnv"
	"path"
	"regexp"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

// A Mapping places the server's objects in namespaces: the first
// placement whose patterns match an object's name takes it. A database's
// schemas go where the database goes.
type Mapping struct {
	// Namespaces are the placements, in order.
	Namespaces []Placement `json:"namespaces"`
}

// A Placement is one namespace and the names it takes, as path.Match
// patterns (orders, orders_*, *).
type Placement struct {
	Namespace string   `json:"namespace"`
	Databases []string `json:"databases,omitempty"`
	Roles     []string `json:"roles,omitempty"`
}

// Everything is the Mapping that places every object in namespace ns.
func Everything(ns string) Mapping {
	return Mapping{Namespaces: []Placement{{Namespace: ns, Databases: []string{"*"}, Roles: []string{"*"}}}}
}

// Validate checks the mapping's namespaces and patterns.
func (m Mapping) Validate() error {
	if len(m.Namespaces) == 0 {
		return errors.New("the mapping places nothing: it has no namespaces")
	}
	for i, p := range m.Namespaces {
		if !dnsLabel.MatchString(p.Namespace) {
			return errors.Errorf("namespaces[%d].namespace %q is not a namespace name", i, p.Namespace)
		}
		for _, pat := range slices.Concat(p.Databases, p.Roles) {
			if _, err := path.Match(pat, ""); err != nil {
				return errors.Errorf("namespaces[%d] (%s): pattern %q: %v", i, p.Namespace, pat, err)
			}
		}
	}
	return nil
}

func (m Mapping) place(name string, patterns func(Placement) []string) string {
	for _, p := range m.Namespaces {
		for _, pat := range patterns(p) {
			if ok, _ := path.Match(pat, name); ok {
				return p.Namespace
			}
		}
	}
	return ""
}

func (m Mapping) roleNamespace(name string) string {
	return m.place(name, func(p Placement) []string { return p.Roles })
}

func (m Mapping) databaseNamespace(name string) string {
	return m.place(name, func(p Placement) []string { return p.Databases })
}

// The object kinds of an inventory, as the summary and the layout name
// them.
const (
	KindRole      = "role"
	KindDatabase  = "database"
	KindSchema    = "schema"
	KindExtension = "extension"
	KindSetting   = "setting"
	KindMember    = "membership"
)

// A Manifest is one resource to write.
type Manifest struct {
	// Path is where it goes, relative to the inventory's folder:
	// NAMESPACE/KIND/NAME.yaml.
	Path   string
	Object v1alpha1.Object
}

// A Skip is an object, or a part of one, that no manifest describes, and
// why.
type Skip struct {
	Kind, Name, Reason string
}

// An Inventory is what the server's objects become.
type Inventory struct {
	Manifests []Manifest
	Skipped   []Skip
	// Crossing are the memberships and owners that reach a role no
	// resource of the same namespace manages: written as they are (the
	// plans stay empty), but widening is refused until the Instance's
	// spec.policy.allowMembershipOf lists the role, or the mapping keeps
	// both in one namespace.
	Crossing []Skip
}

// Options shape the manifests.
type Options struct {
	// Instance is the PostgreSQLInstance the resources name.
	Instance string
	// Mapping places the objects.
	Mapping Mapping
	// Home is the database the Instance connects to (its
	// spec.endpoint.database); it is the server's, not a tenant's.
	Home string
	// IncludeManaged describes the objects that carry this provider's
	// ownership marker too: to compare a server with the manifests that
	// manage it. The resources the markers name keep their objects; a copy
	// applied elsewhere is refused (Conflict).
	IncludeManaged bool
}

// pgName is a name the API takes for a role, a database and (without the
// leading underscore) a schema: what the provider quotes is never in
// doubt.
var (
	pgName     = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)
	schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)
	extName    = regexp.MustCompile(`^[a-z0-9_][a-z0-9_-]{0,62}$`)
	paramName  = regexp.MustCompile(`^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$`)
	dnsLabel   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
)

// The databases every server has: the maintenance database and the
// templates. They are the server's, not a team's to own.
var serverDatabases = []string{"postgres", "template0", "template1"}

// Describe turns what was read into manifests and skips.
func Describe(s *Server, o Options) Inventory {
	var inv Inventory
	skip := func(kind, name, reason string) {
		inv.Skipped = append(inv.Skipped, Skip{Kind: kind, Name: name, Reason: reason})
	}
	names := newNamer()
	for _, r := range s.Roles {
		ns, why := roleTaken(r, s.Admin, o)
		if why != "" {
			skip(KindRole, r.Name, why)
			continue
		}
		role := describeRole(r, o.Instance, skip)
		role.SetNamespace(ns)
		role.SetName(names.name(ns, KindRole, r.Name))
		inv.Manifests = append(inv.Manifests, Manifest{Path: path.Join(ns, "roles", role.GetName()+".yaml"), Object: role})
		// The role's memberOf lists every membership; one held WITH ADMIN
		// OPTION is a Membership grant too, which says so.
		for _, g := range r.AdminOf {
			if !schemaName.MatchString(g) {
				skip(KindMember, r.Name+" in "+g, "WITH ADMIN OPTION, of a role whose name is outside what the API takes ("+schemaName.String()+")")
				continue
			}
			grant := &v1alpha1.PostgreSQLGrant{
				TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: v1alpha1.PostgreSQLGrantKind},
				Spec: v1alpha1.PostgreSQLGrantSpec{
					ManagementPolicies: observeOnly(), InstanceRef: v1alpha1.InstanceReference{Name: o.Instance},
					ForProvider: v1alpha1.PostgreSQLGrantParameters{
						Role: ptr.To(r.Name), ObjectType: v1alpha1.GrantObjectMembership, MemberOf: ptr.To(g), WithAdminOption: ptr.To(true),
					},
				},
			}
			grant.SetNamespace(ns)
			grant.SetName(names.name(ns, KindGrant, r.Name+"_in_"+g))
			inv.Manifests = append(inv.Manifests, Manifest{Path: path.Join(ns, "grants", grant.GetName()+".yaml"), Object: grant})
		}
	}
	for _, d := range s.Databases {
		ns, why := databaseTaken(d, o)
		if why != "" {
			skip(KindDatabase, d.Name, why)
			continue
		}
		db := describeDatabase(d, o.Instance, skip)
		db.SetNamespace(ns)
		db.SetName(names.name(ns, KindDatabase, d.Name))
		inv.Manifests = append(inv.Manifests, Manifest{Path: path.Join(ns, "databases", db.GetName()+".yaml"), Object: db})
		if d.Unread != "" {
			skip(KindDatabase, d.Name, "nothing inside it was read: "+d.Unread)
		}
		// Unread, it has no schemas and no default privileges, and only
		// the grants on the database itself, read with the server's
		// catalog.
		for _, sc := range d.Schemas {
			qualified := d.Name + "." + sc.Name
			if why := schemaSkipped(sc, o.IncludeManaged); why != "" {
				skip(KindSchema, qualified, why)
				continue
			}
			schema := &v1alpha1.PostgreSQLSchema{
				TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: v1alpha1.PostgreSQLSchemaKind},
				Spec: v1alpha1.PostgreSQLSchemaSpec{
					ManagementPolicies: observeOnly(), InstanceRef: v1alpha1.InstanceReference{Name: o.Instance},
					ForProvider: v1alpha1.PostgreSQLSchemaParameters{
						Name: ptr.To(sc.Name), Database: ptr.To(d.Name), Owner: ptr.To(sc.Owner), Comment: nonEmpty(sc.Comment),
					},
				},
			}
			schema.SetNamespace(ns)
			schema.SetName(names.name(ns, KindSchema, d.Name+"_"+sc.Name))
			inv.Manifests = append(inv.Manifests, Manifest{Path: path.Join(ns, "schemas", schema.GetName()+".yaml"), Object: schema})
		}
		inv.Manifests = append(inv.Manifests, describeGrants(d, ns, o.Instance, names, skip)...)
		inv.Manifests = append(inv.Manifests, describeDefaults(d, ns, o.Instance, names, skip)...)
	}
	inv.Crossing = crossing(inv.Manifests)
	return inv
}

// crossing finds, among the manifests, the memberships and owners that
// name a role no resource of the same namespace describes.
func crossing(ms []Manifest) []Skip {
	placed := map[string]string{}
	for _, m := range ms {
		if r, ok := m.Object.(*v1alpha1.PostgreSQLRole); ok {
			placed[*r.Spec.ForProvider.Name] = r.GetNamespace()
		}
	}
	var out []Skip
	check := func(kind, name, ns, how, role string) {
		where, ok := placed[role]
		switch {
		case ok && where == ns:
			return
		case ok:
			out = append(out, Skip{Kind: kind, Name: name, Reason: fmt.Sprintf("%s %s, which the mapping places in namespace %s, not %s", how, role, where, ns)})
		default:
			out = append(out, Skip{Kind: kind, Name: name, Reason: fmt.Sprintf("%s %s, which no manifest describes", how, role)})
		}
	}
	for _, m := range ms {
		switch o := m.Object.(type) {
		case *v1alpha1.PostgreSQLRole:
			for _, g := range o.Spec.ForProvider.MemberOf {
				check(KindRole, *o.Spec.ForProvider.Name, o.GetNamespace(), "a member of", g)
			}
		case *v1alpha1.PostgreSQLDatabase:
			check(KindDatabase, *o.Spec.ForProvider.Name, o.GetNamespace(), "owned by", *o.Spec.ForProvider.Owner)
		case *v1alpha1.PostgreSQLSchema:
			check(KindSchema, *o.Spec.ForProvider.Database+"."+*o.Spec.ForProvider.Name, o.GetNamespace(), "owned by", *o.Spec.ForProvider.Owner)
		case *v1alpha1.PostgreSQLGrant:
			check(KindGrant, o.GetName(), o.GetNamespace(), "granted to", *o.Spec.ForProvider.Role)
			if m := o.Spec.ForProvider.MemberOf; m != nil {
				check(KindGrant, o.GetName(), o.GetNamespace(), "membership of", *m)
			}
		case *v1alpha1.PostgreSQLDefaultPrivileges:
			check(KindDefault, o.GetName(), o.GetNamespace(), "for the new objects of", *o.Spec.ForProvider.Owner)
			check(KindDefault, o.GetName(), o.GetNamespace(), "granted to", *o.Spec.ForProvider.Role)
		}
	}
	return out
}

// Reads reports whether the inventory reads inside the database of that
// name: one it may describe, by its name alone (not the server's own
// databases, a name the API takes, a namespace in the mapping).
func (o Options) Reads(database string) bool {
	_, why := databaseTaken(Database{Name: database}, o)
	return why == ""
}

// roleTaken is the namespace r goes to, or why it is skipped.
func roleTaken(r Role, admin string, o Options) (string, string) {
	switch {
	case r.System:
		return "", "a role PostgreSQL predefines"
	case r.Name == admin:
		return "", "the role the inventory logged in as: the Instance's admin is registered on the PostgreSQLInstance, not managed as a role"
	case r.Superuser:
		return "", "a SUPERUSER: the provider never manages a superuser"
	case r.Managed && !o.IncludeManaged:
		return "", managedAlready
	case !pgName.MatchString(r.Name):
		return "", "its name is outside what the API takes (" + pgName.String() + ")"
	}
	ns := o.Mapping.roleNamespace(r.Name)
	if ns == "" {
		return "", "the mapping places it in no namespace"
	}
	return ns, ""
}

// databaseTaken is the namespace d goes to, or why it is skipped.
func databaseTaken(d Database, o Options) (string, string) {
	switch {
	case slices.Contains(serverDatabases, d.Name):
		return "", "a database every server has"
	case d.Name == o.Home:
		return "", "the database the Instance connects to"
	case d.Managed && !o.IncludeManaged:
		return "", managedAlready
	case !pgName.MatchString(d.Name):
		return "", "its name is outside what the API takes (" + pgName.String() + ")"
	}
	ns := o.Mapping.databaseNamespace(d.Name)
	if ns == "" {
		return "", "the mapping places it in no namespace"
	}
	return ns, ""
}

// managedAlready is why an object the provider manages is left out.
const managedAlready = "managed by provider-postgresql already (its comment carries an ownership marker; --include-managed describes it too)"

// schemaSkipped says why a schema is not described ("" when it is).
func schemaSkipped(s Schema, includeManaged bool) string {
	switch {
	case s.Name == "public":
		return "the public schema every database has"
	case s.Extension != "":
		return "created by extension " + s.Extension + ", which the database's resource lists"
	case s.Managed && !includeManaged:
		return managedAlready
	case !schemaName.MatchString(s.Name):
		return "its name is outside what the API takes (" + schemaName.String() + ")"
	}
	return ""
}

func describeRole(r Role, instance string, skip func(kind, name, reason string)) *v1alpha1.PostgreSQLRole {
	p := v1alpha1.PostgreSQLRoleParameters{
		Name:  ptr.To(r.Name),
		Login: ptr.To(r.Login), Inherit: ptr.To(r.Inherit), CreateDB: ptr.To(r.CreateDB), CreateRole: ptr.To(r.CreateRole),
		Replication: ptr.To(r.Replication), BypassRLS: ptr.To(r.BypassRLS),
		// Said as it is: a role without a limit would get the Instance's
		// default one, which the plan would show.
		ConnectionLimit: ptr.To(r.ConnectionLimit),
		MemberOf:        r.MemberOf,
		Comment:         nonEmpty(r.Comment),
	}
	if r.ValidUntil != nil {
		p.ValidUntil = &metav1.Time{Time: *r.ValidUntil}
	}
	for _, kv := range r.Config {
		name, value := setting(kv)
		if !paramName.MatchString(name) {
			skip(KindSetting, r.Name+": "+name, "a setting name outside what the API takes ("+paramName.String()+")")
			continue
		}
		p.ConfigurationParameters = append(p.ConfigurationParameters, v1alpha1.ConfigurationParameter{Name: name, Value: value})
	}
	for _, kv := range r.DatabaseConfig {
		skip(KindSetting, r.Name+" in "+kv, "a role's setting in one database (ALTER ROLE … IN DATABASE … SET): the API has no field for it")
	}
	return &v1alpha1.PostgreSQLRole{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: v1alpha1.PostgreSQLRoleKind},
		Spec: v1alpha1.PostgreSQLRoleSpec{
			ManagementPolicies: observeOnly(), InstanceRef: v1alpha1.InstanceReference{Name: instance}, ForProvider: p,
		},
	}
}

func describeDatabase(d Database, instance string, skip func(kind, name, reason string)) *v1alpha1.PostgreSQLDatabase {
	p := v1alpha1.PostgreSQLDatabaseParameters{
		Name: ptr.To(d.Name), Owner: ptr.To(d.Owner),
		Encoding: ptr.To(d.Encoding), LCCollate: ptr.To(d.Collate), LCCtype: ptr.To(d.Ctype),
		ConnectionLimit: ptr.To(d.ConnectionLimit), AllowConnections: ptr.To(d.AllowConnections), IsTemplate: ptr.To(d.IsTemplate),
		Comment: nonEmpty(d.Comment),
	}
	// PUBLIC holding nothing on the database is a REVOKE someone ran,
	// which revokePublicPrivileges says.
	p.RevokePublicPrivileges = d.ACL && !slices.ContainsFunc(d.Grants, func(g Grant) bool { return g.Kind == "Database" && g.Grantee == "PUBLIC" })
	for _, e := range d.Extensions {
		switch {
		case e.Name == "plpgsql":
			// Every database has it, from its template.
			continue
		case !extName.MatchString(e.Name) || !schemaName.MatchString(e.Schema):
			skip(KindExtension, d.Name+": "+e.Name, "its name or schema is outside what the API takes")
			continue
		}
		p.Extensions = append(p.Extensions, v1alpha1.Extension{Name: e.Name, Version: ptr.To(e.Version), Schema: ptr.To(e.Schema)})
	}
	for _, kv := range d.Config {
		skip(KindSetting, d.Name+": "+kv, "a database's setting (ALTER DATABASE … SET): the API has no field for it")
	}
	return &v1alpha1.PostgreSQLDatabase{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: v1alpha1.PostgreSQLDatabaseKind},
		Spec: v1alpha1.PostgreSQLDatabaseSpec{
			ManagementPolicies: observeOnly(), InstanceRef: v1alpha1.InstanceReference{Name: instance}, ForProvider: p,
		},
	}
}

func observeOnly() xpv2.ManagementPolicies {
	return xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// A namer gives objects their resource names: the PostgreSQL name with
// underscores as dashes, unique per namespace and kind (a name changed
// on the way, or taken already, gets a short hash of the PostgreSQL name).
type namer struct {
	taken map[string]bool
}

func newNamer() *namer { return &namer{taken: map[string]bool{}} }

func (n *namer) name(ns, kind, pg string) string {
	base := strings.Trim(strings.ReplaceAll(pg, "_", "-"), "-")
	clean := base != "" && strings.ReplaceAll(pg, "_", "-") == base && len(base) <= 63
	if len(base) > 56 {
		base = strings.TrimRight(base[:56], "-")
	}
	if base == "" {
		base = strings.ReplaceAll(kind, " ", "-")
	}
	name := base
	// The hash of the PostgreSQL name, and of it with a count when two
	// resources would still share one (grants of one grantee in one
	// schema, say).
	for i := 0; !clean || n.taken[ns+"/"+kind+"/"+name]; i++ {
		h := fnv.New32a()
		_, _ = h.Write([]byte(pg))
		if i > 0 {
			_, _ = fmt.Fprintf(h, "#%d", i)
		}
		name, clean = fmt.Sprintf("%s-%06x", base, h.Sum32()&0xffffff), true
	}
	n.taken[ns+"/"+kind+"/"+name] = true
	return name
}
