package database_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
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
var suite = providertest.Suite(providertest.Options{PollInterval: 2 * time.Second, Instance: "main", Namespaces: []string{ns}}, func(e *providertest.Env) {
	env, main = e, e.Main
})

func TestMain(m *testing.M) { os.Exit(suite.Run(m)) }

func newDatabase(name string, mutate ...func(*v1alpha1.PostgreSQLDatabase)) *v1alpha1.PostgreSQLDatabase {
	d := &v1alpha1.PostgreSQLDatabase{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       v1alpha1.PostgreSQLDatabaseSpec{InstanceRef: v1alpha1.InstanceReference{Name: main.Name}},
	}
	for _, m := range mutate {
		m(d)
	}
	return d
}

func connect(ctx context.Context, t *testing.T, db string) *pgx.Conn {
	t.Helper()
	c, err := env.Postgres.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.WithoutCancel(ctx)) })
	return c
}

func waitReady(ctx context.Context, t *testing.T, d *v1alpha1.PostgreSQLDatabase, status corev1.ConditionStatus, reason xpv2.ConditionReason) *v1alpha1.PostgreSQLDatabase {
	t.Helper()
	got := d.DeepCopy()
	if err := env.WaitForReady(ctx, got, status, reason, time.Minute); err != nil {
		t.Fatal(err)
	}
	return got
}

func waitGone(ctx context.Context, t *testing.T, d *v1alpha1.PostgreSQLDatabase) {
	t.Helper()
	err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		err := env.Kube.Get(ctx, client.ObjectKeyFromObject(d), &v1alpha1.PostgreSQLDatabase{})
		return kerrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("PostgreSQLDatabase %s was not deleted: %v", d.Name, err)
	}
}

