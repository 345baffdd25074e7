package v1alpha1_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

func validGrant(name string) *v1alpha1.PostgreSQLGrant {
	return &v1alpha1.PostgreSQLGrant{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: v1alpha1.PostgreSQLGrantSpec{
			InstanceRef: v1alpha1.InstanceReference{Name: "main"},
			ForProvider: v1alpha1.PostgreSQLGrantParameters{
				Role: ptr.To("reader"), ObjectType: v1alpha1.GrantObjectTable,
				Database: ptr.To("shop"), Schema: ptr.To("app"), Objects: []string{"orders"},
				Privileges: []v1alpha1.Privilege{"SELECT"},
			},
		},
	}
}

func validDefaultPrivileges(name string) *v1alpha1.PostgreSQLDefaultPrivileges {
	return &v1alpha1.PostgreSQLDefaultPrivileges{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: v1alpha1.PostgreSQLDefaultPrivilegesSpec{
			InstanceRef: v1alpha1.InstanceReference{Name: "main"},
			ForProvider: v1alpha1.PostgreSQLDefaultPrivilegesParameters{
				Role: ptr.To("reader"), Owner: ptr.To("app"), Database: ptr.To("shop"),
				ObjectType: v1alpha1.DefaultPrivilegesTables, Privileges: []v1alpha1.Privilege{"SELECT"},
			},
		},
	}
}

func validSchema(name string) *v1alpha1.PostgreSQLSchema {
	return &v1alpha1.PostgreSQLSchema{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: v1alpha1.PostgreSQLSchemaSpec{
			InstanceRef: v1alpha1.InstanceReference{Name: "main"},
			ForProvider: v1alpha1.PostgreSQLSchemaParameters{Database: ptr.To("shop")},
		},
	}
}

// rejects creates obj and checks that the API server refuses it with a
// message holding every want.
func rejects(t *testing.T, obj client.Object, reason string, want ...string) {
	t.Helper()
	err := kube.Create(context.Background(), obj)
	if err == nil {
		_ = kube.Delete(context.Background(), obj)
		t.Fatalf("%s\nCreate succeeded; want a rejection", reason)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s\nCreate error %q does not contain %q", reason, err, w)
		}
	}
}

