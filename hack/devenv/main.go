// Command devenv is `make dev`: it runs provider-postgresql for real on this
// machine. It starts etcd, kube-apiserver and kube-controller-manager on
// loopback, a TLS PostgreSQL server, installs the CRDs, builds and runs the
// provider out of cluster, and waits until it is healthy. Everything stops
// on Ctrl-C, SIGTERM, or `make dev-down` from another terminal.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/configuration"
	"github.com/ayatori/provider-postgresql/internal/fixture/controlplane"
	"github.com/ayatori/provider-postgresql/internal/fixture/crossplane"
	"github.com/ayatori/provider-postgresql/internal/fixture/pgserver"
	"github.com/ayatori/provider-postgresql/internal/fixture/proc"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

const (
	providerNamespace = "crossplane-system"
	adminSecretName   = "postgres-admin"
	caSecretName      = "postgres-ca"
)

func main() {
	var (
		state = flag.String("state", "_output/dev", "folder for the kubeconfig, logs and the pid file")
		down  = flag.Bool("down", false, "stop a running `make dev` and exit")
	)
	flag.Parse()

	var err error
	if *down {
		err = stop(*state)
	} else {
		ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err = run(ctx, *state, os.Stdout, nil)
		cancel()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "devenv:", err)
		os.Exit(1)
	}
}

// run starts everything, reports progress to out, calls ready (if not nil)
// once the provider is healthy and the examples are Ready, and tears
// everything down when ctx is done.
func run(ctx context.Context, state string, out io.Writer, ready func()) error { //nolint:gocyclo // A linear recipe, easier to follow in one place.
	step := func(format string, args ...any) { _, _ = fmt.Fprintf(out, "==> "+format+"\n", args...) }
	say := func(format string, args ...any) { _, _ = fmt.Fprintf(out, "    "+format+"\n", args...) }
	root, err := controlplane.RepoRoot()
	if err != nil {
		return err
	}
	if !filepath.IsAbs(state) {
		state = filepath.Join(root, state)
	}
	pidFile := filepath.Join(state, "devenv.pid")
	if pid, alive := running(pidFile); alive {
		return errors.Errorf("make dev is already running (pid %d); stop it with `make dev-down`", pid)
	}
	if err := os.MkdirAll(state, 0o750); err != nil {
		return err
	}

	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return err
	}
	defer os.Remove(pidFile) //nolint:errcheck // Best effort.

	var stops []func()
	defer func() {
		step("stopping")
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
		step("stopped; nothing is left running")
	}()

	step("starting PostgreSQL (TLS, SCRAM) on 127.0.0.1")
	pg, err := pgserver.Start(ctx, pgserver.Options{LogStatement: "ddl"})
	if err != nil {
		return err
	}
	stops = append(stops, func() { _ = pg.Stop() })
	caFile := filepath.Join(state, "postgres-ca.crt")
	if err := os.WriteFile(caFile, pg.CA.CertPEM, 0o600); err != nil {
		return err
	}
	pgpass := filepath.Join(state, "pgpass")
	if err := os.WriteFile(pgpass, fmt.Appendf(nil, "%s:%d:*:%s:%s\n", pg.Host, pg.Port, pg.AdminUser, pg.AdminPassword), 0o600); err != nil {
		return err
	}
	say("%s", pg)

	step("starting etcd, kube-apiserver and kube-controller-manager on 127.0.0.1")
	cp, err := controlplane.Start(ctx, controlplane.Options{ControllerManager: true})
	if err != nil {
		return err
	}
	stops = append(stops, func() { _ = cp.Stop() })
	kubeconfig := filepath.Join(state, "kubeconfig")
	b, err := os.ReadFile(cp.Kubeconfig)
	if err != nil {
		return err
	}
	if err := os.WriteFile(kubeconfig, b, 0o600); err != nil {
		return err
	}
	say("CRDs from package/crds installed")

	step("creating namespace %s with the admin credentials Secret %s and the CA Secret %s", providerNamespace, adminSecretName, caSecretName)
	kc, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: providerNamespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: adminSecretName, Namespace: providerNamespace, Labels: map[string]string{v1alpha1.LabelAdminCredential: "true"}},
			StringData: map[string]string{"username": pg.AdminUser, "password": pg.AdminPassword}},
		{ObjectMeta: metav1.ObjectMeta{Name: caSecretName, Namespace: providerNamespace},
			Data: map[string][]byte{"ca.crt": pg.CA.CertPEM}},
	} {
		if _, err := kc.CoreV1().Secrets(providerNamespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return err
		}
	}

	step("building and starting the provider")
	bin := filepath.Join(state, "provider")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/provider")
	build.Dir, build.Stdout, build.Stderr = root, out, out
	if err := build.Run(); err != nil {
		return errors.Errorf("cannot build the provider: %w", err)
	}
	metricsPort, err := proc.FreePort()
	if err != nil {
		return err
	}
	probePort, err := proc.FreePort()
	if err != nil {
		return err
	}
	providerLog := filepath.Join(state, "provider.log")
	_ = os.Remove(providerLog)
	cmd := exec.Command(bin,
		"--namespace="+providerNamespace,
		"--poll=30s",
		// make dev shows Locks working: the provider installs the
		// admission policy behind them, naming its own identity.
		"--install-lock-policy",
		"--metrics-bind-address=127.0.0.1:"+strconv.Itoa(metricsPort),
		"--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(probePort))
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	provider, err := proc.Start(cmd, providerLog, syscall.SIGTERM)
	if err != nil {
		return err
	}
	stops = append(stops, func() { provider.Stop(syscall.SIGTERM, 35*time.Second) })
	if err := waitHealthy(ctx, provider, probePort); err != nil {
		return err
	}
	say("healthy: http://127.0.0.1:%d/readyz, metrics at http://127.0.0.1:%d/metrics", probePort, metricsPort)

	kube, err := client.New(cp.Config, client.Options{})
	if err != nil {
		return err
	}
	step("starting Crossplane core out of cluster, the tenant composition functions, and the tenant Configuration (configuration/)")
	core, err := startCrossplane(ctx, kube, cp, root, state, out)
	if err != nil {
		return err
	}
	stops = append(stops, core.Stop)
	say("XRD %s established; PostgreSQLTenant claims are offered", configuration.XRDName)

	step("applying examples/ (endpoints pointed at the local server) and waiting until they are Ready")
	applied, err := applyExamples(ctx, kube, filepath.Join(root, "examples"), pg, say)
	if err != nil {
		return err
	}
	if err := waitReady(ctx, kube, applied, provider, say); err != nil {
		return err
	}

	assets := os.Getenv("KUBEBUILDER_ASSETS")
	rel := func(p string) string {
		if r, err := filepath.Rel(root, p); err == nil && !strings.HasPrefix(r, "..") {
			return r
		}
		return p
	}
	_, _ = fmt.Fprintf(out, `
provider-postgresql is running. In another terminal, from %s:

  export KUBECONFIG=%s PATH=%s:$PATH
  kubectl get crds
  kubectl -n %s get secrets
  tail -f %s                      # the provider's log

PostgreSQL (admin %s; password in %s and in Secret %s/%s):

  PGPASSFILE=%s psql "host=%s hostaddr=%s port=%d dbname=postgres user=%s sslmode=verify-full sslrootcert=%s"

  kubectl get managed
%s
Stop with Ctrl-C here, or `+"`make dev-down`"+` from another terminal.
`, root, rel(kubeconfig), assets, providerNamespace, rel(providerLog),
		pg.AdminUser, rel(pgpass), providerNamespace, adminSecretName,
		rel(pgpass), pg.Host, pg.Hostaddr, pg.Port, pg.AdminUser, rel(caFile), roleHints(applied, rel(caFile)))

	if ready != nil {
		ready()
	}
	select {
	case <-ctx.Done():
	case <-provider.Exited():
		return errors.Errorf("the provider exited; its log:\n%s", provider.LogTail())
	}
	return nil
}

