package main

import (
	"bytes"
	"context"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis"
	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/fixture/controlplane"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
	"github.com/ayatori/provider-postgresql/internal/fixture/tier"
)

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDev runs `make dev` in-process: everything starts, the examples reach
// Ready, the printed instructions work, and stopping leaves nothing behind.
func TestDev(t *testing.T) {
	tier.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	state := t.TempDir()
	out, stopDev, done := startDev(ctx, t, options{state: state, delivery: deliverySecret})
	text := out.String()
	for _, want := range []string{"provider-postgresql is running", "export KUBECONFIG=", "PostgreSQLInstance/main is Ready",
		"PostgreSQLRole/shop/orders is Ready", "PostgreSQLDatabase/shop/orders is Ready", "PostgreSQLSchema/shop/sales is Ready",
		"PostgreSQLGrant/shop/orders-reader-select is Ready", "PostgreSQLGrant/shop/orders-owner-membership is Ready",
		"PostgreSQLDefaultPrivileges/shop/orders-reader-select is Ready", "Lock/shop/orders-data is Ready", "ClusterLock/main-instance is Ready",
		"PostgreSQLTenant/shop/inventory is Ready", "get secret main-inventory-postgresql",
		"get secret orders-postgresql", "make dev-down"} {
		if !strings.Contains(text, want) {
			t.Errorf("the output does not say %q:\n%s", want, text)
		}
	}

	// The printed psql command logs in as the example role, reading the
	// password from its Secret.
	var hint string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "PGSSLROOTCERT=") && strings.Contains(line, "get secret orders-postgresql ") {
			hint = strings.TrimSpace(line)
		}
	}
	if hint == "" {
		t.Fatalf("no psql hint for the example role:\n%s", text)
	}
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "bash", "-c", hint+" -Atc 'SELECT current_user'")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(state, "kubeconfig"), "PATH="+os.Getenv("KUBEBUILDER_ASSETS")+":"+os.Getenv("PATH"))
	if out, err := cmd.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "orders" {
		t.Errorf("the printed psql command: %v: %s", err, out)
	}

	// The kubeconfig it wrote reaches the API server, where the example
	// Instance is Ready.
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(state, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	s := newScheme(t)
	kube, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	in := &v1alpha1.PostgreSQLInstance{}
	if err := kube.Get(ctx, client.ObjectKey{Name: "main"}, in); err != nil {
		t.Fatal(err)
	}
	if in.Status.Phase != v1alpha1.InstancePhaseReady || in.Status.PostgreSQLVersion == "" {
		t.Errorf("the example Instance is %q with version %q", in.Status.Phase, in.Status.PostgreSQLVersion)
	}
	t.Run("ExamplesWorkTogether", func(t *testing.T) {
		// The application role, member of the owner role, creates a table
		// in the sales schema; the reporting role reads it and cannot
		// write. Both log in with the Secrets the provider wrote.
		secret := func(name string) map[string][]byte {
			sec := &corev1.Secret{}
			if err := kube.Get(ctx, client.ObjectKey{Namespace: "shop", Name: name}, sec); err != nil {
				t.Fatal(err)
			}
			return sec.Data
		}
		app, err := providertest.ConnectWithSecret(ctx, secret("orders-postgresql"), "orders")
		if err != nil {
			t.Fatalf("the orders role cannot log in to the orders database: %v", err)
		}
		defer app.Close(ctx) //nolint:errcheck // Test.
		if _, err := app.Exec(ctx, "SET ROLE orders_owner; CREATE TABLE sales.invoices (id int); INSERT INTO sales.invoices VALUES (1)"); err != nil {
			t.Fatalf("the orders role cannot create a table as orders_owner: %v", err)
		}
		reader, err := providertest.ConnectWithSecret(ctx, secret("orders-reader-postgresql"), "")
		if err != nil {
			t.Fatalf("the reporting role cannot log in with its Secret: %v", err)
		}
		defer reader.Close(ctx) //nolint:errcheck // Test.
		var n int
		if err := reader.QueryRow(ctx, "SELECT count(*) FROM sales.invoices").Scan(&n); err != nil || n != 1 {
			t.Errorf("the reporting role cannot read the new table: %d, %v", n, err)
		}
		if _, err := reader.Exec(ctx, "INSERT INTO sales.invoices VALUES (2)"); !postgres.IsCode(err, postgres.CodeInsufficientPrivilege) {
			t.Errorf("the reporting role could write, or failed otherwise: %v", err)
		}
	})

	t.Run("TenantClaimDelivers", func(t *testing.T) {
		// The claim example and the namespaced Tenant example (the
		// Crossplane v2 way): each Secret logs in to its database, with
		// the extensions asked for.
		for _, tc := range []struct {
			secret, db string
			pgcrypto   int
		}{{"main-inventory-postgresql", "inventory", 1}, {"main-catalog-postgresql", "catalog", 0}} {
			sec := &corev1.Secret{}
			if err := kube.Get(ctx, client.ObjectKey{Namespace: "shop", Name: tc.secret}, sec); err != nil {
				t.Fatal(err)
			}
			c, err := providertest.ConnectWithSecret(ctx, sec.Data, "")
			if err != nil {
				t.Fatalf("the example tenant cannot log in with its Secret %s: %v", tc.secret, err)
			}
			var db string
			var ext int
			err = c.QueryRow(ctx, "SELECT current_database(), (SELECT count(*) FROM pg_extension WHERE extname = 'pgcrypto')::int").Scan(&db, &ext)
			_ = c.Close(ctx)
			if err != nil || db != tc.db || ext != tc.pgcrypto {
				t.Errorf("%s connected to %q with pgcrypto %d: %v; want %q with %d", tc.secret, db, ext, err, tc.db, tc.pgcrypto)
			}
		}
	})

	t.Run("LockedExamplesAreNotDeletable", func(t *testing.T) {
		err := kube.Delete(ctx, &v1alpha1.PostgreSQLDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders"}}, client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), "resource is protected by Lock(s) [orders-data]") {
			t.Errorf("deleting the locked example database: %v", err)
		}
		// The example Instance is refused by two policies (its Lock, and
		// the examples that use it); the API server reports whichever it
		// evaluates first, and that order is not defined. So the refusal
		// may name either, and the Lock is checked where the lock policy
		// reads it: the Instance's locked annotation.
		err = kube.Delete(ctx, &v1alpha1.PostgreSQLInstance{ObjectMeta: metav1.ObjectMeta{Name: "main"}}, client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), "resource is protected by Lock(s) [main-instance]") &&
			!strings.Contains(err.Error(), "PostgreSQLInstance main is in use:") {
			t.Errorf("deleting the locked example Instance: %v", err)
		}
		inst := &v1alpha1.PostgreSQLInstance{}
		if err := kube.Get(ctx, client.ObjectKey{Name: "main"}, inst); err != nil {
			t.Fatal(err)
		}
		if got := inst.GetAnnotations()[v1alpha1.AnnotationLocked]; got != "main-instance" {
			t.Errorf("the example Instance's locked annotation is %q, want main-instance", got)
		}
	})

	t.Run("MonitoringKit", func(t *testing.T) {
		// The shipped alert rules pass promtool's check, and every metric
		// they and the dashboard name is scraped from the running
		// provider.
		promtool, err := exec.Command(filepath.Join(root, "hack", "ensure-promtool.sh")).Output()
		if err != nil {
			t.Fatalf("promtool is missing (hack/ensure-promtool.sh: %v); make test provides it", err)
		}
		check := exec.CommandContext(ctx, strings.TrimSpace(string(promtool)), "check", "rules", "cluster/monitoring/alerts.yaml")
		check.Dir = root
		if b, err := check.CombinedOutput(); err != nil || !strings.Contains(string(b), "SUCCESS") {
			t.Errorf("promtool check rules cluster/monitoring/alerts.yaml: %v\n%s", err, b)
		}
		m := regexp.MustCompile(`metrics at (http://127\.0\.0\.1:\d+/metrics)`).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("the output names no metrics address:\n%s", text)
		}
		names, err := monitoringMetrics(root)
		if err != nil {
			t.Fatal(err)
		}
		if len(names) < 10 {
			t.Fatalf("only %d metrics named in cluster/monitoring/: %v", len(names), names)
		}
		var missing []string
		deadline := time.Now().Add(time.Minute)
		for {
			missing = missing[:0]
			body := scrape(ctx, t, m[1])
			for _, n := range names {
				// A histogram named whole is exported as its series.
				if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(n) + `(_bucket|_sum|_count)?[{ ]`).MatchString(body) {
					missing = append(missing, n)
				}
			}
			if len(missing) == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(2 * time.Second)
		}
		if len(missing) > 0 {
			t.Errorf("cluster/monitoring/ names metrics the provider does not export: %v", missing)
		}
	})

	t.Run("PreviewApplyAudit", func(t *testing.T) {
		// The README's plugin, preview, change, plan, apply and audit
		// commands, as written, with the plugin it builds on PATH.
		steps := readmeSteps(t, root, "# plugin:", "# preview:", "# change:", "# plan:", "# apply:", "# audit:")
		if len(steps) != 6 {
			t.Fatalf("the README has %d of the plugin, preview, change, plan, apply and audit commands: %q", len(steps), steps)
		}
		sh := func(line string) string {
			t.Helper()
			cmd := exec.CommandContext(ctx, "bash", "-c", line)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(state, "kubeconfig"),
				"PATH="+filepath.Join(root, "_output", "bin")+":"+os.Getenv("KUBEBUILDER_ASSETS")+":"+os.Getenv("PATH"))
			b, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", line, err, b)
			}
			return string(b)
		}
		limit := func() int {
			t.Helper()
			c, err := providertest.ConnectWithSecret(ctx, secretData(ctx, t, kube, "orders-postgresql"), "orders")
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(ctx) //nolint:errcheck // Test.
			var n int
			if err := c.QueryRow(ctx, "SELECT datconnlimit FROM pg_database WHERE datname = 'orders'").Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		policies := func() xpv2.ManagementPolicies {
			t.Helper()
			db := &v1alpha1.PostgreSQLDatabase{}
			if err := kube.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "orders"}, db); err != nil {
				t.Fatal(err)
			}
			return db.GetManagementPolicies()
		}
		was := policies()
		sh(steps[0]) // make plugin
		if out := sh(steps[1]); !strings.Contains(out, "orders") {
			t.Errorf("the preview says %q", out)
		}
		if got := policies(); !slices.Equal(got, xpv2.ManagementPolicies{xpv2.ManagementActionObserve}) {
			t.Errorf("in preview the policies are %v, want [Observe]", got)
		}
		sh(steps[2]) // The change.
		before := limit()
		var plan string
		err := providertest.Wait(ctx, time.Minute, func(context.Context) (bool, error) {
			plan = sh(steps[3])
			return strings.Contains(plan, "CONNECTION LIMIT 5"), nil
		})
		if err != nil {
			t.Fatalf("the preview shows no plan: %q", plan)
		}
		// The audit lists the previewed change among what is pending.
		pendingRow := regexp.MustCompile(`(?m)^shop\s+PostgreSQLDatabase\s+orders\s`)
		if audit := sh(steps[5]); !pendingRow.MatchString(audit) {
			t.Errorf("in preview, the audit does not list the database:\n%s", audit)
		}
		// The metrics name the preview left pending.
		addr := regexp.MustCompile(`metrics at (http://127\.0\.0\.1:\d+/metrics)`).FindStringSubmatch(text)
		if addr == nil {
			t.Fatalf("the output names no metrics address:\n%s", text)
		}
		body := scrape(ctx, t, addr[1])
		for _, want := range []string{
			`provider_postgresql_plans_pending{kind="PostgreSQLDatabase",observe_only="true"} 1`,
			`provider_postgresql_plan_statements{kind="PostgreSQLDatabase",name="orders",namespace="shop",observe_only="true"} 1`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("the metrics do not say %s", want)
			}
		}
		time.Sleep(3 * time.Second)
		if n := limit(); n != before {
			t.Errorf("the preview changed the connection limit: %d, was %d", n, before)
		}
		sh(steps[4]) // Apply: the policies given back.
		if diff := cmp.Diff(was, policies()); diff != "" {
			t.Errorf("apply did not give back the policies (-before +after):\n%s", diff)
		}
		err = providertest.Wait(ctx, time.Minute, func(context.Context) (bool, error) { return limit() == 5, nil })
		if err != nil {
			t.Fatalf("widening the policies did not apply the plan: the limit is %d", limit())
		}
		err = providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
			return strings.Contains(scrape(ctx, t, addr[1]), `provider_postgresql_plans_pending{kind="PostgreSQLDatabase",observe_only="true"} 0`), nil
		})
		if err != nil {
			t.Error("the metrics still count the applied plan as pending")
		}
		// The audit lists what is still pending everywhere: after the
		// apply, not the database.
		if audit := sh(steps[5]); pendingRow.MatchString(audit) {
			t.Errorf("the audit still lists the applied change:\n%s", audit)
		}
	})

	if pid, alive := running(filepath.Join(state, "devenv.pid")); !alive || pid != os.Getpid() {
		t.Errorf("the pid file says %d (alive %t), want this process %d", pid, alive, os.Getpid())
	}

	stopDev()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("make dev returned %v after a stop", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("make dev did not stop within 2 minutes")
	}
	if !strings.Contains(out.String(), "nothing is left running") {
		t.Errorf("the output does not confirm the stop:\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(state, "devenv.pid")); !os.IsNotExist(err) {
		t.Error("the pid file survived the stop")
	}
	// The API server is gone.
	if err := kube.Get(ctx, client.ObjectKey{Name: "main"}, &v1alpha1.PostgreSQLInstance{}); err == nil {
		t.Error("the API server still answers after the stop")
	}
	// PostgreSQL is gone too.
	if port := portIn(text); port == "" {
		t.Error("the output names no PostgreSQL port")
	} else if c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second); err == nil {
		_ = c.Close()
		t.Errorf("PostgreSQL still listens on %s after the stop", port)
	}
}

