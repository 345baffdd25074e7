package role_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/fixture/pgserver"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

const ns = "app"

var (
	env  *providertest.Env
	main *v1alpha1.PostgreSQLInstance
)

// suite is the package's environment, started by the first test that
// declares it needs it.
// Poll every 2s so that drift repair and steady state can be observed.
var suite = providertest.Suite(providertest.Options{
	PollInterval: 2 * time.Second, Instance: "main", Namespaces: []string{ns},
	// Roles these tests make by hand, as a DBA would: shared with the
	// namespace by the Instance's policy.
	Policy: v1alpha1.InstancePolicy{AllowMembershipOf: []string{"readers", "readers_p", "heir", "shared_s"}},
}, func(e *providertest.Env) {
	env, main = e, e.Main
})

func TestMain(m *testing.M) { os.Exit(suite.Run(m)) }

func newRole(name string, mutate ...func(*v1alpha1.PostgreSQLRole)) *v1alpha1.PostgreSQLRole {
	r := &v1alpha1.PostgreSQLRole{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.PostgreSQLRoleSpec{
			InstanceRef:                      v1alpha1.InstanceReference{Name: main.Name},
			ForProvider:                      v1alpha1.PostgreSQLRoleParameters{Login: ptr.To(true)},
			WriteConnectionSecretToReference: &xpv2.LocalSecretReference{Name: name + "-conn"},
		},
	}
	for _, m := range mutate {
		m(r)
	}
	return r
}

func admin(ctx context.Context, t *testing.T) *pgx.Conn {
	t.Helper()
	c, err := env.Postgres.Connect(ctx, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.WithoutCancel(ctx)) })
	return c
}

func waitCondition(ctx context.Context, t *testing.T, r *v1alpha1.PostgreSQLRole, status corev1.ConditionStatus, reason xpv2.ConditionReason) *v1alpha1.PostgreSQLRole {
	t.Helper()
	got := r.DeepCopy()
	if err := env.WaitForReady(ctx, got, status, reason, time.Minute); err != nil {
		t.Fatal(err)
	}
	return got
}

func ordersSecret(ctx context.Context, t *testing.T) map[string][]byte {
	const name = "orders-conn"
	t.Helper()
	s := &corev1.Secret{}
	err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		err := env.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s)
		return err == nil && len(s.Data["password"]) > 0, err
	})
	if err != nil {
		t.Fatalf("connection Secret %s: %v", name, err)
	}
	return s.Data
}