func exists(ctx context.Context, t *testing.T, name string) bool {
	t.Helper()
	var n int
	if err := connect(ctx, t, "postgres").QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

func poke(ctx context.Context, t *testing.T, d *v1alpha1.PostgreSQLDatabase) {
	t.Helper()
	cur := &v1alpha1.PostgreSQLDatabase{}
	if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(d), cur); err != nil {
		t.Fatal(err)
	}
	orig := cur.DeepCopy()
	a := cur.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a["test/poke"] = time.Now().String()
	cur.SetAnnotations(a)
	if err := env.Kube.Patch(ctx, cur, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
}

func TestDatabaseLifecycle(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	owner := providertest.Role(ns, main.Name, "orders_owner")
	if err := env.Kube.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	d := newDatabase("orders", func(d *v1alpha1.PostgreSQLDatabase) {
		d.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
		d.Spec.ForProvider.OwnerRef = &v1alpha1.LocalReference{Name: "orders-owner"}
		d.Spec.ForProvider.Template = ptr.To("template0")
		d.Spec.ForProvider.Encoding = ptr.To("UTF8")
		d.Spec.ForProvider.LCCollate = ptr.To("C")
		d.Spec.ForProvider.LCCtype = ptr.To("C")
		d.Spec.ForProvider.ConnectionLimit = ptr.To[int32](20)
		d.Spec.ForProvider.Comment = ptr.To("orders data")
		d.Spec.ForProvider.Extensions = []v1alpha1.Extension{{Name: "pgcrypto"}, {Name: "citext"}}
	})
	if err := env.Kube.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	got := waitReady(ctx, t, d, corev1.ConditionTrue, xpv2.ReasonAvailable)

	t.Run("Catalog", func(t *testing.T) {
		var dbOwner, enc, collate, comment string
		var limit int
		if err := connect(ctx, t, "postgres").QueryRow(ctx, `SELECT pg_get_userbyid(datdba), pg_encoding_to_char(encoding), datcollate, datconnlimit,
			shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = 'orders'`).Scan(&dbOwner, &enc, &collate, &limit, &comment); err != nil {
			t.Fatal(err)
		}
		if dbOwner != "orders_owner" || enc != "UTF8" || collate != "C" || limit != 20 {
			t.Errorf("owner %s, encoding %s, collate %s, limit %d", dbOwner, enc, collate, limit)
		}
		providertest.CheckMarked(t, comment, "orders data", got.UID)
		rows, err := connect(ctx, t, "orders").Query(ctx, "SELECT extname FROM pg_extension WHERE extname IN ('pgcrypto', 'citext') ORDER BY 1")
		if err != nil {
			t.Fatal(err)
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || strings.Join(names, ",") != "citext,pgcrypto" {
			t.Errorf("extensions in orders: %v (%v)", names, err)
		}
		if len(got.Status.AtProvider.Extensions) != 2 || got.Status.AtProvider.Owner != "orders_owner" {
			t.Errorf("atProvider = %+v", got.Status.AtProvider)
		}
	})

	t.Run("NoDDLWhenUpToDate", func(t *testing.T) {
		if err := env.Postgres.SetLogStatement(ctx, "all"); err != nil {
			t.Fatal(err)
		}
		defer env.Postgres.SetLogStatement(ctx, "none") //nolint:errcheck // Test cleanup.
		before, _ := env.Postgres.Log()
		time.Sleep(7 * time.Second)
		after, _ := env.Postgres.Log()
		log := string(after[len(before):])
		if n := strings.Count(log, "LEFT JOIN pg_catalog.pg_database d ON d.datname"); n < 2 {
			t.Fatalf("only %d observations in 7s", n)
		}
		for _, ddl := range []string{"ALTER DATABASE", "CREATE DATABASE", "COMMENT ON", "CREATE EXTENSION", "ALTER EXTENSION"} {
			if strings.Contains(log, ddl) {
				t.Errorf("an up-to-date database issued %s", ddl)
			}
		}
	})

	t.Run("DriftRepaired", func(t *testing.T) {
		if _, err := connect(ctx, t, "postgres").Exec(ctx, "ALTER DATABASE orders CONNECTION LIMIT 1"); err != nil {
			t.Fatal(err)
		}
		if _, err := connect(ctx, t, "orders").Exec(ctx, "DROP EXTENSION citext"); err != nil {
			t.Fatal(err)
		}
		err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
			var limit, ext int
			if err := connect(ctx, t, "postgres").QueryRow(ctx, "SELECT datconnlimit FROM pg_database WHERE datname = 'orders'").Scan(&limit); err != nil {
				return false, err
			}
			if err := connect(ctx, t, "orders").QueryRow(ctx, "SELECT count(*) FROM pg_extension WHERE extname = 'citext'").Scan(&ext); err != nil {
				return false, err
			}
			return limit == 20 && ext == 1, nil
		})
		if err != nil {
			t.Fatalf("drift not repaired: %v", err)
		}
	})

	t.Run("ImmutableSettings", func(t *testing.T) {
		cur := &v1alpha1.PostgreSQLDatabase{}
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(d), cur); err != nil {
			t.Fatal(err)
		}
		orig := cur.DeepCopy()
		cur.Spec.ForProvider.Encoding = ptr.To("LATIN1")
		err := env.Kube.Patch(ctx, cur, client.MergeFrom(orig))
		if err == nil || !strings.Contains(err.Error(), "encoding is fixed at creation") {
			t.Errorf("changing encoding: got %v", err)
		}
	})

	t.Run("DropWaitsForSessions", func(t *testing.T) {
		session := connect(ctx, t, "orders")
		if err := env.Kube.Delete(ctx, d); err != nil {
			t.Fatal(err)
		}
		cur := &v1alpha1.PostgreSQLDatabase{}
		err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
			if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(d), cur); err != nil {
				return false, err
			}
			return strings.Contains(cur.GetCondition(xpv2.TypeSynced).Message, "1 session(s) are connected"), nil
		})
		if err != nil {
			t.Fatalf("the blocked drop does not say why: %v; Synced %+v", err, cur.GetCondition(xpv2.TypeSynced))
		}
		if !exists(ctx, t, "orders") {
			t.Fatal("the database was dropped under an open session")
		}
		_ = session.Close(ctx)
		poke(ctx, t, d)
		waitGone(ctx, t, d)
		if exists(ctx, t, "orders") {
			t.Error("the database survived a delete with the Delete policy")
		}
	})
}

