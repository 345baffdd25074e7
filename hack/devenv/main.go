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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
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
		state    = flag.String("state", "_output/dev", "folder for the kubeconfig, logs and the pid file")
		down     = flag.Bool("down", false, "stop a running `make dev` and exit")
		delivery = flag.String("delivery", deliverySecret, "how tenants get their credentials: secret (the provider writes a Secret) or openbao (a KV v2 server and the External Secrets Operator)")
	)
	flag.Parse()

	var err error
	if *down {
		err = stop(*state)
	} else {
		ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err = run(ctx, options{state: *state, delivery: strings.ToLower(*delivery)}, os.Stdout, nil)
		cancel()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "devenv:", err)
		os.Exit(1)
	}
}

// A session is one make dev run: where it keeps its state, where it
// reports, and what it has started so far.
type session struct {
	root, state string
	out         io.Writer
	pg          *pgserver.Server
	cp          *controlplane.ControlPlane
	provider    *proc.Process
	// Files for the user: kubeconfig, the server's CA, a pgpass line, the
	// provider's log.
	kubeconfig, caFile, pgpass, providerLog string
	metricsPort, probePort                  int
}

func (s *session) step(format string, args ...any) {
	_, _ = fmt.Fprintf(s.out, "==> "+format+"\n", args...)
}

func (s *session) say(format string, args ...any) {
	_, _ = fmt.Fprintf(s.out, "    "+format+"\n", args...)
}

// options are make dev's choices.
type options struct {
	// state is the folder for the kubeconfig, logs and the pid file.
	state string
	// delivery is deliverySecret or deliveryOpenBao.
	delivery string
}

// run starts everything, reports progress to out, calls ready (if not nil)
// once the provider is healthy and the examples are Ready, and tears
// everything down when ctx is done.
func run(ctx context.Context, o options, out io.Writer, ready func()) error {
	state := o.state
	if o.delivery != deliverySecret && o.delivery != deliveryOpenBao {
		return errors.Errorf("DELIVERY=%s: choose secret or openbao", o.delivery)
	}
	root, err := controlplane.RepoRoot()
	if err != nil {
		return err
	}
	if !filepath.IsAbs(state) {
		state = filepath.Join(root, state)
	}
	pidFile, err := claimState(state)
	if err != nil {
		return err
	}
	defer os.Remove(pidFile) //nolint:errcheck // Best effort.

	s := &session{root: root, state: state, out: out}
	var stops []func()
	defer func() {
		s.step("stopping")
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
		s.step("stopped; nothing is left running")
	}()
	if err := s.startPostgres(ctx); err != nil {
		return err
	}
	stops = append(stops, func() { _ = s.pg.Stop() })
	if err := s.startControlPlane(ctx); err != nil {
		return err
	}
	stops = append(stops, func() { _ = s.cp.Stop() })
	if err := s.createSecrets(ctx); err != nil {
		return err
	}
	if err := s.startProvider(ctx); err != nil {
		return err
	}
	stops = append(stops, func() { s.provider.Stop(syscall.SIGTERM, 35*time.Second) })

	// The API server's warnings (a deprecated field, say) are printed as
	// kubectl prints them; controller-runtime would log them through a
	// logger nothing here sets, with a goroutine dump.
	cfg := rest.CopyConfig(s.cp.Config)
	cfg.WarningHandler = rest.NewWarningWriter(out, rest.WarningWriterOptions{Deduplicate: true})
	kube, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	s.step("starting Crossplane core out of cluster, the tenant composition functions, and the tenant Configuration (configuration/)")
	core, err := startCrossplane(ctx, kube, s.cp, root, state, out)
	if err != nil {
		return err
	}
	stops = append(stops, core.Stop)
	s.say("XRDs %s and %s established; PostgreSQLTenant claims and namespaced Tenants are offered", configuration.XRDName, configuration.TenantXRDName)

	var bao *openBao
	if o.delivery == deliveryOpenBao {
		s.step("starting a KV v2 server (Vault dev mode) and the External Secrets Operator; tenants get their credentials through them")
		if bao, err = s.startOpenBao(ctx, kube); err != nil {
			return err
		}
		stops = append(stops, bao.stop)
	}
	applied, err := s.examples(ctx, kube, bao)
	if err != nil {
		return err
	}
	s.instructions(applied)
	if bao != nil {
		_, _ = fmt.Fprint(s.out, bao.hints(state))
	}
	if ready != nil {
		ready()
	}
	select {
	case <-ctx.Done():
	case <-s.provider.Exited():
		return errors.Errorf("the provider exited; its log:\n%s", s.provider.LogTail())
	}
	return nil
}

// claimState makes the state folder this run's: it refuses when another
// make dev runs there, and writes its own pid file, which it returns.
func claimState(state string) (string, error) {
	pidFile := filepath.Join(state, "devenv.pid")
	if pid, alive := running(pidFile); alive {
		return "", errors.Errorf("make dev is already running (pid %d); stop it with `make dev-down`", pid)
	}
	if err := os.MkdirAll(state, 0o750); err != nil {
		return "", err
	}
	return pidFile, os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())), 0o600)
}