// pgJDBCLogin logs in through the real PostgreSQL JDBC driver with url, as
// a Java application given a connection Secret d would, and returns what
// it printed (current_user) or failed with.
func pgJDBCLogin(ctx context.Context, t *testing.T, d map[string][]byte, url string) (string, error) {
	t.Helper()
	jar := os.Getenv("PGJDBC_JAR")
	if jar == "" {
		jar = "/usr/share/java/postgresql.jar"
	}
	if _, err := os.Stat(jar); err != nil {
		t.Fatalf("the PostgreSQL JDBC driver is missing (%v): run hack/ensure-jdbc.sh, or set PGJDBC_JAR", err)
	}
	// The test server's name is made up (libpq reaches it through
	// hostaddr, which JDBC has not): a hosts file stands in for the DNS a
	// real client would use.
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, []byte(string(d["hostaddr"])+" "+string(d["host"])+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The URL in the environment, not an argument: other local users can
	// read a process's arguments.
	cmd := exec.CommandContext(ctx, "java", "-Djdk.net.hosts.file="+hosts, "-cp", jar, "testdata/JDBCLogin.java")
	cmd.Env = append(os.Environ(), "JDBC_URL="+url)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// loginWith logs in with a connection Secret's values, verifying the server
// against the Secret's ca.crt, and returns current_user.
func loginWith(ctx context.Context, d map[string][]byte) (string, error) {
	c, err := providertest.ConnectWithSecret(ctx, d, "")
	if err != nil {
		return "", err
	}
	defer c.Close(ctx) //nolint:errcheck // Test.
	var user string
	err = c.QueryRow(ctx, "SELECT current_user").Scan(&user)
	return user, err
}

func TestRoleLifecycle(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	db := admin(ctx, t)
	// The group is the Instance admin's, as a managed service's DBA makes
	// it: on 16+ only an admin with ADMIN OPTION on it may grant it.
	env.AdminSQL(ctx, t, "postgres", "CREATE ROLE readers NOLOGIN")
	if err := env.Postgres.SetLogStatement(ctx, "all"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Postgres.SetLogStatement(ctx, "none") })

	r := newRole("orders", func(r *v1alpha1.PostgreSQLRole) {
		r.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
		r.Spec.ForProvider.ConnectionLimit = ptr.To[int32](5)
		r.Spec.ForProvider.MemberOf = []string{"readers"}
		r.Spec.ForProvider.Comment = ptr.To("orders service")
		r.Spec.ForProvider.ConfigurationParameters = []v1alpha1.ConfigurationParameter{{Name: "statement_timeout", Value: "5s"}}
	})
	if err := env.Kube.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	got := waitCondition(ctx, t, r, corev1.ConditionTrue, xpv2.ReasonAvailable)
	d := ordersSecret(ctx, t)

	t.Run("ConnectionSecret", func(t *testing.T) {
		for _, k := range []string{"username", "password", "host", "hostaddr", "port", "database", "sslmode", "uri", "jdbc-url", "ca.crt"} {
			if len(d[k]) == 0 {
				t.Errorf("the connection Secret has no %s", k)
			}
		}
		if len(d["password"]) < 32 {
			t.Errorf("generated password of %d characters, want at least 32", len(d["password"]))
		}
		if string(d["username"]) != "orders" || string(d["database"]) != "postgres" || string(d["sslmode"]) != "verify-full" {
			t.Errorf("username, database, sslmode = %s, %s, %s", d["username"], d["database"], d["sslmode"])
		}
		if user, err := loginWith(ctx, d); err != nil || user != "orders" {
			t.Errorf("logging in with the Secret's values: user %q, err %v", user, err)
		}
	})

	t.Run("URIWorksWithPsql", func(t *testing.T) {
		ca := filepath.Join(t.TempDir(), "ca.crt")
		if err := os.WriteFile(ca, d["ca.crt"], 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(ctx, "psql", string(d["uri"]), "-Atc", "SELECT current_user")
		cmd.Env = append(os.Environ(), "PGSSLROOTCERT="+ca)
		out, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "orders" {
			t.Errorf("psql with the uri: %v: %s", err, out)
		}
	})

	t.Run("JDBCURLWorksWithPgJDBC", func(t *testing.T) {
		// As a Java application would: the real driver, given the
		// jdbc-url and the mounted CA (sslmode=verify-full needs it; the
		// Secret cannot know where it will be mounted).
		ca := filepath.Join(t.TempDir(), "ca.crt")
		if err := os.WriteFile(ca, d["ca.crt"], 0o600); err != nil {
			t.Fatal(err)
		}
		url := string(d["jdbc-url"]) + "&sslrootcert=" + ca
		if !strings.HasPrefix(url, "jdbc:postgresql://") || strings.Contains(url, "hostaddr") {
			t.Errorf("jdbc-url is not a PgJDBC URL of host and port alone: %s", strings.ReplaceAll(url, string(d["password"]), "***"))
		}
		out, err := pgJDBCLogin(ctx, t, d, url)
		if err != nil || out != "orders" {
			t.Errorf("PgJDBC with the jdbc-url: %v: %s", err, strings.ReplaceAll(out, string(d["password"]), "***"))
		}
	})

	t.Run("ServiceAndPgpassWorkWithPsql", func(t *testing.T) {
		// As an application mounting the Secret would: the service
		// fragment as PGSERVICEFILE, the pgpass line as PGPASSFILE (libpq
		// ignores one readable by others), the CA as PGSSLROOTCERT; no
		// password anywhere else.
		dir := t.TempDir()
		files := map[string]string{"pg_service.conf": "service", "pgpass": "pgpass", "ca.crt": "ca"}
		for key, name := range files {
			if len(d[key]) == 0 {
				t.Fatalf("the connection Secret has no %s", key)
			}
			if err := os.WriteFile(filepath.Join(dir, name), d[key], 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if strings.Contains(string(d["pg_service.conf"]), string(d["password"])) {
			t.Error("the service fragment holds the password; pgpass alone should")
		}
		cmd := exec.CommandContext(ctx, "psql", "service=orders", "-Atc", "SELECT current_user")
		cmd.Env = append(os.Environ(), "PGSERVICEFILE="+filepath.Join(dir, "service"), "PGPASSFILE="+filepath.Join(dir, "pgpass"),
			"PGSSLROOTCERT="+filepath.Join(dir, "ca"), "PGPASSWORD=", "PGUSER=", "PGHOST=", "PGDATABASE=")
		out, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "orders" {
			t.Errorf("psql with the service and pgpass: %v: %s", err, out)
		}
	})

	t.Run("Catalog", func(t *testing.T) {
		var login bool
		var limit int
		var config []string
		var comment string
		var member bool
		if err := db.QueryRow(ctx, `SELECT rolcanlogin, rolconnlimit, coalesce(rolconfig, '{}'), shobj_description(oid, 'pg_authid'),
			pg_has_role('orders', 'readers', 'MEMBER') FROM pg_roles WHERE rolname = 'orders'`).Scan(&login, &limit, &config, &comment, &member); err != nil {
			t.Fatal(err)
		}
		if !login || limit != 5 || strings.Join(config, ",") != "statement_timeout=5s" || !member {
			t.Errorf("role in catalog: login %t, limit %d, config %v, member of readers %t", login, limit, config, member)
		}
		providertest.CheckMarked(t, comment, "orders service", got.UID)
		if got.Status.AtProvider.InstanceUID != string(main.UID) || got.Status.AtProvider.SystemIdentifier == "" {
			t.Errorf("binding not recorded: %+v", got.Status.AtProvider)
		}
		if meta := got.GetAnnotations()["crossplane.io/external-name"]; meta != "orders" {
			t.Errorf("external name = %q, want orders", meta)
		}
	})

	t.Run("NoDDLWhenUpToDate", func(t *testing.T) {
		before := env.ServerLogLen(t)
		time.Sleep(7 * time.Second) // About three polls.
		log := env.ServerLog(t, before)
		if n := strings.Count(log, "LEFT JOIN pg_catalog.pg_roles r ON r.rolname"); n < 2 {
			t.Fatalf("only %d observations in 7s; the poll is not running", n)
		}
		for _, ddl := range []string{"ALTER ROLE", "CREATE ROLE", "COMMENT ON", "GRANT ", "REVOKE "} {
			if strings.Contains(log, ddl) {
				t.Errorf("an up-to-date role issued %s:\n%s", ddl, log)
			}
		}
	})

	t.Run("DriftRepaired", func(t *testing.T) {
		if _, err := db.Exec(ctx, `ALTER ROLE orders CONNECTION LIMIT 1 NOLOGIN; REVOKE readers FROM orders; ALTER ROLE orders RESET statement_timeout`); err != nil {
			t.Fatal(err)
		}
		err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
			var login, member bool
			var limit int
			var config []string
			err := db.QueryRow(ctx, `SELECT rolcanlogin, rolconnlimit, coalesce(rolconfig, '{}'), pg_has_role('orders', 'readers', 'MEMBER')
				FROM pg_roles WHERE rolname = 'orders'`).Scan(&login, &limit, &config, &member)
			return err == nil && login && limit == 5 && member && len(config) == 1, err
		})
		if err != nil {
			t.Fatalf("drift was not repaired: %v", err)
		}
	})

	t.Run("OnlyItsOwnMembershipsRevoked", func(t *testing.T) {
		// A membership granted by other means (a PostgreSQLGrant, a person)
		// is not the Role's to revoke; one it listed is, once unlisted.
		if _, err := db.Exec(ctx, "CREATE ROLE auditors NOLOGIN; GRANT auditors TO orders"); err != nil {
			t.Fatal(err)
		}
		cur := &v1alpha1.PostgreSQLRole{}
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), cur); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"readers"}, cur.Status.AtProvider.AppliedMemberOf); diff != "" {
			t.Errorf("status.atProvider.appliedMemberOf (-want +got):\n%s", diff)
		}
		orig := cur.DeepCopy()
		cur.Spec.ForProvider.MemberOf = nil
		if err := env.Kube.Patch(ctx, cur, client.MergeFrom(orig)); err != nil {
			t.Fatal(err)
		}
		err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
			var readers bool
			err := db.QueryRow(ctx, "SELECT pg_has_role('orders', 'readers', 'MEMBER')").Scan(&readers)
			return err == nil && !readers, err
		})
		if err != nil {
			t.Fatalf("the unlisted membership was not revoked: %v", err)
		}
		time.Sleep(3 * time.Second) // More polls.
		var auditors bool
		if err := db.QueryRow(ctx, "SELECT pg_has_role('orders', 'auditors', 'MEMBER')").Scan(&auditors); err != nil || !auditors {
			t.Errorf("a membership the Role never listed was revoked (member %t, err %v)", auditors, err)
		}
	})

	t.Run("PasswordNeverLeaks", func(t *testing.T) {
		pw := string(ordersSecret(ctx, t)["password"])
		log, err := env.Postgres.Log()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(log), "CREATE ROLE \"orders\"") {
			t.Fatal("the server log lacks the CREATE ROLE: log_statement=all was not in effect")
		}
		if strings.Contains(string(log), pw) {
			t.Error("the password appears in the server log")
		}
		assertNotInObjects(ctx, t, r, pw)
	})

	t.Run("RotationOnDemand", func(t *testing.T) {
		old := ordersSecret(ctx, t)
		cur := &v1alpha1.PostgreSQLRole{}
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), cur); err != nil {
			t.Fatal(err)
		}
		orig := cur.DeepCopy()
		meta := cur.GetAnnotations()
		meta[v1alpha1.AnnotationRotatePassword] = "2026-11-29T00:00:00Z"
		cur.SetAnnotations(meta)
		if err := env.Kube.Patch(ctx, cur, client.MergeFrom(orig)); err != nil {
			t.Fatal(err)
		}
		var fresh map[string][]byte
		err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
			fresh = ordersSecret(ctx, t)
			if string(fresh["password"]) == string(old["password"]) {
				return false, nil
			}
			_, err := loginWith(ctx, fresh)
			return err == nil, err
		})
		if err != nil {
			t.Fatalf("rotation: %v", err)
		}
		if _, err := loginWith(ctx, old); err == nil {
			t.Error("the old password still logs in after a rotation")
		}
	})

	t.Run("DeleteDrops", func(t *testing.T) {
		if err := env.Kube.Delete(ctx, r); err != nil {
			t.Fatal(err)
		}
		waitGone(ctx, t, r)
		var n int
		if err := db.QueryRow(ctx, "SELECT count(*) FROM pg_roles WHERE rolname = 'orders'").Scan(&n); err != nil || n != 0 {
			t.Errorf("role still exists after deleting with the Delete policy (count %d, err %v)", n, err)
		}
	})
}

