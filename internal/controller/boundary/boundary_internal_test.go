package boundary

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

// fakeCatalog answers from maps: pure logic is tested without a server.
type fakeCatalog struct {
	roles     map[string]RoleFacts
	settings  map[string]string
	databases map[string]string
}

func (f fakeCatalog) DatabaseMarker(_ context.Context, name string) (string, bool, error) {
	m, ok := f.databases[name]
	return m, ok, nil
}

func (f fakeCatalog) Roles(_ context.Context, names []string) (map[string]RoleFacts, error) {
	out := map[string]RoleFacts{}
	for _, n := range names {
		if r, ok := f.roles[n]; ok {
			out[n] = r
		}
	}
	return out, nil
}

func (f fakeCatalog) SettingContexts(_ context.Context, names []string) (map[string]string, error) {
	out := map[string]string{}
	for _, n := range names {
		if c, ok := f.settings[n]; ok {
			out[n] = c
		}
	}
	return out, nil
}

var catalog = fakeCatalog{
	roles: map[string]RoleFacts{
		"postgres": {Superuser: true}, "manager": {CreateRole: true}, "replicator": {Replication: true},
		"auditor": {BypassRLS: true}, "orders_owner": {Marker: "uid-orders-owner"}, "ledger_owner": {Marker: "uid-ledger-owner"}, "dba_readers": {},
	},
	databases: map[string]string{"orders": "uid-orders", "ledger": "uid-ledger", "postgres": ""},
	// As on a real server: role is not in pg_settings.
	settings: map[string]string{"statement_timeout": "user", "log_statement": "superuser", "session_replication_role": "superuser", "shared_buffers": "postmaster"},
}

// shop manages orders and its owner role.
var shop = Namespace{Name: "shop", Roles: uids("uid-orders-owner"), Databases: uids("uid-orders")}

// uids are Members of exactly these UIDs.
func uids(in ...string) Members {
	return func(_ context.Context, uid string) (bool, error) { return slices.Contains(in, uid), nil }
}

// refusal is what a test compares of a Refusal.
type refusal struct{ Field, Rule string }

func of(r *Refusal) *refusal {
	if r == nil {
		return nil
	}
	return &refusal{Field: r.Field, Rule: r.Rule}
}

