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
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/controller/boundary"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

const ns = "shop"

var (
	env  *providertest.Env
	main *v1alpha1.PostgreSQLInstance
)

// suite is the package's environment, started by the first test that
// declares it needs it.
// Poll every 2s so that drift repair and steady state can be observed.
var suite = providertest.Suite(providertest.Options{
	PollInterval: 2 * time.Second, Instance: "main", Namespaces: []string{ns},
	// Databases and roles these tests make by hand, as a DBA would:
	// shared with the namespace by the Instance's policy.
	Policy: v1alpha1.InstancePolicy{AllowDatabases: []string{"postgres", "dpre", "ddrift"}, AllowMembershipOf: []string{"mgroup", "mgroup_p", "o458", "mshared", "mactas", "mshared_p"},
		// mgroup may be handed on (TestMembershipGrant's admin option);
		// mactas may be acted as; mshared is opened for its privileges only.
		AllowAdminOptionOf: []string{"mgroup"}, AllowSetRoleOf: []string{"mactas"},
		AllowTablespaces: []string{"ts_offered", "ts_plan"}},
}, func(e *providertest.Env) {
	env, main = e, e.Main
})

func TestMain(m *testing.M) { os.Exit(suite.Run(m)) }

// sql runs stmts as the Instance's admin: the DBA of a managed service has
// no other login, so what it makes belongs to that admin.
func sql(ctx context.Context, t *testing.T, stmts string) { env.AdminSQL(ctx, t, "postgres", stmts) }

func holds(ctx context.Context, t *testing.T, check string) bool { return env.Holds(ctx, t, check) }

func waitHolds(ctx context.Context, t *testing.T, check string, want bool) {
	t.Helper()
	err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		return holds(ctx, t, check) == want, nil
	})
	if err != nil {
		t.Fatalf("%s did not become %t: %v", check, want, err)
	}
}

// refused waits until g is PolicyRefused and checks that the refusal says
// each of want (the field, the rule, how the platform allows it).
func refused(ctx context.Context, t *testing.T, g *v1alpha1.PostgreSQLGrant, want ...string) {
	t.Helper()
	env.Ready(ctx, t, g, corev1.ConditionFalse, v1alpha1.ReasonPolicyRefused)
	msg := g.GetCondition(xpv2.TypeReady).Message
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("the refusal %q does not say %q", msg, w)
		}
	}
}

func update[T client.Object](ctx context.Context, t *testing.T, obj T, mutate func(T)) {
	providertest.Update(ctx, t, env, obj, mutate)
}

func newGrant(name string, p v1alpha1.PostgreSQLGrantParameters) *v1alpha1.PostgreSQLGrant {
	return &v1alpha1.PostgreSQLGrant{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       v1alpha1.PostgreSQLGrantSpec{InstanceRef: v1alpha1.InstanceReference{Name: main.Name}, ForProvider: p},
	}
}

func privileges(ps ...v1alpha1.Privilege) []v1alpha1.Privilege { return ps }

// TestGrantRegression465 is provider-sql #465: shrinking a grant must
// revoke the privileges removed from it.
func TestGrantRegression465(t *testing.T) {
	suite.Matrix(t)
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
	// The revoke is on the server before the status that records it is
	// written, and Ready was True all along: wait for the record itself.
	_ = providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		err := env.Kube.Get(ctx, client.ObjectKeyFromObject(g), g)
		return err == nil && cmp.Equal([]string{"SELECT"}, g.Status.AtProvider.AppliedPrivileges), err
	})
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
	suite.Matrix(t)
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
	before := env.ServerLogLen(t)
	time.Sleep(7 * time.Second) // About three polls.
	log := env.ServerLog(t, before)
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
	suite.Matrix(t)
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
	suite.Matrix(t)
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
	suite.Server(t)
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
	suite.Matrix(t)
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
		env.Ready(ctx, t, g, corev1.ConditionFalse, v1alpha1.ReasonNotHeld)
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

