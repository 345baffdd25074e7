package grant_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/grant"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

const ns = "shop"

var (
	env  *providertest.Env
	main *v1alpha1.PostgreSQLInstance
)

func TestMain(m *testing.M) {
	// Poll every 2s so that drift repair and steady state can be observed.
	os.Exit(providertest.Run(m, providertest.Options{
		PollInterval: 2 * time.Second, Instance: "main", Namespaces: []string{ns},
		// Databases and roles these tests make by hand, as a DBA would:
		// shared with the namespace by the Instance's policy.
		Policy: v1alpha1.InstancePolicy{AllowDatabases: []string{"postgres", "dpre"}, AllowMembershipOf: []string{"mgroup", "o458"}},
	}, func(e *providertest.Env) {
		env, main = e, e.Main
	}))
}

func sql(ctx context.Context, t *testing.T, stmts string) {
	t.Helper()
	if _, err := env.Connect(ctx, t, "postgres").Exec(ctx, stmts); err != nil {
		t.Fatal(err)
	}
}

// holds evaluates a boolean privilege check such as
// has_table_privilege('ro', 'app.t', 'SELECT').
func holds(ctx context.Context, t *testing.T, check string) bool {
	t.Helper()
	var ok bool
	if err := env.Connect(ctx, t, "postgres").QueryRow(ctx, "SELECT "+check).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

func waitHolds(ctx context.Context, t *testing.T, check string, want bool) {
	t.Helper()
	err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		return holds(ctx, t, check) == want, nil
	})
	if err != nil {
		t.Fatalf("%s did not become %t: %v", check, want, err)
	}
}

// update changes obj as a user would: read, change, write, again when the
// controller wrote in between (its status updates change the
// resourceVersion too).
func update[T client.Object](ctx context.Context, t *testing.T, obj T, mutate func(T)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate(obj)
		return env.Kube.Update(ctx, obj)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func newGrant(name string, p v1alpha1.PostgreSQLGrantParameters) *v1alpha1.PostgreSQLGrant {
	return &v1alpha1.PostgreSQLGrant{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       v1alpha1.PostgreSQLGrantSpec{InstanceRef: v1alpha1.InstanceReference{Name: main.Name}, ForProvider: p},
	}
}

func privileges(ps ...v1alpha1.Privilege) []v1alpha1.Privilege { return ps }

// serverLog returns what the server logged after offset.
func serverLog(t *testing.T, offset int) string {
	t.Helper()
	log, err := env.Postgres.Log()
	if err != nil {
		t.Fatal(err)
	}
	return string(log[offset:])
}

func logLen(t *testing.T) int {
	t.Helper()
	log, err := env.Postgres.Log()
	if err != nil {
		t.Fatal(err)
	}
	return len(log)
}

// TestGrantRegression465 is provider-sql #465: shrinking a grant must
// revoke the privileges removed from it.
func TestGrantRegression465(t *testing.T) {
	ctx := context.Background()
	sql(ctx, t, "CREATE ROLE r465; CREATE SCHEMA s465; CREATE TABLE s465.orders (id int)")
	g := newGrant("r465", v1alpha1.PostgreSQLGrantParameters{
		Role: ptr.To("r465"), ObjectType: v1alpha1.GrantObjectTable, Database: ptr.To("postgres"), Schema: ptr.To("s465"),
		Objects: []string{"orders"}, Privileges: privileges("SELECT", "INSERT", "UPDATE"),
	})
	env.Create(ctx, t, g)
	env.Ready(ctx, t, g, corev1.ConditionTrue, xpv2.ReasonAvailable)
	if !holds(ctx, t, "has_table_privilege('r465', 's465.orders', 'SELECT, INSERT, UPDATE')") {
		t.Fatal("the grant is Ready but the privileges are not held")
	}
	update(ctx, t, g, func(g *v1alpha1.PostgreSQLGrant) { g.Spec.ForProvider.Privileges = privileges("SELECT") })
	waitHolds(ctx, t, "has_table_privilege('r465', 's465.orders', 'INSERT')", false)
	if holds(ctx, t, "has_table_privilege('r465', 's465.orders', 'UPDATE')") {
		t.Error("UPDATE, removed from the grant, is still held")
	}
	if !holds(ctx, t, "has_table_privilege('r465', 's465.orders', 'SELECT')") {
		t.Error("SELECT, still listed, was revoked")
	}
	env.Ready(ctx, t, g, corev1.ConditionTrue, xpv2.ReasonAvailable)
	if diff := cmp.Diff([]string{"SELECT"}, g.Status.AtProvider.AppliedPrivileges); diff != "" {
		t.Errorf("status.atProvider.appliedPrivileges (-want +got):\n%s", diff)
	}
	// Each change on the server is an event on the grant, and none
	// failed.
	err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		events := &corev1.EventList{}
		if err := env.Kube.List(ctx, events, client.InNamespace(ns)); err != nil {
			return false, err
		}
		seen := map[string]bool{}
		for _, e := range events.Items {
			if e.InvolvedObject.UID != g.UID {
				continue
			}
			seen[e.Reason] = true
			if e.Type == corev1.EventTypeWarning {
				return false, fmt.Errorf("warning event %s: %s", e.Reason, e.Message)
			}
		}
		return seen["CreatedExternalResource"] && seen["UpdatedExternalResource"], nil
	})
	if err != nil {
		t.Errorf("no create and update events on the grant: %v", err)
	}
}

