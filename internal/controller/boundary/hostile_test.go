package boundary_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/boundary"
	"github.com/ayatori/provider-postgresql/internal/fixture/changelogsink"
	"github.com/ayatori/provider-postgresql/internal/fixture/pgserver"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

const ns = "hostile"

// poll is the suite's poll interval.
const poll = 2 * time.Second

var env *providertest.Env

// suite is the package's environment, started by the first test that
// declares it needs it.
var suite = providertest.Suite(providertest.Options{
	PollInterval: poll, Instance: "main", Namespaces: []string{ns, "victims"}, ChangeLogSocket: changeLogSocket,
	Postgres: pgserver.Options{
		LogStatement: "all",
		// Servers asking for weak password methods (admin_test.go).
		HBA:         []string{"host all md5_admin 127.0.0.1/32 md5", "host all clear_admin 127.0.0.1/32 password"},
		ExtraConfig: []string{"log_connections = on"},
	},
}, func(e *providertest.Env) { env = e })

// changes are the change log entries the provider sends (--enable-changelogs),
// to changeLogSocket.
var (
	changes         *changelogsink.Sink
	changeLogSocket = changelogsink.Path("pgprov-boundary")
)

func TestMain(m *testing.M) {
	os.Exit(changelogsink.Around(changeLogSocket, func(s *changelogsink.Sink) { changes = s }, func() int { return suite.Run(m) }))
}

// A vector is one thing a hostile namespace asks, and what the boundary
// must answer.
type vector struct {
	name  string
	obj   func(instance, suffix string) client.Object
	field string
	rule  string
}

func role(instance, name string, mutate func(*v1alpha1.PostgreSQLRole)) *v1alpha1.PostgreSQLRole {
	r := providertest.Role(ns, instance, name)
	mutate(r)
	return r
}

func grant(instance, name string, p v1alpha1.PostgreSQLGrantParameters) *v1alpha1.PostgreSQLGrant {
	return &v1alpha1.PostgreSQLGrant{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: strings.ReplaceAll(name, "_", "-")},
		Spec:       v1alpha1.PostgreSQLGrantSpec{InstanceRef: v1alpha1.InstanceReference{Name: instance}, ForProvider: p},
	}
}

func database(instance, name string, p v1alpha1.PostgreSQLDatabaseParameters) *v1alpha1.PostgreSQLDatabase {
	p.Name = ptr.To(name)
	return &v1alpha1.PostgreSQLDatabase{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: strings.ReplaceAll(name, "_", "-")},
		Spec:       v1alpha1.PostgreSQLDatabaseSpec{InstanceRef: v1alpha1.InstanceReference{Name: instance}, ForProvider: p},
	}
}