func TestDatabaseDropTerminatesSessionsWhenAsked(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	d := newDatabase("forced", func(d *v1alpha1.PostgreSQLDatabase) {
		d.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
		d.Spec.ForProvider.TerminateConnectionsOnDelete = true
	})
	if err := env.Kube.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	waitReady(ctx, t, d, corev1.ConditionTrue, xpv2.ReasonAvailable)
	// An application's session, as a login role the DBA made through the
	// Instance's admin: a managed-service admin may end it only while it
	// holds that role's privileges, which it must give back.
	env.AdminSQL(ctx, t, "postgres", "CREATE ROLE forced_app LOGIN PASSWORD 'forced-app-pw'")
	cfg, err := env.Postgres.ConnConfig("forced")
	if err != nil {
		t.Fatal(err)
	}
	cfg.User, cfg.Password = "forced_app", "forced-app-pw"
	app, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close(ctx) //nolint:errcheck // Terminated by the drop.
	if err := env.Kube.Delete(ctx, d); err != nil {
		t.Fatal(err)
	}
	waitGone(ctx, t, d)
	if exists(ctx, t, "forced") {
		t.Error("the database survived")
	}
	if err := app.Ping(ctx); err == nil {
		t.Error("the application's session outlived the drop")
	}
	if n := env.ActingMemberships(ctx, t, env.AdminUser(), "forced_app"); n != 0 {
		t.Errorf("the admin kept %d membership(s) of the session's role", n)
	}
}

func TestDatabaseRetainedByDefault(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	d := newDatabase("kept")
	if err := env.Kube.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	waitReady(ctx, t, d, corev1.ConditionTrue, xpv2.ReasonAvailable)
	if err := env.Kube.Delete(ctx, d); err != nil {
		t.Fatal(err)
	}
	waitGone(ctx, t, d)
	if !exists(ctx, t, "kept") {
		t.Error("the database was dropped although the default policy retains it")
	}
}

func TestDatabaseConflictWithUnmarkedDatabase(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	if _, err := connect(ctx, t, "postgres").Exec(ctx, "CREATE DATABASE legacy CONNECTION LIMIT 3"); err != nil {
		t.Fatal(err)
	}
	d := newDatabase("legacy", func(d *v1alpha1.PostgreSQLDatabase) {
		d.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
	})
	if err := env.Kube.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	got := waitReady(ctx, t, d, corev1.ConditionFalse, v1alpha1.ReasonConflict)
	if msg := got.GetCondition(xpv2.TypeReady).Message; !strings.Contains(msg, "was not created by this PostgreSQLDatabase") || !strings.Contains(msg, "Nothing was changed") {
		t.Errorf("Conflict message: %s", msg)
	}
	var limit int
	var comment *string
	if err := connect(ctx, t, "postgres").QueryRow(ctx, "SELECT datconnlimit, shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = 'legacy'").Scan(&limit, &comment); err != nil {
		t.Fatal(err)
	}
	if limit != 3 || comment != nil {
		t.Errorf("the existing database was touched: limit %d, comment %v", limit, comment)
	}
	// Deleting the Conflicted resource must not drop someone else's data.
	if err := env.Kube.Delete(ctx, d); err != nil {
		t.Fatal(err)
	}
	waitGone(ctx, t, d)
	if !exists(ctx, t, "legacy") {
		t.Fatal("deleting a Conflicted PostgreSQLDatabase dropped the database it did not create")
	}
}

