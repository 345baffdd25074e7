package grant_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

// TestTenantScenario is the realistic set-up on one database closed to
// PUBLIC: an app role owns the database and creates a table; a read-only role gets CONNECT,
// schema USAGE and default SELECT on tables; a table the app creates later
// is readable by the read-only role and not writable. Both log in with the
// Secrets the provider generated. Every resource refers to the others
// through the managed resources, one grant through a label selector.
func TestTenantScenario(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	in := v1alpha1.InstanceReference{Name: main.Name}
	role := func(name, pgName string, labels map[string]string) *v1alpha1.PostgreSQLRole {
		return &v1alpha1.PostgreSQLRole{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
			Spec: v1alpha1.PostgreSQLRoleSpec{
				InstanceRef:                      in,
				WriteConnectionSecretToReference: &xpv2.LocalSecretReference{Name: name + "-conn"},
				ForProvider:                      v1alpha1.PostgreSQLRoleParameters{Name: ptr.To(pgName), Login: ptr.To(true)},
			},
		}
	}
	app := role("tenant-app", "tenant_app", nil)
	ro := role("tenant-ro", "tenant_ro", map[string]string{"access": "read-only"})
	db := &v1alpha1.PostgreSQLDatabase{
		ObjectMeta: metav1.ObjectMeta{Name: "tenant-db", Namespace: ns},
		Spec: v1alpha1.PostgreSQLDatabaseSpec{InstanceRef: in, ForProvider: v1alpha1.PostgreSQLDatabaseParameters{
			Name: ptr.To("tenant_db"), OwnerRef: &v1alpha1.LocalReference{Name: app.Name},
			// Closed to PUBLIC, as a tenant's is: a non-superuser admin
			// must still get in to make the schema and grants inside.
			RevokePublicPrivileges: true,
		}},
	}
	schema := &v1alpha1.PostgreSQLSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns},
		Spec: v1alpha1.PostgreSQLSchemaSpec{InstanceRef: in, ForProvider: v1alpha1.PostgreSQLSchemaParameters{
			DatabaseRef: &v1alpha1.LocalReference{Name: db.Name}, OwnerRef: &v1alpha1.LocalReference{Name: app.Name},
			RevokePublicPrivileges: true,
		}},
	}
	connectGrant := newGrant("tenant-ro-connect", v1alpha1.PostgreSQLGrantParameters{
		RoleSelector: &v1alpha1.RoleSelector{MatchLabels: map[string]string{"access": "read-only"}},
		ObjectType:   v1alpha1.GrantObjectDatabase, DatabaseRef: &v1alpha1.LocalReference{Name: db.Name}, Privileges: privileges("CONNECT"),
	})
	usageGrant := newGrant("tenant-ro-usage", v1alpha1.PostgreSQLGrantParameters{
		RoleRef: &v1alpha1.LocalReference{Name: ro.Name}, ObjectType: v1alpha1.GrantObjectSchema,
		DatabaseRef: &v1alpha1.LocalReference{Name: db.Name}, SchemaRef: &v1alpha1.LocalReference{Name: schema.Name}, Privileges: privileges("USAGE"),
	})
	defaults := newDefaults("tenant-ro-select", v1alpha1.PostgreSQLDefaultPrivilegesParameters{
		RoleRef: &v1alpha1.LocalReference{Name: ro.Name}, OwnerRef: &v1alpha1.LocalReference{Name: app.Name},
		DatabaseRef: &v1alpha1.LocalReference{Name: db.Name}, SchemaRef: &v1alpha1.LocalReference{Name: schema.Name},
		ObjectType: v1alpha1.DefaultPrivilegesTables, Privileges: privileges("SELECT"),
	})
	// In reverse order: everything waits for what it refers to.
	env.Create(ctx, t, defaults, usageGrant, connectGrant, schema, db, ro, app)
	for _, o := range []providertest.Conditioned{app, ro, db, schema, connectGrant, usageGrant, defaults} {
		env.Ready(ctx, t, o, corev1.ConditionTrue, xpv2.ReasonAvailable)
	}
	if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(connectGrant), connectGrant); err != nil {
		t.Fatal(err)
	}
	if r := connectGrant.Spec.ForProvider.RoleRef; r == nil || r.Name != ro.Name {
		t.Errorf("the role selector was not recorded in roleRef: %+v", r)
	}

	t.Run("NoStatementsWhenUpToDate", func(t *testing.T) {
		if err := env.Postgres.SetLogStatement(ctx, "all"); err != nil {
			t.Fatal(err)
		}
		defer env.Postgres.SetLogStatement(ctx, "none") //nolint:errcheck // Best effort.
		before := env.ServerLogLen(t)
		time.Sleep(7 * time.Second) // About three polls of seven resources.
		log := env.ServerLog(t, before)
		if n := strings.Count(log, "pg_default_acl"); n < 2 {
			t.Fatalf("only %d observations of the default privileges in 7s; the poll is not running", n)
		}
		for _, ddl := range []string{"GRANT ", "REVOKE ", "ALTER ", "CREATE ", "COMMENT ON", "DROP "} {
			if strings.Contains(log, ddl) {
				t.Errorf("up-to-date resources issued %s:\n%s", ddl, log)
			}
		}
	})

	appSecret, err := env.ConnectionSecret(ctx, ns, "tenant-app-conn")
	if err != nil {
		t.Fatal(err)
	}
	roSecret, err := env.ConnectionSecret(ctx, ns, "tenant-ro-conn")
	if err != nil {
		t.Fatal(err)
	}
	asApp, err := providertest.ConnectWithSecret(ctx, appSecret, "tenant_db")
	if err != nil {
		t.Fatalf("the app role cannot log in with its Secret: %v", err)
	}
	defer asApp.Close(ctx) //nolint:errcheck // Test.
	if _, err := asApp.Exec(ctx, "CREATE TABLE data.items (id int); INSERT INTO data.items VALUES (1)"); err != nil {
		t.Fatalf("the app role, owner of the database and schema, cannot create and fill a table: %v", err)
	}
	asRO, err := providertest.ConnectWithSecret(ctx, roSecret, "tenant_db")
	if err != nil {
		t.Fatalf("the read-only role cannot log in to the database with its Secret: %v", err)
	}
	defer asRO.Close(ctx) //nolint:errcheck // Test.
	var n int
	if err := asRO.QueryRow(ctx, "SELECT count(*) FROM data.items").Scan(&n); err != nil || n != 1 {
		t.Errorf("the read-only role cannot read a table the app created later: count %d, err %v", n, err)
	}
	_, err = asRO.Exec(ctx, "INSERT INTO data.items VALUES (2)")
	if !postgres.IsCode(err, postgres.CodeInsufficientPrivilege) {
		t.Errorf("the read-only role could write, or failed otherwise: %v", err)
	}
	if _, err := asRO.Exec(ctx, "CREATE TABLE data.mine (id int)"); !postgres.IsCode(err, postgres.CodeInsufficientPrivilege) {
		t.Errorf("the read-only role could create a table in the schema, or failed otherwise: %v", err)
	}
	// A non-superuser admin acted as the app role to grant on what it owns
	// and gave that back: it holds no tenant's privileges afterwards.
	if n := env.ActingMemberships(ctx, t, env.AdminUser(), "tenant_app", "tenant_ro"); n != 0 {
		t.Errorf("the admin kept %d membership(s) of the tenant's roles", n)
	}
}
