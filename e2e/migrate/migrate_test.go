// Package migrate tests docs/migrate-from-provider-sql.md as written.
package migrate

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/fixture/controlplane"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
	"github.com/ayatori/provider-postgresql/internal/fixture/runbook"
)

const ns = "shop"

var env *providertest.Env

var suite = providertest.Suite(providertest.Options{PollInterval: 2 * time.Second, Instance: "main", Namespaces: append([]string{ns}, adoptNamespaces...)},
	func(e *providertest.Env) { env = e })

func TestMain(m *testing.M) { os.Exit(suite.Run(m)) }

// providerSQL is provider-sql's module, at the version tools/provider-sql
// pins (the peer make bench-peer runs).
const providerSQL = "github.com/crossplane-contrib/provider-sql"

// made is what provider-sql's controllers send for the resources the page
// migrates (its role, database, extension, schema and grant statements),
// by database.
var made = []struct{ database, sql string }{
	{"postgres", `CREATE ROLE "legacy_app" WITH NOSUPERUSER INHERIT NOCREATEDB NOCREATEROLE LOGIN NOREPLICATION NOBYPASSRLS PASSWORD 'kept-by-the-migration'`},
	{"postgres", `CREATE ROLE "legacy_reporting" WITH NOSUPERUSER INHERIT NOCREATEDB NOCREATEROLE NOLOGIN NOREPLICATION NOBYPASSRLS`},
	{"postgres", `CREATE DATABASE "legacy_orders" WITH OWNER "legacy_app"`},
	{"legacy_orders", `CREATE EXTENSION IF NOT EXISTS "pgcrypto"`},
	{"legacy_orders", `CREATE SCHEMA IF NOT EXISTS "legacy_sales" AUTHORIZATION "legacy_app"`},
	{"postgres", `GRANT CONNECT ON DATABASE "legacy_orders" TO "legacy_reporting"`},
}

// oids are the identities of what provider-sql made: a dropped and
// re-created object would have another.
const oids = `SELECT (SELECT oid FROM pg_roles WHERE rolname = 'legacy_app') || '/' ||
  (SELECT oid FROM pg_roles WHERE rolname = 'legacy_reporting') || '/' ||
  (SELECT oid FROM pg_database WHERE datname = 'legacy_orders')`

// TestMigrateFromProviderSQL follows docs/migrate-from-provider-sql.md as
// written, on objects made with provider-sql's statements and described
// by provider-sql resources in the API server (its CRDs, without its
// controller, so that what they say is what the page's steps make of
// them): the provider sends no statement from the first import to the
// end, every plan along the way is empty, the objects keep their OIDs,
// the hand-over's markers are the resources', the login's password still
// works, and the connection Secret outlives its provider-sql resource.
func TestMigrateFromProviderSQL(t *testing.T) {
	suite.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	guide, err := runbook.Read(filepath.Join(root, "docs", "migrate-from-provider-sql.md"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range guide {
		names = append(names, s.Name)
	}
	// The checks below follow these steps; a new step needs its checks.
	if diff := cmp.Diff([]string{"freeze", "import", "plans", "hand-over", "import-inside", "hand-over-inside", "retire"}, names); diff != "" {
		t.Fatalf("the page's steps changed (-checked +page):\n%s", diff)
	}

	for _, m := range made {
		env.SQL(ctx, t, m.database, m.sql)
	}
	var before string
	if err := env.Connect(ctx, t, "postgres").QueryRow(ctx, oids).Scan(&before); err != nil {
		t.Fatal(err)
	}
	legacyResources(ctx, t)
	if err := env.Postgres.SetLogStatement(ctx, "all"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Postgres.SetLogStatement(context.WithoutCancel(ctx), "none") })
	from := env.ServerLogLen(t)

	sh := shell(t)
	run := func(name string) string {
		t.Helper()
		s, err := runbook.Find(guide, name)
		if err != nil {
			t.Fatal(err)
		}
		out, err := sh(ctx, s.Script)
		if err != nil {
			t.Fatalf("step %s of docs/migrate-from-provider-sql.md: %v\n%s\nprovider log:\n%s", name, err, out, tail(env.ProviderLog()))
		}
		t.Logf("step %s:\n%s", name, out)
		return string(out)
	}
	run("freeze")
	for _, kind := range []string{"Role", "Database", "Extension", "Schema", "Grant"} {
		u := legacy(kind)
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			t.Fatal(err)
		}
		if p, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "managementPolicies"); !cmp.Equal(p, []string{"Observe"}) {
			t.Errorf("after the freeze, provider-sql's %s has policies %v", kind, p)
		}
	}

	run("import")
	roles := []string{"legacy-app", "legacy-reporting"}
	noPlans(ctx, t, "after the import", roles, []string{"legacy-orders"}, nil, nil)
	if out := run("plans"); strings.Contains(out, "ALTER") || strings.Contains(out, "CREATE") {
		t.Errorf("the plans step shows statements:\n%s", out)
	}

	out := run("hand-over")
	if n := strings.Count(out, "COMMENT ON"); n != 3 {
		t.Errorf("the hand-over ran %d COMMENT ON statements, want one per role and database:\n%s", n, out)
	}
	noPlans(ctx, t, "after the hand-over", roles, []string{"legacy-orders"}, nil, nil)

	run("import-inside")
	noPlans(ctx, t, "after the import inside", nil, nil, []string{"legacy-sales"}, []string{"legacy-reporting-connect"})
	run("hand-over-inside")
	noPlans(ctx, t, "after the hand-over inside", roles, []string{"legacy-orders"}, []string{"legacy-sales"}, []string{"legacy-reporting-connect"})

	run("retire")
	// The provider's next polls see the same objects, and send nothing.
	time.Sleep(5 * time.Second)
	if sent := env.Sent(t, from, "legacy_"); len(sent) != 0 {
		t.Errorf("the provider sent statements during the migration: %q", sent)
	}

	var after string
	if err := env.Connect(ctx, t, "postgres").QueryRow(ctx, oids).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("the objects' OIDs changed from %s to %s: something was dropped and made again", before, after)
	}
	markers(ctx, t)
	// The password provider-sql set still logs in, with its Secret.
	sec := &corev1.Secret{}
	if err := env.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "legacy-app-credentials"}, sec); err != nil {
		t.Fatalf("provider-sql's connection Secret is gone: %v", err)
	}
	if len(sec.OwnerReferences) != 0 {
		t.Errorf("the connection Secret is still owned by %v", sec.OwnerReferences)
	}
	c, err := providertest.ConnectWithSecret(ctx, map[string][]byte{
		"username": sec.Data["username"], "password": sec.Data["password"],
		"host": []byte(env.Postgres.Host), "hostaddr": []byte(env.Postgres.Hostaddr), "port": []byte(strconv.Itoa(env.Postgres.Port)),
		"ca.crt": env.Postgres.CA.CertPEM, "sslmode": []byte("verify-full"),
	}, "legacy_orders")
	if err != nil {
		t.Fatalf("the login provider-sql made no longer works with its Secret: %v", err)
	}
	_ = c.Close(ctx)
}