func TestRoleRetainedByDefault(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	db := admin(ctx, t)
	r := newRole("kept")
	if err := env.Kube.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	waitCondition(ctx, t, r, corev1.ConditionTrue, xpv2.ReasonAvailable)
	if err := env.Kube.Delete(ctx, r); err != nil {
		t.Fatal(err)
	}
	waitGone(ctx, t, r)
	var n int
	if err := db.QueryRow(ctx, "SELECT count(*) FROM pg_roles WHERE rolname = 'kept'").Scan(&n); err != nil || n != 1 {
		t.Errorf("the role was dropped although the default policy retains it (count %d, err %v)", n, err)
	}
}

func TestRoleDropBlockedByOwnedObjects(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	db := admin(ctx, t)
	r := newRole("owner", func(r *v1alpha1.PostgreSQLRole) {
		r.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
	})
	if err := env.Kube.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	waitCondition(ctx, t, r, corev1.ConditionTrue, xpv2.ReasonAvailable)
	if _, err := db.Exec(ctx, "CREATE TABLE owned_by_owner (); ALTER TABLE owned_by_owner OWNER TO owner"); err != nil {
		t.Fatal(err)
	}
	if err := env.Kube.Delete(ctx, r); err != nil {
		t.Fatal(err)
	}
	got := &v1alpha1.PostgreSQLRole{}
	err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), got); err != nil {
			return false, err
		}
		return strings.Contains(got.GetCondition(xpv2.TypeSynced).Message, "owner of table public.owned_by_owner"), nil
	})
	if err != nil {
		t.Fatalf("the blocked drop does not say what blocks it: %v; Synced: %+v", err, got.GetCondition(xpv2.TypeSynced))
	}
	// And a Warning event on the resource says so, for kubectl describe.
	err = providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		events := &corev1.EventList{}
		if err := env.Kube.List(ctx, events, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.InvolvedObject.UID == got.UID && e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "owner of table public.owned_by_owner") {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("no Warning event says why the clean-up failed: %v", err)
	}
	if _, err := db.Exec(ctx, "DROP TABLE owned_by_owner"); err != nil {
		t.Fatal(err)
	}
	// The retry is backing off; any change to the object retries at once.
	orig := got.DeepCopy()
	got.SetAnnotations(map[string]string{"test/retry": "now"})
	if err := env.Kube.Patch(ctx, got, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	waitGone(ctx, t, r)
}

func TestRoleConflictWithUnmarkedRole(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	db := admin(ctx, t)
	if _, err := db.Exec(ctx, "CREATE ROLE somebody_elses LOGIN CONNECTION LIMIT 3 PASSWORD 'theirs-123'"); err != nil {
		t.Fatal(err)
	}
	r := newRole("somebody-elses", func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.Name = ptr.To("somebody_elses") })
	if err := env.Kube.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	got := waitCondition(ctx, t, r, corev1.ConditionFalse, v1alpha1.ReasonConflict)
	msg := got.GetCondition(xpv2.TypeReady).Message
	for _, want := range []string{"was not created by this PostgreSQLRole", "Confirmed", "Uncertain", "Nothing was changed"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Conflict message %q does not say %q", msg, want)
		}
	}
	var limit int
	var comment *string
	if err := db.QueryRow(ctx, "SELECT rolconnlimit, shobj_description(oid, 'pg_authid') FROM pg_roles WHERE rolname = 'somebody_elses'").Scan(&limit, &comment); err != nil {
		t.Fatal(err)
	}
	if limit != 3 || comment != nil {
		t.Errorf("the existing role was touched: limit %d, comment %v", limit, comment)
	}
	if _, err := loginWith(ctx, map[string][]byte{
		"host": []byte(env.Postgres.Host), "hostaddr": []byte(env.Postgres.Hostaddr), "port": []byte(fmt.Sprint(env.Postgres.Port)),
		"database": []byte("postgres"), "sslmode": []byte("verify-full"), "ca.crt": env.Postgres.CA.CertPEM,
		"username": []byte("somebody_elses"), "password": []byte("theirs-123"),
	}); err != nil {
		t.Errorf("the existing role's password was changed: %v", err)
	}
	// Deleting the Conflicted resource releases it and drops nothing, even
	// with the Delete policy.
	orig := got.DeepCopy()
	got.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
	if err := env.Kube.Patch(ctx, got, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	if err := env.Kube.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	waitGone(ctx, t, r)
	var n int
	if err := db.QueryRow(ctx, "SELECT count(*) FROM pg_roles WHERE rolname = 'somebody_elses'").Scan(&n); err != nil || n != 1 {
		t.Errorf("deleting a Conflicted PostgreSQLRole dropped the role it did not create (count %d, err %v)", n, err)
	}
}

