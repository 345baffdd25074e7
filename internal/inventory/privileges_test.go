package inventory

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

func TestDescribeGrants(t *testing.T) {
	d := Database{Name: "orders", Grants: []Grant{
		{Kind: "Database", Grantee: "readers", Privilege: "CONNECT"},
		{Kind: "Database", Grantee: "PUBLIC", Privilege: "CONNECT"},
		{Kind: "Schema", Schema: "public", Grantee: "PUBLIC", Privilege: "USAGE"},
		{Kind: "Schema", Schema: "sales", Grantee: "readers", Privilege: "USAGE"},
		// Two tables with the same privileges share a grant; a third with
		// other privileges has its own; the grant option splits them.
		{Kind: "Table", Schema: "sales", Object: "items", Grantee: "readers", Privilege: "SELECT"},
		{Kind: "Table", Schema: "sales", Object: "orders", Grantee: "readers", Privilege: "SELECT"},
		{Kind: "Table", Schema: "sales", Object: "ledger", Grantee: "readers", Privilege: "INSERT"},
		{Kind: "Table", Schema: "sales", Object: "ledger", Grantee: "readers", Privilege: "SELECT"},
		{Kind: "Table", Schema: "sales", Object: "items", Grantee: "writers", Privilege: "UPDATE", Grantable: true},
		{Kind: "Table", Schema: "sales", Object: "items", Grantee: "writers", Privilege: "INSERT"},
		{Kind: "Function", Schema: "sales", Object: "total(bigint)", Grantee: "readers", Privilege: "EXECUTE"},
		{Kind: "Function", Schema: "sales", Object: "total(bigint)", Grantee: "PUBLIC", Privilege: "EXECUTE"},
		// Left out, each with its reason.
		{Kind: "Table", Schema: "sales", Object: "orders", Grantee: "PUBLIC", Privilege: "SELECT"},
		{Kind: "Column", Schema: "sales", Object: "items.sku", Grantee: "bot", Privilege: "SELECT"},
		{Kind: "Table", Schema: "sales", Object: "Mixed", Grantee: "readers", Privilege: "SELECT"},
		{Kind: "Function", Schema: "sales", Object: "Calc(integer)", Grantee: "readers", Privilege: "EXECUTE"},
		{Kind: "Schema", Schema: "sales", Grantee: "Bad Role", Privilege: "USAGE"},
	}}
	var skipped []Skip
	ms := describeGrants(d, "shop", "main", newNamer(), func(kind, name, reason string) { skipped = append(skipped, Skip{kind, name, reason}) })
	type grant struct {
		Name       string
		Type       v1alpha1.GrantObjectType
		Role       string
		Schema     string
		Objects    []string
		Privileges []v1alpha1.Privilege
		Grantable  bool
	}
	var got []grant
	for _, m := range ms {
		g := m.Object.(*v1alpha1.PostgreSQLGrant) //nolint:forcetypeassert // Only grants here.
		p := g.Spec.ForProvider
		if *p.Database != "orders" || g.Spec.InstanceRef.Name != "main" || g.GetNamespace() != "shop" || !cmp.Equal(g.Spec.ManagementPolicies, observeOnly()) {
			t.Errorf("grant %s: database %s, Instance %s, namespace %s, policies %v", g.GetName(), *p.Database, g.Spec.InstanceRef.Name, g.GetNamespace(), g.Spec.ManagementPolicies)
		}
		got = append(got, grant{g.GetName(), p.ObjectType, *p.Role, ptr.Deref(p.Schema, ""), p.Objects, p.Privileges, ptr.Deref(p.WithGrantOption, false)})
	}
	want := []grant{
		{"orders-readers", "Database", "readers", "", nil, []v1alpha1.Privilege{"CONNECT"}, false},
		{"orders-sales-readers", "Schema", "readers", "sales", nil, []v1alpha1.Privilege{"USAGE"}, false},
		{"orders-sales-readers-tables", "Table", "readers", "sales", []string{"items", "orders"}, []v1alpha1.Privilege{"SELECT"}, false},
		{"orders-sales-readers-tables-37afe8", "Table", "readers", "sales", []string{"ledger"}, []v1alpha1.Privilege{"INSERT", "SELECT"}, false},
		{"orders-sales-writers-tables-grantable", "Table", "writers", "sales", []string{"items"}, []v1alpha1.Privilege{"UPDATE"}, true},
		{"orders-sales-writers-tables", "Table", "writers", "sales", []string{"items"}, []v1alpha1.Privilege{"INSERT"}, false},
		{"orders-sales-readers-functions", "Function", "readers", "sales", []string{"total(bigint)"}, []v1alpha1.Privilege{"EXECUTE"}, false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("grants (-want +got):\n%s", diff)
	}
	wantSkipped := []Skip{
		{KindGrant, "SELECT on orders.sales.orders to PUBLIC", "a grant to PUBLIC: a PostgreSQLGrant names one role"},
		{KindGrant, "SELECT on orders.sales.items.sku to bot", "a column's privilege: the API grants on whole tables only"},
		{KindGrant, "SELECT on orders.sales.Mixed to readers", "the object's name is outside what the API takes (^[a-z_][a-z0-9_]{0,62}$)"},
		{KindGrant, "EXECUTE on orders.sales.Calc(integer) to readers", "the function's signature is outside what the API takes"},
		{KindGrant, "USAGE on orders.sales to Bad Role", "the grantee's name is outside what the API takes (^[a-z][a-z0-9_]{0,62}$)"},
	}
	if diff := cmp.Diff(wantSkipped, skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
}

func TestDescribeDefaults(t *testing.T) {
	d := Database{Name: "orders", Defaults: []Default{
		{Owner: "app", Schema: "sales", ObjectType: "r", Grantee: "readers", Privilege: "SELECT"},
		{Owner: "app", Schema: "sales", ObjectType: "r", Grantee: "readers", Privilege: "INSERT"},
		{Owner: "app", ObjectType: "S", Grantee: "writers", Privilege: "USAGE", Grantable: true},
		{Owner: "app", ObjectType: "f", Grantee: "PUBLIC", Privilege: "EXECUTE"},
		{Owner: "app", ObjectType: "r", Grantee: "PUBLIC", Privilege: "SELECT"},
		{Owner: "app", ObjectType: "L", Grantee: "readers", Privilege: "SELECT"},
	}}
	var skipped []Skip
	ms := describeDefaults(d, "shop", "main", newNamer(), func(kind, name, reason string) { skipped = append(skipped, Skip{kind, name, reason}) })
	var got []v1alpha1.PostgreSQLDefaultPrivilegesParameters
	var paths []string
	for _, m := range ms {
		got = append(got, m.Object.(*v1alpha1.PostgreSQLDefaultPrivileges).Spec.ForProvider) //nolint:forcetypeassert // Only default privileges here.
		paths = append(paths, m.Path)
	}
	want := []v1alpha1.PostgreSQLDefaultPrivilegesParameters{
		{Role: ptr.To("readers"), Owner: ptr.To("app"), Database: ptr.To("orders"), Schema: ptr.To("sales"), ObjectType: "Tables", Privileges: []v1alpha1.Privilege{"INSERT", "SELECT"}},
		{Role: ptr.To("writers"), Owner: ptr.To("app"), Database: ptr.To("orders"), ObjectType: "Sequences", Privileges: []v1alpha1.Privilege{"USAGE"}, WithGrantOption: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("default privileges (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"shop/defaultprivileges/orders-app-sales-readers-tables.yaml", "shop/defaultprivileges/orders-app-writers-sequences-grantable.yaml"}, paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	wantSkipped := []Skip{
		{KindDefault, "SELECT on app's new tables in every schema of orders, to PUBLIC", "a default privilege for PUBLIC: a PostgreSQLDefaultPrivileges names one role"},
		{KindDefault, "SELECT on app's new objects of type L in every schema of orders, to readers", "an object type the API has no value for"},
	}
	if diff := cmp.Diff(wantSkipped, skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
}

// TestGrantsOfManyObjects: a schema of 600 tables granted alike is three
// grants, each naming at most 256 of them, together all of them once.
func TestGrantsOfManyObjects(t *testing.T) {
	d := Database{Name: "big"}
	for i := range 600 {
		d.Grants = append(d.Grants, Grant{Kind: "Table", Schema: "s", Object: fmt.Sprintf("t%03d", i), Grantee: "readers", Privilege: "SELECT"})
	}
	ms := describeGrants(d, "shop", "main", newNamer(), func(kind, name, reason string) { t.Errorf("skipped %s %s: %s", kind, name, reason) })
	var sizes []int
	seen := map[string]bool{}
	for _, m := range ms {
		objs := m.Object.(*v1alpha1.PostgreSQLGrant).Spec.ForProvider.Objects //nolint:forcetypeassert // Only grants here.
		sizes = append(sizes, len(objs))
		for _, o := range objs {
			if seen[o] {
				t.Errorf("%s named twice", o)
			}
			seen[o] = true
		}
	}
	if diff := cmp.Diff([]int{256, 256, 88}, sizes); diff != "" || len(seen) != 600 {
		t.Errorf("grants of 600 tables: sizes (-want +got):\n%s; %d tables named", diff, len(seen))
	}
}
