// Package boundary draws the privilege boundary between a namespace and the
// server: what a namespaced resource on a PostgreSQLInstance may ask of the
// server through the provider's admin connection. Each rule is checked
// against the server's catalog as it is now, before any statement is sent;
// a refusal names the field and the rule. The Instance's policy
// (spec.policy) widens what is allowed, never the namespace.
package boundary

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/controller/activation"
	"github.com/ayatori/provider-postgresql/internal/controller/conflict"
	"github.com/ayatori/provider-postgresql/internal/controller/index"
)

// Rules a refusal names.
const (
	// RulePredefinedRole: no membership of a predefined pg_* role (they
	// read and write files and run programs on the database host, read all
	// data, signal backends …).
	RulePredefinedRole = "PredefinedRole"
	// RulePrivilegedRole: no membership of (or handing owned objects to) a
	// role with SUPERUSER, CREATEROLE, BYPASSRLS or REPLICATION.
	RulePrivilegedRole = "PrivilegedRole"
	// RuleRoleAttribute: no CREATEROLE, REPLICATION or BYPASSRLS on a role.
	RuleRoleAttribute = "RoleAttribute"
	// RuleTemplate: no database copied from a template other than
	// template0 and template1.
	RuleTemplate = "Template"
	// RuleSetting: only settings any user may set (pg_settings.context
	// user).
	RuleSetting = "Setting"
	// RuleSystemCatalog: no grant on the system catalogs.
	RuleSystemCatalog = "SystemCatalog"
	// RuleOtherNamespace: memberships only of roles, and grants only in
	// databases, managed from the resource's own namespace.
	RuleOtherNamespace = "OtherNamespace"
	// RuleConnectionLimit: no role may take more of the server's
	// connection slots than the Instance's policy.maxConnectionLimit.
	RuleConnectionLimit = "ConnectionLimit"
	// RuleMembershipOption: a membership the policy allows
	// (allowMembershipOf) carries the role's privileges, not SET (acting
	// as the role) nor ADMIN OPTION (handing it on), unless the policy
	// allows those too.
	RuleMembershipOption = "MembershipOption"
	// RuleTablespace: privileges only on tablespaces the Instance offers
	// (policy.allowTablespaces).
	RuleTablespace = "Tablespace"
)

// A Namespace is what is managed from one namespace: which UIDs are those
// of its PostgreSQLRoles and PostgreSQLDatabases, which the ownership
// markers on the server name.
type Namespace struct {
	Name      string
	Roles     Members
	Databases Members
	// OthersRoles reports whether uid is that of a PostgreSQLRole of
	// another namespace; nil for none.
	OthersRoles Members
}

// Members reports whether uid is that of a resource of one kind in a
// namespace ("" is no one's).
type Members func(ctx context.Context, uid string) (bool, error)

// A Refusal is what the boundary refuses: the field, the rule and why.
type Refusal struct {
	Field, Rule, Why string
	// Allow says how an admin allows it, "" when nothing can.
	Allow string
}

func (r *Refusal) Error() string {
	msg := fmt.Sprintf("%s: refused by the rule %s: %s. Nothing was sent to the server", r.Field, r.Rule, r.Why)
	if r.Allow != "" {
		msg += "; " + r.Allow
	}
	return msg
}

// Condition is the Ready condition of a resource refused by r.
func (r *Refusal) Condition() xpv2.Condition {
	return v1alpha1.NotReady(v1alpha1.ReasonPolicyRefused, r.Error())
}

// Refuse sets a refused resource's Ready condition and returns the
// refusal as its error, so the reconciler backs off and changes nothing.
func Refuse(mg interface{ SetConditions(...xpv2.Condition) }, r *Refusal) error {
	mg.SetConditions(r.Condition())
	return r
}

// A Policy is an Instance's boundary.
type Policy struct {
	v1alpha1.InstancePolicy
	// Instance is the Instance's name, for messages.
	Instance string
}

// PolicyOf returns the boundary of in.
func PolicyOf(in *v1alpha1.PostgreSQLInstance) Policy {
	return Policy{InstancePolicy: in.Spec.Policy, Instance: in.GetName()}
}

func (p Policy) allowIn(field, value string) string {
	return fmt.Sprintf("a platform admin may allow it by adding %q to spec.policy.%s of PostgreSQLInstance %s", value, field, p.Instance)
}