func TestDatabaseImportObserveOnly(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	if _, err := connect(ctx, t, "postgres").Exec(ctx, "CREATE DATABASE imported CONNECTION LIMIT 4"); err != nil {
		t.Fatal(err)
	}
	d := newDatabase("imported", func(d *v1alpha1.PostgreSQLDatabase) {
		d.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
		d.Spec.ForProvider.ConnectionLimit = ptr.To[int32](50)
	})
	if err := env.Kube.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	// Existence is not Ready: an import is observed, never delivered.
	got := waitReady(ctx, t, d, corev1.ConditionFalse, v1alpha1.ReasonObserveOnly)
	time.Sleep(3 * time.Second)
	var limit int
	var comment *string
	if err := connect(ctx, t, "postgres").QueryRow(ctx, "SELECT datconnlimit, shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = 'imported'").Scan(&limit, &comment); err != nil {
		t.Fatal(err)
	}
	if limit != 4 || comment != nil {
		t.Errorf("an Observe-only import changed the database: limit %d, comment %v", limit, comment)
	}
	if got.Status.AtProvider.Owner == "" {
		t.Error("the import did not record what it observed")
	}

	t.Run("PlanOfTheAdoption", func(t *testing.T) {
		// What the spec would change, and nothing else: the marker is the
		// admin's to write, by the hand-over its Conflict names.
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(d), got); err != nil {
			t.Fatal(err)
		}
		want := &v1alpha1.Plan{Action: v1alpha1.PlanUpdate, Statements: []string{`ALTER DATABASE "imported" WITH CONNECTION LIMIT 50`}, Summary: "Update: 1 statement"}
		if diff := cmp.Diff(want, got.Status.AtProvider.Plan); diff != "" {
			t.Errorf("the import's plan (-want +got):\n%s", diff)
		}
		if c := got.GetCondition(v1alpha1.TypeUpToDate); c.Reason != v1alpha1.ReasonChangesPending || !strings.Contains(c.Message, "widening the policies sends them") {
			t.Errorf("UpToDate condition: %s: %s", c.Reason, c.Message)
		}
	})
}

func TestDatabaseUnknownExtension(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	d := newDatabase("extless", func(d *v1alpha1.PostgreSQLDatabase) {
		d.Spec.ForProvider.Extensions = []v1alpha1.Extension{{Name: "pgcrpyto"}}
	})
	if err := env.Kube.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	got := waitReady(ctx, t, d, corev1.ConditionFalse, v1alpha1.ReasonExtensionUnavailable)
	if msg := got.GetCondition(xpv2.TypeReady).Message; !strings.Contains(msg, `"pgcrpyto" (did you mean pgcrypto?)`) {
		t.Errorf("message %q does not name the extension and its near match", msg)
	}
	if exists(ctx, t, "extless") {
		t.Error("the database was created although an extension cannot be installed")
	}
}

func TestDatabaseValidation(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	err := env.Kube.Create(ctx, newDatabase("bad-name"))
	if err == nil || !strings.Contains(err.Error(), "metadata.name is not a valid PostgreSQL identifier") {
		t.Errorf("a Database named bad-name: got %v", err)
	}
	err = env.Kube.Create(ctx, newDatabase("icu", func(d *v1alpha1.PostgreSQLDatabase) {
		d.Spec.ForProvider.ICULocale = ptr.To("und")
	}))
	if err == nil || !strings.Contains(err.Error(), "icuLocale needs localeProvider: icu") {
		t.Errorf("icuLocale without localeProvider: got %v", err)
	}
	err = env.Kube.Create(ctx, newDatabase("both", func(d *v1alpha1.PostgreSQLDatabase) {
		d.Spec.ForProvider.Owner = ptr.To("x")
		d.Spec.ForProvider.OwnerRef = &v1alpha1.LocalReference{Name: "x"}
	}))
	if err == nil || !strings.Contains(err.Error(), "set owner or ownerRef, not both") {
		t.Errorf("owner and ownerRef: got %v", err)
	}
	// Whoever may create PostgreSQLDatabases must not take, or import,
	// the name another resource's create goes through.
	err = env.Kube.Create(ctx, newDatabase("staged", func(d *v1alpha1.PostgreSQLDatabase) {
		d.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
		d.Spec.ForProvider.Name = ptr.To(postgres.StagingDatabaseName("0b0e6f0c-54a1-4b52-9f57-4bd5d1b1b0c1"))
	}))
	if err == nil || !strings.Contains(err.Error(), "the prefix provider_postgresql_creating_ is the provider's own") {
		t.Errorf("a staging name: got %v", err)
	}
}