// startDev runs make dev with o until it is ready; stop stops it, and done
// says how it ended.
func startDev(ctx context.Context, t *testing.T, o options) (out *syncBuffer, stop context.CancelFunc, done chan error) {
	t.Helper()
	out, done = &syncBuffer{}, make(chan error, 1)
	ready := make(chan struct{})
	runCtx, stop := context.WithCancel(ctx)
	go func() { done <- run(runCtx, o, out, func() { close(ready) }) }()
	select {
	case <-ready:
	case err := <-done:
		stop()
		t.Fatalf("make dev stopped before it was ready: %v\n%s", err, out.String())
	case <-ctx.Done():
		stop()
		t.Fatalf("make dev was not ready in time:\n%s", out.String())
	}
	return out, stop, done
}

// TestDevOpenBao runs `make dev DELIVERY=openbao`: the example claim is
// Ready with its credentials delivered through the KV v2 server and the
// External Secrets Operator, the projected Secret logs in, and the printed
// command reads the credential from the vault.
func TestDevOpenBao(t *testing.T) {
	tier.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	state := t.TempDir()
	out, stopDev, done := startDev(ctx, t, options{state: state, delivery: deliveryOpenBao})
	defer func() {
		stopDev()
		if err := <-done; err != nil {
			t.Errorf("make dev returned %v after a stop", err)
		}
	}()
	text := out.String()
	if !strings.Contains(text, "OpenBao delivery") {
		t.Fatalf("the output says nothing of the OpenBao delivery:\n%s", text)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(state, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	kube, err := client.New(cfg, client.Options{Scheme: newScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{}
	if err := kube.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "main-inventory-postgresql"}, sec); err != nil {
		t.Fatal(err)
	}
	if len(sec.GetOwnerReferences()) == 0 || sec.GetOwnerReferences()[0].Kind != "ExternalSecret" {
		t.Errorf("the tenant's Secret is owned by %v, want its ExternalSecret", sec.GetOwnerReferences())
	}
	c, err := providertest.ConnectWithSecret(ctx, sec.Data, "")
	if err != nil {
		t.Fatalf("the example tenant cannot log in with its projected Secret: %v", err)
	}
	_ = c.Close(ctx)
	// The printed command reads the same password from the vault.
	var cmdLines []string
	for i, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "VAULT_ADDR=") {
			cmdLines = strings.Split(text, "\n")[i : i+2]
		}
	}
	if len(cmdLines) != 2 {
		t.Fatalf("no vault command in the output:\n%s", text)
	}
	printed := strings.TrimSuffix(strings.TrimSpace(cmdLines[0]), "\\") + " " + strings.TrimSpace(cmdLines[1])
	cmd := exec.CommandContext(ctx, "bash", "-c", strings.Replace(printed, " kv get ", " kv get -field=password ", 1))
	cmd.Dir = state
	got, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(got)) != string(sec.Data["password"]) {
		t.Errorf("the printed vault command: %v: it printed %d bytes, not the Secret's password (%s)", err, len(got), strings.ReplaceAll(string(got), string(sec.Data["password"]), "<password>"))
	}
}

