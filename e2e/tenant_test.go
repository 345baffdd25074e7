// Package e2e runs the product end to end on a local control plane (with
// the garbage collector): the provider's controllers, a real PostgreSQL,
// Crossplane core out of cluster with the tenant Configuration's XRD and
// Composition, and the composition functions as local processes.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/configuration"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/fixture/controlplane"
	"github.com/ayatori/provider-postgresql/internal/fixture/crossplane"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
	"github.com/ayatori/provider-postgresql/internal/fixture/runbook"
	"github.com/ayatori/provider-postgresql/internal/pgctl"
	"github.com/ayatori/provider-postgresql/internal/tenant"
)

var env *providertest.Env

// suite is the package's environment, started by the first test that
// declares it needs it.
var suite = providertest.Suite(providertest.Options{PollInterval: 5 * time.Second, Instance: "main", Namespaces: []string{"shop", "finance"}, ControllerManager: true}, func(e *providertest.Env) {
	env = e
})

func TestMain(m *testing.M) { os.Exit(suite.Run(m)) }

// applyConfiguration creates the XRD and Composition that ship in
// configuration/ and waits until core offers the claim.
func applyConfiguration(ctx context.Context, t *testing.T, core *crossplane.Core) {
	t.Helper()
	objs, err := configuration.Objects()
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range objs {
		if err := env.Kube.Create(ctx, u); err != nil {
			t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	if err := core.WaitOffered(ctx, env.Kube, configuration.XRDName); err != nil {
		t.Fatal(err)
	}
	if err := core.WaitEstablished(ctx, env.Kube, configuration.TenantXRDName); err != nil {
		t.Fatal(err)
	}
}

// operations returns a runner of docs/operations.md's steps for namespace
// ns: the steps named run together, in one shell, with kubectl on PATH and
// the test cluster's kubeconfig, writing the backup to a directory of t.
func operations(t *testing.T, ns string) func(ctx context.Context, steps ...string) {
	t.Helper()
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	guide, err := runbook.Read(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The control plane's binaries, kubectl among them; jq from the system.
	kubectl := os.Getenv("KUBEBUILDER_ASSETS")
	dir := t.TempDir()
	sh := []string{"PATH=" + kubectl + ":/usr/bin:/bin", "HOME=" + dir, "KUBECONFIG=" + env.ControlPlane.Kubeconfig,
		"NAMESPACE=" + ns, "PROVIDER_NAMESPACE=" + providertest.Namespace, "BACKUP=" + filepath.Join(dir, "backup")}
	return func(ctx context.Context, steps ...string) {
		t.Helper()
		var script strings.Builder
		for _, name := range steps {
			s, err := runbook.Find(guide, name)
			if err != nil {
				t.Fatalf("docs/operations.md: %v", err)
			}
			script.WriteString(s.Script)
		}
		out, err := runbook.Run(ctx, dir, sh, script.String())
		if err != nil {
			t.Fatalf("docs/operations.md, steps %v: %v\n%s", steps, err, out)
		}
		t.Logf("docs/operations.md, steps %v:\n%s", steps, out)
	}
}

// namespacedTenant is a namespaced Tenant, the Crossplane v2 way to ask
// for what a claim gives.
func namespacedTenant(ns, name, spec string) *unstructured.Unstructured {
	u := tenantClaim(ns, name, spec)
	u.SetKind("Tenant")
	return u
}

func tenantClaim(ns, name, spec string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(`{"apiVersion": "database.ayatori.ddupan.top/v1alpha1", "kind": "PostgreSQLTenant",
		"metadata": {"name": "`+name+`", "namespace": "`+ns+`"}, "spec": `+spec+`}`), &u.Object); err != nil {
		panic(err)
	}
	return u
}

// waitClaimReady waits until the claim reports Ready=True.
func waitClaimReady(ctx context.Context, t *testing.T, core *crossplane.Core, c *unstructured.Unstructured) {
	t.Helper()
	var conds []any
	err := providertest.Wait(ctx, 3*time.Minute, func(ctx context.Context) (bool, error) {
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
			return false, err
		}
		conds, _, _ = unstructured.NestedSlice(c.Object, "status", "conditions")
		for _, x := range conds {
			if m, ok := x.(map[string]any); ok && m["type"] == "Ready" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("claim %s/%s not Ready: %v (conditions %v); core's log:\n%s", c.GetNamespace(), c.GetName(), err, conds, core.LogTail())
	}
}

// noPlanOnceProvisioned: once a claim is Ready its composed resources have
// nothing pending, so status.plan goes. The function stops returning it;
// this checks that Crossplane drops it from the composite's status (applied
// with the function's field manager) and so from the claim's, rather than
// keeping the last plan it was given.
func noPlanOnceProvisioned(ctx context.Context, t *testing.T, c *unstructured.Unstructured) {
	t.Helper()
	err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		err := env.Kube.Get(ctx, client.ObjectKeyFromObject(c), c)
		_, found, _ := unstructured.NestedFieldNoCopy(c.Object, "status", "plan")
		return err == nil && !found, err
	})
	if err != nil {
		p, _, _ := unstructured.NestedFieldNoCopy(c.Object, "status", "plan")
		t.Errorf("claim %s/%s is Ready but still shows a plan: %v (%v)", c.GetNamespace(), c.GetName(), p, err)
	}
}

// plannedStatements lists the statements of every step of a claim's
// status.plan.
func plannedStatements(c *unstructured.Unstructured) []string {
	steps, _, _ := unstructured.NestedSlice(c.Object, "status", "plan", "steps")
	var out []string
	for _, s := range steps {
		m, _ := s.(map[string]any)
		stmts, _, _ := unstructured.NestedStringSlice(m, "plan", "statements")
		out = append(out, stmts...)
	}
	return out
}

// waitBound waits until the claim's DatabaseBound condition has status and
// reason (both empty: any decision, not "Provisioning"), and returns it.
func waitBound(ctx context.Context, t *testing.T, core *crossplane.Core, c *unstructured.Unstructured, status, reason string) map[string]any {
	t.Helper()
	var conds []any
	var found map[string]any
	err := providertest.Wait(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
			return false, err
		}
		conds, _, _ = unstructured.NestedSlice(c.Object, "status", "conditions")
		for _, x := range conds {
			m, ok := x.(map[string]any)
			if !ok || m["type"] != tenant.ConditionDatabaseBound {
				continue
			}
			// Empty status and reason wait for any decision but the first
			// "waiting" one.
			if status == "" && m["reason"] != "Provisioning" || m["status"] == status && m["reason"] == reason {
				found = m
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("claim %s/%s never had %s=%s (%s): %v (conditions %v); core's log:\n%s", c.GetNamespace(), c.GetName(), tenant.ConditionDatabaseBound, status, reason, err, conds, core.LogTail())
	}
	return found
}

// describesGeneration waits until claim c has exactly one Ready condition,
// of status ready, and its Ready and Synced conditions both record the
// claim's current generation.
func describesGeneration(ctx context.Context, t *testing.T, c *unstructured.Unstructured, ready string) {
	t.Helper()
	var conds []any
	err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
			return false, err
		}
		conds, _, _ = unstructured.NestedSlice(c.Object, "status", "conditions")
		readies, current := 0, 0
		for _, x := range conds {
			m, _ := x.(map[string]any)
			gen, _, _ := unstructured.NestedInt64(m, "observedGeneration")
			switch m["type"] {
			case "Ready":
				readies++
				if m["status"] == ready && gen == c.GetGeneration() {
					current++
				}
			case "Synced":
				if gen == c.GetGeneration() {
					current++
				}
			}
		}
		return readies == 1 && current == 2, nil
	})
	if err != nil {
		t.Fatalf("claim %s/%s at generation %d: want one Ready (%s) and Synced describing it, have %v: %v", c.GetNamespace(), c.GetName(), c.GetGeneration(), ready, conds, err)
	}
}