func vectors(superuser string) []vector {
	return []vector{
		{name: "MemberOfPredefined", field: "spec.forProvider.memberOf[0]", rule: boundary.RulePredefinedRole,
			obj: func(in, s string) client.Object {
				return role(in, "h_exec"+s, func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.MemberOf = []string{"pg_execute_server_program"} })
			}},
		{name: "MemberOfSuperuser", field: "spec.forProvider.memberOf[0]", rule: boundary.RulePrivilegedRole,
			obj: func(in, s string) client.Object {
				return role(in, "h_super"+s, func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.MemberOf = []string{superuser} })
			}},
		{name: "CreateRole", field: "spec.forProvider.createRole", rule: boundary.RuleRoleAttribute,
			obj: func(in, s string) client.Object {
				return role(in, "h_cr"+s, func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.CreateRole = ptr.To(true) })
			}},
		{name: "Replication", field: "spec.forProvider.replication", rule: boundary.RuleRoleAttribute,
			obj: func(in, s string) client.Object {
				return role(in, "h_repl"+s, func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.Replication = ptr.To(true) })
			}},
		{name: "BypassRLS", field: "spec.forProvider.bypassRls", rule: boundary.RuleRoleAttribute,
			obj: func(in, s string) client.Object {
				return role(in, "h_rls"+s, func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.BypassRLS = ptr.To(true) })
			}},
		{name: "SuperuserSetting", field: "spec.forProvider.configurationParameters[0].name", rule: boundary.RuleSetting,
			obj: func(in, s string) client.Object {
				return role(in, "h_srr"+s, func(r *v1alpha1.PostgreSQLRole) {
					r.Spec.ForProvider.ConfigurationParameters = []v1alpha1.ConfigurationParameter{{Name: "session_replication_role", Value: "replica"}}
				})
			}},
		{name: "ReassignToSuperuser", field: "spec.reassignOwnedTo", rule: boundary.RulePrivilegedRole,
			obj: func(in, s string) client.Object {
				return role(in, "h_heir"+s, func(r *v1alpha1.PostgreSQLRole) {
					r.Spec.OwnedObjectsOnDelete, r.Spec.ReassignOwnedTo = v1alpha1.OwnedObjectsReassign, superuser
				})
			}},
		{name: "TemplateOfAnotherDatabase", field: "spec.forProvider.template", rule: boundary.RuleTemplate,
			obj: func(in, s string) client.Object {
				return database(in, "h_copy"+s, v1alpha1.PostgreSQLDatabaseParameters{Template: ptr.To("victim")})
			}},
		{name: "DatabaseOwnedByAnotherNamespacesRole", field: "spec.forProvider.owner", rule: boundary.RuleOtherNamespace,
			obj: func(in, s string) client.Object {
				return database(in, "h_gift"+s, v1alpha1.PostgreSQLDatabaseParameters{Owner: ptr.To("victim_owner")})
			}},
		{name: "GrantOfPredefinedRole", field: "spec.forProvider.memberOf", rule: boundary.RulePredefinedRole,
			obj: func(in, s string) client.Object {
				return grant(in, "h_files"+s, v1alpha1.PostgreSQLGrantParameters{Role: ptr.To("tenant_app"), ObjectType: v1alpha1.GrantObjectMembership, MemberOf: ptr.To("pg_read_server_files")})
			}},
		{name: "MemberOfAnotherNamespacesRole", field: "spec.forProvider.memberOf[0]", rule: boundary.RuleOtherNamespace,
			obj: func(in, s string) client.Object {
				return role(in, "h_thief"+s, func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.MemberOf = []string{"victim_owner"} })
			}},
		{name: "GrantOfAnotherNamespacesRole", field: "spec.forProvider.memberOf", rule: boundary.RuleOtherNamespace,
			obj: func(in, s string) client.Object {
				return grant(in, "h_steal"+s, v1alpha1.PostgreSQLGrantParameters{Role: ptr.To("tenant_app"), ObjectType: v1alpha1.GrantObjectMembership, MemberOf: ptr.To("victim_owner")})
			}},
		{name: "GrantInAnotherNamespacesDatabase", field: "spec.forProvider.database", rule: boundary.RuleOtherNamespace,
			obj: func(in, s string) client.Object {
				return grant(in, "h_connect"+s, v1alpha1.PostgreSQLGrantParameters{
					Role: ptr.To("tenant_app"), ObjectType: v1alpha1.GrantObjectDatabase, Database: ptr.To("victim_db"),
					Privileges: []v1alpha1.Privilege{"CONNECT", "CREATE"},
				})
			}},
		{name: "SchemaInAnotherNamespacesDatabase", field: "spec.forProvider.database", rule: boundary.RuleOtherNamespace,
			obj: func(in, s string) client.Object {
				return &v1alpha1.PostgreSQLSchema{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "h-schema" + strings.ReplaceAll(s, "_", "-")},
					Spec: v1alpha1.PostgreSQLSchemaSpec{
						InstanceRef: v1alpha1.InstanceReference{Name: in},
						ForProvider: v1alpha1.PostgreSQLSchemaParameters{Name: ptr.To("h_schema" + s), Database: ptr.To("victim_db")},
					},
				}
			}},
		{name: "SchemaOwnedByAnotherNamespacesRole", field: "spec.forProvider.owner", rule: boundary.RuleOtherNamespace,
			obj: func(in, s string) client.Object {
				return &v1alpha1.PostgreSQLSchema{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "h-gift-schema" + strings.ReplaceAll(s, "_", "-")},
					Spec: v1alpha1.PostgreSQLSchemaSpec{
						InstanceRef: v1alpha1.InstanceReference{Name: in},
						ForProvider: v1alpha1.PostgreSQLSchemaParameters{
							Name: ptr.To("h_gift_schema" + s), Database: ptr.To("tenant_db"), Owner: ptr.To("victim_owner"),
						},
					},
				}
			}},
		{name: "DefaultPrivilegesInAnotherNamespacesDatabase", field: "spec.forProvider.database", rule: boundary.RuleOtherNamespace,
			obj: func(in, s string) client.Object {
				return &v1alpha1.PostgreSQLDefaultPrivileges{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "h-defaults" + strings.ReplaceAll(s, "_", "-")},
					Spec: v1alpha1.PostgreSQLDefaultPrivilegesSpec{
						InstanceRef: v1alpha1.InstanceReference{Name: in},
						ForProvider: v1alpha1.PostgreSQLDefaultPrivilegesParameters{
							Role: ptr.To("tenant_app"), Owner: ptr.To("victim_owner"), Database: ptr.To("victim_db"), Schema: ptr.To("public"),
							ObjectType: v1alpha1.DefaultPrivilegesTables, Privileges: []v1alpha1.Privilege{"SELECT"},
						},
					},
				}
			}},
		{name: "GrantOnSystemCatalog", field: "spec.forProvider.schema", rule: boundary.RuleSystemCatalog,
			obj: func(in, s string) client.Object {
				return grant(in, "h_authid"+s, v1alpha1.PostgreSQLGrantParameters{
					Role: ptr.To("tenant_app"), ObjectType: v1alpha1.GrantObjectTable, Database: ptr.To("postgres"), Schema: ptr.To("pg_catalog"),
					Objects: []string{"pg_authid"}, Privileges: []v1alpha1.Privilege{"SELECT"},
				})
			}},
	}
}

