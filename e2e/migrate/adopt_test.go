package migrate

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/fixture/controlplane"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
	"github.com/ayatori/provider-postgresql/internal/fixture/runbook"
)

// adoptNamespaces are the namespaces docs/adopt.md's mapping places the
// server's objects in.
var adoptNamespaces = []string{"sales", "analytics"}

// TestAdopt follows docs/adopt.md as written, on the brownfield server of
// internal/inventory/testdata/brownfield.sql: the inventory writes the
// manifests the page expects and reports each object it leaves out, with
// its reason; every plan is empty after each import; the provider sends
// nothing from the first import to the end (the admin sends the markers).
// The inventory reads catalogs whose columns differ between majors, as a
// superuser or as a managed-service admin: a Matrix test.
func TestAdopt(t *testing.T) {
	suite.Matrix(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	guide, err := runbook.Read(filepath.Join(root, "docs", "adopt.md"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range guide {
		names = append(names, s.Name)
	}
	if diff := cmp.Diff([]string{"mapping", "inventory", "allow", "import", "plans", "hand-over", "import-inside", "hand-over-inside"}, names); diff != "" {
		t.Fatalf("the page's steps changed (-checked +page):\n%s", diff)
	}
	// The plugin, on the page's PATH.
	bin := t.TempDir()
	build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(bin, "kubectl-pg"), "./cmd/kubectl-pg")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("cannot build kubectl-pg: %v\n%s", err, out)
	}
	sh := shell(t, bin)
	// The brownfield server, built by psql as the server's superuser.
	script := filepath.Join(root, "internal", "inventory", "testdata", "brownfield.sql")
	if out, err := sh(ctx, `psql "$PG_ADMIN_URL" -v ON_ERROR_STOP=1 -q -f '`+script+`'`); err != nil {
		t.Fatalf("brownfield.sql: %v\n%s", err, out)
	}
	run := func(name string) string {
		t.Helper()
		s, err := runbook.Find(guide, name)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		out, err := sh(ctx, s.Script)
		if err != nil {
			t.Fatalf("step %s of docs/adopt.md: %v\n%s\nthe resources not Ready:\n%s", name, err, out, notReady(ctx, t))
		}
		t.Logf("step %s (%s):\n%s", name, time.Since(start).Round(time.Millisecond), out)
		return string(out)
	}

	run("mapping")
	out := run("inventory")
	run("allow")
	want := []string{
		"adopted/analytics/databases/analytics.yaml",
		"adopted/analytics/grants/analytics-analysts.yaml", "adopted/analytics/grants/analytics-marts-report-bot.yaml",
		"adopted/analytics/roles/analysts.yaml", "adopted/analytics/roles/etl.yaml",
		"adopted/analytics/roles/report-bot.yaml", "adopted/analytics/schemas/analytics-marts.yaml",
		"adopted/sales/databases/billing.yaml", "adopted/sales/databases/frozen.yaml", "adopted/sales/databases/legacy.yaml", "adopted/sales/databases/orders.yaml",
		"adopted/sales/defaultprivileges/billing-app-billing-app-writers-sequences.yaml", "adopted/sales/defaultprivileges/orders-app-orders-sales-app-readers-tables.yaml",
		"adopted/sales/grants/orders-sales-app-readers-functions.yaml", "adopted/sales/grants/orders-sales-app-readers-tables.yaml",
		"adopted/sales/grants/orders-sales-app-readers.yaml", "adopted/sales/grants/orders-sales-app-writers-sequences.yaml",
		"adopted/sales/grants/orders-sales-app-writers-tables-grantable.yaml", "adopted/sales/grants/ops-in-app-writers.yaml",
		"adopted/sales/roles/app-billing.yaml", "adopted/sales/roles/app-orders.yaml", "adopted/sales/roles/app-readers.yaml", "adopted/sales/roles/app-writers.yaml",
		"adopted/sales/roles/migrator.yaml", "adopted/sales/roles/ops.yaml", "adopted/sales/roles/replicator.yaml",
	}
	for i := 1; i <= 20; i++ {
		want = append(want, fmt.Sprintf("adopted/sales/roles/svc-%02d.yaml", i))
	}
	want = append(want, "adopted/sales/schemas/billing-crypto.yaml", "adopted/sales/schemas/billing-invoices.yaml",
		"adopted/sales/schemas/orders-audit.yaml", "adopted/sales/schemas/orders-sales.yaml", "adopted/skipped.yaml")
	slices.Sort(want)
	var got []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "adopted/") {
			got = append(got, l)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the inventory's files (-want +got):\n%s", diff)
	}
	// Each thing the API cannot say is named, with its reason.
	for _, skipped := range []string{
		"a SUPERUSER: the provider never manages a superuser\n      dba",
		"Legacy Admin", "Reports-2024", "analytics.Staging", "analytics: work_mem=64MB",
		"report_bot in analytics: work_mem=16MB", "orders.public",
		"frozen", "nothing inside it was read: it does not allow connections",
		"a role PostgreSQL predefines", "the mapping places it in no namespace\n      contractor",
		"role analysts: a member of app_readers, which the mapping places in namespace sales, not analytics",
		"1 grant: a grant to PUBLIC: a PostgreSQLGrant names one role\n      SELECT on orders.sales.open_orders to PUBLIC",
		"a column's privilege: the API grants on whole tables only\n      SELECT on orders.sales.items.sku to svc_01",
	} {
		if !strings.Contains(out, skipped) {
			t.Errorf("the inventory's summary does not report %q", skipped)
		}
	}
	if !strings.Contains(out, "objects/s)") {
		t.Errorf("the inventory reports no progress:\n%s", out)
	}
	// What the provider sends from here on: nothing, the markers are the
	// admin's.
	env.LogStatements(ctx, t)
	from := env.ServerLogLen(t)

	run("import")
	noPlansIn(ctx, t, "after the import", v1alpha1.PostgreSQLRoleKind, v1alpha1.PostgreSQLDatabaseKind)
	// Every row of the page's table reads NoChangesPending with no plan.
	out = run("plans")
	rows := 0
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] != "KIND" {
			rows++
			if len(f) != 5 || f[3] != string(v1alpha1.ReasonNoChangesPending) || f[4] != "<none>" {
				t.Errorf("the plans step shows a resource with changes pending: %q", l)
			}
		}
	}
	if rows != 35 {
		t.Errorf("the plans step shows %d rows, want one for each of the 30 roles and 5 databases:\n%s", rows, out)
	}
	// One marker for each of the 30 roles and 5 databases.
	if out = run("hand-over"); !slices.Contains(strings.Split(out, "\n"), "35") {
		t.Errorf("the hand-over did not write one COMMENT ON for each role and database:\n%s", out)
	}
	// A comment the object had stays, with the marker after it.
	var comment string
	if err := env.Connect(ctx, t, "postgres").QueryRow(ctx, "SELECT shobj_description(oid, 'pg_authid') FROM pg_roles WHERE rolname = 'ops'").Scan(&comment); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(comment, "on-call engineers\n[provider-postgresql uid=") {
		t.Errorf("role ops's comment after the hand-over: %q", comment)
	}
	run("import-inside")
	noPlansIn(ctx, t, "after the import inside", v1alpha1.PostgreSQLSchemaKind, v1alpha1.PostgreSQLGrantKind, v1alpha1.PostgreSQLDefaultPrivilegesKind)
	run("hand-over-inside")

	// The provider's next polls see the same objects, and send nothing.
	time.Sleep(5 * time.Second)
	if sent := env.Sent(t, from, ""); len(sent) != 0 {
		t.Errorf("the provider sent statements during the adoption: %q", sent)
	}
}