// legacyResources creates provider-sql's CRDs and the resources through
// which it made the objects, with the connection Secret it wrote for the
// login role, owned by that role's resource as Crossplane makes it.
func legacyResources(ctx context.Context, t *testing.T) {
	t.Helper()
	v, err := controlplane.ToolVersion("provider-sql", providerSQL)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := controlplane.ModuleDir(ctx, providerSQL+"@"+v)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, kind := range []string{"roles", "databases", "extensions", "schemas", "grants", "defaultprivileges"} {
		paths = append(paths, filepath.Join(dir, "package", "crds", "postgresql.sql.m.crossplane.io_"+kind+".yaml"))
	}
	if _, err := envtest.InstallCRDs(env.ControlPlane.Config, envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true}); err != nil {
		t.Fatalf("cannot install provider-sql's CRDs: %v", err)
	}
	var role *unstructured.Unstructured
	for _, kind := range []string{"Role", "Database", "Extension", "Schema", "Grant"} {
		u := legacy(kind)
		if err := env.Kube.Create(ctx, u); err != nil {
			t.Fatalf("provider-sql's %s: %v", kind, err)
		}
		if kind == "Role" {
			role = u
		}
	}
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "legacy-app-credentials", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: role.GetAPIVersion(), Kind: role.GetKind(), Name: role.GetName(), UID: role.GetUID(), Controller: ptr.To(true),
		}}},
		Data: map[string][]byte{"username": []byte("legacy_app"), "password": []byte("kept-by-the-migration"),
			"endpoint": []byte(env.Postgres.Host), "port": []byte(strconv.Itoa(env.Postgres.Port))},
	}
	if err := env.Kube.Create(ctx, sec); err != nil {
		t.Fatal(err)
	}
}

// legacy is the provider-sql resource of kind through which the object was
// made, as its user wrote it.
func legacy(kind string) *unstructured.Unstructured {
	spec := map[string]any{
		"Role":      map[string]any{"privileges": map[string]any{"login": true}},
		"Database":  map[string]any{"owner": "legacy_app"},
		"Extension": map[string]any{"extension": "pgcrypto", "database": "legacy_orders"},
		"Schema":    map[string]any{"role": "legacy_app", "database": "legacy_orders"},
		"Grant":     map[string]any{"role": "legacy_reporting", "database": "legacy_orders", "privileges": []any{"CONNECT"}},
	}[kind]
	name := map[string]string{"Role": "legacy-app", "Database": "legacy-orders", "Extension": "legacy-orders-pgcrypto", "Schema": "legacy-sales", "Grant": "legacy-reporting-connect"}[kind]
	external := map[string]string{"Role": "legacy_app", "Database": "legacy_orders", "Extension": "pgcrypto", "Schema": "legacy_sales", "Grant": ""}[kind]
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "postgresql.sql.m.crossplane.io/v1alpha1", "kind": kind,
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec":     map[string]any{"forProvider": spec},
	}}
	if external != "" {
		u.SetAnnotations(map[string]string{"crossplane.io/external-name": external})
	}
	return u
}