// ddl finds a statement that changes something and names one of the
// hostile objects (identifiers are always quoted).
var ddl = regexp.MustCompile(`(?i)(CREATE|ALTER|GRANT|REASSIGN|COMMENT|DROP)[^\n]*"(h_|victim_)`)

// TestHostileNamespace is a namespace allowed to create the managed kinds
// trying to take the server admin's power, on a server whose admin is a
// superuser and on one whose admin is what managed services give
// (CREATEDB + CREATEROLE): every attempt is refused with a condition naming
// the field and the rule, and the provider sends no statement for any of
// them. Each is then allowed by the Instance's policy where it can be.
func TestHostileNamespace(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	pg := env.Connect(ctx, t, "postgres")
	for _, stmt := range []string{
		"CREATE DATABASE victim", "CREATE ROLE tenant_app",
		"CREATE ROLE svc_admin LOGIN CREATEDB CREATEROLE PASSWORD 'svc-admin-pw-1'",
	} {
		if _, err := pg.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	if err := env.AdminSecret(ctx, "svc-admin", "svc_admin", "svc-admin-pw-1"); err != nil {
		t.Fatal(err)
	}
	managed := env.Main.DeepCopy()
	managed.ObjectMeta = metav1.ObjectMeta{Name: "managed"}
	managed.Status = v1alpha1.PostgreSQLInstanceStatus{}
	managed.Spec.AdminCredentialRef.Name = "svc-admin"
	env.Create(ctx, t, managed)
	env.Ready(ctx, t, managed, corev1.ConditionTrue, xpv2.ReasonAvailable)

	// Another tenant, whose role and database the hostile namespace goes
	// after.
	victimOwner := &v1alpha1.PostgreSQLRole{
		ObjectMeta: metav1.ObjectMeta{Namespace: "victims", Name: "victim-owner"},
		Spec: v1alpha1.PostgreSQLRoleSpec{
			InstanceRef: v1alpha1.InstanceReference{Name: "main"},
			ForProvider: v1alpha1.PostgreSQLRoleParameters{Name: ptr.To("victim_owner"), Login: ptr.To(false)},
		},
	}
	victimDB := &v1alpha1.PostgreSQLDatabase{
		ObjectMeta: metav1.ObjectMeta{Namespace: "victims", Name: "victim-db"},
		Spec: v1alpha1.PostgreSQLDatabaseSpec{
			InstanceRef: v1alpha1.InstanceReference{Name: "main"},
			ForProvider: v1alpha1.PostgreSQLDatabaseParameters{Name: ptr.To("victim_db"), OwnerRef: &v1alpha1.LocalReference{Name: "victim-owner"}},
		},
	}
	env.Create(ctx, t, victimOwner, victimDB)
	env.Ready(ctx, t, victimDB, corev1.ConditionTrue, xpv2.ReasonAvailable)

	// What a tenant's login really asks is allowed on the real server:
	// role (which pg_settings does not list) and a user setting.
	friendly := role("main", "ok_login", func(r *v1alpha1.PostgreSQLRole) {
		r.Spec.ForProvider.ConfigurationParameters = []v1alpha1.ConfigurationParameter{{Name: "role", Value: "tenant_app"}, {Name: "statement_timeout", Value: "5s"}}
	})
	// The hostile namespace's own database, where it may make schemas.
	own := database("main", "tenant_db", v1alpha1.PostgreSQLDatabaseParameters{})
	env.Create(ctx, t, friendly, own)
	env.Ready(ctx, t, friendly, corev1.ConditionTrue, xpv2.ReasonAvailable)
	env.Ready(ctx, t, own, corev1.ConditionTrue, xpv2.ReasonAvailable)

	log, err := env.Postgres.Log()
	if err != nil {
		t.Fatal(err)
	}
	from := len(log)
	for _, in := range []string{"main", "managed"} {
		t.Run(in, func(t *testing.T) {
			for _, v := range vectors(env.Postgres.AdminUser) {
				t.Run(v.name, func(t *testing.T) {
					o := v.obj(in, "_"+in)
					env.Create(ctx, t, o)
					c, ok := o.(providertest.Conditioned)
					if !ok {
						t.Fatalf("%T has no conditions", o)
					}
					env.Ready(ctx, t, c, corev1.ConditionFalse, v1alpha1.ReasonPolicyRefused)
					msg := c.GetCondition(xpv2.TypeReady).Message
					for _, want := range []string{v.field, "rule " + v.rule, "Nothing was sent to the server"} {
						if !strings.Contains(msg, want) {
							t.Errorf("the refusal %q does not say %q", msg, want)
						}
					}
				})
			}
		})
	}
	// A poll later, still nothing was sent.
	time.Sleep(3 * time.Second)
	log, err = env.Postgres.Log()
	if err != nil {
		t.Fatal(err)
	}
	if m := ddl.FindAllString(string(log[from:]), 5); len(m) > 0 {
		t.Errorf("the provider sent statements for refused resources: %q", m)
	}
	var roles int
	if err := pg.QueryRow(ctx, "SELECT count(*) FROM pg_roles WHERE rolname LIKE 'h\\_%'").Scan(&roles); err != nil || roles != 0 {
		t.Errorf("%d hostile roles exist on the server (%v)", roles, err)
	}

	t.Run("AllowedByThePlatform", func(t *testing.T) {
		// The platform admin widens the superuser Instance's policy: what
		// it allows now goes through, and nothing else.
		cur := &v1alpha1.PostgreSQLInstance{}
		cur.SetName("main")
		providertest.Update(ctx, t, env, cur, func(cur *v1alpha1.PostgreSQLInstance) {
			cur.Spec.Policy = v1alpha1.InstancePolicy{
				AllowRoleAttributes: []v1alpha1.PolicyRoleAttribute{v1alpha1.PolicyCreateRole, v1alpha1.PolicyReplication, v1alpha1.PolicyBypassRLS},
				AllowTemplates:      []string{"victim"},
				AllowSettings:       []string{"session_replication_role"},
				AllowMembershipOf:   []string{"pg_read_server_files"},
			}
		})
		// With a managed-service admin the policy lets them through and
		// PostgreSQL refuses what only a superuser may do (on 16+ also the
		// grant of a predefined role the admin does not administer): the
		// condition carries PostgreSQL's reason.
		serverRefuses := map[string]bool{}
		if providertest.ManagedAdmin() {
			serverRefuses = map[string]bool{"Replication": true, "BypassRLS": true, "SuperuserSetting": true, "TemplateOfAnotherDatabase": true}
			if major, _ := strconv.Atoi(env.Postgres.Version); major >= 16 {
				serverRefuses["GrantOfPredefinedRole"] = true
			}
		}
		for _, v := range vectors(env.Postgres.AdminUser) {
			want := map[string]bool{
				"CreateRole": true, "Replication": true, "BypassRLS": true, "TemplateOfAnotherDatabase": true,
				"SuperuserSetting": true, "GrantOfPredefinedRole": true,
			}[v.name]
			o := v.obj("main", "_main")
			c, ok := o.(providertest.Conditioned)
			if !ok {
				t.Fatalf("%T has no conditions", o)
			}
			if serverRefuses[v.name] {
				if err := syncedFails(ctx, c, "SQLSTATE 42501"); err != nil {
					t.Errorf("%s, allowed by the policy, with a managed-service admin: %v", v.name, err)
				}
				continue
			}
			if want {
				if err := env.WaitForReady(ctx, c, corev1.ConditionTrue, xpv2.ReasonAvailable, time.Minute); err != nil {
					t.Errorf("%s, allowed by the policy: %v", v.name, err)
				}
				continue
			}
			// Still refused: the policy allowed other roles.
			if err := env.WaitForReady(ctx, c, corev1.ConditionFalse, v1alpha1.ReasonPolicyRefused, 10*time.Second); err != nil {
				t.Errorf("%s is no longer refused: %v", v.name, err)
			}
		}
		var attrs string
		wantAttrs := "t,t"
		if providertest.ManagedAdmin() {
			wantAttrs = "t" // No replication role: the server refused it.
		}
		if err := pg.QueryRow(ctx, "SELECT concat_ws(',', rolcreaterole, (SELECT rolreplication FROM pg_roles WHERE rolname = 'h_repl_main')) FROM pg_roles WHERE rolname = 'h_cr_main'").Scan(&attrs); err != nil || attrs != wantAttrs {
			t.Errorf("allowed attributes on the server: %q (%v)", attrs, err)
		}
	})
}

// syncedFails waits until obj's Synced condition is False with a message
// containing want.
func syncedFails(ctx context.Context, obj providertest.Conditioned, want string) error {
	var last xpv2.Condition
	err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return false, err
		}
		last = obj.GetCondition(xpv2.TypeSynced)
		return last.Status == corev1.ConditionFalse && strings.Contains(last.Message, want), nil
	})
	if err != nil {
		return fmt.Errorf("Synced never became False with %q (last %s %q): %w", want, last.Status, last.Message, err)
	}
	return nil
}

