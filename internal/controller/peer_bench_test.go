package controller_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/controller/config"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

// peerGroup is provider-sql's group of namespaced PostgreSQL kinds.
var peerGroup = schema.GroupVersion{Group: "postgresql.sql.m.crossplane.io", Version: "v1alpha1"}

// peerPairs is the size of the role-and-database workload: login roles with Secrets,
// and databases each owned by its role, the owner given by name.
const peerPairs = 100

// peerResult is one provider's run of the workload at one setting.
type peerResult struct {
	took, floor time.Duration
	// submit is how long creating the objects took with no provider
	// running (measureSubmit); zero if not measured.
	submit time.Duration
	// conns is how many server sessions the provider opened; peak the
	// most it held at once.
	conns, peak int
	// notReady counts the objects not Ready when the run gave up.
	notReady int
}

func (r peerResult) ratio() float64 { return float64(r.took) / float64(r.floor) }

func (r peerResult) String() string {
	if r.notReady > 0 {
		return fmt.Sprintf("%d of %d objects not Ready after %.0f s (floor %.1f s)", r.notReady, 2*peerPairs, r.took.Seconds(), r.floor.Seconds())
	}
	out := fmt.Sprintf("%.1f s (%.2f× floor of %.1f s)", r.took.Seconds(), r.ratio(), r.floor.Seconds())
	if r.submit > 0 {
		out += fmt.Sprintf("; %.1f s to create the objects alone", r.submit.Seconds())
	}
	return out
}

// BenchmarkPeer runs the role-and-database workload (100 login roles with connection
// Secrets and 100 databases owned by them, the owner given by name) on this
// provider and on crossplane-contrib's provider-sql, against the same API
// server and the same PostgreSQL 15 with TLS, each at its own defaults and
// both at --max-reconcile-rate 100. Each run is followed by the SQL floor
// (the same statements over one session), so every ratio uses a floor
// measured next to it. It prints the table docs/performance.md shows.
// make bench-peer builds provider-sql (pinned by tools/provider-sql) and
// sets PEER_PROVIDER_SQL_DIR.
func BenchmarkPeer(b *testing.B) {
	suite.Server(b)
	ctx := context.Background()
	dir := os.Getenv("PEER_PROVIDER_SQL_DIR")
	if dir == "" {
		b.Fatal("PEER_PROVIDER_SQL_DIR is not set: run make bench-peer, which builds provider-sql into the tool cache (hack/peer-tools.sh)")
	}
	if _, err := os.Stat(filepath.Join(dir, "provider")); err != nil {
		b.Fatalf("no provider-sql binary in %s: run hack/peer-tools.sh: %v", dir, err)
	}
	defer restoreScaleEnv(ctx, b)
	if _, err := envtest.InstallCRDs(env.ControlPlane.Config, envtest.CRDInstallOptions{Paths: []string{filepath.Join(dir, "crds")}, ErrorIfPathMissing: true}); err != nil {
		b.Fatal(err)
	}
	peerConfig(ctx, b)
	setLogConnections(ctx, b, true)
	defer setLogConnections(context.WithoutCancel(ctx), b, false)

	settings := []struct {
		name       string
		ours, peer int // --max-reconcile-rate
	}{
		{"defaults", config.DefaultMaxReconcileRate, 10},
		{"rate100", 100, 100},
	}
	results := map[string]peerResult{}
	for i, s := range settings {
		b.Run(s.name+"/this", func(b *testing.B) {
			for range b.N {
				submit := measureSubmit(ctx, b, fmt.Sprintf("s%dt", i))
				if err := env.RestartWith(ctx, func(o *providertest.Options) {
					o.PollInterval, o.MaxReconcileRate, o.MaxConcurrentReconciles = time.Minute, s.ours, config.DefaultMaxConcurrentReconciles
					o.Pools, o.DiscardLog = postgres.RegistryOptions{}, true
				}); err != nil {
					b.Fatal(err)
				}
				prefix := fmt.Sprintf("p%dt", i)
				watched, stop := watchScale(ctx, b)
				r := measurePeerRun(ctx, b, func() (time.Duration, int) {
					took, err := provisionPairs(ctx, watched, b.Logf, prefix, peerPairs, false)
					if err != nil {
						b.Fatal(err)
					}
					return took, 0
				})
				stop()
				removeScale(ctx, b, prefix)
				dropPairs(ctx, b, prefix, peerPairs)
				r.floor = measureFloor(ctx, b, fmt.Sprintf("fp%dt", i))
				r.submit = submit
				results[s.name+"/this"] = r
				reportPeer(b, r)
			}
		})
		b.Run(s.name+"/provider-sql", func(b *testing.B) {
			for range b.N {
				prefix := fmt.Sprintf("p%ds", i)
				stop := startPeer(ctx, b, dir, s.peer)
				r := measurePeerRun(ctx, b, func() (time.Duration, int) { return provisionPeer(ctx, b, prefix) })
				stop()
				removePeer(ctx, b, prefix)
				r.floor = measureFloor(ctx, b, fmt.Sprintf("fp%ds", i))
				results[s.name+"/provider-sql"] = r
				reportPeer(b, r)
			}
		})
	}
	var t strings.Builder
	fmt.Fprintf(&t, "\n| %d pairs | this provider | provider-sql |\n|---|---|---|\n", peerPairs)
	for _, s := range settings {
		this, peer := results[s.name+"/this"], results[s.name+"/provider-sql"]
		fmt.Fprintf(&t, "| %s (rate %d / %d) | %s | %s |\n", s.name, s.ours, s.peer, this, peer)
		fmt.Fprintf(&t, "| server sessions opened, most at once (%s) | %d, %d | %d, %d |\n", s.name, this.conns, this.peak, peer.conns, peer.peak)
	}
	b.Log(t.String())
}

