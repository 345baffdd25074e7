package defaultprivileges_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

const ns = "shop"

var (
	env  *providertest.Env
	main *v1alpha1.PostgreSQLInstance
)

// suite is the package's environment, started by the first test that
// declares it needs it.
var suite = providertest.Suite(providertest.Options{
	PollInterval: 2 * time.Second, Instance: "main", Namespaces: []string{ns},
	// The schema and roles these tests make by hand, as a DBA would,
	// are shared with the namespace by the Instance's policy.
	Policy: v1alpha1.InstancePolicy{AllowDatabases: []string{"postgres"}, AllowMembershipOf: []string{"o458", "o458p", "o458d"}},
}, func(e *providertest.Env) {
	env, main = e, e.Main
})

func TestMain(m *testing.M) { os.Exit(suite.Run(m)) }

func newDefaults(name string, p v1alpha1.PostgreSQLDefaultPrivilegesParameters) *v1alpha1.PostgreSQLDefaultPrivileges {
	return &v1alpha1.PostgreSQLDefaultPrivileges{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       v1alpha1.PostgreSQLDefaultPrivilegesSpec{InstanceRef: v1alpha1.InstanceReference{Name: main.Name}, ForProvider: p},
	}
}

func privileges(ps ...v1alpha1.Privilege) []v1alpha1.Privilege { return ps }

func sql(ctx context.Context, t *testing.T, stmts string) { env.SQL(ctx, t, "postgres", stmts) }

// TestDefaultPrivilegesRegression458 is provider-sql #458: default
// privileges must not be reported Ready without being applied, even when
// entries for the same roles exist for another schema or object type.
func TestDefaultPrivilegesRegression458(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	// The roles are the Instance admin's (as on a managed service, where
	// a CREATEROLE admin may act only as roles it administers); the
	// schemas and existing entries are a superuser's.
	env.AdminSQL(ctx, t, "postgres", "CREATE ROLE o458; CREATE ROLE g458")
	sql(ctx, t, `CREATE SCHEMA s458 AUTHORIZATION o458; CREATE SCHEMA s458b;
		ALTER DEFAULT PRIVILEGES FOR ROLE o458 IN SCHEMA s458b GRANT SELECT, INSERT ON TABLES TO g458;
		ALTER DEFAULT PRIVILEGES FOR ROLE o458 IN SCHEMA s458 GRANT SELECT ON SEQUENCES TO g458`)
	d := newDefaults("d458", v1alpha1.PostgreSQLDefaultPrivilegesParameters{
		Role: ptr.To("g458"), Owner: ptr.To("o458"), Database: ptr.To("postgres"), Schema: ptr.To("s458"),
		ObjectType: v1alpha1.DefaultPrivilegesTables, Privileges: privileges("SELECT", "INSERT"),
	})
	env.Create(ctx, t, d)
	env.Ready(ctx, t, d, corev1.ConditionTrue, xpv2.ReasonAvailable)
	var acl []string
	read := func() {
		t.Helper()
		acl = nil
		err := env.Connect(ctx, t, "postgres").QueryRow(ctx, `SELECT coalesce(ARRAY(SELECT a.privilege_type FROM pg_default_acl d, aclexplode(d.defaclacl) a
			WHERE d.defaclrole = 'o458'::regrole AND d.defaclnamespace = 's458'::regnamespace AND d.defaclobjtype = 'r' AND a.grantee = 'g458'::regrole ORDER BY 1), '{}')`).Scan(&acl)
		if err != nil {
			t.Fatal(err)
		}
	}
	read()
	if diff := cmp.Diff([]string{"INSERT", "SELECT"}, acl); diff != "" {
		t.Fatalf("Ready, but pg_default_acl holds (-want +got):\n%s", diff)
	}
	sql(ctx, t, "SET ROLE o458; CREATE TABLE s458.later (id int); RESET ROLE")
	if !env.Holds(ctx, t, "has_table_privilege('g458', 's458.later', 'SELECT, INSERT')") {
		t.Error("a table created later by the owner did not get the default privileges")
	}

	providertest.Update(ctx, t, env, d, func(d *v1alpha1.PostgreSQLDefaultPrivileges) { d.Spec.ForProvider.Privileges = privileges("SELECT") })
	err := providertest.Wait(ctx, 30*time.Second, func(context.Context) (bool, error) {
		read()
		return cmp.Equal([]string{"SELECT"}, acl), nil
	})
	if err != nil {
		t.Fatalf("INSERT, removed from the spec, was not revoked from the default privileges (%v): %v", acl, err)
	}
	if err := env.Kube.Delete(ctx, d); err != nil {
		t.Fatal(err)
	}
	env.Gone(ctx, t, d)
	read()
	if len(acl) != 0 {
		t.Errorf("after deletion pg_default_acl still gives %v", acl)
	}
	if n := env.ActingMemberships(ctx, t, env.AdminUser(), "o458"); n != 0 {
		t.Errorf("the admin kept %d membership(s) of the owner it acted as", n)
	}
	var other int
	if err := env.Connect(ctx, t, "postgres").QueryRow(ctx, `SELECT count(*) FROM pg_default_acl WHERE defaclrole = 'o458'::regrole AND defaclnamespace = 's458b'::regnamespace`).Scan(&other); err != nil || other != 1 {
		t.Errorf("an entry the resource did not set was touched (count %d, err %v)", other, err)
	}
}