// assertNoAccess checks that nothing was delivered for the claim ns/name:
// no login role on the server, no Secret in its namespace.
func assertNoAccess(ctx context.Context, t *testing.T, ns, name string) {
	t.Helper()
	var n int
	if err := env.Connect(ctx, t, "postgres").QueryRow(ctx, "SELECT count(*) FROM pg_roles WHERE rolname = $1", name).Scan(&n); err != nil || n != 0 {
		t.Errorf("a login role %q exists for a tenant that is not bound (%d, %v)", name, n, err)
	}
	err := env.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "main-" + name + "-postgresql"}, &corev1.Secret{})
	if !kerrors.IsNotFound(err) {
		t.Errorf("a credentials Secret exists for a tenant that is not bound: %v", err)
	}
	r := &v1alpha1.PostgreSQLRole{}
	if err := env.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-login"}, r); !kerrors.IsNotFound(err) {
		t.Errorf("a login PostgreSQLRole was composed for a tenant that is not bound: %v", err)
	}
}

// TestTenantEndToEnd runs once (Server): what it adds to the managed
// kinds' own tests is Crossplane's composition of a claim, which no
// PostgreSQL major or admin changes; the tenant's SQL on every major and
// admin is grant.TestTenantScenario's, a Matrix test.
func TestTenantEndToEnd(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	start := time.Now()
	core, err := crossplane.Start(ctx, crossplane.Options{Config: env.ControlPlane.Config, Kubeconfig: env.ControlPlane.Kubeconfig, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(core.Stop)
	tools, err := crossplane.Tools()
	if err != nil {
		t.Fatal(err)
	}
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	fn := filepath.Join(t.TempDir(), "function-tenant")
	build := exec.Command("go", "build", "-o", fn, "./cmd/function-tenant")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("cannot build the function: %v\n%s", err, out)
	}
	logs := t.TempDir()
	if err := core.RunFunction(ctx, env.Kube, configuration.FunctionTenant, fn, logs); err != nil {
		t.Fatal(err)
	}
	if err := core.RunFunction(ctx, env.Kube, configuration.FunctionAutoReady, filepath.Join(tools, "function-auto-ready"), logs); err != nil {
		t.Fatal(err)
	}
	applyConfiguration(ctx, t, core)
	t.Logf("Crossplane core, functions and the Configuration up in %s", time.Since(start).Round(time.Millisecond))

	orders := tenantClaim("shop", "orders", `{"instanceRef": {"name": "main"}, "extensions": ["pgcrypto"]}`)
	env.Create(ctx, t, orders)
	waitClaimReady(ctx, t, core, orders)
	t.Logf("claim Ready %s after start", time.Since(start).Round(time.Millisecond))
	noPlanOnceProvisioned(ctx, t, orders)

	secret, err := env.ConnectionSecret(ctx, "shop", "main-orders-postgresql")
	if err != nil {
		t.Fatal(err)
	}
	if db, _, _ := unstructured.NestedString(orders.Object, "status", "database"); db != "orders" {
		t.Errorf("claim status.database = %q", db)
	}

	t.Run("TenantUsesItsDatabase", func(t *testing.T) {
		c, err := providertest.ConnectWithSecret(ctx, secret, "")
		if err != nil {
			t.Fatalf("the tenant cannot log in with its Secret: %v", err)
		}
		defer c.Close(ctx) //nolint:errcheck // Test.
		var db, user string
		if err := c.QueryRow(ctx, "SELECT current_database(), session_user").Scan(&db, &user); err != nil || db != "orders" || user != "orders" {
			t.Errorf("connected to %q as %q: %v", db, user, err)
		}
		if _, err := c.Exec(ctx, "CREATE TABLE items (id int); INSERT INTO items VALUES (1)"); err != nil {
			t.Errorf("the tenant cannot create a table: %v", err)
		}
		var ext int
		if err := c.QueryRow(ctx, "SELECT count(*) FROM pg_extension WHERE extname = 'pgcrypto'").Scan(&ext); err != nil || ext != 1 {
			t.Errorf("pgcrypto installed: %d, %v", ext, err)
		}
	})

	t.Run("PluginTracesTheClaimToItsCredential", func(t *testing.T) {
		var out bytes.Buffer
		cli := &pgctl.CLI{Kube: env.Kube, Out: &out, Namespace: "shop"}
		if err := cli.Run(ctx, []string{"trace", "tenant/orders"}); err != nil {
			t.Fatalf("kubectl pg trace tenant/orders: %v\n%s", err, out.String())
		}
		// Each object on the way, Ready: the claim, its binding, the
		// database and its owner role, the login role, its Secret.
		for _, want := range []string{
			"PostgreSQLTenant", "PostgreSQLBinding", "asks for database orders",
			`database "orders" on PostgreSQLInstance "main", bound`, `owner role "orders_owner"`,
			`login role "orders"`, "Secret", "main-orders-postgresql",
		} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("the trace does not show %q:\n%s", want, out.String())
			}
		}
		var links []pgctl.Link
		cli.Output, cli.Out = "json", &out
		out.Reset()
		if err := cli.Run(ctx, []string{"trace", "tenant/orders"}); err != nil || json.Unmarshal(out.Bytes(), &links) != nil {
			t.Fatalf("trace -o json: %v\n%s", err, out.String())
		}
		for _, l := range links {
			if l.Ready == "False" {
				t.Errorf("%s %s is not Ready on a Ready claim: %s %s", l.Kind, l.Name, l.Reason, l.Message)
			}
		}
	})

	t.Run("CrossplaneTraceGoesDownToTheDatabaseAndItsOwner", func(t *testing.T) {
		// Crossplane's own trace shows what it composed and, from the
		// binding on, what the provider provisioned for the claim.
		tree := crossplaneTrace(ctx, t, filepath.Join(tools, "crossplane-cli"), "postgresqltenants.database.ayatori.ddupan.top/orders", "shop")
		for _, want := range []struct{ kind, name, under string }{
			{"PostgreSQLBinding", "", ""},
			{"PostgreSQLDatabase", "orders", "PostgreSQLBinding"},
			{"PostgreSQLRole", "orders-owner", "PostgreSQLBinding"},
			{"PostgreSQLRole", "", ""},
		} {
			if !tree.has(want.kind, want.name, want.under) {
				t.Errorf("crossplane resource trace of the claim does not show %s %q under %q:\n%s", want.kind, want.name, want.under, tree)
			}
		}
	})

	t.Run("ANamespacedTenantTheCrossplaneV2Way", func(t *testing.T) {
		// The same tenant as a namespaced composite: its own Composition,
		// the same function and rules; a database, a login and a Secret
		// in its namespace, and the trace down to the credential.
		journal := namespacedTenant("shop", "journal", `{"instanceRef": {"name": "main"}}`)
		env.Create(ctx, t, journal)
		waitClaimReady(ctx, t, core, journal)
		secret, err := env.ConnectionSecret(ctx, "shop", "main-journal-postgresql")
		if err != nil {
			t.Fatal(err)
		}
		c, err := providertest.ConnectWithSecret(ctx, secret, "")
		if err != nil {
			t.Fatalf("the namespaced Tenant's Secret does not log in: %v", err)
		}
		var db, user string
		if err := c.QueryRow(ctx, "SELECT current_database(), session_user").Scan(&db, &user); err != nil || db != "journal" || user != "journal" {
			t.Errorf("connected to %q as %q: %v", db, user, err)
		}
		_ = c.Close(ctx)
		if got, _, _ := unstructured.NestedString(journal.Object, "status", "secretName"); got != "main-journal-postgresql" {
			t.Errorf("status.secretName = %q", got)
		}
		var out bytes.Buffer
		cli := &pgctl.CLI{Kube: env.Kube, Out: &out, Namespace: "shop"}
		if err := cli.Run(ctx, []string{"trace", "tenant/journal"}); err != nil {
			t.Fatalf("kubectl pg trace tenant/journal: %v\n%s", err, out.String())
		}
		for _, want := range []string{"Tenant", "a namespaced composite", "PostgreSQLBinding", `database "journal" on PostgreSQLInstance "main", bound`, `login role "journal"`, "main-journal-postgresql"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("the trace does not show %q:\n%s", want, out.String())
			}
		}
		tree := crossplaneTrace(ctx, t, filepath.Join(tools, "crossplane-cli"), "tenants.database.ayatori.ddupan.top/journal", "shop")
		if !tree.has("PostgreSQLDatabase", "journal", "PostgreSQLBinding") || !tree.has("PostgreSQLRole", "journal-owner", "PostgreSQLBinding") {
			t.Errorf("crossplane resource trace of the Tenant does not show its database and owner role under its binding:\n%s", tree)
		}
		// A Tenant cannot pick another Composition either: the XRD
		// enforces the platform's.
		sneaky := journal.DeepCopy()
		sneaky.SetName("sneaky-journal")
		sneaky.SetResourceVersion("")
		sneaky.SetUID("")
		sneaky.Object["spec"] = map[string]any{"instanceRef": map[string]any{"name": "main"}, "loginRole": "sneaky", "database": "sneaky",
			"crossplane": map[string]any{"compositionRef": map[string]any{"name": "deletes-everything"}}}
		delete(sneaky.Object, "status")
		env.Create(ctx, t, sneaky)
		err = providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
			if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(sneaky), sneaky); err != nil {
				return false, err
			}
			got, _, _ := unstructured.NestedString(sneaky.Object, "spec", "crossplane", "compositionRef", "name")
			return got == "tenant", nil
		})
		if err != nil {
			t.Errorf("the Tenant's own compositionRef was not overridden by the enforced Composition: %v", err)
		}
		if err := env.Kube.Delete(ctx, sneaky); err != nil {
			t.Fatal(err)
		}
	})

	billing := tenantClaim("finance", "billing", `{"instanceRef": {"name": "main"}}`)
	env.Create(ctx, t, billing)
	waitClaimReady(ctx, t, core, billing)
	t.Run("OtherTenantIsolated", func(t *testing.T) {
		other, err := env.ConnectionSecret(ctx, "finance", "main-billing-postgresql")
		if err != nil {
			t.Fatal(err)
		}
		c, err := providertest.ConnectWithSecret(ctx, other, "orders")
		if err == nil {
			_ = c.Close(ctx)
			t.Fatal("the billing tenant connected to the orders database")
		}
		if !postgres.IsCode(err, postgres.CodeInsufficientPrivilege) {
			t.Logf("refused with: %v", err)
		}
	})

	t.Run("TakeoverByNameIsRefused", func(t *testing.T) {
		// A tenant in another namespace names the orders database: its
		// binding is refused, it gets no login role, no Secret, and says
		// why on its claim; the orders tenant keeps its access.
		thief := tenantClaim("finance", "thief", `{"instanceRef": {"name": "main"}, "database": "orders"}`)
		env.Create(ctx, t, thief)
		c := waitBound(ctx, t, core, thief, "False", "Conflict")
		if msg, _ := c["message"].(string); !strings.Contains(msg, "cannot be delivered") {
			t.Errorf("the refusal does not say why: %q", msg)
		}
		assertNoAccess(ctx, t, "finance", "thief")
		if _, err := providertest.ConnectWithSecret(ctx, secret, ""); err != nil {
			t.Errorf("the orders tenant lost its access: %v", err)
		}
		// A refused claim's one Ready condition, and its Synced, describe
		// its generation, and follow a spec change while it stays refused.
		describesGeneration(ctx, t, thief, "False")
		providertest.Update(ctx, t, env, thief, func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "now", "spec", "rotateCredentials")
		})
		describesGeneration(ctx, t, thief, "False")
	})

	t.Run("InstalledExtensionsAreShownAndKept", func(t *testing.T) {
		describesGeneration(ctx, t, orders, "True")
		err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
			err := env.Kube.Get(ctx, client.ObjectKeyFromObject(orders), orders)
			got, _, _ := unstructured.NestedStringSlice(orders.Object, "status", "extensions")
			return err == nil && fmt.Sprint(got) == "[pgcrypto]", err
		})
		if err != nil {
			got, _, _ := unstructured.NestedStringSlice(orders.Object, "status", "extensions")
			t.Fatalf("the claim's status.extensions is %v, want [pgcrypto]: %v", got, err)
		}
		cur := orders.DeepCopy()
		_ = unstructured.SetNestedStringSlice(cur.Object, []string{}, "spec", "extensions")
		if err := env.Kube.Update(ctx, cur); err == nil || !strings.Contains(err.Error(), "cannot be removed") {
			t.Errorf("removing an installed extension from the claim: %v, want a refusal", err)
		}
	})

	t.Run("PendingWorkIsShownThenCleared", func(t *testing.T) {
		// An extension the provider will not install in a database its
		// tenant owns (an untrusted script in a schema the owner writes to)
		// stays pending: the claim shows the statement it waits to send.
		// Once the tenant drops the request the claim is Ready and its plan
		// goes.
		fdw := tenantClaim("shop", "fdw", `{"instanceRef": {"name": "main"}, "extensions": ["postgres_fdw"]}`)
		env.Create(ctx, t, fdw)
		t.Cleanup(func() { _ = env.Kube.Delete(context.WithoutCancel(ctx), fdw) })
		const want = `CREATE EXTENSION IF NOT EXISTS "postgres_fdw" SCHEMA "public"`
		var plan any
		err := providertest.Wait(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
			err := env.Kube.Get(ctx, client.ObjectKeyFromObject(fdw), fdw)
			plan, _, _ = unstructured.NestedFieldNoCopy(fdw.Object, "status", "plan")
			return err == nil && slices.Contains(plannedStatements(fdw), want), err
		})
		if err != nil {
			t.Fatalf("the claim does not show the pending %s: status.plan %v (%v); core's log:\n%s", want, plan, err, core.LogTail())
		}
		// As docs/plan.md shows it.
		if summary, _, _ := unstructured.NestedString(fdw.Object, "status", "plan", "summary"); summary != "Update: 1 statement in 1 resource" {
			t.Errorf("the plan's summary is %q, want %q", summary, "Update: 1 statement in 1 resource")
		}
		steps, _, _ := unstructured.NestedSlice(fdw.Object, "status", "plan", "steps")
		var first map[string]any
		if len(steps) > 0 {
			first, _ = steps[0].(map[string]any)
		}
		if len(steps) != 1 || first["kind"] != "PostgreSQLDatabase" || first["name"] != "fdw" {
			t.Errorf("the plan's steps are %v, want one, of PostgreSQLDatabase fdw", steps)
		}
		providertest.Update(ctx, t, env, fdw, func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedStringSlice(u.Object, []string{}, "spec", "extensions")
		})
		waitClaimReady(ctx, t, core, fdw)
		noPlanOnceProvisioned(ctx, t, fdw)
	})

	t.Run("FiveClaimsRaceForOneDatabase", func(t *testing.T) {
		// Five claims in one namespace ask for the same admin-registered
		// database at once, ten times: exactly one is delivered each round;
		// the others get no login role and no Secret, and say who holds it.
		if err := env.Namespace(ctx, "race"); err != nil {
			t.Fatal(err)
		}
		for round := range 10 {
			name := fmt.Sprintf("race_%d", round)
			owner := &v1alpha1.PostgreSQLRole{
				ObjectMeta: metav1.ObjectMeta{Namespace: "race", Name: fmt.Sprintf("race-%d-owner", round)},
				Spec: v1alpha1.PostgreSQLRoleSpec{
					InstanceRef: v1alpha1.InstanceReference{Name: "main"},
					ForProvider: v1alpha1.PostgreSQLRoleParameters{Name: ptr.To(name + "_owner"), Login: ptr.To(false)},
				},
			}
			db := &v1alpha1.PostgreSQLDatabase{
				ObjectMeta: metav1.ObjectMeta{Namespace: "race", Name: fmt.Sprintf("race-%d", round)},
				Spec: v1alpha1.PostgreSQLDatabaseSpec{
					InstanceRef: v1alpha1.InstanceReference{Name: "main"},
					ForProvider: v1alpha1.PostgreSQLDatabaseParameters{Name: ptr.To(name), OwnerRef: &v1alpha1.LocalReference{Name: owner.Name}},
					Binding:     v1alpha1.DatabaseBindingPolicy{Offered: true},
				},
			}
			env.Create(ctx, t, owner, db)
			claims := make([]*unstructured.Unstructured, 5)
			errs := make(chan error, len(claims))
			for i := range claims {
				claims[i] = tenantClaim("race", fmt.Sprintf("r%dt%d", round, i), `{"databaseRef": {"name": "`+db.Name+`"}}`)
				go func(c *unstructured.Unstructured) { errs <- env.Kube.Create(ctx, c) }(claims[i])
			}
			for range claims {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			delivered := 0
			for _, c := range claims {
				cond := waitBound(ctx, t, core, c, "", "")
				if cond["status"] == "True" {
					delivered++
					waitClaimReady(ctx, t, core, c)
					continue
				}
				if cond["reason"] != "BoundToAnotherTenant" {
					t.Errorf("round %d: claim %s: %v", round, c.GetName(), cond)
				}
				assertNoAccess(ctx, t, "race", c.GetName())
			}
			if delivered != 1 {
				t.Fatalf("round %d: %d claims delivered, want exactly 1", round, delivered)
			}
			for _, c := range claims {
				if err := env.Kube.Delete(ctx, c); err != nil {
					t.Fatal(err)
				}
			}
		}
	})

	t.Run("TenantCannotChooseAnotherComposition", func(t *testing.T) {
		// The XRD enforces the platform's Composition, whatever the claim
		// asks for.
		sneaky := tenantClaim("finance", "sneaky", `{"instanceRef": {"name": "main"}, "compositionRef": {"name": "deletes-everything"}}`)
		env.Create(ctx, t, sneaky)
		err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
			if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(sneaky), sneaky); err != nil {
				return false, err
			}
			ref, _, _ := unstructured.NestedString(sneaky.Object, "spec", "resourceRef", "name")
			if ref == "" {
				return false, nil
			}
			xr := &unstructured.Unstructured{}
			xr.SetAPIVersion("database.ayatori.ddupan.top/v1alpha1")
			xr.SetKind("XPostgreSQLTenant")
			if err := env.Kube.Get(ctx, client.ObjectKey{Name: ref}, xr); err != nil {
				return false, err
			}
			got, _, _ := unstructured.NestedString(xr.Object, "spec", "compositionRef", "name")
			if got != "" && got != "postgresqltenant" {
				return false, errors.New("the composite uses Composition " + got)
			}
			return got == "postgresqltenant", nil
		})
		if err != nil {
			t.Fatalf("the tenant's own compositionRef was not overridden by the enforced Composition: %v", err)
		}
		if err := env.Kube.Delete(ctx, sneaky); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("LockOnTheClaim", func(t *testing.T) {
		// The claim kind only exists once core established the XRD; a Lock
		// still finds it and annotates the claim.
		l := &v1alpha1.Lock{
			ObjectMeta: metav1.ObjectMeta{Namespace: "finance", Name: "keep-billing"},
			Spec:       v1alpha1.LockSpec{TargetRef: v1alpha1.TargetReference{Kind: "PostgreSQLTenant", Name: "billing"}},
		}
		env.Create(ctx, t, l)
		// No admission policy in this environment: PolicyMissing, with the
		// claim annotated.
		env.Ready(ctx, t, l, corev1.ConditionFalse, v1alpha1.ReasonPolicyMissing)
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(billing), billing); err != nil {
			t.Fatal(err)
		}
		if got := billing.GetAnnotations()[v1alpha1.AnnotationLocked]; got != "keep-billing" {
			t.Errorf("the claim's locked annotation = %q", got)
		}
		// Core copies a claim's annotations onto its composite. Once the
		// Lock is gone neither may keep its name: with the policy in force
		// a stale entry on the composite would refuse the delete that the
		// claim's deletion cascades to, and the tenant could never leave.
		xrName, _, _ := unstructured.NestedString(billing.Object, "spec", "resourceRef", "name")
		if xrName == "" {
			t.Fatal("the claim names no composite")
		}
		xr := &unstructured.Unstructured{}
		xr.SetAPIVersion("database.ayatori.ddupan.top/v1alpha1")
		xr.SetKind("XPostgreSQLTenant")
		locked := func(ctx context.Context, o *unstructured.Unstructured, key client.ObjectKey) (string, error) {
			err := env.Kube.Get(ctx, key, o)
			return o.GetAnnotations()[v1alpha1.AnnotationLocked], err
		}
		// Without the copy, the check after the release below would pass
		// for nothing.
		if err := providertest.Wait(ctx, 15*time.Second, func(ctx context.Context) (bool, error) {
			got, err := locked(ctx, xr, client.ObjectKey{Name: xrName})
			return got == "keep-billing", err
		}); err != nil {
			t.Errorf("the composite %s never carried the claim's Lock: %v", xrName, err)
		}
		if err := env.Kube.Delete(ctx, l); err != nil {
			t.Fatal(err)
		}
		env.Gone(ctx, t, l)
		var onClaim, onXR string
		err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
			var err error
			if onClaim, err = locked(ctx, billing, client.ObjectKeyFromObject(billing)); err != nil {
				return false, err
			}
			onXR, err = locked(ctx, xr, client.ObjectKey{Name: xrName})
			return onClaim == "" && onXR == "", err
		})
		if err != nil {
			t.Errorf("after its Lock went, the claim's locked annotation is %q and its composite's %q: %v", onClaim, onXR, err)
		}
	})

	t.Run("LockProtectsThroughCrossplaneUsage", func(t *testing.T) {
		// No admission policy here: the Lock's Usage, enforced by core's
		// own webhook, is what refuses the delete.
		db := &v1alpha1.PostgreSQLDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders"}}
		l := &v1alpha1.Lock{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "keep-orders"},
			Spec:       v1alpha1.LockSpec{TargetRef: v1alpha1.TargetReference{Kind: v1alpha1.PostgreSQLDatabaseKind, Name: "orders"}, Reason: "Orders data stays"},
		}
		env.Create(ctx, t, l)
		var last error
		err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
			last = env.Kube.Delete(ctx, db, client.DryRunAll)
			return last != nil && strings.Contains(last.Error(), "Orders data stays"), nil
		})
		if err != nil {
			t.Fatalf("core's Usage webhook did not refuse deleting the locked database: %v; core's log:\n%s", last, core.LogTail())
		}
		if err := env.Kube.Delete(ctx, l); err != nil {
			t.Fatal(err)
		}
		env.Gone(ctx, t, l)
	})

	t.Run("DeletingTheClaimKeepsTheDataAndEndsTheLogin", func(t *testing.T) {
		if err := env.Kube.Delete(ctx, orders); err != nil {
			t.Fatal(err)
		}
		err := providertest.Wait(ctx, 3*time.Minute, func(ctx context.Context) (bool, error) {
			c, err := providertest.ConnectWithSecret(ctx, secret, "")
			if err == nil {
				_ = c.Close(ctx)
			}
			return err != nil, nil
		})
		if err != nil {
			t.Fatalf("the tenant can still log in after its claim was deleted: %v; %s", err, stuck(ctx))
		}
		admin := env.Connect(ctx, t, "orders")
		var n int
		if err := admin.QueryRow(ctx, "SELECT count(*) FROM items").Scan(&n); err != nil || n != 1 {
			t.Errorf("the retained database lost its data: %d, %v", n, err)
		}
		// The database's record outlives the claim, Released.
		db := &v1alpha1.PostgreSQLDatabase{}
		err = providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
			err := env.Kube.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "orders"}, db)
			return err == nil && db.Status.Binding.Phase == v1alpha1.PhaseReleased, err
		})
		if err != nil {
			t.Fatalf("the PostgreSQLDatabase did not stay, Released: %v (%+v)", err, db.Status.Binding)
		}
		released := db.Status.Binding.BoundTo.UID

		// The thief's claim still gets nothing.
		thief := tenantClaim("finance", "thief", "{}")
		waitBound(ctx, t, core, thief, "False", "Conflict")
		assertNoAccess(ctx, t, "finance", "thief")

		// A new tenant of the same name is not handed the released data ...
		// Here it is a namespaced Tenant: a claim moving to the Crossplane
		// v2 way (docs/kinds/tenant.md) is this, and it keeps the data.
		again := namespacedTenant("shop", "orders", `{"instanceRef": {"name": "main"}, "extensions": ["pgcrypto"]}`)
		env.Create(ctx, t, again)
		waitBound(ctx, t, core, again, "False", "Released")
		assertNoAccess(ctx, t, "shop", "orders")

		// ... until an admin re-opens the database: then it binds and reads
		// the old rows.
		// As an admin would: again when the provider wrote in between (a CI
		// run failed on a status write between the read and this write).
		providertest.Update(ctx, t, env, db, func(db *v1alpha1.PostgreSQLDatabase) {
			db.Spec.Binding.Reopen, db.Spec.Binding.Offered = released, true
		})
		waitClaimReady(ctx, t, core, again)
		s, err := env.ConnectionSecret(ctx, "shop", "main-orders-postgresql")
		if err != nil {
			t.Fatal(err)
		}
		c, err := providertest.ConnectWithSecret(ctx, s, "")
		if err != nil {
			t.Fatalf("the re-opened tenant cannot log in: %v", err)
		}
		defer c.Close(ctx) //nolint:errcheck // Test.
		if err := c.QueryRow(ctx, "SELECT count(*) FROM items").Scan(&n); err != nil || n != 1 {
			t.Errorf("the re-opened tenant reads %d old rows: %v", n, err)
		}
	})
	t.Run("PlatformTurnsOnAlternatingRotationTenantAsksForOne", func(t *testing.T) {
		// The platform adapts the Composition as its comment shows; the
		// live claim is re-composed with the new revision.
		setCompositionInput(ctx, t, map[string]any{"credentialRotation": map[string]any{"mode": "Alternating", "gracePeriod": "5s"}})
		first := waitTenantLogin(ctx, t, "finance", "main-billing-postgresql", "billing_a")
		c, err := providertest.ConnectWithSecret(ctx, first, "")
		if err != nil {
			t.Fatalf("the first alternating login cannot log in: %v", err)
		}
		var user string
		err = c.QueryRow(ctx, "SELECT current_user").Scan(&user)
		_ = c.Close(ctx)
		b := &v1alpha1.PostgreSQLBinding{}
		if gerr := env.Kube.Get(ctx, client.ObjectKey{Namespace: "finance", Name: "billing"}, b); gerr != nil || b.Status.Database == nil {
			t.Fatalf("the tenant's binding: %v", gerr)
		}
		if err != nil || user != b.Status.Database.Owner {
			t.Errorf("the alternating login acts as %q, not as the database owner %q: %v", user, b.Status.Database.Owner, err)
		}

		// The tenant asks for a rotation through its claim.
		cur := tenantClaim("finance", "billing", "{}")
		providertest.Update(ctx, t, env, cur, func(cur *unstructured.Unstructured) {
			if err := unstructured.SetNestedField(cur.Object, "2026-12-01T05:00:00Z", "spec", "rotateCredentials"); err != nil {
				t.Fatal(err)
			}
		})
		second := waitTenantLogin(ctx, t, "finance", "main-billing-postgresql", "billing_b")
		for name, d := range map[string]map[string][]byte{"new": second, "previous, in its grace period": first} {
			c, err := providertest.ConnectWithSecret(ctx, d, "")
			if err != nil {
				t.Errorf("the %s login cannot log in: %v", name, err)
				continue
			}
			_ = c.Close(ctx)
		}
	})
	t.Run("ANamespaceRestoredFromABackup", func(t *testing.T) {
		// A tenant's namespace is lost with the provider down (nothing on
		// the server changes), then restored from a backup taken as
		// docs/operations.md says: no status, new UIDs. A stranger's
		// claim naming the tenant's database comes first. The tenant's
		// claim is Ready again on the same database, owner and login
		// (same OIDs), reads its rows with the credentials it is given,
		// and the stranger gets nothing.
		const ns = "archives"
		if err := env.Namespace(ctx, ns); err != nil {
			t.Fatal(err)
		}
		claim := tenantClaim(ns, "archive", `{"instanceRef": {"name": "main"}}`)
		env.Create(ctx, t, claim)
		waitClaimReady(ctx, t, core, claim)
		s, err := env.ConnectionSecret(ctx, ns, "main-archive-postgresql")
		if err != nil {
			t.Fatal(err)
		}
		c, err := providertest.ConnectWithSecret(ctx, s, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx, "CREATE TABLE entries (v text); INSERT INTO entries VALUES ('kept')"); err != nil {
			t.Fatal(err)
		}
		_ = c.Close(ctx)
		admin := env.Connect(ctx, t, "postgres")
		oids := func() map[string]uint32 {
			t.Helper()
			got := map[string]uint32{}
			rows, err := admin.Query(ctx, `SELECT 'database ' || datname, oid FROM pg_database WHERE datname = 'archive'
				UNION ALL SELECT 'role ' || rolname, oid FROM pg_roles WHERE rolname IN ('archive', 'archive_owner')`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var n string
				var oid uint32
				if err := rows.Scan(&n, &oid); err != nil {
					t.Fatal(err)
				}
				got[n] = oid
			}
			return got
		}
		before := oids()
		if len(before) != 3 {
			t.Fatalf("the tenant's database, owner and login: %v", before)
		}
		kinds := []schema.GroupVersionKind{
			tenantClaim(ns, "x", "{}").GroupVersionKind(),
			v1alpha1.PostgreSQLDatabaseGroupVersionKind, v1alpha1.PostgreSQLRoleGroupVersionKind, v1alpha1.PostgreSQLSchemaGroupVersionKind,
			v1alpha1.PostgreSQLGrantGroupVersionKind, v1alpha1.PostgreSQLDefaultPrivilegesGroupVersionKind, v1alpha1.PostgreSQLBindingGroupVersionKind,
		}
		// docs/operations.md, as written.
		runbook := operations(t, ns)
		runbook(ctx, "where", "strip", "backup-platform", "backup-namespace")

		// Lost, with the provider down: every object goes, finalizers and
		// all, and the server keeps what it had.
		if err := env.Pause(); err != nil {
			t.Fatal(err)
		}
		if err := env.Kube.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
		err = providertest.Wait(ctx, 3*time.Minute, func(ctx context.Context) (bool, error) {
			for _, k := range kinds {
				l := &unstructured.UnstructuredList{}
				l.SetGroupVersionKind(k.GroupVersion().WithKind(k.Kind + "List"))
				if err := env.Kube.List(ctx, l, client.InNamespace(ns)); err != nil {
					return false, err
				}
				for i := range l.Items {
					if o := &l.Items[i]; len(o.GetFinalizers()) > 0 {
						o.SetFinalizers(nil)
						if err := env.Kube.Update(ctx, o); client.IgnoreNotFound(err) != nil && !kerrors.IsConflict(err) {
							return false, err
						}
					}
				}
			}
			err := env.Kube.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
			return kerrors.IsNotFound(err), client.IgnoreNotFound(err)
		})
		if err != nil {
			t.Fatalf("the namespace was not deleted: %v", err)
		}
		if diff := cmp.Diff(before, oids()); diff != "" {
			t.Fatalf("losing the namespace changed the server (-before +after):\n%s", diff)
		}

		// Restored: the namespace, a stranger's claim first, then the
		// backup, and the provider back.
		if err := env.Namespace(ctx, ns); err != nil {
			t.Fatal(err)
		}
		stranger := tenantClaim(ns, "stranger", `{"databaseRef": {"name": "archive"}}`)
		env.Create(ctx, t, stranger)
		runbook(ctx, "where", "strip", "restore-platform", "restore-namespace")
		if err := env.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		restored := tenantClaim(ns, "archive", "{}")
		waitClaimReady(ctx, t, core, restored)
		if restored.GetUID() == claim.GetUID() {
			t.Fatal("the claim was not re-created")
		}
		if diff := cmp.Diff(before, oids()); diff != "" {
			t.Errorf("the restore dropped or made again objects on the server (-before +after):\n%s", diff)
		}
		s, err = env.ConnectionSecret(ctx, ns, "main-archive-postgresql")
		if err != nil {
			t.Fatal(err)
		}
		c, err = providertest.ConnectWithSecret(ctx, s, "")
		if err != nil {
			t.Fatalf("the restored tenant cannot log in with the credentials it is given: %v", err)
		}
		defer c.Close(ctx) //nolint:errcheck // Test.
		var v string
		if err := c.QueryRow(ctx, "SELECT v FROM entries").Scan(&v); err != nil || v != "kept" {
			t.Errorf("the restored tenant reads %q: %v", v, err)
		}
		db := &v1alpha1.PostgreSQLDatabase{}
		if err := env.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "archive"}, db); err != nil {
			t.Fatal(err)
		}
		if db.Status.AtProvider.RestoredFrom == "" {
			t.Error("the restored database does not say which resource it succeeded")
		}
		waitBound(ctx, t, core, stranger, "False", "BoundToAnotherTenant")
		assertNoAccess(ctx, t, ns, "stranger")
	})
	t.Run("ANoisyNeighbourDoesNotDelayAClaim", func(t *testing.T) {
		// Another namespace applies 2,000 roles at once; a claim asked
		// for once they are all in is Ready within one poll of what a
		// claim takes on a quiet provider.
		claimTime := func(name string) time.Duration {
			t.Helper()
			c := tenantClaim("shop", name, `{"instanceRef": {"name": "main"}}`)
			start := time.Now()
			env.Create(ctx, t, c)
			waitClaimReady(ctx, t, core, c)
			return time.Since(start)
		}
		calm := claimTime("calm")
		if err := env.Namespace(ctx, "noisy"); err != nil {
			t.Fatal(err)
		}
		const burst = 2000
		start := time.Now()
		if err := env.Burst(ctx, burst, func(i int) client.Object {
			r := providertest.Role("noisy", "main", fmt.Sprintf("noisy_%d", i))
			// Made, then left alone: the subtests after this one do not
			// share the provider with 2,000 polls.
			r.SetAnnotations(map[string]string{"crossplane.io/poll-interval": "1h"})
			return r
		}); err != nil {
			t.Fatal(err)
		}
		created := time.Since(start)
		busy := claimTime("busy")
		ready := 0
		l := &v1alpha1.PostgreSQLRoleList{}
		if err := env.Kube.List(ctx, l, client.InNamespace("noisy")); err != nil {
			t.Fatal(err)
		}
		for i := range l.Items {
			if l.Items[i].GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue {
				ready++
			}
		}
		t.Logf("a claim Ready in %s once another namespace had applied %d roles (in %s; %d of them Ready by then); %s on a quiet provider",
			busy.Round(10*time.Millisecond), burst, created.Round(time.Second), ready, calm.Round(10*time.Millisecond))
		switch {
		case busy > calm+5*time.Second:
			t.Errorf("the claim took %s during another namespace's burst, %s on a quiet provider: more than one poll (5 s) more", busy, calm)
		case ready == burst:
			t.Errorf("all %d roles were Ready before the claim was: the provider was not busy with them, so this proves nothing", burst)
		}
	})
	t.Run("OpenBaoDelivery", func(t *testing.T) {
		// Last: the platform gives the Instance a credentialVault. The
		// claims above start their move to it too, and keep their
		// Secrets: their namespaces have no store, so their
		// ExternalSecrets never sync and the provider keeps writing the
		// Secrets.
		openBaoDelivery(ctx, t, core)
	})
	t.Run("NoMessageCarriesASecret", func(t *testing.T) {
		noSecretInMessages(ctx, t)
	})
	t.Logf("end to end in %s", time.Since(start).Round(time.Millisecond))
}