// portIn finds the PostgreSQL port in the psql hint of make dev's output.
func portIn(text string) string {
	_, after, ok := strings.Cut(text, " port=")
	if !ok {
		return ""
	}
	port, _, _ := strings.Cut(after, " ")
	return port
}

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := apis.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// monitoringMetrics are the metric names cluster/monitoring/'s alert rules
// and dashboard use, sorted.
func monitoringMetrics(root string) ([]string, error) {
	seen := map[string]bool{}
	for _, f := range []string{"alerts.yaml", "dashboard.json"} {
		b, err := os.ReadFile(filepath.Join(root, "cluster", "monitoring", f))
		if err != nil {
			return nil, err
		}
		for _, n := range metricName.FindAllString(string(b), -1) {
			seen[n] = true
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

var metricName = regexp.MustCompile(`\b(provider_postgresql|crossplane|controller_runtime)_[a-z_]+\b`)

// scrape returns what url serves.
func scrape(ctx context.Context, t *testing.T, url string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close() //nolint:errcheck // Test.
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// readmeSteps returns the README's command lines that carry each of the
// comments, in order, the comment cut off.
func readmeSteps(t *testing.T, root string, comments ...string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, line := range strings.Split(string(b), "\n") {
		for _, c := range comments {
			if cmd, _, ok := strings.Cut(line, " "+c); ok && (strings.HasPrefix(line, "kubectl ") || strings.HasPrefix(line, "make ")) {
				steps = append(steps, strings.TrimSpace(cmd))
			}
		}
	}
	return steps
}

func secretData(ctx context.Context, t *testing.T, kube client.Client, name string) map[string][]byte {
	t.Helper()
	sec := &corev1.Secret{}
	if err := kube.Get(ctx, client.ObjectKey{Namespace: "shop", Name: name}, sec); err != nil {
		t.Fatal(err)
	}
	return sec.Data
}