// TestManagedServiceAdmin uses the admin managed services give (CREATEDB
// and CREATEROLE, no SUPERUSER): a database owned by a managed NOLOGIN role,
// as every tenant's is, is created and handed to another owner, and the
// admin keeps no membership of either role afterwards.
func TestManagedServiceAdmin(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	pg := connect(ctx, t, "postgres")
	in := env.ManagedServiceInstance(ctx, t, "managed-service", "svc_admin")
	role := func(name string) *v1alpha1.PostgreSQLRole {
		r := providertest.Role(ns, in.Name, name)
		r.Spec.ForProvider.Login = ptr.To(false)
		return r
	}
	first, second := role("svc_owner"), role("svc_heir")
	env.Create(ctx, t, first, second)
	d := newDatabase("svcdb", func(d *v1alpha1.PostgreSQLDatabase) {
		d.Spec.InstanceRef.Name = in.Name
		d.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
		d.Spec.ForProvider.OwnerRef = &v1alpha1.LocalReference{Name: first.Name}
		// What a tenant database asks for: each needs the owner's rights.
		d.Spec.ForProvider.RevokePublicPrivileges = true
		d.Spec.ForProvider.Extensions = []v1alpha1.Extension{{Name: "pgcrypto"}}
	})
	env.Create(ctx, t, d)
	waitReady(ctx, t, d, corev1.ConditionTrue, xpv2.ReasonAvailable)
	owner := func() string {
		var o string
		if err := pg.QueryRow(ctx, "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = 'svcdb'").Scan(&o); err != nil {
			t.Fatal(err)
		}
		return o
	}
	memberships := func() int { return env.ActingMemberships(ctx, t, "svc_admin", "svc_owner", "svc_heir") }

	if o := owner(); o != "svc_owner" {
		t.Fatalf("svcdb is owned by %q, want svc_owner", o)
	}
	if n := memberships(); n != 0 {
		t.Errorf("the admin kept %d membership(s) of the owner role after creating the database", n)
	}
	var public, ext int
	if err := pg.QueryRow(ctx, `SELECT count(*) FROM pg_database d, aclexplode(coalesce(d.datacl, acldefault('d', d.datdba))) a
		WHERE d.datname = 'svcdb' AND a.grantee = 0`).Scan(&public); err != nil || public != 0 {
		t.Errorf("PUBLIC keeps %d privilege(s) on svcdb (%v): the revoke ran without the owner's rights", public, err)
	}
	sc := connect(ctx, t, "svcdb")
	if err := sc.QueryRow(ctx, "SELECT count(*) FROM pg_extension WHERE extname = 'pgcrypto'").Scan(&ext); err != nil || ext != 1 {
		t.Errorf("pgcrypto in svcdb: %d (%v)", ext, err)
	}
	// Its session would hold the drop below.
	_ = sc.Close(ctx)

	cur := d.DeepCopy()
	providertest.Update(ctx, t, env, cur, func(cur *v1alpha1.PostgreSQLDatabase) {
		cur.Spec.ForProvider.OwnerRef = &v1alpha1.LocalReference{Name: second.Name}
	})
	err := providertest.Wait(ctx, time.Minute, func(context.Context) (bool, error) { return owner() == "svc_heir", nil })
	if err != nil {
		t.Fatalf("the owner was not changed to svc_heir by the non-superuser admin: now %q", owner())
	}
	// The membership is revoked right after the change, which the owner
	// shows a moment before.
	if err := providertest.Wait(ctx, 10*time.Second, func(context.Context) (bool, error) { return memberships() == 0, nil }); err != nil {
		t.Errorf("the admin kept %d membership(s) after changing the owner", memberships())
	}
	env.Ready(ctx, t, cur, corev1.ConditionTrue, xpv2.ReasonAvailable)

	// With Delete, the non-superuser admin drops a database it does not own.
	if err := env.Kube.Delete(ctx, cur); err != nil {
		t.Fatal(err)
	}
	waitGone(ctx, t, cur)
	if exists(ctx, t, "svcdb") {
		t.Error("svcdb was not dropped")
	}
	if n := memberships(); n != 0 {
		t.Errorf("the admin kept %d membership(s) after dropping the database", n)
	}
}