// examples applies examples/ (with bao, once the platform's side of the
// OpenBao delivery is in place) and waits until they are Ready.
func (s *session) examples(ctx context.Context, kube client.Client, bao *openBao) ([]*unstructured.Unstructured, error) {
	s.step("applying examples/ (endpoints pointed at the local server) and waiting until they are Ready")
	applied, err := applyExamples(ctx, kube, filepath.Join(s.root, "examples"), s.pg, s.say)
	if err != nil {
		return nil, err
	}
	if bao != nil {
		if err := bao.platform(ctx, kube); err != nil {
			return nil, err
		}
	}
	return applied, waitReady(ctx, kube, applied, s.provider, s.say)
}

// startPostgres starts a TLS PostgreSQL and writes its CA and a pgpass
// line into the state folder.
func (s *session) startPostgres(ctx context.Context) error {
	s.step("starting PostgreSQL (TLS, SCRAM) on 127.0.0.1")
	pg, err := pgserver.Start(ctx, pgserver.Options{LogStatement: "ddl"})
	if err != nil {
		return err
	}
	s.pg = pg
	s.caFile = filepath.Join(s.state, "postgres-ca.crt")
	if err := os.WriteFile(s.caFile, pg.CA.CertPEM, 0o600); err != nil {
		return err
	}
	s.pgpass = filepath.Join(s.state, "pgpass")
	if err := os.WriteFile(s.pgpass, fmt.Appendf(nil, "%s:%d:*:%s:%s\n", pg.Host, pg.Port, pg.AdminUser, pg.AdminPassword), 0o600); err != nil {
		return err
	}
	s.say("%s", pg)
	return nil
}

// startControlPlane starts etcd, kube-apiserver and
// kube-controller-manager with the provider's CRDs, and copies the
// kubeconfig into the state folder.
func (s *session) startControlPlane(ctx context.Context) error {
	s.step("starting etcd, kube-apiserver and kube-controller-manager on 127.0.0.1")
	cp, err := controlplane.Start(ctx, controlplane.Options{ControllerManager: true})
	if err != nil {
		return err
	}
	s.cp = cp
	s.kubeconfig = filepath.Join(s.state, "kubeconfig")
	b, err := os.ReadFile(cp.Kubeconfig)
	if err != nil {
		return err
	}
	if err := os.WriteFile(s.kubeconfig, b, 0o600); err != nil {
		return err
	}
	s.say("CRDs from package/crds installed")
	return nil
}

// createSecrets creates the provider's namespace with the server's admin
// credentials (opted in) and CA.
func (s *session) createSecrets(ctx context.Context) error {
	s.step("creating namespace %s with the admin credentials Secret %s and the CA Secret %s", providerNamespace, adminSecretName, caSecretName)
	kc, err := kubernetes.NewForConfig(s.cp.Config)
	if err != nil {
		return err
	}
	if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: providerNamespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	for _, sec := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: adminSecretName, Namespace: providerNamespace, Labels: map[string]string{v1alpha1.LabelAdminCredential: "true"}},
			StringData: map[string]string{"username": s.pg.AdminUser, "password": s.pg.AdminPassword}},
		{ObjectMeta: metav1.ObjectMeta{Name: caSecretName, Namespace: providerNamespace},
			Data: map[string][]byte{"ca.crt": s.pg.CA.CertPEM}},
	} {
		if _, err := kc.CoreV1().Secrets(providerNamespace).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// startProvider builds the provider and runs it against the control plane
// until it is healthy.
func (s *session) startProvider(ctx context.Context) error {
	s.step("building and starting the provider")
	bin := filepath.Join(s.state, "provider")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/provider")
	build.Dir, build.Stdout, build.Stderr = s.root, s.out, s.out
	if err := build.Run(); err != nil {
		return errors.Wrap(err, "cannot build the provider")
	}
	var err error
	if s.metricsPort, err = proc.FreePort(); err != nil {
		return err
	}
	if s.probePort, err = proc.FreePort(); err != nil {
		return err
	}
	s.providerLog = filepath.Join(s.state, "provider.log")
	_ = os.Remove(s.providerLog)
	cmd := exec.Command(bin,
		"--namespace="+providerNamespace,
		"--poll=30s",
		// make dev shows Locks working: the provider installs the
		// admission policy behind them, naming its own identity.
		"--install-lock-policy",
		"--metrics-bind-address=127.0.0.1:"+strconv.Itoa(s.metricsPort),
		"--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(s.probePort))
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.kubeconfig)
	if s.provider, err = proc.Start(cmd, s.providerLog, syscall.SIGTERM); err != nil {
		return err
	}
	if err := waitHealthy(ctx, s.provider, s.probePort); err != nil {
		return err
	}
	s.say("healthy: http://127.0.0.1:%d/readyz, metrics at http://127.0.0.1:%d/metrics", s.probePort, s.metricsPort)
	return nil
}

// instructions tells the user how to reach what is running.
func (s *session) instructions(applied []*unstructured.Unstructured) {
	rel := func(p string) string {
		if r, err := filepath.Rel(s.root, p); err == nil && !strings.HasPrefix(r, "..") {
			return r
		}
		return p
	}
	pg := s.pg
	_, _ = fmt.Fprintf(s.out, `
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
`, s.root, rel(s.kubeconfig), os.Getenv("KUBEBUILDER_ASSETS"), providerNamespace, rel(s.providerLog),
		pg.AdminUser, rel(s.pgpass), providerNamespace, adminSecretName,
		rel(s.pgpass), pg.Host, pg.Hostaddr, pg.Port, pg.AdminUser, rel(s.caFile), roleHints(applied, rel(s.caFile)))
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
	if err == nil {
		err = core.WaitEstablished(ctx, kube, configuration.TenantXRDName)
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