// TestWaitingOwnerIsNoWayAroundTheBoundary: a database given an owner by
// name waits while no such role exists (rather than fail CREATE
// DATABASE). A hostile namespace must not turn that wait into a way to
// hand its database to a role another tenant creates later: once the role
// exists, the database is refused like any other owned by another
// namespace's role, and never created.
func TestWaitingOwnerIsNoWayAroundTheBoundary(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	lying := database("main", "h_lying_in_wait", v1alpha1.PostgreSQLDatabaseParameters{Owner: ptr.To("late_victim")})
	env.Create(ctx, t, lying)
	err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(lying), lying); err != nil {
			return false, err
		}
		return strings.Contains(lying.GetCondition(xpv2.TypeSynced).Message, `waiting for role "late_victim"`), nil
	})
	if err != nil {
		t.Fatalf("the database does not wait for its owner: %v (Synced: %q)", err, lying.GetCondition(xpv2.TypeSynced).Message)
	}

	// The victim creates the role.
	late := &v1alpha1.PostgreSQLRole{
		ObjectMeta: metav1.ObjectMeta{Namespace: "victims", Name: "late-victim"},
		Spec: v1alpha1.PostgreSQLRoleSpec{
			InstanceRef: v1alpha1.InstanceReference{Name: "main"},
			ForProvider: v1alpha1.PostgreSQLRoleParameters{Name: ptr.To("late_victim"), Login: ptr.To(false)},
		},
	}
	env.Create(ctx, t, late)
	env.Ready(ctx, t, late, corev1.ConditionTrue, xpv2.ReasonAvailable)

	// The waiting database is refused within its next looks (the poll is
	// 2 s here, so is the fallback of a wait).
	env.Ready(ctx, t, lying, corev1.ConditionFalse, v1alpha1.ReasonPolicyRefused)
	msg := lying.GetCondition(xpv2.TypeReady).Message
	for _, want := range []string{"spec.forProvider.owner", "rule " + boundary.RuleOtherNamespace, "Nothing was sent to the server"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal %q does not say %q", msg, want)
		}
	}
	time.Sleep(3 * time.Second)
	var n int
	if err := env.Connect(ctx, t, "postgres").QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = 'h_lying_in_wait'").Scan(&n); err != nil || n != 0 {
		t.Errorf("the database exists on the server (%d, %v)", n, err)
	}
}