// TestMaintainNeeds17: MAINTAIN (VACUUM, ANALYZE, REINDEX and the like)
// is granted on PostgreSQL 17 and newer, and refused with a condition,
// nothing sent, on older servers.
func TestMaintainNeeds17(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	sql(ctx, t, "CREATE ROLE rmaint; CREATE SCHEMA smaint; CREATE TABLE smaint.t (id int)")
	g := newGrant("maintain", v1alpha1.PostgreSQLGrantParameters{
		Role: ptr.To("rmaint"), ObjectType: v1alpha1.GrantObjectTable, Database: ptr.To("postgres"), Schema: ptr.To("smaint"),
		Objects: []string{"t"}, Privileges: privileges("SELECT", "MAINTAIN"),
	})
	env.Create(ctx, t, g)
	if serverVersion(ctx, t) >= 170000 {
		env.Ready(ctx, t, g, corev1.ConditionTrue, xpv2.ReasonAvailable)
		if !holds(ctx, t, "has_table_privilege('rmaint', 'smaint.t', 'SELECT, MAINTAIN')") {
			t.Error("MAINTAIN not held on PostgreSQL 17+")
		}
		return
	}
	env.Ready(ctx, t, g, corev1.ConditionFalse, v1alpha1.ReasonUnsupported)
	if msg := g.GetCondition(xpv2.TypeReady).Message; !strings.Contains(msg, "MAINTAIN needs PostgreSQL 17 or newer") {
		t.Errorf("message %q does not say MAINTAIN needs 17", msg)
	}
	if holds(ctx, t, "has_table_privilege('rmaint', 'smaint.t', 'SELECT')") {
		t.Error("part of a refused grant was sent")
	}
}