// TestRoleImportObserveOnly: a login role made by hand, imported read-only,
// is observed and never changed, and publishes nothing.
func TestRoleImportObserveOnly(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	db := admin(ctx, t)
	if _, err := db.Exec(ctx, "CREATE ROLE imported LOGIN PASSWORD 'imported-pw-1'"); err != nil {
		t.Fatal(err)
	}
	r := newRole("imported", func(r *v1alpha1.PostgreSQLRole) {
		r.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
		r.Spec.ForProvider.ConnectionLimit = ptr.To[int32](9)
	})
	if err := env.Kube.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	// Existence is not Ready: an import is observed, never delivered.
	seen := waitCondition(ctx, t, r, corev1.ConditionFalse, v1alpha1.ReasonObserveOnly)
	time.Sleep(3 * time.Second) // At least one more poll.
	var limit int
	var comment *string
	if err := db.QueryRow(ctx, "SELECT rolconnlimit, shobj_description(oid, 'pg_authid') FROM pg_roles WHERE rolname = 'imported'").Scan(&limit, &comment); err != nil {
		t.Fatal(err)
	}
	if limit != -1 || comment != nil {
		t.Errorf("an Observe-only import changed the role: limit %d, comment %v", limit, comment)
	}
	// Nothing is published: no host, user or password of a role whose
	// credentials the provider does not hold (crossplane-runtime may write
	// an empty Secret; it carries no key).
	s := &corev1.Secret{}
	err := env.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "imported-conn"}, s)
	if client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	if len(s.Data) > 0 {
		keys := make([]string, 0, len(s.Data))
		for k := range s.Data {
			keys = append(keys, k)
		}
		t.Errorf("the Observe-only import published %v", keys)
	}
	if msg := seen.GetCondition(xpv2.TypeReady).Message; !strings.Contains(msg, "publishes no connection details") {
		t.Errorf("the ObserveOnly condition does not say why there are no credentials: %q", msg)
	}
}

func TestRoleValidation(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	bad := newRole("not-an-identifier")
	err := env.Kube.Create(ctx, bad)
	if err == nil || !strings.Contains(err.Error(), "metadata.name is not a valid PostgreSQL identifier") {
		t.Errorf("a Role named not-an-identifier without forProvider.name: got %v", err)
	}
	named := newRole("named-role", func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.Name = ptr.To("named_role") })
	if err := env.Kube.Create(ctx, named); err != nil {
		t.Fatalf("forProvider.name should make any metadata.name valid: %v", err)
	}
	orig := named.DeepCopy()
	named.Spec.ForProvider.Name = ptr.To("renamed_role")
	err = env.Kube.Patch(ctx, named, client.MergeFrom(orig))
	if err == nil || !strings.Contains(err.Error(), "forProvider.name cannot be changed") {
		t.Errorf("changing forProvider.name: got %v", err)
	}
	if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(named), named); err != nil {
		t.Fatal(err)
	}
	orig = named.DeepCopy()
	named.Spec.InstanceRef.Name = "elsewhere"
	err = env.Kube.Patch(ctx, named, client.MergeFrom(orig))
	if err == nil || !strings.Contains(err.Error(), "instanceRef cannot be changed") {
		t.Errorf("changing instanceRef: got %v", err)
	}
	if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(named), named); err != nil {
		t.Fatal(err)
	}
	if want := (xpv2.ManagementPolicies{"Observe", "Create", "Update", "LateInitialize"}); fmt.Sprint(named.Spec.ManagementPolicies) != fmt.Sprint(want) {
		t.Errorf("default managementPolicies = %v, want %v (Delete left out)", named.Spec.ManagementPolicies, want)
	}
}

func waitGone(ctx context.Context, t *testing.T, r *v1alpha1.PostgreSQLRole) {
	t.Helper()
	env.Gone(ctx, t, r)
}

// assertNotInObjects fails when secret appears in the resource, its status
// or the events in its namespace.
func assertNotInObjects(ctx context.Context, t *testing.T, r *v1alpha1.PostgreSQLRole, secret string) {
	t.Helper()
	got := &v1alpha1.PostgreSQLRole{}
	if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), got); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	events := &corev1.EventList{}
	if err := env.Kube.List(ctx, events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	eb, _ := json.Marshal(events)
	if strings.Contains(string(b), secret) || strings.Contains(string(eb), secret) {
		t.Error("the password appears in the PostgreSQLRole or in events")
	}
	// Everything the provider logged so far, at every level.
	if strings.Contains(env.ProviderLog(), secret) {
		t.Error("the password appears in the provider's log")
	}
}

// TestRoleConflictWhenInstanceReplaced: an Instance deleted (its finalizer
// forced off) and created again under the same name is not the Instance
// the role was bound to.
func TestRoleConflictWhenInstanceReplaced(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	in, err := env.Instance(ctx, "replaced")
	if err != nil {
		t.Fatal(err)
	}
	r := newRole("bound", func(r *v1alpha1.PostgreSQLRole) { r.Spec.InstanceRef.Name = "replaced" })
	if err := env.Kube.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	waitCondition(ctx, t, r, corev1.ConditionTrue, xpv2.ReasonAvailable)

	// Force the Instance away, as an admin stripping its finalizer would.
	if err := env.Kube.Delete(ctx, in); err != nil {
		t.Fatal(err)
	}
	if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(in), in); err != nil {
		t.Fatal(err)
	}
	orig := in.DeepCopy()
	in.SetFinalizers(nil)
	if err := env.Kube.Patch(ctx, in, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	again := &v1alpha1.PostgreSQLInstance{ObjectMeta: metav1.ObjectMeta{Name: "replaced"}, Spec: orig.Spec}
	err = providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		err := env.Kube.Create(ctx, again)
		return err == nil, client.IgnoreAlreadyExists(err)
	})
	if err != nil {
		t.Fatal(err)
	}
	got := waitCondition(ctx, t, r, corev1.ConditionFalse, v1alpha1.ReasonConflict)
	if msg := got.GetCondition(xpv2.TypeReady).Message; !strings.Contains(msg, `PostgreSQLInstance "replaced" was deleted and created again`) {
		t.Errorf("Conflict message: %s", msg)
	}
}