func TestMemberships(t *testing.T) {
	cases := map[string]struct {
		reason string
		policy v1alpha1.InstancePolicy
		roles  []Named
		want   *refusal
	}{
		"OwnRole":       {reason: "A role managed from the namespace, without powers, is fine.", roles: []Named{{"f[0]", "orders_owner"}}},
		"OtherTenants":  {reason: "A role managed from another namespace is refused.", roles: []Named{{"f[0]", "orders_owner"}, {"f[1]", "ledger_owner"}}, want: &refusal{"f[1]", RuleOtherNamespace}},
		"Unmanaged":     {reason: "A role no resource manages (the DBA's) is refused.", roles: []Named{{"f[0]", "dba_readers"}}, want: &refusal{"f[0]", RuleOtherNamespace}},
		"SharedAllowed": {reason: "The policy may share a role with every namespace.", policy: v1alpha1.InstancePolicy{AllowMembershipOf: []string{"dba_readers"}}, roles: []Named{{"f[0]", "dba_readers"}}},
		"MissingRole":   {reason: "A role that does not exist has no powers (the server refuses the grant itself).", roles: []Named{{"f[0]", "nobody"}}},
		"Predefined":    {reason: "Predefined roles are refused by name.", roles: []Named{{"f[0]", "orders_owner"}, {"f[1]", "pg_execute_server_program"}}, want: &refusal{"f[1]", RulePredefinedRole}},
		"Superuser":     {reason: "A superuser is refused.", roles: []Named{{"f[0]", "postgres"}}, want: &refusal{"f[0]", RulePrivilegedRole}},
		"CreateRole":    {reason: "A CREATEROLE role is refused.", roles: []Named{{"f[0]", "manager"}}, want: &refusal{"f[0]", RulePrivilegedRole}},
		"Replication":   {reason: "A REPLICATION role is refused.", roles: []Named{{"f[0]", "replicator"}}, want: &refusal{"f[0]", RulePrivilegedRole}},
		"BypassRLS":     {reason: "A BYPASSRLS role is refused.", roles: []Named{{"f[0]", "auditor"}}, want: &refusal{"f[0]", RulePrivilegedRole}},
		"AllowedByName": {reason: "The policy may allow a predefined role.", policy: v1alpha1.InstancePolicy{AllowMembershipOf: []string{"pg_read_all_data"}}, roles: []Named{{"f[0]", "pg_read_all_data"}}},
		"AllowedPrivileged": {reason: "The policy may allow a privileged role.", policy: v1alpha1.InstancePolicy{AllowMembershipOf: []string{"auditor"}},
			roles: []Named{{"f[0]", "auditor"}}},
		"AllowOneNotAnother": {reason: "Allowing one role allows only that one.", policy: v1alpha1.InstancePolicy{AllowMembershipOf: []string{"pg_read_all_data"}},
			roles: []Named{{"f[0]", "pg_read_all_data"}, {"f[1]", "pg_write_server_files"}}, want: &refusal{"f[1]", RulePredefinedRole}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Policy{InstancePolicy: tc.policy, Instance: "main"}.Memberships(context.Background(), catalog, shop, tc.roles)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, of(got)); diff != "" {
				t.Errorf("%s\n-want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestMembershipOptions(t *testing.T) {
	shared := v1alpha1.InstancePolicy{AllowMembershipOf: []string{"dba_readers", "ledger_dba"}, AllowSetRoleOf: []string{"ledger_dba"}, AllowAdminOptionOf: []string{"ledger_dba"}}
	cases := map[string]struct {
		reason string
		role   string
		set    *bool
		admin  bool
		want   *refusal
	}{
		"OwnRoleEveryOption":   {reason: "A role the policy does not list is the namespace's own (Memberships refuses any other): every option.", role: "orders_owner", set: ptr.To(true), admin: true},
		"SharedPrivileges":     {reason: "A shared role's privileges are what the policy opens.", role: "dba_readers", set: ptr.To(false)},
		"SharedServerDefault":  {reason: "Leaving SET to the server is no request for it (WithholdsSet makes it false).", role: "dba_readers"},
		"SharedSet":            {reason: "Acting as a shared role needs allowSetRoleOf.", role: "dba_readers", set: ptr.To(true), want: &refusal{"spec.forProvider.set", RuleMembershipOption}},
		"SharedAdmin":          {reason: "Handing a shared role on needs allowAdminOptionOf.", role: "dba_readers", admin: true, want: &refusal{"spec.forProvider.withAdminOption", RuleMembershipOption}},
		"SetAllowed":           {reason: "allowSetRoleOf opens SET.", role: "ledger_dba", set: ptr.To(true)},
		"AdminAllowed":         {reason: "allowAdminOptionOf opens ADMIN OPTION.", role: "ledger_dba", admin: true},
		"SetAllowedAdminNot":   {reason: "Each option is allowed on its own.", role: "dba_readers", set: ptr.To(false), admin: true, want: &refusal{"spec.forProvider.withAdminOption", RuleMembershipOption}},
		"SetCheckedBeforeAdmn": {reason: "The first refused option is named.", role: "dba_readers", set: ptr.To(true), admin: true, want: &refusal{"spec.forProvider.set", RuleMembershipOption}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Policy{InstancePolicy: shared, Instance: "main"}.MembershipOptions(tc.role, tc.set, "spec.forProvider.set", tc.admin, "spec.forProvider.withAdminOption")
			if diff := cmp.Diff(tc.want, of(got)); diff != "" {
				t.Errorf("%s\n-want +got:\n%s", tc.reason, diff)
			}
			if got != nil && !strings.Contains(got.Allow, "spec.policy.allow") {
				t.Errorf("the refusal does not say how the platform allows it: %q", got.Allow)
			}
		})
	}
}

func TestWithholdsSet(t *testing.T) {
	p := Policy{InstancePolicy: v1alpha1.InstancePolicy{AllowMembershipOf: []string{"dba_readers", "ledger_dba"}, AllowSetRoleOf: []string{"ledger_dba"}}}
	cases := map[string]struct {
		role    string
		version int
		want    bool
	}{
		"SharedOn16":         {role: "dba_readers", version: 160000, want: true},
		"SharedOn18":         {role: "dba_readers", version: 180001, want: true},
		"SharedOn15":         {role: "dba_readers", version: 150014, want: false},
		"VersionUnknown":     {role: "dba_readers", version: 0, want: false},
		"SetAllowed":         {role: "ledger_dba", version: 170000, want: false},
		"OwnRole":            {role: "orders_owner", version: 170000, want: false},
		"PredefinedUnlisted": {role: "pg_read_all_data", version: 170000, want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := p.WithholdsSet(tc.role, tc.version); got != tc.want {
				t.Errorf("WithholdsSet(%q, %d) = %t, want %t", tc.role, tc.version, got, tc.want)
			}
		})
	}
}

func TestSettings(t *testing.T) {
	cases := map[string]struct {
		reason   string
		policy   v1alpha1.InstancePolicy
		settings []Named
		want     *refusal
	}{
		"UserContext":  {reason: "Settings any user may set are fine.", settings: []Named{{"s[0]", "statement_timeout"}}},
		"Role":         {reason: "role, which pg_settings does not list, is a session's own (the server checks membership).", settings: []Named{{"s[0]", "role"}}},
		"SessionAuth":  {reason: "session_authorization, which pg_settings does not list either, is refused.", settings: []Named{{"s[0]", "session_authorization"}}, want: &refusal{"s[0]", RuleSetting}},
		"Custom":       {reason: "Custom settings (with a dot) are any user's.", settings: []Named{{"s[0]", "app.tenant"}}},
		"Superuser":    {reason: "Superuser settings are refused.", settings: []Named{{"s[0]", "statement_timeout"}, {"s[1]", "session_replication_role"}}, want: &refusal{"s[1]", RuleSetting}},
		"Postmaster":   {reason: "Server-wide settings are refused.", settings: []Named{{"s[0]", "shared_buffers"}}, want: &refusal{"s[0]", RuleSetting}},
		"Unknown":      {reason: "A setting the admin cannot see is refused.", settings: []Named{{"s[0]", "mystery"}}, want: &refusal{"s[0]", RuleSetting}},
		"AllowedByAdm": {reason: "The policy may allow a setting.", policy: v1alpha1.InstancePolicy{AllowSettings: []string{"log_statement"}}, settings: []Named{{"s[0]", "log_statement"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Policy{InstancePolicy: tc.policy, Instance: "main"}.Settings(context.Background(), catalog, tc.settings)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, of(got)); diff != "" {
				t.Errorf("%s\n-want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestRoleAttributesTemplatesAndCatalogs(t *testing.T) {
	p := Policy{Instance: "main"}
	allowing := Policy{Instance: "main", InstancePolicy: v1alpha1.InstancePolicy{
		AllowRoleAttributes: []v1alpha1.PolicyRoleAttribute{v1alpha1.PolicyReplication}, AllowTemplates: []string{"golden"},
	}}
	capped := Policy{Instance: "main", InstancePolicy: v1alpha1.InstancePolicy{MaxConnectionLimit: ptr.To[int32](10)}}
	cases := map[string]struct {
		reason string
		got    *Refusal
		want   *refusal
	}{
		"NoAttributes":       {reason: "Asking for no attribute is fine.", got: p.RoleAttributes(nil)},
		"CreateRole":         {reason: "CREATEROLE is refused by default.", got: p.RoleAttributes(map[v1alpha1.PolicyRoleAttribute]string{v1alpha1.PolicyCreateRole: "spec.forProvider.createRole"}), want: &refusal{"spec.forProvider.createRole", RuleRoleAttribute}},
		"ReplicationAllowed": {reason: "An allowed attribute passes.", got: allowing.RoleAttributes(map[v1alpha1.PolicyRoleAttribute]string{v1alpha1.PolicyReplication: "r"})},
		"BypassNotAllowed":   {reason: "Allowing one attribute does not allow another.", got: allowing.RoleAttributes(map[v1alpha1.PolicyRoleAttribute]string{v1alpha1.PolicyReplication: "r", v1alpha1.PolicyBypassRLS: "b"}), want: &refusal{"b", RuleRoleAttribute}},
		"Template0":          {reason: "template0 is always fine.", got: p.Template("t", "template0")},
		"Template1":          {reason: "template1 is always fine.", got: p.Template("t", "template1")},
		"OtherDatabase":      {reason: "Copying another database is refused.", got: p.Template("t", "orders"), want: &refusal{"t", RuleTemplate}},
		"AllowedTemplate":    {reason: "The policy may allow a template.", got: allowing.Template("t", "golden")},
		"UserSchema":         {reason: "A user schema is fine.", got: SystemSchema("s", "public")},
		"PgCatalog":          {reason: "pg_catalog is refused.", got: SystemSchema("s", "pg_catalog"), want: &refusal{"s", RuleSystemCatalog}},
		"InformationSchema":  {reason: "information_schema is refused.", got: SystemSchema("s", "information_schema"), want: &refusal{"s", RuleSystemCatalog}},
		"Toast":              {reason: "pg_toast is refused.", got: SystemSchema("s", "pg_toast"), want: &refusal{"s", RuleSystemCatalog}},
		"AnyLimitWithoutCap": {reason: "Without maxConnectionLimit any limit, none included, may be asked for.", got: p.ConnectionLimit("c", -1)},
		"LimitUnderCap":      {reason: "A limit up to the cap passes.", got: capped.ConnectionLimit("c", 10)},
		"LimitOverCap":       {reason: "A limit above the cap is refused.", got: capped.ConnectionLimit("c", 11), want: &refusal{"c", RuleConnectionLimit}},
		"NoLimitUnderCap":    {reason: "No limit at all (-1) is above any cap.", got: capped.ConnectionLimit("c", -1), want: &refusal{"c", RuleConnectionLimit}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, of(tc.got)); diff != "" {
				t.Errorf("%s\n-want +got:\n%s", tc.reason, diff)
			}
			if tc.got != nil && tc.got.Why == "" {
				t.Errorf("%s\nthe refusal does not say why", tc.reason)
			}
		})
	}
}

func TestDatabase(t *testing.T) {
	cases := map[string]struct {
		reason string
		policy v1alpha1.InstancePolicy
		db     string
		want   *refusal
	}{
		"Own":          {reason: "A database managed from the namespace is fine.", db: "orders"},
		"OtherTenants": {reason: "Another namespace's database is refused.", db: "ledger", want: &refusal{"d", RuleOtherNamespace}},
		"Unmanaged":    {reason: "A database no resource manages is refused.", db: "postgres", want: &refusal{"d", RuleOtherNamespace}},
		"Allowed":      {reason: "The policy may share a database.", policy: v1alpha1.InstancePolicy{AllowDatabases: []string{"postgres"}}, db: "postgres"},
		"Missing":      {reason: "A database that does not exist is no one's: the server refuses to act in it.", db: "nowhere"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Policy{InstancePolicy: tc.policy, Instance: "main"}.Database(context.Background(), catalog, shop, "d", tc.db)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, of(got)); diff != "" {
				t.Errorf("%s\n-want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestOthersRoles(t *testing.T) {
	withOthers := shop
	withOthers.OthersRoles = uids("uid-ledger-owner")
	cases := map[string]struct {
		reason string
		policy v1alpha1.InstancePolicy
		roles  []Named
		want   *refusal
	}{
		"OwnRole":         {reason: "A role managed from the namespace is its own to read.", roles: []Named{{"g", "orders_owner"}}},
		"AnotherTenants":  {reason: "A role another namespace manages is refused, read-only or not.", roles: []Named{{"g", "ledger_owner"}}, want: &refusal{"g", RuleOtherNamespace}},
		"Unmanaged":       {reason: "A role no resource manages (the DBA's) may be read: adopting an existing server starts there.", roles: []Named{{"g", "dba_readers"}}},
		"Predefined":      {reason: "A predefined role carries no marker: reading its members is not another namespace's business.", roles: []Named{{"g", "pg_monitor"}}},
		"SharedByPolicy":  {reason: "A role the policy shares with every namespace may be read.", policy: v1alpha1.InstancePolicy{AllowMembershipOf: []string{"ledger_owner"}}, roles: []Named{{"g", "ledger_owner"}}},
		"MissingRole":     {reason: "A role that does not exist is no one's.", roles: []Named{{"g", "nobody"}}},
		"SecondIsRefused": {reason: "Every role named is checked.", roles: []Named{{"a", "orders_owner"}, {"b", "ledger_owner"}}, want: &refusal{"b", RuleOtherNamespace}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Policy{InstancePolicy: tc.policy, Instance: "main"}.OthersRoles(context.Background(), catalog, withOthers, tc.roles)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, of(got)); diff != "" {
				t.Errorf("%s\n-want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestTablespace(t *testing.T) {
	p := Policy{InstancePolicy: v1alpha1.InstancePolicy{AllowTablespaces: []string{"fast"}}, Instance: "main"}
	cases := map[string]struct {
		reason string
		name   string
		want   *refusal
	}{
		"Offered":    {reason: "A tablespace the policy lists may be granted on.", name: "fast"},
		"NotOffered": {reason: "Any other is refused.", name: "archive", want: &refusal{"spec.forProvider.tablespace", RuleTablespace}},
		"Default":    {reason: "pg_default is the platform's too, unless it lists it.", name: "pg_default", want: &refusal{"spec.forProvider.tablespace", RuleTablespace}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := p.Tablespace("spec.forProvider.tablespace", tc.name)
			if diff := cmp.Diff(tc.want, of(got)); diff != "" {
				t.Errorf("%s\n-want +got:\n%s", tc.reason, diff)
			}
			if got != nil && !strings.Contains(got.Allow, `"`+tc.name+`" to spec.policy.allowTablespaces`) {
				t.Errorf("the refusal does not say how to allow it: %q", got.Allow)
			}
		})
	}
}