// RoleAttributes refuses the attributes a role asks for that the policy
// does not allow. attrs maps each attribute to its field.
func (p Policy) RoleAttributes(asked map[v1alpha1.PolicyRoleAttribute]string) *Refusal {
	for _, a := range []v1alpha1.PolicyRoleAttribute{v1alpha1.PolicyCreateRole, v1alpha1.PolicyReplication, v1alpha1.PolicyBypassRLS} {
		field, ok := asked[a]
		if !ok || slices.Contains(p.AllowRoleAttributes, a) {
			continue
		}
		return &Refusal{Field: field, Rule: RuleRoleAttribute,
			Why:   fmt.Sprintf("%s lets a role step outside its namespace (CREATEROLE manages other roles, on PostgreSQL 15 and older nearly as a superuser; REPLICATION reads every database's changes; BYPASSRLS ignores row-level security)", strings.ToUpper(string(a))),
			Allow: p.allowIn("allowRoleAttributes", string(a))}
	}
	return nil
}

// ConnectionLimit refuses a connection limit (-1: none) above the policy's
// maxConnectionLimit.
func (p Policy) ConnectionLimit(field string, limit int32) *Refusal {
	m := p.MaxConnectionLimit
	if m == nil || limit != -1 && limit <= *m {
		return nil
	}
	asked := fmt.Sprintf("a limit of %d", limit)
	if limit == -1 {
		asked = "no limit (-1)"
	}
	return &Refusal{Field: field, Rule: RuleConnectionLimit,
		Why:   fmt.Sprintf("%s is more than the %d sessions a role may hold on PostgreSQLInstance %s: logins share the server's connection slots with every other namespace's", asked, *m, p.Instance),
		Allow: fmt.Sprintf("a platform admin may raise spec.policy.maxConnectionLimit of PostgreSQLInstance %s", p.Instance)}
}

// Template refuses a template other than template0, template1 or one the
// policy allows.
func (p Policy) Template(field, template string) *Refusal {
	if template == "" || template == "template0" || template == "template1" || slices.Contains(p.AllowTemplates, template) {
		return nil
	}
	return &Refusal{Field: field, Rule: RuleTemplate,
		Why:   fmt.Sprintf("copying database %q would copy all its data, which may be another tenant's", template),
		Allow: p.allowIn("allowTemplates", template)}
}

// Tablespace refuses a grant on a tablespace the Instance does not offer.
// Nothing of one is read or granted: its disk is the platform's, sized and
// paid for by it, and which roles may use it is not a namespace's to see.
func (p Policy) Tablespace(field, name string) *Refusal {
	if slices.Contains(p.AllowTablespaces, name) {
		return nil
	}
	return &Refusal{Field: field, Rule: RuleTablespace,
		Why:   fmt.Sprintf("tablespace %q is not one this Instance offers: a tablespace is space on the server's disks the platform sized for its own purposes", name),
		Allow: p.allowIn("allowTablespaces", name)}
}

// SystemSchema refuses a grant whose objects are in a system schema.
func SystemSchema(field, schema string) *Refusal {
	if schema != "pg_catalog" && schema != "information_schema" && !strings.HasPrefix(schema, "pg_toast") && !strings.HasPrefix(schema, "pg_temp") {
		return nil
	}
	return &Refusal{Field: field, Rule: RuleSystemCatalog,
		Why: fmt.Sprintf("schema %q holds the system catalogs (pg_authid holds every role's password verifier); privileges there are never granted", schema)}
}

// A Named is a role or setting name and the field it comes from.
type Named struct {
	Field, Name string
}

// RoleFacts is what the catalog says of a role.
type RoleFacts struct {
	Superuser, CreateRole, BypassRLS, Replication bool
	// Marker is the UID its ownership marker names, "" for none.
	Marker string
}

// Powers lists the attributes that make a role privileged.
func (f RoleFacts) Powers() []string {
	var out []string
	for _, a := range []struct {
		on   bool
		name string
	}{{f.Superuser, "SUPERUSER"}, {f.CreateRole, "CREATEROLE"}, {f.BypassRLS, "BYPASSRLS"}, {f.Replication, "REPLICATION"}} {
		if a.on {
			out = append(out, a.name)
		}
	}
	return out
}