func reportPeer(b *testing.B, r peerResult) {
	b.ReportMetric(r.ratio(), "x-floor")
	if r.submit > 0 {
		b.ReportMetric(r.submit.Seconds(), "s-submit")
		b.ReportMetric(float64(r.took)/float64(r.submit), "x-submit")
	}
	b.ReportMetric(r.took.Seconds(), "s-to-ready")
	b.ReportMetric(r.floor.Seconds(), "s-floor")
	b.ReportMetric(float64(r.conns), "sessions-opened")
	b.ReportMetric(float64(r.peak), "peak-sessions")
}

// measurePeerRun times run, counting the server sessions opened meanwhile
// (log_connections) and the most held at once, the harness's own left out.
func measurePeerRun(ctx context.Context, b *testing.B, run func() (time.Duration, int)) peerResult {
	b.Helper()
	settleServer(ctx, b)
	from := env.ServerLogLen(b)
	peak := samplePeakOf(ctx, b, "application_name <> 'pgserver-fixture' AND backend_type = 'client backend'")
	took, notReady := run()
	r := peerResult{took: took, peak: int(peak.done()), notReady: notReady}
	for _, l := range strings.Split(env.ServerLog(b, from), "\n") {
		if strings.Contains(l, "connection authorized:") && !strings.Contains(l, "pgserver-fixture") {
			r.conns++
		}
	}
	return r
}

// measureSubmit is how long creating the workload's objects takes with
// no provider running: one client creating them one after the other, as
// kubectl apply does, against the same API server. No provider can have
// an object Ready before it exists, so this is the floor on the
// Kubernetes side, as measureFloor is on the server's. The objects are
// then deleted (nothing has put a finalizer on them). It leaves the
// controllers stopped: the next RestartWith starts them.
func measureSubmit(ctx context.Context, b *testing.B, prefix string) time.Duration {
	b.Helper()
	if err := env.Pause(); err != nil {
		b.Fatal(err)
	}
	var objs []client.Object
	start := time.Now()
	for i := range peerPairs {
		r, d := pair(fmt.Sprintf("%s%d", prefix, i), false)
		for _, o := range []client.Object{r, d} {
			if err := env.Kube.Create(ctx, o); err != nil {
				b.Fatal(err)
			}
			objs = append(objs, o)
		}
	}
	took := time.Since(start)
	for _, o := range objs {
		if err := env.Kube.Delete(ctx, o); err != nil {
			b.Fatal(err)
		}
	}
	for _, o := range objs {
		if err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
			err := env.Kube.Get(ctx, client.ObjectKeyFromObject(o), o)
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		}); err != nil {
			b.Fatalf("%s is not gone: %v", o.GetName(), err)
		}
	}
	return took
}