// serverVersion is the test server's server_version_num.
func serverVersion(ctx context.Context, t *testing.T) int {
	t.Helper()
	var v int
	if err := env.Connect(ctx, t, "postgres").QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestMembershipGrant(t *testing.T) {
	suite.Matrix(t)
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
		sql(ctx, t, "CREATE ROLE mnoset")
		v := newGrant("membership-set", v1alpha1.PostgreSQLGrantParameters{
			Role: ptr.To("mnoset"), ObjectType: v1alpha1.GrantObjectMembership, MemberOf: ptr.To("mgroup"), Set: ptr.To(false),
		})
		env.Create(ctx, t, v)
		if serverVersion(ctx, t) >= 160000 {
			// The option is applied: a member that may not SET ROLE.
			env.Ready(ctx, t, v, corev1.ConditionTrue, xpv2.ReasonAvailable)
			if !holds(ctx, t, "pg_has_role('mnoset', 'mgroup', 'MEMBER')") || holds(ctx, t, "pg_has_role('mnoset', 'mgroup', 'SET')") {
				t.Error("the membership is not held WITH SET FALSE")
			}
			if err := env.Kube.Delete(ctx, v); err != nil {
				t.Fatal(err)
			}
			env.Gone(ctx, t, v)
			if holds(ctx, t, "pg_has_role('mnoset', 'mgroup', 'MEMBER')") {
				t.Error("the membership survived its grant's deletion")
			}
			return
		}
		// PostgreSQL 15: the 16+ options are refused with a condition, not
		// sent as SQL that cannot parse.
		env.Ready(ctx, t, v, corev1.ConditionFalse, v1alpha1.ReasonUnsupported)
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

// TestMembershipOptionsOfASharedRole: a role the policy opens to every
// namespace (allowMembershipOf) gives its new members its privileges, not
// its name to act under nor the right to hand it on, unless the policy
// says so too; a membership that exists keeps its options. PostgreSQL 15
// cannot withhold SET: there a member may always SET ROLE.
func TestMembershipOptionsOfASharedRole(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	sql(ctx, t, "CREATE ROLE mshared; CREATE ROLE mactas; CREATE ROLE mo_plain; CREATE ROLE mo_set; CREATE ROLE mo_admin; CREATE ROLE mo_actas; CREATE ROLE mo_before; GRANT mshared TO mo_before")
	v16 := serverVersion(ctx, t) >= 160000
	plain := newGrant("mo-plain", v1alpha1.PostgreSQLGrantParameters{Role: ptr.To("mo_plain"), ObjectType: v1alpha1.GrantObjectMembership, MemberOf: ptr.To("mshared")})
	set := newGrant("mo-set", v1alpha1.PostgreSQLGrantParameters{Role: ptr.To("mo_set"), ObjectType: v1alpha1.GrantObjectMembership, MemberOf: ptr.To("mshared"), Set: ptr.To(true)})
	admin := newGrant("mo-admin", v1alpha1.PostgreSQLGrantParameters{Role: ptr.To("mo_admin"), ObjectType: v1alpha1.GrantObjectMembership, MemberOf: ptr.To("mshared"), WithAdminOption: ptr.To(true)})
	actas := newGrant("mo-actas", v1alpha1.PostgreSQLGrantParameters{Role: ptr.To("mo_actas"), ObjectType: v1alpha1.GrantObjectMembership, MemberOf: ptr.To("mactas"), Set: ptr.To(true)})
	before := newGrant("mo-before", v1alpha1.PostgreSQLGrantParameters{Role: ptr.To("mo_before"), ObjectType: v1alpha1.GrantObjectMembership, MemberOf: ptr.To("mshared")})
	env.Create(ctx, t, plain, set, admin, actas, before)

	env.Ready(ctx, t, plain, corev1.ConditionTrue, xpv2.ReasonAvailable)
	if !holds(ctx, t, "pg_has_role('mo_plain', 'mshared', 'USAGE')") {
		t.Error("the shared role's privileges are not held")
	}
	// On 15 a member may always SET ROLE; on 16+ the policy withholds it.
	// 15 knows no SET privilege: there MEMBER is what SET ROLE needs.
	setPriv := "MEMBER"
	if v16 {
		setPriv = "SET"
	}
	if got := holds(ctx, t, "pg_has_role('mo_plain', 'mshared', '"+setPriv+"')"); got != !v16 {
		t.Errorf("a plain membership of a shared role may SET ROLE: %t, want %t", got, !v16)
	}

	// Handing the shared role on is refused on every version, before
	// anything is sent.
	refused(ctx, t, admin, "spec.forProvider.withAdminOption", "rule "+boundary.RuleMembershipOption, "allowAdminOptionOf")
	if holds(ctx, t, "pg_has_role('mo_admin', 'mshared', 'MEMBER')") {
		t.Error("a refused membership was granted")
	}

	if v16 {
		// Acting as the shared role is refused; acting as a role the
		// policy allows it for is granted.
		refused(ctx, t, set, "spec.forProvider.set", "allowSetRoleOf")
		if holds(ctx, t, "pg_has_role('mo_set', 'mshared', 'MEMBER')") {
			t.Error("a refused membership was granted")
		}
		env.Ready(ctx, t, actas, corev1.ConditionTrue, xpv2.ReasonAvailable)
		if !holds(ctx, t, "pg_has_role('mo_actas', 'mactas', 'SET')") {
			t.Error("SET on a role allowSetRoleOf lists is not held")
		}
		// A membership granted before the grant keeps its options: an
		// adopted server's plans stay empty.
		env.Ready(ctx, t, before, corev1.ConditionTrue, xpv2.ReasonAvailable)
		if !holds(ctx, t, "pg_has_role('mo_before', 'mshared', 'SET')") {
			t.Error("the membership granted before lost its SET option")
		}
		if p := before.Status.AtProvider.Plan; p != nil {
			t.Errorf("a membership that exists plans statements: %+v", p)
		}
	} else {
		// 15 has no SET option to ask for.
		env.Ready(ctx, t, set, corev1.ConditionFalse, v1alpha1.ReasonUnsupported)
		env.Ready(ctx, t, actas, corev1.ConditionFalse, v1alpha1.ReasonUnsupported)
		env.Ready(ctx, t, before, corev1.ConditionTrue, xpv2.ReasonAvailable)
	}

	for _, g := range []*v1alpha1.PostgreSQLGrant{plain, set, admin, actas, before} {
		if err := env.Kube.Delete(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range []*v1alpha1.PostgreSQLGrant{plain, set, admin, actas, before} {
		env.Gone(ctx, t, g)
	}
	if holds(ctx, t, "pg_has_role('mo_plain', 'mshared', 'MEMBER')") || !holds(ctx, t, "pg_has_role('mo_before', 'mshared', 'MEMBER')") {
		t.Error("deleting the grants did not revoke what they granted, or revoked what was there before")
	}
}

// TestTablespaceGrant: CREATE on a tablespace the Instance offers is
// granted, repaired and revoked like any privilege; on one it does not
// offer, nothing is read or granted.
func TestTablespaceGrant(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	for _, ts := range []string{"ts_offered", "ts_other"} {
		dir, err := env.Postgres.TablespaceDir(ts)
		if err != nil {
			t.Fatal(err)
		}
		// CREATE TABLESPACE takes a superuser; a platform gives the
		// admin the tablespaces it offers, as the owner here.
		env.SQL(ctx, t, "postgres", fmt.Sprintf("CREATE TABLESPACE %s OWNER %s LOCATION '%s'", ts, postgres.QuoteIdentifier(env.AdminUser()), dir))
	}
	sql(ctx, t, "CREATE ROLE tsrole LOGIN")
	offered := newGrant("ts-offered", v1alpha1.PostgreSQLGrantParameters{
		Role: ptr.To("tsrole"), ObjectType: v1alpha1.GrantObjectTablespace, Tablespace: ptr.To("ts_offered"), Privileges: privileges("ALL"),
	})
	other := newGrant("ts-other", v1alpha1.PostgreSQLGrantParameters{
		Role: ptr.To("tsrole"), ObjectType: v1alpha1.GrantObjectTablespace, Tablespace: ptr.To("ts_other"), Privileges: privileges("CREATE"),
	})
	env.Create(ctx, t, offered, other)
	env.Ready(ctx, t, offered, corev1.ConditionTrue, xpv2.ReasonAvailable)
	const held = "has_tablespace_privilege('tsrole', 'ts_offered', 'CREATE')"
	if !holds(ctx, t, held) {
		t.Fatal("CREATE on the offered tablespace is not held")
	}
	if diff := cmp.Diff([]string{"CREATE"}, offered.Status.AtProvider.Privileges); diff != "" {
		t.Errorf("ALL on a tablespace (-want +got):\n%s", diff)
	}

	refused(ctx, t, other, "spec.forProvider.tablespace", "rule "+boundary.RuleTablespace, "allowTablespaces")
	if holds(ctx, t, "has_tablespace_privilege('tsrole', 'ts_other', 'CREATE')") {
		t.Error("CREATE on a tablespace the Instance does not offer was granted")
	}
	if other.Status.AtProvider.Privileges != nil {
		t.Errorf("what the grantee holds on a tablespace not offered was read: %v", other.Status.AtProvider.Privileges)
	}

	t.Run("DriftRepaired", func(t *testing.T) {
		sql(ctx, t, "REVOKE CREATE ON TABLESPACE ts_offered FROM tsrole")
		waitHolds(ctx, t, held, true)
	})

	for _, g := range []*v1alpha1.PostgreSQLGrant{offered, other} {
		if err := env.Kube.Delete(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	env.Gone(ctx, t, offered)
	env.Gone(ctx, t, other)
	if holds(ctx, t, held) {
		t.Error("CREATE on the tablespace survived its grant's deletion")
	}
	// One at a time: DROP TABLESPACE runs outside a transaction.
	env.SQL(ctx, t, "postgres", "DROP TABLESPACE ts_offered")
	env.SQL(ctx, t, "postgres", "DROP TABLESPACE ts_other")
}

func newDefaults(name string, p v1alpha1.PostgreSQLDefaultPrivilegesParameters) *v1alpha1.PostgreSQLDefaultPrivileges {
	return &v1alpha1.PostgreSQLDefaultPrivileges{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       v1alpha1.PostgreSQLDefaultPrivilegesSpec{InstanceRef: v1alpha1.InstanceReference{Name: main.Name}, ForProvider: p},
	}
}