// TestRoleConflictWhenServerChanges: pointing an Instance at a different
// server makes the roles bound to the old one report Conflict, and nothing
// is created on the new one.
func TestRoleConflictWhenServerChanges(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	in, err := env.Instance(ctx, "moving")
	if err != nil {
		t.Fatal(err)
	}
	r := newRole("mover", func(r *v1alpha1.PostgreSQLRole) { r.Spec.InstanceRef.Name = "moving" })
	if err := env.Kube.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	bound := waitCondition(ctx, t, r, corev1.ConditionTrue, xpv2.ReasonAvailable)
	if bound.Status.AtProvider.SystemIdentifier == "" {
		t.Fatal("no system identifier recorded")
	}

	other, err := pgserver.Start(ctx, pgserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Stop() //nolint:errcheck // Test cleanup.
	for name, data := range map[string]map[string][]byte{
		"moving-admin": {"username": []byte(other.AdminUser), "password": []byte(other.AdminPassword)},
		"moving-ca":    {"ca.crt": other.CA.CertPEM},
	} {
		s := &corev1.Secret{}
		if err := env.Kube.Get(ctx, client.ObjectKey{Namespace: providertest.Namespace, Name: name}, s); err != nil {
			t.Fatal(err)
		}
		s.Data = data
		if err := env.Kube.Update(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(in), in); err != nil {
		t.Fatal(err)
	}
	orig := in.DeepCopy()
	in.Spec.Endpoint.Port = int32(other.Port)
	if err := env.Kube.Patch(ctx, in, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	got := waitCondition(ctx, t, r, corev1.ConditionFalse, v1alpha1.ReasonConflict)
	if msg := got.GetCondition(xpv2.TypeReady).Message; !strings.Contains(msg, "reaches a server with system identifier") {
		t.Errorf("Conflict message: %s", msg)
	}
	conn, err := other.Connect(ctx, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx) //nolint:errcheck // Test.
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_roles WHERE rolname = 'mover'").Scan(&n); err != nil || n != 0 {
		t.Errorf("the role was created on the new server (count %d, err %v)", n, err)
	}
}

// TestRolePasswordFromSecret: a role takes its password from
// passwordSecretRef, publishes it, and follows changes of that Secret.
func TestRolePasswordFromSecret(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	given := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "given-pw", Namespace: ns},
		Data:       map[string][]byte{"pw": []byte("first-Given-password-1")},
	}
	if err := env.Kube.Create(ctx, given); err != nil {
		t.Fatal(err)
	}
	r := newRole("given", func(r *v1alpha1.PostgreSQLRole) {
		r.Spec.ForProvider.PasswordSecretRef = &v1alpha1.SecretKeyReference{Name: "given-pw", Key: "pw"}
	})
	if err := env.Kube.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	waitCondition(ctx, t, r, corev1.ConditionTrue, xpv2.ReasonAvailable)
	secretOf := func() map[string][]byte {
		s := &corev1.Secret{}
		if err := env.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "given-conn"}, s); err != nil {
			return nil
		}
		return s.Data
	}
	err := providertest.Wait(ctx, 20*time.Second, func(ctx context.Context) (bool, error) {
		d := secretOf()
		if string(d["password"]) != "first-Given-password-1" {
			return false, nil
		}
		_, err := loginWith(ctx, d)
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("the given password was not set and published: %v", err)
	}
	old := secretOf()

	given.Data["pw"] = []byte("second-Given-password-2")
	if err := env.Kube.Update(ctx, given); err != nil {
		t.Fatal(err)
	}
	err = providertest.Wait(ctx, 20*time.Second, func(ctx context.Context) (bool, error) {
		d := secretOf()
		if string(d["password"]) != "second-Given-password-2" {
			return false, nil
		}
		_, err := loginWith(ctx, d)
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("the changed password was not applied: %v", err)
	}
	if _, err := loginWith(ctx, old); err == nil {
		t.Error("the old password still logs in")
	}
}

// TestRolePasswordCheckedByLoginWithoutSuperuser: with an admin that is not
// a superuser (CREATEDB CREATEROLE), pg_authid cannot be read; the role is
// still created, its password verified by logging in as the role, and the
// role stays Ready and Synced across polls.
func TestRolePasswordCheckedByLoginWithoutSuperuser(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	env.ManagedServiceInstance(ctx, t, "creator", "creator_admin")
	r := newRole("viacreator", func(r *v1alpha1.PostgreSQLRole) { r.Spec.InstanceRef.Name = "creator" })
	if err := env.Kube.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	waitCondition(ctx, t, r, corev1.ConditionTrue, xpv2.ReasonAvailable)
	d := func() map[string][]byte {
		s := &corev1.Secret{}
		if err := env.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "viacreator-conn"}, s); err != nil {
			t.Fatal(err)
		}
		return s.Data
	}
	if _, err := loginWith(ctx, d()); err != nil {
		t.Fatalf("the published password does not log in: %v", err)
	}
	got := &v1alpha1.PostgreSQLRole{}
	if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), got); err != nil {
		t.Fatal(err)
	}
	if got.GetCondition(xpv2.TypeSynced).Status != corev1.ConditionTrue {
		t.Errorf("Synced = %+v", got.GetCondition(xpv2.TypeSynced))
	}
	// The admin's createrole_self_grant (16+) asks for SET and INHERIT on
	// what it creates; the provider turns it off for its CREATE ROLE.
	if n := env.ActingMemberships(ctx, t, "creator_admin", "viacreator"); n != 0 {
		t.Errorf("the admin holds %d acting membership(s) of the role the provider created", n)
	}
}