func TestGrantValidation(t *testing.T) {
	suite.Server(t)
	cases := map[string]struct {
		reason string
		mutate func(*v1alpha1.PostgreSQLGrantParameters)
		want   []string
	}{
		"PrivilegeNotForTables": {
			reason: "CONNECT is a database privilege.",
			mutate: func(p *v1alpha1.PostgreSQLGrantParameters) { p.Privileges = []v1alpha1.Privilege{"SELECT", "CONNECT"} },
			want:   []string{"spec.forProvider.privileges", "privileges on a Table are ALL, SELECT"},
		},
		"PrivilegeNotForDatabases": {
			reason: "SELECT is not a database privilege.",
			mutate: func(p *v1alpha1.PostgreSQLGrantParameters) {
				p.ObjectType, p.Schema, p.Objects = v1alpha1.GrantObjectDatabase, nil, nil
			},
			want: []string{"spec.forProvider.privileges", "privileges on a Database are ALL, CONNECT, CREATE or TEMPORARY"},
		},
		"PrivilegeNotForSchemas": {
			reason: "SELECT is not a schema privilege.",
			mutate: func(p *v1alpha1.PostgreSQLGrantParameters) { p.ObjectType, p.Objects = v1alpha1.GrantObjectSchema, nil },
			want:   []string{"spec.forProvider.privileges", "privileges on a Schema are ALL, USAGE or CREATE"},
		},
		"PrivilegeNotForSequences": {
			reason: "INSERT is not a sequence privilege.",
			mutate: func(p *v1alpha1.PostgreSQLGrantParameters) {
				p.ObjectType, p.Privileges = v1alpha1.GrantObjectSequence, []v1alpha1.Privilege{"INSERT"}
			},
			want: []string{"spec.forProvider.privileges", "privileges on a Sequence are ALL, USAGE, SELECT or UPDATE"},
		},
		"PrivilegeNotForFunctions": {
			reason: "Functions only have EXECUTE.",
			mutate: func(p *v1alpha1.PostgreSQLGrantParameters) {
				p.ObjectType, p.Objects = v1alpha1.GrantObjectFunction, []string{"add_item(integer, text)"}
			},
			want: []string{"spec.forProvider.privileges", "privileges on a Function are ALL or EXECUTE"},
		},
		"TablespaceWithoutName": {
			reason: "A grant on a tablespace names it.",
			mutate: func(p *v1alpha1.PostgreSQLGrantParameters) {
				p.ObjectType, p.Database, p.Schema, p.Objects, p.Privileges = v1alpha1.GrantObjectTablespace, nil, nil, nil, []v1alpha1.Privilege{"CREATE"}
			},
			want: []string{"spec.forProvider.tablespace", "objectType Tablespace needs tablespace"},
		},
		"TablespaceInADatabase": {
			reason: "A tablespace belongs to the whole server, not to a database.",
			mutate: func(p *v1alpha1.PostgreSQLGrantParameters) {
				p.ObjectType, p.Schema, p.Objects, p.Privileges = v1alpha1.GrantObjectTablespace, nil, nil, []v1alpha1.Privilege{"CREATE"}
				p.Tablespace = ptr.To("fast")
			},
			want: []string{"database and databaseRef do not apply to objectType Membership and Tablespace"},
		},
		"PrivilegeNotForTablespaces": {
			reason: "CREATE is the one tablespace privilege.",
			mutate: func(p *v1alpha1.PostgreSQLGrantParameters) {
				p.ObjectType, p.Database, p.Schema, p.Objects, p.Privileges = v1alpha1.GrantObjectTablespace, nil, nil, nil, []v1alpha1.Privilege{"USAGE"}
				p.Tablespace = ptr.To("fast")
			},
			want: []string{"spec.forProvider.privileges", "privileges on a Tablespace are ALL or CREATE"},
		},
		"TablespaceOnATable": {
			reason: "tablespace means nothing to a table grant: a mistake the user should hear about.",
			mutate: func(p *v1alpha1.PostgreSQLGrantParameters) { p.Tablespace = ptr.To("fast") },
			want:   []string{"spec.forProvider.tablespace", "which applies to it alone"},
		},
		"UnknownPrivilege": {
			reason: "Privileges are a closed enum.",
			mutate: func(p *v1alpha1.PostgreSQLGrantParameters) { p.Privileges = []v1alpha1.Privilege{"READ"} },
			want:   []string{"spec.forProvider.privileges[0]", `Unsupported value: "READ"`},
		},
		"NoPrivileges": {
			reason: "A grant of nothing is a mistake.",
			mutate: func(p *v1alpha1.PostgreSQLGrantParameters) { p.Privileges = nil },
			want:   []string{"spec.forProvider.privileges", "privileges must list at least one privilege"},
		},
		"TwoGrantees": {
			reason: "One grantee per grant.",
			mutate: func(p *v1alpha1.PostgreSQLGrantParameters) { p.RoleRef = &v1alpha1.LocalReference{Name: "x"} },
			want:   []string{"set exactly one of role, or roleRef/roleSelector"},
		},
		"NoGrantee": {
			reason: "A grant needs a grantee.",
			mutate: func(p *v1alpha1.PostgreSQLGrantParameters) { p.Role = nil },
			want:   []string{"set exactly one of role, or roleRef/roleSelector"},
		},
		"ObjectsAndAll": {
			reason: "Named objects or all of them, not both.",
			mutate: func(p *v1alpha1.PostgreSQLGrantParameters) { p.AllInSchema = ptr.To(true) },
			want:   []string{"spec.forProvider.objects", "exactly one of objects or allInSchema: true"},
		},
		"TableWithoutSchema": {
			reason: "Tables live in a schema.",
			mutate: func(p *v1alpha1.PostgreSQLGrantParameters) { p.Schema = nil },
			want:   []string{"need exactly one of schema or schemaRef"},
		},
		"BadTableName": {
			reason: "Table names are identifiers.",
			mutate: func(p *v1alpha1.PostgreSQLGrantParameters) { p.Objects = []string{"orders; DROP TABLE x"} },
			want:   []string{"spec.forProvider.objects", "names matching"},
		},
		"BadFunctionSignature": {
			reason: "Functions are named by signature.",
			mutate: func(p *v1alpha1.PostgreSQLGrantParameters) {
				p.ObjectType, p.Objects, p.Privileges = v1alpha1.GrantObjectFunction, []string{"add_item"}, []v1alpha1.Privilege{"EXECUTE"}
			},
			want: []string{"spec.forProvider.objects", "signatures such as add_item(integer, text)"},
		},
		"MembershipWithPrivileges": {
			reason: "A membership grants a role, not privileges.",
			mutate: func(p *v1alpha1.PostgreSQLGrantParameters) {
				p.ObjectType, p.Database, p.Schema, p.Objects, p.MemberOf = v1alpha1.GrantObjectMembership, nil, nil, nil, ptr.To("writers")
			},
			want: []string{"spec.forProvider.privileges", "privileges do not apply to objectType Membership"},
		},
		"MembershipWithoutRole": {
			reason: "A membership names the role to join.",
			mutate: func(p *v1alpha1.PostgreSQLGrantParameters) {
				p.ObjectType, p.Database, p.Schema, p.Objects, p.Privileges = v1alpha1.GrantObjectMembership, nil, nil, nil, nil
			},
			want: []string{"objectType Membership needs exactly one of memberOf or memberOfRef"},
		},
		"AdminOptionOnTable": {
			reason: "withAdminOption is for memberships.",
			mutate: func(p *v1alpha1.PostgreSQLGrantParameters) { p.WithAdminOption = ptr.To(true) },
			want:   []string{"only apply to objectType Membership"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := validGrant(strings.ToLower(name))
			tc.mutate(&g.Spec.ForProvider)
			rejects(t, g, tc.reason, tc.want...)
		})
	}
}