// A Catalog reads what the checks need from the server.
type Catalog interface {
	// Roles returns the facts of the named roles that exist.
	Roles(ctx context.Context, names []string) (map[string]RoleFacts, error)
	// SettingContexts returns pg_settings.context of the named settings
	// that the session can see.
	SettingContexts(ctx context.Context, names []string) (map[string]string, error)
	// DatabaseMarker returns the UID the named database's ownership marker
	// names ("" for none) and whether it exists.
	DatabaseMarker(ctx context.Context, name string) (string, bool, error)
}

// Memberships refuses making a role a member of (or handing what it owns
// to) a predefined role, a privileged one, or one not managed from ns,
// unless the policy allows that role. A role that does not exist yet has
// no powers and is no one's (the server refuses a grant of it); the check
// runs again before every change.
func (p Policy) Memberships(ctx context.Context, cat Catalog, ns Namespace, roles []Named) (*Refusal, error) {
	var ask []string
	for _, r := range roles {
		if slices.Contains(p.AllowMembershipOf, r.Name) {
			continue
		}
		if strings.HasPrefix(r.Name, "pg_") {
			return &Refusal{Field: r.Field, Rule: RulePredefinedRole,
				Why:   fmt.Sprintf("%q is a predefined role: its members may act on the server beyond any namespace (files and programs on the database host, all data, other sessions)", r.Name),
				Allow: p.allowIn("allowMembershipOf", r.Name)}, nil
		}
		ask = append(ask, r.Name)
	}
	if len(ask) == 0 {
		return nil, nil
	}
	facts, err := cat.Roles(ctx, ask)
	if err != nil {
		return nil, errors.Wrap(err, "cannot read the roles' attributes")
	}
	for _, r := range roles {
		f, ok := facts[r.Name]
		if !ok || slices.Contains(p.AllowMembershipOf, r.Name) {
			continue
		}
		if len(f.Powers()) > 0 {
			return &Refusal{Field: r.Field, Rule: RulePrivilegedRole,
				Why:   fmt.Sprintf("role %q has %s on the server: a member, or a role handed its objects, would gain them", r.Name, strings.Join(f.Powers(), ", ")),
				Allow: p.allowIn("allowMembershipOf", r.Name)}, nil
		}
		mine, err := ns.Roles(ctx, f.Marker)
		if err != nil {
			return nil, err
		}
		if !mine {
			return &Refusal{Field: r.Field, Rule: RuleOtherNamespace,
				Why: fmt.Sprintf("role %q is not managed from namespace %s (no PostgreSQLRole of this namespace created it): its members would reach what it can, another tenant's data or the DBA's",
					r.Name, ns.Name),
				Allow: p.allowIn("allowMembershipOf", r.Name)}, nil
		}
	}
	return nil, nil
}

// MembershipOptions refuses the options of a membership of role that the
// policy does not allow with it: a role the namespace reaches only because
// allowMembershipOf lists it may be held with SET (set true) only when
// allowSetRoleOf lists it too, and WITH ADMIN OPTION only when
// allowAdminOptionOf does. Any other role the boundary lets a namespace
// join is its own, with every option. set nil is the server's default,
// which WithholdsSet turns into false where it must.
func (p Policy) MembershipOptions(role string, set *bool, setField string, admin bool, adminField string) *Refusal {
	if !slices.Contains(p.AllowMembershipOf, role) {
		return nil
	}
	if set != nil && *set && !slices.Contains(p.AllowSetRoleOf, role) {
		return &Refusal{Field: setField, Rule: RuleMembershipOption,
			Why:   fmt.Sprintf("the policy opens role %q to every namespace for its privileges, not to act as it: a member that may SET ROLE %s creates objects it owns and hands objects to it, which others trust as %s's", role, postgres.QuoteIdentifier(role), role),
			Allow: p.allowIn("allowSetRoleOf", role) + ", or leave set unset (the membership is granted WITH SET FALSE)"}
	}
	if admin && !slices.Contains(p.AllowAdminOptionOf, role) {
		return &Refusal{Field: adminField, Rule: RuleMembershipOption,
			Why:   fmt.Sprintf("the policy opens role %q to every namespace for its privileges, not to hand it on: a member WITH ADMIN OPTION may grant it to any role of the server, outside every namespace's boundary", role),
			Allow: p.allowIn("allowAdminOptionOf", role)}
	}
	return nil
}