// TestRoleOwnedObjectsOnDelete: with Reassign, what the dropped role owned
// in a managed database goes to the heir; with Drop, it is dropped; the
// role goes either way. Without reassignOwnedTo, Reassign is refused.
func TestRoleOwnedObjectsOnDelete(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	db := admin(ctx, t)
	d := &v1alpha1.PostgreSQLDatabase{
		ObjectMeta: metav1.ObjectMeta{Name: "inherited", Namespace: ns},
		Spec:       v1alpha1.PostgreSQLDatabaseSpec{InstanceRef: v1alpha1.InstanceReference{Name: main.Name}},
	}
	if err := env.Kube.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	if err := env.WaitForReady(ctx, d, corev1.ConditionTrue, xpv2.ReasonAvailable, time.Minute); err != nil {
		t.Fatal(err)
	}
	// The heir is the Instance admin's own (as a DBA on a managed service
	// would make it): a CREATEROLE admin acts only as roles it administers.
	env.AdminSQL(ctx, t, "postgres", "CREATE ROLE heir; CREATE ROLE bystander")
	all := xpv2.ManagementPolicies{xpv2.ManagementActionAll}
	leaver := newRole("leaver", func(r *v1alpha1.PostgreSQLRole) {
		r.Spec.ManagementPolicies = all
		r.Spec.OwnedObjectsOnDelete = v1alpha1.OwnedObjectsReassign
		r.Spec.ReassignOwnedTo = "heir"
	})
	dropper := newRole("dropper", func(r *v1alpha1.PostgreSQLRole) {
		r.Spec.ManagementPolicies = all
		r.Spec.OwnedObjectsOnDelete = v1alpha1.OwnedObjectsDrop
	})
	for _, r := range []*v1alpha1.PostgreSQLRole{leaver, dropper} {
		if err := env.Kube.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
		waitCondition(ctx, t, r, corev1.ConditionTrue, xpv2.ReasonAvailable)
	}
	inherited, err := env.Postgres.Connect(ctx, "inherited")
	if err != nil {
		t.Fatal(err)
	}
	defer inherited.Close(ctx) //nolint:errcheck // Test.
	for _, stmt := range []string{
		"CREATE TABLE kept_data (id int)", "ALTER TABLE kept_data OWNER TO leaver",
		// Another role's table, on which it granted both roles SELECT:
		// DROP OWNED revokes that as the grantor.
		"CREATE TABLE shared (id int)", "ALTER TABLE shared OWNER TO bystander", "GRANT SELECT ON shared TO leaver, dropper",
		"CREATE TABLE doomed (id int)", "ALTER TABLE doomed OWNER TO dropper",
	} {
		if _, err := inherited.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	for _, r := range []*v1alpha1.PostgreSQLRole{leaver, dropper} {
		if err := env.Kube.Delete(ctx, r); err != nil {
			t.Fatal(err)
		}
		waitGone(ctx, t, r)
	}
	var roles int
	if err := db.QueryRow(ctx, "SELECT count(*) FROM pg_roles WHERE rolname IN ('leaver', 'dropper')").Scan(&roles); err != nil || roles != 0 {
		t.Errorf("roles left: %d (err %v)", roles, err)
	}
	var owner string
	if err := inherited.QueryRow(ctx, "SELECT tableowner FROM pg_tables WHERE tablename = 'kept_data'").Scan(&owner); err != nil || owner != "heir" {
		t.Errorf("kept_data is owned by %q (err %v), want heir", owner, err)
	}
	var doomed int
	if err := inherited.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'doomed'").Scan(&doomed); err != nil || doomed != 0 {
		t.Errorf("the Drop policy left doomed in place (count %d, err %v)", doomed, err)
	}
	if n := env.ActingMemberships(ctx, t, env.AdminUser(), "heir", "bystander"); n != 0 {
		t.Errorf("the admin kept %d membership(s) of the roles it acted as", n)
	}

	bad := newRole("noheir", func(r *v1alpha1.PostgreSQLRole) { r.Spec.OwnedObjectsOnDelete = v1alpha1.OwnedObjectsReassign })
	if err := env.Kube.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "ownedObjectsOnDelete Reassign needs reassignOwnedTo") {
		t.Errorf("Reassign without reassignOwnedTo: got %v", err)
	}
}

// TestRoleValidUntilPassed: a login role whose validUntil has passed says
// so, and the provider does not re-set its password at every poll (with a
// non-superuser admin it checks passwords by logging in, which an expired
// role fails whatever the password). Moving validUntil forward lets it log
// in again with the password it had.
func TestRoleValidUntilPassed(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	if err := env.Postgres.SetLogStatement(ctx, "all"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Postgres.SetLogStatement(ctx, "none") })
	env.ManagedServiceInstance(ctx, t, "expiry", "expiry_admin")

	// Each step runs for the four roles (two Instances, two rotation
	// modes) together: one provider restart and one quiet window serve
	// them all.
	var roles []*v1alpha1.PostgreSQLRole
	past := &metav1.Time{Time: time.Now().Add(-time.Hour).Truncate(time.Second)}
	for _, instance := range []string{main.Name, "expiry"} {
		for _, mode := range []v1alpha1.RotationMode{v1alpha1.RotationInPlace, v1alpha1.RotationAlternating} {
			r := newRole(strings.ToLower("expired"+instance+string(mode)), func(r *v1alpha1.PostgreSQLRole) {
				r.Spec.InstanceRef.Name = instance
				r.Spec.ForProvider.ValidUntil = past
				r.Spec.PasswordRotation = &v1alpha1.PasswordRotation{Mode: mode}
				if mode == v1alpha1.RotationAlternating {
					r.Spec.ForProvider.ValidUntil = nil
				}
			})
			env.Create(ctx, t, r)
			roles = append(roles, r)
		}
	}
	expired := make([]*v1alpha1.PostgreSQLRole, len(roles))
	for _, r := range roles {
		if r.Spec.PasswordRotation.Mode == v1alpha1.RotationAlternating {
			// An alternating role expires once its first login exists.
			waitSecretUser(ctx, t, r.Spec.WriteConnectionSecretToReference.Name, r.RoleName()+"_a")
			providertest.Update(ctx, t, env, r, func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.ValidUntil = past })
		}
	}
	for i, r := range roles {
		expired[i] = waitCondition(ctx, t, r, corev1.ConditionFalse, v1alpha1.ReasonPasswordExpired)
		if msg := expired[i].GetCondition(xpv2.TypeReady).Message; !strings.Contains(msg, "validUntil") {
			t.Errorf("%s: Ready message %q does not name validUntil", r.Name, msg)
		}
	}
	// A provider started afresh has verified no password yet: a login
	// check would be refused and the password re-set at every poll.
	if err := env.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	from := env.ServerLogLen(t)
	time.Sleep(5 * time.Second) // Two polls.
	l := env.ServerLog(t, from)
	for _, r := range roles {
		if strings.Contains(l, `"`+r.RoleName()) {
			t.Errorf("%s: statements about the expired role while nothing changed:\n%s", r.Name, l)
		}
		if _, err := loginWith(ctx, connSecret(ctx, t, r)); err == nil {
			t.Errorf("%s: an expired role logged in", r.Name)
		}
	}

	for _, got := range expired {
		providertest.Update(ctx, t, env, got, func(got *v1alpha1.PostgreSQLRole) {
			got.Spec.ForProvider.ValidUntil = &metav1.Time{Time: time.Now().Add(time.Hour).Truncate(time.Second)}
		})
	}
	for _, r := range roles {
		waitCondition(ctx, t, r, corev1.ConditionTrue, xpv2.ReasonAvailable)
		if _, err := loginWith(ctx, connSecret(ctx, t, r)); err != nil {
			t.Errorf("%s: the role does not log in with its Secret once validUntil moved forward: %v", r.Name, err)
		}
	}
}