// noPlans fails the test unless each named resource is Synced with no
// plan.
func noPlans(ctx context.Context, t *testing.T, when string, roles, databases, schemas, grants []string) {
	t.Helper()
	for _, tc := range []struct {
		kind  string
		names []string
		new   func() providertest.Conditioned
	}{
		{"PostgreSQLRole", roles, func() providertest.Conditioned { return &v1alpha1.PostgreSQLRole{} }},
		{"PostgreSQLDatabase", databases, func() providertest.Conditioned { return &v1alpha1.PostgreSQLDatabase{} }},
		{"PostgreSQLSchema", schemas, func() providertest.Conditioned { return &v1alpha1.PostgreSQLSchema{} }},
		{"PostgreSQLGrant", grants, func() providertest.Conditioned { return &v1alpha1.PostgreSQLGrant{} }},
	} {
		for _, name := range tc.names {
			o := tc.new()
			if err := env.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, o); err != nil {
				t.Fatal(err)
			}
			if p := planOf(o); p != nil {
				t.Errorf("%s, %s %s plans %q: the import does not describe the object as it is", when, tc.kind, name, p.Statements)
			}
		}
	}
}

// planOf is a resource's plan.
func planOf(o providertest.Conditioned) *v1alpha1.Plan {
	switch x := o.(type) {
	case *v1alpha1.PostgreSQLRole:
		return x.Status.AtProvider.Plan
	case *v1alpha1.PostgreSQLDatabase:
		return x.Status.AtProvider.Plan
	case *v1alpha1.PostgreSQLSchema:
		return x.Status.AtProvider.Plan
	case *v1alpha1.PostgreSQLGrant:
		return x.Status.AtProvider.Plan
	}
	return nil
}

// markers checks that each role, database and schema carries the marker
// of its resource.
func markers(ctx context.Context, t *testing.T) {
	t.Helper()
	for _, m := range []struct {
		obj      client.Object
		database string
		query    string
	}{
		{&v1alpha1.PostgreSQLRole{}, "postgres", "SELECT shobj_description(oid, 'pg_authid') FROM pg_roles WHERE rolname = 'legacy_app'"},
		{&v1alpha1.PostgreSQLRole{}, "postgres", "SELECT shobj_description(oid, 'pg_authid') FROM pg_roles WHERE rolname = 'legacy_reporting'"},
		{&v1alpha1.PostgreSQLDatabase{}, "postgres", "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = 'legacy_orders'"},
		{&v1alpha1.PostgreSQLSchema{}, "legacy_orders", "SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = 'legacy_sales'"},
	} {
		name := strings.ReplaceAll(strings.Split(strings.Split(m.query, "= '")[1], "'")[0], "_", "-")
		if err := env.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, m.obj); err != nil {
			t.Fatal(err)
		}
		var comment string
		if err := env.Connect(ctx, t, m.database).QueryRow(ctx, m.query).Scan(&comment); err != nil {
			t.Fatal(err)
		}
		providertest.CheckMarked(t, comment, "", m.obj.GetUID())
	}
}

// shell returns a runner of the page's blocks: bash in a folder of the
// test, with kubectl, psql and the folders of path on PATH, the test cluster's kubeconfig and
// PG_ADMIN_URL, the admin's URL the page asks the reader to set.
func shell(t *testing.T, path ...string) func(context.Context, string) ([]byte, error) {
	t.Helper()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(ca, env.Postgres.CA.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	pg := env.Postgres
	admin := url.URL{Scheme: "postgresql", User: url.UserPassword(pg.AdminUser, pg.AdminPassword), Host: fmt.Sprintf("%s:%d", pg.Host, pg.Port), Path: "/postgres",
		RawQuery: url.Values{"sslmode": {"verify-full"}, "sslrootcert": {ca}, "hostaddr": {pg.Hostaddr}, "application_name": {"psql"}}.Encode()}
	vars := []string{"PATH=" + strings.Join(append(path, os.Getenv("KUBEBUILDER_ASSETS"), "/usr/bin", "/bin"), ":"), "HOME=" + dir,
		"KUBECONFIG=" + env.ControlPlane.Kubeconfig, "PG_ADMIN_URL=" + admin.String()}
	return func(ctx context.Context, script string) ([]byte, error) {
		out, err := runbook.Run(ctx, dir, vars, script)
		return []byte(strings.ReplaceAll(string(out), pg.AdminPassword, "<redacted>")), err
	}
}

// tail is the end of a long log.
func tail(s string) string {
	if len(s) > 8000 {
		return "…" + s[len(s)-8000:]
	}
	return s
}