// WithholdsSet reports whether a membership of role must be granted WITH
// SET FALSE on a server of the given version (server_version_num) when
// the grant leaves SET to the server: the namespace reaches role only
// because allowMembershipOf lists it, allowSetRoleOf does not, and the
// server can withhold SET (PostgreSQL 16+).
func (p Policy) WithholdsSet(role string, version int) bool {
	return version >= postgres.Version16 && slices.Contains(p.AllowMembershipOf, role) && !slices.Contains(p.AllowSetRoleOf, role)
}

// OthersRoles refuses roles another namespace's PostgreSQLRole manages,
// whatever the policy allows others: what an observation of them would
// find (their memberships, say) is that namespace's. Roles no resource
// manages, and allowMembershipOf's, pass: a read-only import of a
// membership in the DBA's roles is how an existing server is adopted.
func (p Policy) OthersRoles(ctx context.Context, cat Catalog, ns Namespace, roles []Named) (*Refusal, error) {
	var ask []string
	for _, r := range roles {
		if !slices.Contains(p.AllowMembershipOf, r.Name) {
			ask = append(ask, r.Name)
		}
	}
	if len(ask) == 0 || ns.OthersRoles == nil {
		return nil, nil
	}
	facts, err := cat.Roles(ctx, ask)
	if err != nil {
		return nil, errors.Wrap(err, "cannot read the roles' ownership markers")
	}
	for _, r := range roles {
		f, ok := facts[r.Name]
		if !ok || f.Marker == "" {
			continue
		}
		theirs, err := ns.OthersRoles(ctx, f.Marker)
		if err != nil {
			return nil, err
		}
		if theirs {
			return &Refusal{Field: r.Field, Rule: RuleOtherNamespace,
				Why: fmt.Sprintf("role %q is managed from another namespace: nothing of it is read or changed from namespace %s, read-only imports included", r.Name, ns.Name)}, nil
		}
	}
	return nil, nil
}

// Database refuses acting in a database not managed from ns (granting in
// it, creating schemas in it, changing its default privileges), unless the
// policy allows that database. A database that does not exist is no one's
// (the server refuses to act in it).
func (p Policy) Database(ctx context.Context, cat Catalog, ns Namespace, field, name string) (*Refusal, error) {
	if slices.Contains(p.AllowDatabases, name) {
		return nil, nil
	}
	marker, exists, err := cat.DatabaseMarker(ctx, name)
	if err != nil {
		return nil, errors.Wrap(err, "cannot read the database's ownership marker")
	}
	if !exists {
		return nil, nil
	}
	if mine, err := ns.Databases(ctx, marker); err != nil || mine {
		return nil, err
	}
	return &Refusal{Field: field, Rule: RuleOtherNamespace,
		Why: fmt.Sprintf("database %q is not managed from namespace %s (no PostgreSQLDatabase of this namespace created it): privileges there would reach another tenant's data or the DBA's",
			name, ns.Name),
		Allow: p.allowIn("allowDatabases", name)}, nil
}

// Settings refuses settings a role may not set for its sessions: those
// whose pg_settings.context is not user (superuser-only, server-wide or
// start-up settings), and those the session cannot see, unless the policy
// allows them. A custom setting (a name with a dot, such as app.tenant) is
// any user's.
func (p Policy) Settings(ctx context.Context, cat Catalog, settings []Named) (*Refusal, error) {
	var ask []string
	for _, s := range settings {
		// role is not listed in pg_settings, but a session may set it only
		// to a role it is a member of (the server checks at login): tenant
		// logins use it to act as their database's owner.
		if s.Name != "role" && !strings.Contains(s.Name, ".") && !slices.Contains(p.AllowSettings, s.Name) {
			ask = append(ask, s.Name)
		}
	}
	if len(ask) == 0 {
		return nil, nil
	}
	contexts, err := cat.SettingContexts(ctx, ask)
	if err != nil {
		return nil, errors.Wrap(err, "cannot read the settings' contexts")
	}
	for _, s := range settings {
		if !slices.Contains(ask, s.Name) {
			continue
		}
		c, ok := contexts[s.Name]
		switch {
		case !ok:
			return &Refusal{Field: s.Field, Rule: RuleSetting,
				Why:   fmt.Sprintf("the server knows no setting %q that the admin can see", s.Name),
				Allow: p.allowIn("allowSettings", s.Name)}, nil
		case c != "user":
			return &Refusal{Field: s.Field, Rule: RuleSetting,
				Why:   fmt.Sprintf("setting %q is not one any user may set (its pg_settings.context is %s)", s.Name, c),
				Allow: p.allowIn("allowSettings", s.Name)}, nil
		}
	}
	return nil, nil
}