// connSecret returns the data of r's connection Secret.
func connSecret(ctx context.Context, t *testing.T, r *v1alpha1.PostgreSQLRole) map[string][]byte {
	t.Helper()
	d, err := env.ConnectionSecret(ctx, r.Namespace, r.Spec.WriteConnectionSecretToReference.Name)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestHeirOutlivesWhoHandsToIt: a role that another of its namespace hands
// its objects to on delete (reassignOwnedTo) is deleted first, as a
// tenant's claim deletes both at once in no order. The heir's resource is
// held ("deletion held") until the other is gone, so the hand-over still
// passes the privilege boundary (which knows the heir as the namespace's
// only while its resource exists) and finds the heir on the server; then
// both go. Without the hold the other could never be deleted. A retained
// heir keeps the objects; a heir deleted with its resource is dropped once
// it owns nothing (the test drops the table it received: PostgreSQL
// refuses to drop a role that owns objects).
func TestHeirOutlivesWhoHandsToIt(t *testing.T) {
	suite.Matrix(t)
	for name, tc := range map[string]struct {
		policies xpv2.ManagementPolicies
		retained bool
	}{
		"RetainedHeir": {retained: true},
		"DeletedHeir":  {policies: xpv2.ManagementPolicies{xpv2.ManagementActionAll}},
	} {
		t.Run(name, func(t *testing.T) { heirOutlives(t, strings.ToLower(name), tc.policies, tc.retained) })
	}
}

func heirOutlives(t *testing.T, prefix string, policies xpv2.ManagementPolicies, retained bool) {
	ctx := context.Background()
	db := admin(ctx, t)
	estate, bequeather, table := prefix+"estate", prefix+"bequeather", prefix+"bequest"
	heir := newRole(estate, func(r *v1alpha1.PostgreSQLRole) {
		r.Spec.ForProvider.Login = ptr.To(false)
		r.Spec.WriteConnectionSecretToReference = nil
		if policies != nil {
			r.Spec.ManagementPolicies = policies
		}
	})
	leaver := newRole(bequeather, func(r *v1alpha1.PostgreSQLRole) {
		r.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
		r.Spec.OwnedObjectsOnDelete = v1alpha1.OwnedObjectsReassign
		r.Spec.ReassignOwnedTo = estate
	})
	t.Cleanup(func() {
		env.SQL(context.WithoutCancel(ctx), t, "postgres", fmt.Sprintf("DROP TABLE IF EXISTS %s; DROP ROLE IF EXISTS %s; DROP ROLE IF EXISTS %s", table, bequeather, estate))
	})
	for _, r := range []*v1alpha1.PostgreSQLRole{heir, leaver} {
		env.Create(ctx, t, r)
		waitCondition(ctx, t, r, corev1.ConditionTrue, xpv2.ReasonAvailable)
	}
	env.SQL(ctx, t, "postgres", fmt.Sprintf("CREATE TABLE %s (id int); ALTER TABLE %s OWNER TO %s", table, table, bequeather))

	if err := env.Kube.Delete(ctx, heir); err != nil {
		t.Fatal(err)
	}
	err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		got := &v1alpha1.PostgreSQLRole{}
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(heir), got); err != nil {
			return false, err
		}
		return strings.Contains(got.GetCondition(xpv2.TypeSynced).Message, "deletion held: PostgreSQLRole "+bequeather), nil
	})
	if err != nil {
		t.Fatalf("the heir's deletion is not held for the role that hands it its objects: %v", err)
	}
	if !env.Holds(ctx, t, fmt.Sprintf("EXISTS (SELECT FROM pg_roles WHERE rolname = '%s')", estate)) {
		t.Fatal("the held heir was dropped on the server before the hand-over")
	}
	if err := env.Kube.Delete(ctx, leaver); err != nil {
		t.Fatal(err)
	}
	waitGone(ctx, t, leaver)
	var owner string
	if err := db.QueryRow(ctx, "SELECT tableowner FROM pg_tables WHERE tablename = $1", table).Scan(&owner); err != nil || owner != estate {
		t.Errorf("the bequeathed table is owned by %q (err %v), want the heir", owner, err)
	}
	if !retained {
		// The heir now owns the table: PostgreSQL refuses to drop it, and
		// says so; the table's fate is a person's call.
		env.SQL(ctx, t, "postgres", "DROP TABLE "+table)
	}
	start := time.Now()
	waitGone(ctx, t, heir)
	// Woken by the other's deletion, not at its next retry (a minute).
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the heir went %s after the role it waited for", took.Round(time.Second))
	}
	if env.Holds(ctx, t, fmt.Sprintf("EXISTS (SELECT FROM pg_roles WHERE rolname = '%s')", estate)) != retained {
		t.Errorf("the heir's role on the server: want retained %t", retained)
	}
	if env.Holds(ctx, t, fmt.Sprintf("EXISTS (SELECT FROM pg_roles WHERE rolname = '%s')", bequeather)) {
		t.Error("the role that handed its objects over was not dropped")
	}
}

// TestAnotherNamespaceCannotHoldARole: the hold of TestHeirOutlivesWhoHandsToIt
// looks only at the heir's own namespace. A role in another namespace that
// names this namespace's role in reassignOwnedTo (the boundary refuses it
// anyway) cannot keep that role from being deleted.
func TestAnotherNamespaceCannotHoldARole(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	if err := env.Namespace(ctx, "squatter"); err != nil {
		t.Fatal(err)
	}
	target := newRole("coveted", func(r *v1alpha1.PostgreSQLRole) {
		r.Spec.ForProvider.Login = ptr.To(false)
		r.Spec.WriteConnectionSecretToReference = nil
	})
	squatter := newRole("squat", func(r *v1alpha1.PostgreSQLRole) {
		r.Namespace = "squatter"
		r.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
		r.Spec.OwnedObjectsOnDelete = v1alpha1.OwnedObjectsReassign
		r.Spec.ReassignOwnedTo = "coveted"
		r.Spec.WriteConnectionSecretToReference = nil
	})
	t.Cleanup(func() {
		// The squatter's own deletion is refused (its heir is another
		// namespace's), and while it tries, the provider alters squat:
		// a DROP ROLE sent meanwhile fails with "tuple concurrently
		// updated". Observed read-only, its resource goes without
		// touching the server; then the roles are dropped by hand.
		ctx := context.WithoutCancel(ctx)
		providertest.Update(ctx, t, env, squatter, func(r *v1alpha1.PostgreSQLRole) {
			r.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
		})
		_ = env.Kube.Delete(ctx, squatter)
		waitGone(ctx, t, squatter)
		env.SQL(ctx, t, "postgres", "DROP ROLE IF EXISTS coveted; DROP ROLE IF EXISTS squat")
	})
	env.Create(ctx, t, target, squatter)
	waitCondition(ctx, t, target, corev1.ConditionTrue, xpv2.ReasonAvailable)
	if err := env.Kube.Delete(ctx, target); err != nil {
		t.Fatal(err)
	}
	waitGone(ctx, t, target)
}