func TestGrantTargetIsFrozen(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	g := validGrant("frozen")
	if err := kube.Create(ctx, g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.Delete(ctx, g) })

	// Privileges and objects may change: the grant revokes what it gave.
	g.Spec.ForProvider.Privileges = []v1alpha1.Privilege{"SELECT", "INSERT"}
	g.Spec.ForProvider.Objects = []string{"orders", "items"}
	if err := kube.Update(ctx, g); err != nil {
		t.Fatalf("changing privileges and objects: %v", err)
	}
	for field, mutate := range map[string]func(*v1alpha1.PostgreSQLGrantParameters){
		"role cannot be changed":       func(p *v1alpha1.PostgreSQLGrantParameters) { p.Role = ptr.To("writer") },
		"database cannot be changed":   func(p *v1alpha1.PostgreSQLGrantParameters) { p.Database = ptr.To("other") },
		"schema cannot be changed":     func(p *v1alpha1.PostgreSQLGrantParameters) { p.Schema = ptr.To("other") },
		"objectType cannot be changed": func(p *v1alpha1.PostgreSQLGrantParameters) { p.ObjectType = v1alpha1.GrantObjectSequence },
	} {
		cur := &v1alpha1.PostgreSQLGrant{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(g), cur); err != nil {
			t.Fatal(err)
		}
		mutate(&cur.Spec.ForProvider)
		err := kube.Update(ctx, cur)
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("update: got %v, want an error saying %q", err, field)
		}
	}
}

func TestGrantDefaults(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	g := validGrant("defaults")
	if err := kube.Create(ctx, g); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.Delete(ctx, g) })
	if got := g.Spec.ManagementPolicies; len(got) != 1 || got[0] != "*" {
		t.Errorf("managementPolicies default = %v, want [*]: deleting a grant revokes what it granted", got)
	}
}

func TestDefaultPrivilegesValidation(t *testing.T) {
	suite.Server(t)
	cases := map[string]struct {
		reason string
		mutate func(*v1alpha1.PostgreSQLDefaultPrivilegesParameters)
		want   []string
	}{
		"PrivilegeNotForTables": {
			reason: "EXECUTE is a function privilege.",
			mutate: func(p *v1alpha1.PostgreSQLDefaultPrivilegesParameters) {
				p.Privileges = []v1alpha1.Privilege{"EXECUTE"}
			},
			want: []string{"spec.forProvider.privileges", "privileges on Tables are ALL, SELECT"},
		},
		"PrivilegeNotForTypes": {
			reason: "Types only have USAGE.",
			mutate: func(p *v1alpha1.PostgreSQLDefaultPrivilegesParameters) {
				p.ObjectType = v1alpha1.DefaultPrivilegesTypes
			},
			want: []string{"spec.forProvider.privileges", "privileges on Types are ALL or USAGE"},
		},
		"SchemasInSchema": {
			reason: "PostgreSQL refuses IN SCHEMA with ON SCHEMAS.",
			mutate: func(p *v1alpha1.PostgreSQLDefaultPrivilegesParameters) {
				p.ObjectType, p.Schema, p.Privileges = v1alpha1.DefaultPrivilegesSchemas, ptr.To("app"), []v1alpha1.Privilege{"USAGE"}
			},
			want: []string{"default privileges on Schemas cannot be limited to a schema"},
		},
		"NoOwner": {
			reason: "FOR ROLE is always explicit.",
			mutate: func(p *v1alpha1.PostgreSQLDefaultPrivilegesParameters) { p.Owner = nil },
			want:   []string{"set exactly one of owner or ownerRef"},
		},
		"NoPrivileges": {
			reason: "At least one privilege.",
			mutate: func(p *v1alpha1.PostgreSQLDefaultPrivilegesParameters) { p.Privileges = nil },
			want:   []string{"spec.forProvider.privileges"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := validDefaultPrivileges(strings.ToLower(name))
			tc.mutate(&d.Spec.ForProvider)
			rejects(t, d, tc.reason, tc.want...)
		})
	}
}

func TestSchemaValidation(t *testing.T) {
	suite.Server(t)
	rejects(t, validSchema("pg_stuff"), "pg_ names are reserved by PostgreSQL.", "metadata.name is not a valid PostgreSQL schema name")
	rejects(t, validSchema("app-data"), "Names with - are not identifiers.", "set spec.forProvider.name")
	noDB := validSchema("nodb")
	noDB.Spec.ForProvider.Database = nil
	rejects(t, noDB, "A schema lives in a database.", "set exactly one of database or databaseRef")
	reserved := validSchema("reserved")
	reserved.Spec.ForProvider.Name = ptr.To("pg_mine")
	rejects(t, reserved, "pg_ names are reserved by PostgreSQL.", "spec.forProvider.name", "schema names starting with pg_ are reserved")

	ctx := context.Background()
	s := validSchema("app")
	if err := kube.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.Delete(ctx, s) })
	s.Spec.ForProvider.Database = ptr.To("other")
	if err := kube.Update(ctx, s); err == nil || !strings.Contains(err.Error(), "database cannot be changed") {
		t.Errorf("moving a schema to another database: got %v, want a rejection", err)
	}
}
