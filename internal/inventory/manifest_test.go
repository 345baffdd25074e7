package inventory

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

func TestDescribe(t *testing.T) {
	until := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	srv := &Server{
		Admin: "postgres_admin",
		Roles: []Role{
			{Name: "pg_monitor", System: true},
			{Name: "postgres_admin", CreateRole: true},
			{Name: "dba", Superuser: true, Login: true},
			{Name: "Legacy Admin", Login: true},
			{Name: "kept", Managed: true},
			{Name: "elsewhere"},
			{Name: "app", Login: true, Inherit: true, ConnectionLimit: -1, ValidUntil: &until, MemberOf: []string{"readers", "writers"}, AdminOf: []string{"writers"},
				Config: []string{"statement_timeout=30s", "Bad-Name=1"}, DatabaseConfig: []string{"orders: work_mem=16MB"}, Comment: "the app"},
			{Name: "app_"},
		},
		Databases: []Database{
			{Name: "postgres"}, {Name: "template1"}, {Name: "home"},
			{Name: "Reports"},
			{Name: "orders", Owner: "app", Encoding: "UTF8", Collate: "C", Ctype: "C", ConnectionLimit: -1, AllowConnections: true, Comment: "orders",
				Config:     []string{"work_mem=64MB"},
				Extensions: []Extension{{Name: "plpgsql", Version: "1.0", Schema: "pg_catalog"}, {Name: "pgcrypto", Version: "1.3", Schema: "crypto"}},
				Schemas: []Schema{
					{Name: "public", Owner: "pg_database_owner"}, {Name: "crypto", Owner: "app"}, {Name: "tiger", Owner: "app", Extension: "postgis"},
					{Name: "Staging", Owner: "app"}, {Name: "sales", Owner: "app", Comment: "sales"},
				}},
			{Name: "frozen", Owner: "app", Unread: "it does not allow connections"},
		},
	}
	m := Mapping{Namespaces: []Placement{{Namespace: "shop", Databases: []string{"orders", "frozen", "Reports"}, Roles: []string{"app*", "Legacy*", "dba", "kept"}}}}
	inv := Describe(srv, Options{Instance: "main", Mapping: m, Home: "home"})

	var paths []string
	for _, mf := range inv.Manifests {
		paths = append(paths, mf.Path)
	}
	if diff := cmp.Diff([]string{"shop/roles/app.yaml", "shop/grants/app-in-writers.yaml", "shop/roles/app-acee09.yaml", "shop/databases/orders.yaml", "shop/schemas/orders-crypto.yaml",
		"shop/schemas/orders-sales.yaml", "shop/databases/frozen.yaml"}, paths); diff != "" {
		t.Errorf("manifests (-want +got):\n%s", diff)
	}
	wantSkipped := []Skip{
		{KindRole, "pg_monitor", "a role PostgreSQL predefines"},
		{KindRole, "postgres_admin", "the role the inventory logged in as: the Instance's admin is registered on the PostgreSQLInstance, not managed as a role"},
		{KindRole, "dba", "a SUPERUSER: the provider never manages a superuser"},
		{KindRole, "Legacy Admin", "its name is outside what the API takes (^[a-z][a-z0-9_]{0,62}$)"},
		{KindRole, "kept", managedAlready},
		{KindRole, "elsewhere", "the mapping places it in no namespace"},
		{KindSetting, "app: Bad-Name", "a setting name outside what the API takes (^[a-z_][a-z0-9_]*(\\.[a-z_][a-z0-9_]*)?$)"},
		{KindSetting, "app in orders: work_mem=16MB", "a role's setting in one database (ALTER ROLE … IN DATABASE … SET): the API has no field for it"},
		{KindDatabase, "postgres", "a database every server has"},
		{KindDatabase, "template1", "a database every server has"},
		{KindDatabase, "home", "the database the Instance connects to"},
		{KindDatabase, "Reports", "its name is outside what the API takes (^[a-z][a-z0-9_]{0,62}$)"},
		{KindSetting, "orders: work_mem=64MB", "a database's setting (ALTER DATABASE … SET): the API has no field for it"},
		{KindSchema, "orders.public", "the public schema every database has"},
		{KindSchema, "orders.tiger", "created by extension postgis, which the database's resource lists"},
		{KindSchema, "orders.Staging", "its name is outside what the API takes (^[a-z_][a-z0-9_]{0,62}$)"},
		{KindDatabase, "frozen", "nothing inside it was read: it does not allow connections"},
	}
	if diff := cmp.Diff(wantSkipped, inv.Skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}

	wantCrossing := []Skip{
		{KindRole, "app", "a member of readers, which no manifest describes"},
		{KindRole, "app", "a member of writers, which no manifest describes"},
		{KindGrant, "app-in-writers", "membership of writers, which no manifest describes"},
	}
	if diff := cmp.Diff(wantCrossing, inv.Crossing); diff != "" {
		t.Errorf("crossing (-want +got):\n%s", diff)
	}
	// Placed apart, a member and its group cross namespaces.
	apart := Describe(&Server{Roles: []Role{{Name: "readers"}, {Name: "bot", MemberOf: []string{"readers"}}}},
		Options{Instance: "main", Mapping: Mapping{Namespaces: []Placement{{Namespace: "a", Roles: []string{"readers"}}, {Namespace: "b", Roles: []string{"*"}}}}})
	if diff := cmp.Diff([]Skip{{KindRole, "bot", "a member of readers, which the mapping places in namespace a, not b"}}, apart.Crossing); diff != "" {
		t.Errorf("crossing of a member placed apart from its group (-want +got):\n%s", diff)
	}

	// PUBLIC kept out of a database by a REVOKE, and objects the
	// provider manages, described on demand.
	kept := Describe(&Server{Roles: []Role{{Name: "kept", Managed: true}},
		Databases: []Database{{Name: "closed", Owner: "kept", ACL: true, Grants: []Grant{{Kind: "Database", Grantee: "kept", Privilege: "CONNECT"}}},
			{Name: "open", Owner: "kept", ACL: true, Grants: []Grant{{Kind: "Database", Grantee: "PUBLIC", Privilege: "CONNECT"}}}}},
		Options{Instance: "main", Mapping: Everything("copy"), IncludeManaged: true})
	var revoked []string
	for _, m := range kept.Manifests {
		if d, ok := m.Object.(*v1alpha1.PostgreSQLDatabase); ok && d.Spec.ForProvider.RevokePublicPrivileges {
			revoked = append(revoked, d.GetName())
		}
	}
	if len(kept.Manifests) != 4 || len(kept.Skipped) != 0 || !cmp.Equal(revoked, []string{"closed"}) {
		t.Errorf("with IncludeManaged: %d manifests, skipped %v, PUBLIC revoked on %v; want 4 (a role, two databases, a grant), none and [closed]", len(kept.Manifests), kept.Skipped, revoked)
	}

	role, _ := inv.Manifests[0].Object.(*v1alpha1.PostgreSQLRole)
	wantRole := v1alpha1.PostgreSQLRoleParameters{
		Name: ptr.To("app"), Login: ptr.To(true), Inherit: ptr.To(true), CreateDB: ptr.To(false), CreateRole: ptr.To(false),
		Replication: ptr.To(false), BypassRLS: ptr.To(false), ConnectionLimit: ptr.To[int32](-1), ValidUntil: &metav1.Time{Time: until},
		MemberOf: []string{"readers", "writers"}, Comment: ptr.To("the app"),
		ConfigurationParameters: []v1alpha1.ConfigurationParameter{{Name: "statement_timeout", Value: "30s"}},
	}
	if diff := cmp.Diff(wantRole, role.Spec.ForProvider); diff != "" {
		t.Errorf("role app (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(observeOnly(), role.Spec.ManagementPolicies); diff != "" || role.Spec.InstanceRef.Name != "main" || role.GetNamespace() != "shop" {
		t.Errorf("role app: policies %v, Instance %q, namespace %q", role.Spec.ManagementPolicies, role.Spec.InstanceRef.Name, role.GetNamespace())
	}
	if role.Spec.ForProvider.PasswordSecretRef != nil || role.Spec.WriteConnectionSecretToReference != nil {
		t.Error("an adopted role names a password or a Secret")
	}
	member, _ := inv.Manifests[1].Object.(*v1alpha1.PostgreSQLGrant)
	wantMember := v1alpha1.PostgreSQLGrantParameters{Role: ptr.To("app"), ObjectType: v1alpha1.GrantObjectMembership, MemberOf: ptr.To("writers"), WithAdminOption: ptr.To(true)}
	if diff := cmp.Diff(wantMember, member.Spec.ForProvider); diff != "" {
		t.Errorf("membership WITH ADMIN OPTION (-want +got):\n%s", diff)
	}
	db, _ := inv.Manifests[3].Object.(*v1alpha1.PostgreSQLDatabase)
	wantDB := v1alpha1.PostgreSQLDatabaseParameters{
		Name: ptr.To("orders"), Owner: ptr.To("app"), Encoding: ptr.To("UTF8"), LCCollate: ptr.To("C"), LCCtype: ptr.To("C"),
		ConnectionLimit: ptr.To[int32](-1), AllowConnections: ptr.To(true), IsTemplate: ptr.To(false), Comment: ptr.To("orders"),
		Extensions: []v1alpha1.Extension{{Name: "pgcrypto", Version: ptr.To("1.3"), Schema: ptr.To("crypto")}},
	}
	if diff := cmp.Diff(wantDB, db.Spec.ForProvider); diff != "" {
		t.Errorf("database orders (-want +got):\n%s", diff)
	}
	sc, _ := inv.Manifests[5].Object.(*v1alpha1.PostgreSQLSchema)
	wantSchema := v1alpha1.PostgreSQLSchemaParameters{Name: ptr.To("sales"), Database: ptr.To("orders"), Owner: ptr.To("app"), Comment: ptr.To("sales")}
	if diff := cmp.Diff(wantSchema, sc.Spec.ForProvider); diff != "" {
		t.Errorf("schema orders.sales (-want +got):\n%s", diff)
	}
}

func TestNames(t *testing.T) {
	n := newNamer()
	cases := []struct{ ns, kind, pg, want string }{
		{"a", KindRole, "app_orders", "app-orders"},
		{"a", KindDatabase, "app_orders", "app-orders"},
		{"b", KindRole, "app_orders", "app-orders"},
		// Changed on the way (a trailing underscore cannot end a name),
		// then taken: a hash of the PostgreSQL name tells them apart.
		{"a", KindRole, "app_orders_", "app-orders-ca1105"},
		{"a", KindRole, "xabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijk", "xabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabc-9372fd"},
		{"a", KindSchema, "_", "schema-0c196e"},
		// Three resources from one name: each its own.
		{"a", KindGrant, "orders_sales_readers_tables", "orders-sales-readers-tables"},
		{"a", KindGrant, "orders_sales_readers_tables", "orders-sales-readers-tables-37afe8"},
		{"a", KindGrant, "orders_sales_readers_tables", "orders-sales-readers-tables-33efe0"},
	}
	for _, tc := range cases {
		if got := n.name(tc.ns, tc.kind, tc.pg); got != tc.want {
			t.Errorf("name(%s, %s, %q) = %q, want %q", tc.ns, tc.kind, tc.pg, got, tc.want)
		}
	}
}

func TestMappingValidate(t *testing.T) {
	cases := map[string]struct {
		m    Mapping
		want string
	}{
		"Valid":      {m: Everything("shop")},
		"Empty":      {m: Mapping{}, want: "the mapping places nothing: it has no namespaces"},
		"BadNS":      {m: Mapping{Namespaces: []Placement{{Namespace: "Shop"}}}, want: `namespaces[0].namespace "Shop" is not a namespace name`},
		"BadPattern": {m: Mapping{Namespaces: []Placement{{Namespace: "shop", Roles: []string{"app_["}}}}, want: `namespaces[0] (shop): pattern "app_[": syntax error in pattern`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ""
			if err := tc.m.Validate(); err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("Validate() = %q, want %q", got, tc.want)
			}
		})
	}
}