// TestGrantRegression240 is provider-sql #240: a grant is Ready when the
// role holds what it lists, even when the role holds more; and nothing is
// granted or revoked over and over.
func TestGrantRegression240(t *testing.T) {
	ctx := context.Background()
	sql(ctx, t, "CREATE ROLE r240; CREATE SCHEMA s240; CREATE TABLE s240.orders (id int); GRANT DELETE, TRUNCATE ON s240.orders TO r240")
	g := newGrant("r240", v1alpha1.PostgreSQLGrantParameters{
		Role: ptr.To("r240"), ObjectType: v1alpha1.GrantObjectTable, Database: ptr.To("postgres"), Schema: ptr.To("s240"),
		Objects: []string{"orders"}, Privileges: privileges("SELECT"),
	})
	if err := env.Postgres.SetLogStatement(ctx, "all"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Postgres.SetLogStatement(ctx, "none") })
	env.Create(ctx, t, g)
	env.Ready(ctx, t, g, corev1.ConditionTrue, xpv2.ReasonAvailable)
	before := logLen(t)
	time.Sleep(7 * time.Second) // About three polls.
	log := serverLog(t, before)
	if n := strings.Count(log, "aclexplode"); n < 2 {
		t.Fatalf("only %d observations in 7s; the poll is not running", n)
	}
	for _, s := range []string{"GRANT ", "REVOKE "} {
		if strings.Contains(log, s) {
			t.Errorf("an up-to-date grant issued %s:\n%s", s, log)
		}
	}
	if !holds(ctx, t, "has_table_privilege('r240', 's240.orders', 'DELETE, TRUNCATE')") {
		t.Error("privileges the grant does not list were revoked")
	}

	t.Run("DeleteRevokesOnlyWhatItGranted", func(t *testing.T) {
		if err := env.Kube.Delete(ctx, g); err != nil {
			t.Fatal(err)
		}
		env.Gone(ctx, t, g)
		if holds(ctx, t, "has_table_privilege('r240', 's240.orders', 'SELECT')") {
			t.Error("SELECT, granted by the grant, survived its deletion")
		}
		if !holds(ctx, t, "has_table_privilege('r240', 's240.orders', 'DELETE')") {
			t.Error("deleting the grant revoked a privilege it never granted")
		}
	})
}