// TestConnectionSecretWrittenOnce: a login role's connection Secret is
// written once on its way to Ready, with everything in it: the generated
// password is staged in it before CREATE ROLE, and nothing is published
// from the observation before the create (crossplane-runtime's publisher
// wrote an empty Secret first: two writes, and a window in which an
// application mounting it saw no keys at all). A role the provider may
// not create (no Create in its management policies), and that does not
// exist, gets no Secret: there is nothing to hand out.
func TestConnectionSecretWrittenOnce(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	wc, err := client.NewWithWatch(env.ControlPlane.Config, client.Options{Scheme: env.Kube.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(ctx, &corev1.SecretList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	once := newRole("once")
	never := newRole("never", func(r *v1alpha1.PostgreSQLRole) {
		// A set crossplane-runtime supports (one it does not is never
		// observed at all, and would prove nothing here).
		r.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve, xpv2.ManagementActionUpdate}
	})
	env.Create(ctx, t, once, never)
	got := waitCondition(ctx, t, once, corev1.ConditionTrue, xpv2.ReasonAvailable)
	// Let what the next reconciles would write arrive.
	time.Sleep(3 * time.Second)

	// The role that is not created is observed (and its update refused,
	// the role missing): the path that could hand out a password did run.
	n := &v1alpha1.PostgreSQLRole{}
	if err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		err := env.Kube.Get(ctx, client.ObjectKeyFromObject(never), n)
		return err == nil && n.GetCondition(xpv2.TypeSynced).Status == corev1.ConditionFalse, err
	}); err != nil {
		t.Fatalf("the role without Create was never observed: %v (Synced: %q)", err, n.GetCondition(xpv2.TypeSynced).Message)
	}
	var neverWrites int

	var writes []string
	var first map[string][]byte
	for drained := false; !drained; {
		select {
		case ev := <-w.ResultChan():
			s, ok := ev.Object.(*corev1.Secret)
			if !ok {
				continue
			}
			switch s.Name {
			case "once-conn":
				if len(writes) == 0 {
					first = s.Data
				}
				writes = append(writes, string(ev.Type))
			case "never-conn":
				neverWrites++
				if len(s.Data["password"]) > 0 {
					t.Errorf("a role the provider may not create was handed a password in its Secret (%s)", ev.Type)
				}
			}
		case <-time.After(time.Second):
			// The watch hands over one event at a time, as it decodes
			// them: a second without one is the end of what was written.
			drained = true
		}
	}
	if diff := cmp.Diff([]string{"ADDED"}, writes); diff != "" {
		t.Errorf("writes of the connection Secret on the way to Ready: -want +got:\n%s", diff)
	}
	if neverWrites > 0 {
		t.Errorf("%d writes of the Secret of a role that does not exist and may not be created, want none", neverWrites)
	}
	final := &corev1.Secret{}
	if err := env.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "once-conn"}, final); err != nil {
		t.Fatal(err)
	}
	if len(final.Data["password"]) == 0 {
		t.Fatal("the connection Secret holds no password")
	}
	// Key names only: the values are credentials, never printed.
	var differ []string
	for k, v := range final.Data {
		if !bytes.Equal(first[k], v) {
			differ = append(differ, k)
		}
	}
	slices.Sort(differ)
	if len(differ) > 0 || len(first) != len(final.Data) {
		t.Errorf("the Secret's first version is not what it holds at Ready: %d keys then, %d now; these differ or were missing: %v", len(first), len(final.Data), differ)
	}
	// The staged password is the role's.
	if user, err := loginWith(ctx, final.Data); err != nil || user != got.Status.AtProvider.Name {
		t.Errorf("logging in with the Secret: user %q, %v; want %q", user, err, got.Status.AtProvider.Name)
	}
	// Deleted, the Secret is written again by the next observation: the
	// role's own, of Crossplane's connection type, with a password that
	// logs in.
	if err := env.Kube.Delete(ctx, final); err != nil {
		t.Fatal(err)
	}
	again := &corev1.Secret{}
	if err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		err := env.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "once-conn"}, again)
		return err == nil && again.UID != final.UID && len(again.Data["password"]) > 0, client.IgnoreNotFound(err)
	}); err != nil {
		t.Fatalf("the deleted connection Secret was not written again: %v", err)
	}
	c := metav1.GetControllerOf(again)
	if c == nil || c.UID != once.GetUID() || c.Kind != v1alpha1.PostgreSQLRoleKind || again.Type != resource.SecretTypeConnection {
		t.Errorf("the Secret written again: controller %+v, type %q; want PostgreSQLRole %s (%s), %q", c, again.Type, once.Name, once.GetUID(), resource.SecretTypeConnection)
	}
	// The new password is staged in the Secret before the server is
	// changed (a crash in between leaves it where the next reconcile
	// reads it), so the Secret can be seen a moment before it logs in;
	// the same reconcile sets it on the server.
	var user string
	err = providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		var lerr error
		user, lerr = loginWith(ctx, again.Data)
		return lerr == nil, lerr
	})
	if err != nil || user != got.Status.AtProvider.Name {
		t.Errorf("logging in with the Secret written again: user %q, %v; want %q", user, err, got.Status.AtProvider.Name)
	}
}

// TestSharedRoleMembershipWithoutSet: memberOf a role the policy opens to
// every namespace gives the role those privileges, not the shared role's
// name to act under (SET ROLE), on PostgreSQL 16+; SET given by hand
// afterwards, a DBA's choice, is left alone, and nothing is planned. 15
// cannot withhold SET.
func TestSharedRoleMembershipWithoutSet(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	env.AdminSQL(ctx, t, "postgres", "CREATE ROLE shared_s NOLOGIN")
	var version int
	if err := admin(ctx, t).QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		t.Fatal(err)
	}
	v16 := version >= 160000
	r := newRole("members", func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.MemberOf = []string{"shared_s"} })
	env.Create(ctx, t, r)
	waitCondition(ctx, t, r, corev1.ConditionTrue, xpv2.ReasonAvailable)
	name := r.RoleName()
	if !env.Holds(ctx, t, fmt.Sprintf("pg_has_role('%s', 'shared_s', 'USAGE')", name)) {
		t.Fatal("the shared role's privileges are not held")
	}
	// 15 knows no SET privilege: there MEMBER is what SET ROLE needs.
	setPriv := "MEMBER"
	if v16 {
		setPriv = "SET"
	}
	canSet := fmt.Sprintf("pg_has_role('%s', 'shared_s', '%s')", name, setPriv)
	if got := env.Holds(ctx, t, canSet); got != !v16 {
		t.Fatalf("the member may SET ROLE shared_s: %t, want %t", got, !v16)
	}
	if !v16 {
		return
	}
	// A DBA gives SET (the grant is updated in place): the membership
	// exists, its options are not the role's to change.
	env.AdminSQL(ctx, t, "postgres", fmt.Sprintf("GRANT shared_s TO %s WITH SET TRUE", postgres.QuoteIdentifier(name)))
	time.Sleep(5 * time.Second)
	if !env.Holds(ctx, t, canSet) {
		t.Error("SET given by hand to an existing membership was taken away")
	}
	got := &v1alpha1.PostgreSQLRole{}
	if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), got); err != nil {
		t.Fatal(err)
	}
	if p := got.Status.AtProvider.Plan; p != nil {
		t.Errorf("a membership that exists plans statements: %+v", p)
	}
}