// noSecretInMessages: after the whole run (claims bound, refused, in
// conflict, racing, restored, a vault down mid-rotation), no condition
// message of any object of the provider's group or of Crossplane's
// composites and claims, no event, and no line the provider logged holds
// a password or token that any Secret in the cluster holds.
func noSecretInMessages(ctx context.Context, t *testing.T) {
	secrets := &corev1.SecretList{}
	if err := env.Kube.List(ctx, secrets); err != nil {
		t.Fatal(err)
	}
	var values []string
	for _, s := range secrets.Items {
		for k, v := range s.Data {
			if k := strings.ToLower(k); (strings.Contains(k, "password") || strings.Contains(k, "token")) && len(v) >= 8 {
				values = append(values, string(v))
			}
		}
	}
	if len(values) < 5 {
		t.Fatalf("only %d passwords and tokens in the cluster's Secrets: nothing to check against", len(values))
	}
	crds := &unstructured.UnstructuredList{}
	crds.SetAPIVersion("apiextensions.k8s.io/v1")
	crds.SetKind("CustomResourceDefinitionList")
	if err := env.Kube.List(ctx, crds); err != nil {
		t.Fatal(err)
	}
	var texts []string
	reasons := map[string]bool{}
	for _, crd := range crds.Items {
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		if group != v1alpha1.Group {
			continue
		}
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion(v1alpha1.SchemeGroupVersion.String())
		l.SetKind(kind + "List")
		if err := env.Kube.List(ctx, l); err != nil {
			t.Fatalf("listing %s: %v", kind, err)
		}
		for _, o := range l.Items {
			conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
			for _, c := range conds {
				if m, ok := c.(map[string]any); ok {
					msg, _ := m["message"].(string)
					reason, _ := m["reason"].(string)
					texts = append(texts, fmt.Sprintf("%s %s/%s: %s", kind, o.GetNamespace(), o.GetName(), msg))
					reasons[reason] = true
				}
			}
		}
	}
	events := &corev1.EventList{}
	if err := env.Kube.List(ctx, events); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		texts = append(texts, fmt.Sprintf("event %s on %s %s/%s: %s", e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Namespace, e.InvolvedObject.Name, e.Message))
	}
	texts = append(texts, strings.Split(env.ProviderLog(), "\n")...)
	for _, text := range texts {
		for _, v := range values {
			if strings.Contains(text, v) {
				// The text, never the value.
				t.Errorf("a password or token appears in: %.120s…", strings.ReplaceAll(text, v, "<the value>"))
			}
		}
	}
	t.Logf("%d condition messages, events and log lines checked against %d passwords and tokens; reasons seen: %d", len(texts), len(values), len(reasons))
}