// TestDatabaseUntrustedExtension: an extension that is not trusted (its
// script runs with superuser privileges) is not installed where the
// database's owner, a tenant's role, can create objects: the script would
// resolve what the owner placed there. In a database the admin owns, the
// same extension goes ahead (as far as the admin may install it).
func TestDatabaseUntrustedExtension(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	owner := providertest.Role(ns, main.Name, "ext_owner")
	untrusted := []v1alpha1.Extension{{Name: "pg_stat_statements"}}
	tenants := newDatabase("exttenant", func(d *v1alpha1.PostgreSQLDatabase) {
		d.Spec.ForProvider.OwnerRef = &v1alpha1.LocalReference{Name: owner.Name}
		d.Spec.ForProvider.Extensions = untrusted
	})
	admins := newDatabase("extadmin", func(d *v1alpha1.PostgreSQLDatabase) { d.Spec.ForProvider.Extensions = untrusted })
	for _, o := range []client.Object{owner, tenants, admins} {
		if err := env.Kube.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	got := waitReady(ctx, t, tenants, corev1.ConditionFalse, v1alpha1.ReasonExtensionUnsafe)
	if msg := got.GetCondition(xpv2.TypeReady).Message; !strings.Contains(msg, `"pg_stat_statements" (role(s) pg_database_owner may create objects in schema "public")`) {
		t.Errorf("message %q does not say which extension and who can write where", msg)
	}
	installed := func(db string) bool {
		var n int
		if err := connect(ctx, t, db).QueryRow(ctx, "SELECT count(*) FROM pg_extension WHERE extname = 'pg_stat_statements'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	if installed("exttenant") {
		t.Error("the untrusted extension was installed in the tenant's public schema")
	}
	if providertest.ManagedAdmin() {
		// A non-superuser admin may not install it at all: the server
		// says so, not the provider's check.
		if err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
			err := env.Kube.Get(ctx, client.ObjectKeyFromObject(admins), admins)
			return err == nil && strings.Contains(admins.GetCondition(xpv2.TypeSynced).Message, "permission denied to create extension"), err
		}); err != nil {
			t.Fatalf("the admin's database does not say the server refused the extension: %v; Synced %+v", err, admins.GetCondition(xpv2.TypeSynced))
		}
		return
	}
	waitReady(ctx, t, admins, corev1.ConditionTrue, xpv2.ReasonAvailable)
	if !installed("extadmin") {
		t.Error("the untrusted extension was not installed in the admin's own database")
	}
}

// TestDatabaseUntrustedExtensionRequiringAnother: an untrusted extension
// (earthdistance) going to a schema only the admin writes to is still
// refused when an extension it requires (cube) is, or is about to be, in
// a schema the database's owner writes to: CREATE EXTENSION puts the
// required extensions' schemas on the script's search_path, where what
// the owner placed first would run as the admin.
func TestDatabaseUntrustedExtensionRequiringAnother(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	owner := providertest.Role(ns, main.Name, "req_owner")
	d := newDatabase("extreq", func(d *v1alpha1.PostgreSQLDatabase) {
		d.Spec.ForProvider.OwnerRef = &v1alpha1.LocalReference{Name: owner.Name}
		d.Spec.ForProvider.Extensions = []v1alpha1.Extension{{Name: "cube"}}
	})
	for _, o := range []client.Object{owner, d} {
		if err := env.Kube.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	waitReady(ctx, t, d, corev1.ConditionTrue, xpv2.ReasonAvailable)
	// A schema only superusers write to, made by a DBA.
	if _, err := connect(ctx, t, "extreq").Exec(ctx, "CREATE SCHEMA ext"); err != nil {
		t.Fatal(err)
	}
	providertest.Update(ctx, t, env, d, func(d *v1alpha1.PostgreSQLDatabase) {
		d.Spec.ForProvider.Extensions = append(d.Spec.ForProvider.Extensions, v1alpha1.Extension{Name: "earthdistance", Schema: ptr.To("ext")})
	})
	got := waitReady(ctx, t, d, corev1.ConditionFalse, v1alpha1.ReasonExtensionUnsafe)
	if msg := got.GetCondition(xpv2.TypeReady).Message; !strings.Contains(msg, `"earthdistance" (role(s) pg_database_owner may create objects in schema "public" (of an extension it requires))`) {
		t.Errorf("message %q does not say that earthdistance's script would resolve names in cube's schema, which the owner writes to", msg)
	}
	var n int
	if err := connect(ctx, t, "extreq").QueryRow(ctx, "SELECT count(*) FROM pg_extension WHERE extname = 'earthdistance'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Error("earthdistance was installed with cube in the owner's schema")
	}
}