// ServerCatalog reads a Catalog from a server.
type ServerCatalog struct {
	Q postgres.RowsQuerier
}

const rolesSQL = `SELECT rolname, rolsuper, rolcreaterole, rolbypassrls, rolreplication, coalesce(pg_catalog.shobj_description(oid, 'pg_authid'), '')
  FROM pg_catalog.pg_roles WHERE rolname = ANY($1)`

// Roles implements Catalog.
func (c ServerCatalog) Roles(ctx context.Context, names []string) (map[string]RoleFacts, error) {
	rows, err := c.Q.Query(ctx, rolesSQL, names)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]RoleFacts{}
	for rows.Next() {
		var name, comment string
		var f RoleFacts
		if err := rows.Scan(&name, &f.Superuser, &f.CreateRole, &f.BypassRLS, &f.Replication, &comment); err != nil {
			return nil, err
		}
		_, m := postgres.ParseMarker(comment)
		f.Marker = m.UID
		out[name] = f
	}
	return out, rows.Err()
}

const settingsSQL = `SELECT name, context FROM pg_catalog.pg_settings WHERE name = ANY($1)`

// SettingContexts implements Catalog.
func (c ServerCatalog) SettingContexts(ctx context.Context, names []string) (map[string]string, error) {
	rows, err := c.Q.Query(ctx, settingsSQL, names)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, context string
		if err := rows.Scan(&name, &context); err != nil {
			return nil, err
		}
		out[name] = context
	}
	return out, rows.Err()
}

// DatabaseMarker implements Catalog.
func (c ServerCatalog) DatabaseMarker(ctx context.Context, name string) (string, bool, error) {
	return postgres.ObserveDatabaseMarker(ctx, c.Q, name)
}

// UIDIndex is the cache's field index of PostgreSQLRoles and
// PostgreSQLDatabases by UID, which NamespaceOf looks markers up in. The
// controller of each kind adds it (IndexUID).
const UIDIndex = "metadata.uid"

// IndexUID adds UIDIndex for obj's kind to informers.
func IndexUID(informers cache.Informers, obj client.Object) error {
	err := index.Unique(context.Background(), informers, obj, UIDIndex, func(o client.Object) []string { return []string{string(o.GetUID())} })
	return errors.Wrap(err, "cannot index resources by UID")
}

// NamespaceOf is what is managed from namespace ns, looked up in kube's
// cache by UID (UIDIndex) as a check needs it. Checks run before every
// change of every resource: listing the namespace's roles and databases
// for each made a wave of thousands of resources cost CPU with the square
// of their number (docs/performance.md).
func NamespaceOf(kube client.Reader, ns string) Namespace {
	roles := func() client.ObjectList { return &v1alpha1.PostgreSQLRoleList{} }
	return Namespace{
		Name:        ns,
		Roles:       members(kube, ns, "PostgreSQLRoles", roles, true),
		Databases:   members(kube, ns, "PostgreSQLDatabases", func() client.ObjectList { return &v1alpha1.PostgreSQLDatabaseList{} }, true),
		OthersRoles: members(kube, ns, "PostgreSQLRoles", roles, false),
	}
}

// members is the Members of a kind in namespace ns (in, true) or in any
// other namespace (in, false).
func members(kube client.Reader, ns, kinds string, newList func() client.ObjectList, in bool) Members {
	return func(ctx context.Context, uid string) (bool, error) {
		if uid == "" {
			return false, nil
		}
		l := newList()
		// The index is cluster-wide (index.Unique): the namespace of what
		// it finds decides.
		if err := activation.List(ctx, kube, l, client.MatchingFields{UIDIndex: uid}, client.UnsafeDisableDeepCopy); err != nil {
			return false, errors.Wrapf(err, "cannot look up the %s of the namespace", kinds)
		}
		found := false
		err := meta.EachListItem(l, func(o runtime.Object) error {
			if m, ok := o.(metav1.Object); ok && (m.GetNamespace() == ns) == in {
				found = true
			}
			return nil
		})
		return found, err
	}
}