// waitTenantLogin waits until a tenant's Secret holds login user.
func waitTenantLogin(ctx context.Context, t *testing.T, ns, name, user string) map[string][]byte {
	t.Helper()
	var d map[string][]byte
	err := providertest.Wait(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
		var err error
		d, err = env.ConnectionSecret(ctx, ns, name)
		return err == nil && string(d["username"]) == user, nil
	})
	if err != nil {
		t.Fatalf("Secret %s/%s never held login %s (it holds %q): %v; %s", ns, name, user, d["username"], err, stuck(ctx))
	}
	return d
}

// stuck describes the provider's resources whose Synced condition is False,
// for a failure message.
func stuck(ctx context.Context) string {
	var out []string
	roles := &v1alpha1.PostgreSQLRoleList{}
	grants := &v1alpha1.PostgreSQLGrantList{}
	if err := env.Kube.List(ctx, roles); err != nil {
		return err.Error()
	}
	if err := env.Kube.List(ctx, grants); err != nil {
		return err.Error()
	}
	for i := range roles.Items {
		if c := roles.Items[i].GetCondition(xpv2.TypeSynced); c.Status == corev1.ConditionFalse {
			out = append(out, fmt.Sprintf("role %s: %s", roles.Items[i].Name, c.Message))
		}
	}
	for i := range grants.Items {
		if c := grants.Items[i].GetCondition(xpv2.TypeSynced); c.Status == corev1.ConditionFalse {
			out = append(out, fmt.Sprintf("grant %s: %s", grants.Items[i].Name, c.Message))
		}
	}
	return "not synced: [" + strings.Join(out, "; ") + "]"
}