func measureFloor(ctx context.Context, b *testing.B, prefix string) time.Duration {
	b.Helper()
	settleServer(ctx, b)
	took := floorPairs(ctx, b, prefix, peerPairs, false)
	dropPairs(ctx, b, prefix, peerPairs)
	return took
}

// dropPairs drops the n databases and roles a floor made with prefix, one
// statement at a time (DROP DATABASE refuses a transaction block).
func dropPairs(ctx context.Context, tb testing.TB, prefix string, n int) {
	tb.Helper()
	for _, what := range []string{"DATABASE", "ROLE"} {
		for i := range n {
			env.SQL(ctx, tb, "postgres", fmt.Sprintf("DROP %s IF EXISTS %s%d", what, prefix, i))
		}
	}
}

// setLogConnections turns log_connections on or off for new sessions.
func setLogConnections(ctx context.Context, tb testing.TB, on bool) {
	tb.Helper()
	env.SQL(ctx, tb, "postgres", fmt.Sprintf("ALTER SYSTEM SET log_connections = %t", on))
	env.SQL(ctx, tb, "postgres", "SELECT pg_reload_conf()")
	// A reload is asynchronous: wait until a new session sees it.
	want := map[bool]string{true: "on", false: "off"}[on]
	err := providertest.Wait(ctx, 10*time.Second, func(ctx context.Context) (bool, error) {
		c, err := env.Postgres.Connect(ctx, "postgres")
		if err != nil {
			return false, err
		}
		defer c.Close(ctx) //nolint:errcheck // Benchmark.
		var got string
		err = c.QueryRow(ctx, "SHOW log_connections").Scan(&got)
		return got == want, err
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// peerConfig gives provider-sql the server's admin credentials, as its
// users do: a Secret and a ProviderConfig in the workload's namespace. It
// dials the address (the certificate's name is made up, and provider-sql
// has no hostaddr), so it encrypts without verifying the name: TLS all
// the same.
func peerConfig(ctx context.Context, b *testing.B) {
	b.Helper()
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "peer-admin", Namespace: "scale"},
		StringData: map[string]string{
			"username": env.Postgres.AdminUser, "password": env.Postgres.AdminPassword,
			"endpoint": env.Postgres.Hostaddr, "port": strconv.Itoa(env.Postgres.Port),
		},
	}
	pc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": peerGroup.String(), "kind": "ProviderConfig",
		"metadata": map[string]any{"name": "peer", "namespace": "scale"},
		"spec": map[string]any{
			"sslMode":     "require",
			"credentials": map[string]any{"source": "PostgreSQLConnectionSecret", "connectionSecretRef": map[string]any{"name": "peer-admin"}},
		},
	}}
	for _, o := range []client.Object{sec, pc} {
		if err := client.IgnoreAlreadyExists(env.Kube.Create(ctx, o)); err != nil {
			b.Fatal(err)
		}
	}
}

// startPeer runs provider-sql against the test API server with its
// defaults but rate, and returns what stops it. It returns once the
// process reconciles: a probe role is Ready.
func startPeer(ctx context.Context, b *testing.B, dir string, rate int) func() {
	b.Helper()
	logPath := filepath.Join(b.TempDir(), "provider-sql.log")
	log, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(dir, "provider"), "--max-reconcile-rate", strconv.Itoa(rate), "--metrics-bind-address", "0")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.ControlPlane.Kubeconfig)
	cmd.Stdout, cmd.Stderr = log, log
	// Dies with the benchmark if it is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	stop := func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = log.Close()
	}
	probe := peerObject("Role", "peerprobe", map[string]any{})
	if err := client.IgnoreAlreadyExists(env.Kube.Create(ctx, probe)); err != nil {
		stop()
		b.Fatal(err)
	}
	if err := providertest.Wait(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
		return peerReady(ctx, env.Kube, "Role", "peerprobe") == 1, nil
	}); err != nil {
		stop()
		out, _ := os.ReadFile(logPath)
		b.Fatalf("provider-sql did not reconcile a probe role: %v\n%s", err, out)
	}
	return stop
}

func peerObject(kind, name string, forProvider map[string]any) *unstructured.Unstructured {
	spec := map[string]any{
		"forProvider":       forProvider,
		"providerConfigRef": map[string]any{"kind": "ProviderConfig", "name": "peer"},
	}
	if kind == "Role" && forProvider["privileges"] != nil {
		spec["writeConnectionSecretToRef"] = map[string]any{"name": name + "-conn"}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": peerGroup.String(), "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": "scale"},
		"spec":     spec,
	}}
}