func TestGrantKeepsPrivilegesHeldBefore(t *testing.T) {
	ctx := context.Background()
	sql(ctx, t, "CREATE DATABASE dpre")
	sql(ctx, t, "CREATE ROLE rpre; REVOKE ALL ON DATABASE dpre FROM PUBLIC; GRANT CONNECT ON DATABASE dpre TO rpre")
	g := newGrant("pre", v1alpha1.PostgreSQLGrantParameters{
		Role: ptr.To("rpre"), ObjectType: v1alpha1.GrantObjectDatabase, Database: ptr.To("dpre"), Privileges: privileges("CONNECT", "TEMPORARY"),
	})
	env.Create(ctx, t, g)
	env.Ready(ctx, t, g, corev1.ConditionTrue, xpv2.ReasonAvailable)
	if diff := cmp.Diff([]string{"TEMPORARY"}, g.Status.AtProvider.AppliedPrivileges); diff != "" {
		t.Errorf("status.atProvider.appliedPrivileges (-want +got):\n%s", diff)
	}
	if err := env.Kube.Delete(ctx, g); err != nil {
		t.Fatal(err)
	}
	env.Gone(ctx, t, g)
	if holds(ctx, t, "has_database_privilege('rpre', 'dpre', 'TEMPORARY')") {
		t.Error("TEMPORARY survived the grant's deletion")
	}
	if !holds(ctx, t, "has_database_privilege('rpre', 'dpre', 'CONNECT')") {
		t.Error("CONNECT, held before the grant existed, was revoked with it")
	}
}

func TestGrantAllTablesInSchemaCoversLaterTables(t *testing.T) {
	ctx := context.Background()
	sql(ctx, t, "CREATE ROLE rall; CREATE SCHEMA sall; CREATE TABLE sall.a (id int); CREATE VIEW sall.v AS SELECT 1 AS x")
	g := newGrant("all", v1alpha1.PostgreSQLGrantParameters{
		Role: ptr.To("rall"), ObjectType: v1alpha1.GrantObjectTable, Database: ptr.To("postgres"), Schema: ptr.To("sall"),
		AllInSchema: ptr.To(true), Privileges: privileges("SELECT"), WithGrantOption: ptr.To(true),
	})
	env.Create(ctx, t, g)
	env.Ready(ctx, t, g, corev1.ConditionTrue, xpv2.ReasonAvailable)
	for _, rel := range []string{"sall.a", "sall.v"} {
		if !holds(ctx, t, fmt.Sprintf("has_table_privilege('rall', '%s', 'SELECT WITH GRANT OPTION')", rel)) {
			t.Errorf("%s: SELECT WITH GRANT OPTION not held", rel)
		}
	}
	sql(ctx, t, "CREATE TABLE sall.later (id int)")
	waitHolds(ctx, t, "has_table_privilege('rall', 'sall.later', 'SELECT')", true)

	update(ctx, t, g, func(g *v1alpha1.PostgreSQLGrant) { g.Spec.ForProvider.WithGrantOption = ptr.To(false) })
	waitHolds(ctx, t, "has_table_privilege('rall', 'sall.a', 'SELECT WITH GRANT OPTION')", false)
	if !holds(ctx, t, "has_table_privilege('rall', 'sall.a', 'SELECT')") {
		t.Error("turning off withGrantOption revoked the privilege itself")
	}
	if err := env.Kube.Delete(ctx, g); err != nil {
		t.Fatal(err)
	}
	env.Gone(ctx, t, g)
	for _, rel := range []string{"sall.a", "sall.v", "sall.later"} {
		if holds(ctx, t, fmt.Sprintf("has_table_privilege('rall', '%s', 'SELECT')", rel)) {
			t.Errorf("%s: SELECT survived the grant's deletion", rel)
		}
	}
}

func TestGrantAllTablesInAnEmptySchemaIsReady(t *testing.T) {
	ctx := context.Background()
	sql(ctx, t, "CREATE ROLE rempty; CREATE SCHEMA sempty")
	g := newGrant("empty", v1alpha1.PostgreSQLGrantParameters{
		Role: ptr.To("rempty"), ObjectType: v1alpha1.GrantObjectTable, Database: ptr.To("postgres"), Schema: ptr.To("sempty"),
		AllInSchema: ptr.To(true), Privileges: privileges("SELECT"),
	})
	env.Create(ctx, t, g)
	env.Ready(ctx, t, g, corev1.ConditionTrue, xpv2.ReasonAvailable)
	sql(ctx, t, "CREATE TABLE sempty.first (id int)")
	waitHolds(ctx, t, "has_table_privilege('rempty', 'sempty.first', 'SELECT')", true)
}