// noPlansIn fails the test unless every resource of the kinds in the
// adopted namespaces is UpToDate with no plan, naming those that are not.
func noPlansIn(ctx context.Context, t *testing.T, when string, kinds ...string) {
	t.Helper()
	found := adopted(ctx, t, kinds...)
	for _, o := range found {
		c := o.GetCondition(v1alpha1.TypeUpToDate)
		if p := o.(v1alpha1.Planned).GetPlan(); p != nil || c.Reason != v1alpha1.ReasonNoChangesPending { //nolint:forcetypeassert // Every kind on an Instance plans.
			var stmts []string
			if p != nil {
				stmts = p.Statements
			}
			t.Errorf("%s, %s %s/%s is %s (%s) and plans %v: the inventory does not describe the object as it is", when,
				kindOf(o), o.GetNamespace(), o.GetName(), c.Reason, c.Message, stmts)
		}
	}
	if len(found) == 0 {
		t.Errorf("%s, no resource in %v", when, adoptNamespaces)
	}
	t.Logf("%s: %d resources, every plan empty", when, len(found))
}

// notReady lists the adopted namespaces' resources that are not Ready,
// with their conditions' reasons and messages.
func notReady(ctx context.Context, t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, o := range adopted(ctx, t) {
		if c := o.GetCondition(xpv2.TypeReady); c.Status != corev1.ConditionTrue {
			s := o.GetCondition(xpv2.TypeSynced)
			fmt.Fprintf(&b, "%s %s/%s: Ready %s %s: %s; Synced %s: %s\n", kindOf(o), o.GetNamespace(), o.GetName(),
				c.Status, c.Reason, c.Message, s.Reason, s.Message)
		}
	}
	return b.String()
}

// adopted returns the resources of the kinds named (every kind that lives
// on an Instance when none is) in the adopted namespaces.
func adopted(ctx context.Context, t *testing.T, kinds ...string) []providertest.Conditioned {
	t.Helper()
	var out []providertest.Conditioned
	for _, k := range v1alpha1.Kinds {
		if !k.OnInstance || len(kinds) > 0 && !slices.Contains(kinds, k.Kind) {
			continue
		}
		for _, ns := range adoptNamespaces {
			l := k.NewList()
			if err := env.Kube.List(ctx, l, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			items, err := meta.ExtractList(l)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range items {
				out = append(out, it.(providertest.Conditioned)) //nolint:forcetypeassert // The provider's kinds carry conditions.
			}
		}
	}
	return out
}

// kindOf is o's kind (a listed typed object carries none).
func kindOf(o any) string {
	return strings.TrimPrefix(fmt.Sprintf("%T", o), "*v1alpha1.")
}