// peerReady counts provider-sql's objects of kind, named with prefix, that
// are Ready.
func peerReady(ctx context.Context, r client.Reader, kind, prefix string) int {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(peerGroup.WithKind(kind + "List"))
	if err := r.List(ctx, l, client.InNamespace("scale")); err != nil {
		return -1
	}
	n := 0
	for _, o := range l.Items {
		if strings.HasPrefix(o.GetName(), prefix) && peerIsReady(o) {
			n++
		}
	}
	return n
}

func peerIsReady(o unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == "Ready" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// peerPatience is how long provider-sql gets to make the workload Ready:
// its retries of a database whose owner does not exist yet back off
// exponentially, so it may take long; past this the run reports how many
// are not Ready instead of a time.
const peerPatience = 10 * time.Minute

// provisionPeer creates the workload as provider-sql's kinds and waits
// until all are Ready; it returns the time taken and how many were not
// Ready when it gave up.
func provisionPeer(ctx context.Context, b *testing.B, prefix string) (time.Duration, int) {
	b.Helper()
	// Waited for through a watch, as this provider's run is (watchScale).
	watched, stop := env.Cache(ctx, b, "scale")
	defer stop()
	for _, kind := range []string{"Role", "Database"} {
		if peerReady(ctx, watched, kind, prefix) < 0 {
			b.Fatalf("cannot watch provider-sql's %ss", kind)
		}
	}
	start := time.Now()
	for i := range peerPairs {
		name := fmt.Sprintf("%s%d", prefix, i)
		for _, o := range []client.Object{
			peerObject("Role", name, map[string]any{"privileges": map[string]any{"login": true}}),
			peerObject("Database", name, map[string]any{"owner": name}),
		} {
			if err := env.Kube.Create(ctx, o); err != nil {
				b.Fatal(err)
			}
		}
	}
	err := providertest.Wait(ctx, peerPatience, func(ctx context.Context) (bool, error) {
		return peerReady(ctx, watched, "Role", prefix)+peerReady(ctx, watched, "Database", prefix) == 2*peerPairs, nil
	})
	if err != nil {
		roles, dbs := peerReady(ctx, watched, "Role", prefix), peerReady(ctx, watched, "Database", prefix)
		b.Logf("provider-sql: %d of %d roles and %d of %d databases Ready after %s; %s", roles, peerPairs, dbs, peerPairs, peerPatience, peerWhy(ctx, prefix))
		return time.Since(start), 2*peerPairs - roles - dbs
	}
	return time.Since(start), 0
}

// removePeer deletes provider-sql's objects named with prefix once it is
// stopped (their finalizers removed: nothing would remove them now) and
// drops what it made on the server.
func removePeer(ctx context.Context, b *testing.B, prefix string) {
	b.Helper()
	for _, kind := range []string{"Role", "Database"} {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(peerGroup.WithKind(kind + "List"))
		if err := env.Kube.List(ctx, l, client.InNamespace("scale")); err != nil {
			b.Fatal(err)
		}
		for i := range l.Items {
			o := &l.Items[i]
			if !strings.HasPrefix(o.GetName(), prefix) {
				continue
			}
			o.SetFinalizers(nil)
			if err := client.IgnoreNotFound(env.Kube.Update(ctx, o)); err != nil {
				b.Fatal(err)
			}
			if err := client.IgnoreNotFound(env.Kube.Delete(ctx, o)); err != nil {
				b.Fatal(err)
			}
		}
	}
	dropPairs(ctx, b, prefix, peerPairs)
}

// peerWhy returns the conditions of the first of provider-sql's databases
// named with prefix that is not Ready.
func peerWhy(ctx context.Context, prefix string) string {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(peerGroup.WithKind("DatabaseList"))
	if err := env.Kube.List(ctx, l, client.InNamespace("scale")); err != nil {
		return err.Error()
	}
	for _, o := range l.Items {
		if !strings.HasPrefix(o.GetName(), prefix) || peerIsReady(o) {
			continue
		}
		conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
		return fmt.Sprintf("database %s: %v", o.GetName(), conds)
	}
	return "every database is Ready"
}