func TestGrantNamedObjects(t *testing.T) {
	ctx := context.Background()
	sql(ctx, t, `CREATE ROLE rnamed; CREATE SCHEMA snamed; CREATE TABLE snamed.a (id int); CREATE TABLE snamed.b (id int);
		CREATE FUNCTION snamed.add(x integer, y text) RETURNS int LANGUAGE sql AS 'SELECT 1';
		CREATE FUNCTION snamed.add(x integer) RETURNS int LANGUAGE sql AS 'SELECT 2';
		REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA snamed FROM PUBLIC`)

	t.Run("FunctionBySignature", func(t *testing.T) {
		g := newGrant("fn", v1alpha1.PostgreSQLGrantParameters{
			Role: ptr.To("rnamed"), ObjectType: v1alpha1.GrantObjectFunction, Database: ptr.To("postgres"), Schema: ptr.To("snamed"),
			Objects: []string{"add(integer, text)"}, Privileges: privileges("EXECUTE"),
		})
		env.Create(ctx, t, g)
		env.Ready(ctx, t, g, corev1.ConditionTrue, xpv2.ReasonAvailable)
		if !holds(ctx, t, "has_function_privilege('rnamed', 'snamed.add(integer, text)', 'EXECUTE')") {
			t.Error("EXECUTE not held on the named overload")
		}
		if holds(ctx, t, "has_function_privilege('rnamed', 'snamed.add(integer)', 'EXECUTE')") {
			t.Error("EXECUTE granted on another overload")
		}
	})

	t.Run("WaitsForAMissingTableThenRevokesAnUnlistedOne", func(t *testing.T) {
		g := newGrant("named", v1alpha1.PostgreSQLGrantParameters{
			Role: ptr.To("rnamed"), ObjectType: v1alpha1.GrantObjectTable, Database: ptr.To("postgres"), Schema: ptr.To("snamed"),
			Objects: []string{"a", "b", "c"}, Privileges: privileges("SELECT"),
		})
		env.Create(ctx, t, g)
		env.Ready(ctx, t, g, corev1.ConditionFalse, grant.ReasonNotHeld)
		if msg := g.GetCondition(xpv2.TypeReady).Message; !strings.Contains(msg, "waiting for table c to exist") {
			t.Errorf("Ready message %q does not name the missing table", msg)
		}
		sql(ctx, t, "CREATE TABLE snamed.c (id int)")
		env.Ready(ctx, t, g, corev1.ConditionTrue, xpv2.ReasonAvailable)
		update(ctx, t, g, func(g *v1alpha1.PostgreSQLGrant) { g.Spec.ForProvider.Objects = []string{"a", "c"} })
		waitHolds(ctx, t, "has_table_privilege('rnamed', 'snamed.b', 'SELECT')", false)
		if !holds(ctx, t, "has_table_privilege('rnamed', 'snamed.a', 'SELECT') AND has_table_privilege('rnamed', 'snamed.c', 'SELECT')") {
			t.Error("SELECT lost on a table still listed")
		}
	})
}