// startCrossplane runs core against the local control plane, builds and
// runs the tenant function beside function-auto-ready, and installs the
// XRD and Composition of configuration/.
func startCrossplane(ctx context.Context, kube client.Client, cp *controlplane.ControlPlane, root, state string, out io.Writer) (*crossplane.Core, error) {
	tools, err := crossplane.Tools()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(state, "crossplane")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	core, err := crossplane.Start(ctx, crossplane.Options{Config: cp.Config, Kubeconfig: cp.Kubeconfig, Dir: dir})
	if err != nil {
		return nil, err
	}
	fn := filepath.Join(state, "function-tenant")
	build := exec.CommandContext(ctx, "go", "build", "-o", fn, "./cmd/function-tenant")
	build.Dir, build.Stdout, build.Stderr = root, out, out
	if err := build.Run(); err != nil {
		core.Stop()
		return nil, err
	}
	for name, bin := range map[string]string{configuration.FunctionTenant: fn, configuration.FunctionAutoReady: filepath.Join(tools, "function-auto-ready")} {
		if err := core.RunFunction(ctx, kube, name, bin, dir); err != nil {
			core.Stop()
			return nil, err
		}
	}
	objs, err := configuration.Objects()
	if err == nil {
		for _, u := range objs {
			if err = kube.Create(ctx, u); err != nil {
				break
			}
		}
	}
	if err == nil {
		err = core.WaitOffered(ctx, kube, configuration.XRDName)
	}
	if err != nil {
		core.Stop()
		return nil, err
	}
	return core, nil
}

func waitHealthy(ctx context.Context, p *proc.Process, probePort int) error {
	url := "http://127.0.0.1:" + strconv.Itoa(probePort) + "/readyz"
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.Exited():
			return errors.Errorf("the provider exited during start-up; its log:\n%s", p.LogTail())
		case <-time.After(200 * time.Millisecond):
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return errors.Errorf("the provider was not ready within 2 minutes; its log:\n%s", p.LogTail())
}

// running returns the pid in pidFile and whether that process is alive.
func running(pidFile string) (int, bool) {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, syscall.Kill(pid, 0) == nil
}

// stop signals a running devenv and waits for it to tear everything down.
func stop(state string) error {
	root, err := controlplane.RepoRoot()
	if err != nil {
		return err
	}
	if !filepath.IsAbs(state) {
		state = filepath.Join(root, state)
	}
	pidFile := filepath.Join(state, "devenv.pid")
	pid, alive := running(pidFile)
	if !alive {
		fmt.Println("devenv: no `make dev` is running")
		_ = os.Remove(pidFile)
		return nil
	}
	fmt.Printf("devenv: stopping `make dev` (pid %d)\n", pid)
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return err
	}
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			fmt.Println("devenv: stopped")
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return errors.Errorf("pid %d did not stop within 90s", pid)
}