// A Lookup returns the resource whose UID is uid, zero when none is:
// whose an ownership marker on the server says an object is.
type Lookup func(ctx context.Context, uid string) (conflict.Owner, error)

// Whose returns the Lookup of a kind, listed as newList lists it, its
// UIDs indexed (IndexUID).
func Whose(kube client.Reader, kind string, newList func() client.ObjectList) Lookup {
	return func(ctx context.Context, uid string) (conflict.Owner, error) {
		return whose(ctx, kube, kind, newList, uid)
	}
}

func whose(ctx context.Context, kube client.Reader, kind string, newList func() client.ObjectList, uid string) (conflict.Owner, error) {
	if uid == "" {
		return conflict.Owner{}, nil
	}
	l := newList()
	if err := activation.List(ctx, kube, l, client.MatchingFields{UIDIndex: uid}); err != nil {
		return conflict.Owner{}, errors.Wrapf(err, "cannot look up the %s that UID %s is", kind, uid)
	}
	items, err := meta.ExtractList(l)
	if err != nil || len(items) == 0 {
		return conflict.Owner{}, errors.Wrapf(err, "cannot read the list of %ss", kind)
	}
	o, ok := items[0].(client.Object)
	if !ok {
		return conflict.Owner{}, nil
	}
	return conflict.Owner{Kind: kind, Namespace: o.GetNamespace(), Name: o.GetName()}, nil
}

// Field is the path of a spec.forProvider field set either by name or by
// reference: name when direct, else nameRef.
func Field(name string, direct bool) string {
	if direct {
		return "spec.forProvider." + name
	}
	return "spec.forProvider." + name + "Ref"
}

// A Resource is what a check refuses: a namespaced managed resource.
type Resource interface {
	GetNamespace() string
	SetConditions(...xpv2.Condition)
}

// IsRefusal reports whether err is (or wraps) a Refusal.
func IsRefusal(err error) bool {
	var r *Refusal
	return errors.As(err, &r)
}

// Result is the error of a check: its refusal, set on mg's Ready
// condition, or the error that kept it from deciding; nil when allowed.
func Result(mg Resource, r *Refusal, err error) error {
	if err != nil {
		return err
	}
	if r != nil {
		return Refuse(mg, r)
	}
	return nil
}

// A Checker checks what a resource on an Instance asks against the
// Instance's policy and the resource's namespace.
type Checker struct {
	Kube     client.Reader
	Instance *v1alpha1.PostgreSQLInstance
	// Q reads the server's catalog (pg_roles, pg_database are shared by
	// every database of the server).
	Q postgres.RowsQuerier
}

// CheckNotOthers refuses reading roles another namespace manages
// (Policy.OthersRoles).
func (c Checker) CheckNotOthers(ctx context.Context, mg Resource, roles ...Named) error {
	r, err := PolicyOf(c.Instance).OthersRoles(ctx, ServerCatalog{Q: c.Q}, NamespaceOf(c.Kube, mg.GetNamespace()), roles)
	return Result(mg, r, err)
}

// Check refuses acting in database (when its Name is set) unless it is
// managed from mg's namespace, and using roles the namespace may not use
// (see Policy.Database and Policy.Memberships).
func (c Checker) Check(ctx context.Context, mg Resource, database Named, roles ...Named) error {
	if database.Name == "" && len(roles) == 0 {
		return nil
	}
	ns := NamespaceOf(c.Kube, mg.GetNamespace())
	p, cat := PolicyOf(c.Instance), ServerCatalog{Q: c.Q}
	var (
		r   *Refusal
		err error
	)
	if database.Name != "" {
		r, err = p.Database(ctx, cat, ns, database.Field, database.Name)
	}
	if err == nil && r == nil && len(roles) > 0 {
		r, err = p.Memberships(ctx, cat, ns, roles)
	}
	return Result(mg, r, err)
}