func TestMembershipGrant(t *testing.T) {
	ctx := context.Background()
	sql(ctx, t, "CREATE ROLE mgroup; CREATE ROLE mmember; CREATE ROLE mold; GRANT mgroup TO mold")
	g := newGrant("membership", v1alpha1.PostgreSQLGrantParameters{
		Role: ptr.To("mmember"), ObjectType: v1alpha1.GrantObjectMembership, MemberOf: ptr.To("mgroup"), WithAdminOption: ptr.To(true),
	})
	old := newGrant("membership-old", v1alpha1.PostgreSQLGrantParameters{
		Role: ptr.To("mold"), ObjectType: v1alpha1.GrantObjectMembership, MemberOf: ptr.To("mgroup"),
	})
	env.Create(ctx, t, g, old)
	env.Ready(ctx, t, g, corev1.ConditionTrue, xpv2.ReasonAvailable)
	env.Ready(ctx, t, old, corev1.ConditionTrue, xpv2.ReasonAvailable)
	if !holds(ctx, t, "pg_has_role('mmember', 'mgroup', 'MEMBER WITH ADMIN OPTION')") {
		t.Fatal("membership with admin option not held")
	}
	update(ctx, t, g, func(g *v1alpha1.PostgreSQLGrant) { g.Spec.ForProvider.WithAdminOption = nil })
	waitHolds(ctx, t, "pg_has_role('mmember', 'mgroup', 'MEMBER WITH ADMIN OPTION')", false)
	if !holds(ctx, t, "pg_has_role('mmember', 'mgroup', 'MEMBER')") {
		t.Error("dropping the admin option ended the membership")
	}

	t.Run("InheritAndSetNeed16", func(t *testing.T) {
		// The test server is PostgreSQL 15: the 16+ options are refused
		// with a condition, not sent as SQL that cannot parse.
		v := newGrant("membership-set", v1alpha1.PostgreSQLGrantParameters{
			Role: ptr.To("mmember"), ObjectType: v1alpha1.GrantObjectMembership, MemberOf: ptr.To("mgroup"), Set: ptr.To(false),
		})
		env.Create(ctx, t, v)
		env.Ready(ctx, t, v, corev1.ConditionFalse, grant.ReasonUnsupported)
		if msg := v.GetCondition(xpv2.TypeReady).Message; !strings.Contains(msg, "need PostgreSQL 16 or newer") {
			t.Errorf("message %q", msg)
		}
		if err := env.Kube.Delete(ctx, v); err != nil {
			t.Fatal(err)
		}
		env.Gone(ctx, t, v)
	})

	if err := env.Kube.Delete(ctx, g); err != nil {
		t.Fatal(err)
	}
	if err := env.Kube.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	env.Gone(ctx, t, g)
	env.Gone(ctx, t, old)
	if holds(ctx, t, "pg_has_role('mmember', 'mgroup', 'MEMBER')") {
		t.Error("the membership survived its grant's deletion")
	}
	if !holds(ctx, t, "pg_has_role('mold', 'mgroup', 'MEMBER')") {
		t.Error("deleting a grant revoked a membership that existed before it")
	}
}

func newDefaults(name string, p v1alpha1.PostgreSQLDefaultPrivilegesParameters) *v1alpha1.PostgreSQLDefaultPrivileges {
	return &v1alpha1.PostgreSQLDefaultPrivileges{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       v1alpha1.PostgreSQLDefaultPrivilegesSpec{InstanceRef: v1alpha1.InstanceReference{Name: main.Name}, ForProvider: p},
	}
}

// TestDefaultPrivilegesRegression458 is provider-sql #458: default
// privileges must not be reported Ready without being applied, even when
// entries for the same roles exist for another schema or object type.
func TestDefaultPrivilegesRegression458(t *testing.T) {
	ctx := context.Background()
	sql(ctx, t, `CREATE ROLE o458; CREATE ROLE g458; CREATE SCHEMA s458 AUTHORIZATION o458; CREATE SCHEMA s458b;
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
	if !holds(ctx, t, "has_table_privilege('g458', 's458.later', 'SELECT, INSERT')") {
		t.Error("a table created later by the owner did not get the default privileges")
	}

	update(ctx, t, d, func(d *v1alpha1.PostgreSQLDefaultPrivileges) { d.Spec.ForProvider.Privileges = privileges("SELECT") })
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
	var other int
	if err := env.Connect(ctx, t, "postgres").QueryRow(ctx, `SELECT count(*) FROM pg_default_acl WHERE defaclrole = 'o458'::regrole AND defaclnamespace = 's458b'::regnamespace`).Scan(&other); err != nil || other != 1 {
		t.Errorf("an entry the resource did not set was touched (count %d, err %v)", other, err)
	}
}