// traceNode is one object of crossplane resource trace -o json.
type traceNode struct {
	Object   unstructured.Unstructured `json:"object"`
	Children []*traceNode              `json:"children"`
}

// has reports whether the tree holds an object of kind (and name, when
// given) that is a child of an object of kind under (when given).
func (n *traceNode) has(kind, name, under string) bool {
	for _, c := range n.Children {
		if c.Object.GetKind() == kind && (name == "" || c.Object.GetName() == name) && (under == "" || n.Object.GetKind() == under) {
			return true
		}
		if c.has(kind, name, under) {
			return true
		}
	}
	return false
}

// String is the tree as kind/name lines, indented by depth.
func (n *traceNode) String() string {
	var b strings.Builder
	var walk func(n *traceNode, depth int)
	walk = func(n *traceNode, depth int) {
		fmt.Fprintf(&b, "%s%s/%s\n", strings.Repeat("  ", depth), n.Object.GetKind(), n.Object.GetName())
		for _, c := range n.Children {
			walk(c, depth+1)
		}
	}
	walk(n, 0)
	return b.String()
}

// crossplaneTrace runs Crossplane's CLI, `crossplane resource trace`, on
// resource in namespace ns, and returns its tree.
func crossplaneTrace(ctx context.Context, t *testing.T, cli, resource, ns string) *traceNode {
	t.Helper()
	cmd := exec.CommandContext(ctx, cli, "resource", "trace", resource, "-n", ns, "-o", "json")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.ControlPlane.Kubeconfig)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("crossplane resource trace %s: %v\n%s", resource, err, stderr.String())
	}
	tree := &traceNode{}
	if err := json.Unmarshal(out, tree); err != nil {
		t.Fatalf("crossplane resource trace %s -o json: %v\n%s", resource, err, out)
	}
	t.Logf("crossplane resource trace %s:\n%s", resource, tree)
	return tree
}
