package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authnv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/ayatori/provider-postgresql/internal/fixture/controlplane"
	"github.com/ayatori/provider-postgresql/internal/fixture/proc"
	"github.com/ayatori/provider-postgresql/internal/fixture/tier"
)

// providerBinary is the provider built from this package for these tests.
var providerBinary string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "provider-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir) //nolint:errcheck // Test cleanup.
	providerBinary = filepath.Join(dir, "provider")
	if out, err := exec.Command("go", "build", "-o", providerBinary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "cannot build the provider: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// TestProviderProcess runs the real provider binary against a real API
// server: it must become healthy and ready, serve metrics, take the leader
// Lease, and exit cleanly on SIGTERM, releasing the Lease.
func TestProviderProcess(t *testing.T) {
	tier.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	cp, kc := controlPlane(ctx, t)

	dir := t.TempDir()
	bin := providerBinary

	metricsPort, err := proc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	probePort, err := proc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--leader-election", "--install-lock-policy",
		"--metrics-bind-address=127.0.0.1:"+strconv.Itoa(metricsPort),
		"--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(probePort))
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cp.Kubeconfig, "POD_NAMESPACE="+ns)
	logPath := filepath.Join(dir, "provider.log")
	p, err := proc.Start(cmd, logPath, syscall.SIGKILL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(syscall.SIGKILL, time.Second) })

	get := func(port int, path string) (int, string) {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close() //nolint:errcheck // Test.
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			select {
			case <-p.Exited():
				t.Fatalf("the provider exited while waiting for %s; its log:\n%s", what, p.LogTail())
			default:
			}
			return ok(), nil
		})
		if err != nil {
			t.Fatalf("waiting for %s: %v; the provider's log:\n%s", what, err, p.LogTail())
		}
	}

	waitFor("/readyz", func() bool { code, _ := get(probePort, "/readyz"); return code == http.StatusOK })
	if code, body := get(probePort, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d %s", code, body)
	}

	var lease *coordinationv1.Lease
	waitFor("the leader Lease", func() bool {
		lease, err = kc.CoordinationV1().Leases(ns).Get(ctx, leaderElectionID, metav1.GetOptions{})
		return err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != ""
	})

	waitFor("controller metrics", func() bool {
		code, body := get(metricsPort, "/metrics")
		return code == http.StatusOK && strings.Contains(body, `controller_runtime_reconcile_total{controller="crd-gate"`)
	})

	// --install-lock-policy installed the shipped policy and its binding;
	// the policy's own list of annotation writers names the provider's
	// identity (no ConfigMap that other providers could write).
	me, err := kc.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vap, err := kc.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, "provider-postgresql-lock", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Lock admission policy: %v", err)
	}
	writers := ""
	for _, v := range vap.Spec.Variables {
		if v.Name == "annotationWriters" {
			writers = v.Expression
		}
	}
	if !strings.Contains(writers, strconv.Quote(me.Status.UserInfo.Username)) || vap.Spec.ParamKind != nil {
		t.Errorf("the Lock policy's annotationWriters %q do not name the provider (%s), or it still takes parameters (%v)", writers, me.Status.UserInfo.Username, vap.Spec.ParamKind)
	}
	if b, err := kc.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(ctx, "provider-postgresql-lock", metav1.GetOptions{}); err != nil || b.Spec.ParamRef != nil {
		t.Errorf("the Lock admission policy's binding: %v, %+v", err, b)
	}
	// --install-tenant-policy installed the policy that checks claims
	// naming a registered database, reading the namespace's
	// PostgreSQLDatabases as its params.
	if tp, err := kc.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, "provider-postgresql-tenant", metav1.GetOptions{}); err != nil ||
		tp.Spec.ParamKind == nil || tp.Spec.ParamKind.Kind != "PostgreSQLDatabase" {
		t.Errorf("the tenant admission policy: %v, %+v", err, tp)
	}
	if b, err := kc.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(ctx, "provider-postgresql-tenant", metav1.GetOptions{}); err != nil ||
		b.Spec.ParamRef == nil || b.Spec.ParamRef.Selector == nil {
		t.Errorf("the tenant admission policy's binding: %v, %+v", err, b)
	}
	// --install-in-use-policy installed the policy that refuses deleting
	// what is in use.
	if _, err := kc.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, "provider-postgresql-in-use", metav1.GetOptions{}); err != nil {
		t.Errorf("the in-use admission policy: %v", err)
	}
	if b, err := kc.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(ctx, "provider-postgresql-in-use", metav1.GetOptions{}); err != nil || b.Spec.PolicyName != "provider-postgresql-in-use" {
		t.Errorf("the in-use admission policy's binding: %v, %+v", err, b)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Exited():
	case <-time.After(45 * time.Second):
		t.Fatalf("the provider did not exit within 45s of SIGTERM; its log:\n%s", p.LogTail())
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code after SIGTERM = %d, want 0; log:\n%s", code, p.LogTail())
	}
	lease, err = kc.CoordinationV1().Leases(ns).Get(ctx, leaderElectionID, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("the Lease is still held by %q after a clean shutdown", *h)
	}
	log, _ := os.ReadFile(logPath)
	if !bytes.Contains(log, []byte("Stopped")) {
		t.Errorf("the log does not record the shutdown:\n%s", log)
	}
}

// TestFlagsReferenceMatchesHelp keeps the flags reference of
// docs/install.md and the binary's --help in step: every flag with its
// short form, environment variable and default, in both directions.
func TestFlagsReferenceMatchesHelp(t *testing.T) {
	out, err := exec.Command(providerBinary, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("--help: %v\n%s", err, out)
	}
	help := helpFlags(string(out))
	if len(help) < 10 {
		t.Fatalf("read only %d flags from --help:\n%s", len(help), out)
	}
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(help, docFlags(string(doc))); diff != "" {
		t.Errorf("docs/install.md's flags reference differs from --help (-help +docs):\n%s", diff)
	}
}

// flagRow is one flag as --help and the docs describe it.
type flagRow struct{ Short, Env, Default string }

var (
	helpFlagLine    = regexp.MustCompile(`^ {2,6}(?:-(\w), )?--(\[no-\])?([a-z][a-z-]*)(?:=("[^"]*"|\S+))?`)
	helpEnv         = regexp.MustCompile(`\(\$([A-Z_]+)\)\s*$`)
	helpPlaceholder = regexp.MustCompile(`^[A-Z][A-Z0-9-]*$`)
	docFlagRow      = regexp.MustCompile("^\\| `--([a-z-]+)`(?:, `-(\\w)`)? \\| `([A-Z_]+)` \\| `([^`]*)` \\|")
)

// helpFlags reads kingpin's --help: a flag line, its wrapped help, and the
// environment variable at the end of the entry.
func helpFlags(help string) map[string]flagRow {
	flags := map[string]flagRow{}
	var cur string
	for _, line := range strings.Split(help, "\n") {
		if m := helpFlagLine.FindStringSubmatch(line); m != nil {
			cur = m[3]
			def := strings.Trim(m[4], `"`)
			if m[2] != "" {
				def = "false"
			}
			if helpPlaceholder.MatchString(m[4]) {
				// A flag with no default shows its placeholder.
				def = ""
			}
			flags[cur] = flagRow{Short: m[1], Default: def}
		}
		// kingpin shows no default for a boolean flag: one that is on by
		// default says so in its help.
		if r, ok := flags[cur]; ok && strings.Contains(line, "On by default") {
			r.Default = "true"
			flags[cur] = r
		}
		if m := helpEnv.FindStringSubmatch(line); m != nil && cur != "" {
			r := flags[cur]
			r.Env = m[1]
			flags[cur] = r
		}
	}
	delete(flags, "help")
	delete(flags, "version")
	return flags
}

func docFlags(doc string) map[string]flagRow {
	flags := map[string]flagRow{}
	for _, line := range strings.Split(doc, "\n") {
		if m := docFlagRow.FindStringSubmatch(line); m != nil {
			flags[m[1]] = flagRow{Short: m[2], Env: m[3], Default: m[4]}
		}
	}
	return flags
}

// TestFlagsRefuseZeroRates: a rate, concurrency or connection cap of zero
// would start a provider that never reconciles; it refuses to start and
// names the flag.
func TestFlagsRefuseZeroRates(t *testing.T) {
	for _, arg := range []string{"--max-reconcile-rate=0", "--max-concurrent-reconciles=0", "--max-conns=-1"} {
		t.Run(arg, func(t *testing.T) {
			out, err := exec.Command(providerBinary, arg).CombinedOutput()
			if err == nil {
				t.Fatalf("the provider started with %s", arg)
			}
			name, _, _ := strings.Cut(arg, "=")
			if !strings.Contains(string(out), name+" must be at least 1") {
				t.Errorf("with %s it said:\n%s", arg, out)
			}
		})
	}
}

// ns is the provider's namespace in these tests, where its Lease lives.
const ns = "crossplane-system"

// controlPlane starts an API server for t with the provider's namespace.
func controlPlane(ctx context.Context, t *testing.T) (*controlplane.ControlPlane, kubernetes.Interface) {
	t.Helper()
	cp := controlplane.StartT(ctx, t, controlplane.Options{})
	kc := kubernetes.NewForConfigOrDie(cp.Config)
	if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return cp, kc
}

// TestLeaderElectionFlagsRefused: durations client-go's leader election
// would refuse with a message naming none of the flags are refused at
// start-up, naming them.
func TestLeaderElectionFlagsRefused(t *testing.T) {
	for name, args := range map[string][]string{
		"RenewLongerThanLease": {"--leader-election-lease-duration=10s", "--leader-election-renew-deadline=20s"},
		"RetryAsLongAsRenew":   {"--leader-election-renew-deadline=2s", "--leader-election-retry-period=2s"},
		"NoRetry":              {"--leader-election-retry-period=0s"},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := exec.Command(providerBinary, args...).CombinedOutput()
			if err == nil || !strings.Contains(string(out), "--leader-election-lease-duration") || !strings.Contains(string(out), "--leader-election-retry-period") {
				t.Errorf("%v: exited with %v, saying:\n%s", args, err, out)
			}
		})
	}
}

// TestFailover runs two replicas with leader election and a short lease:
// a leader killed with SIGKILL (an OOM kill, a lost node) is replaced by
// the standby once the Lease expires, within the lease duration and a
// jittered retry; a leader stopped with SIGTERM hands over at
// once, within a retry period. The Lease carries the duration the flag
// sets.
func TestFailover(t *testing.T) {
	tier.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp, kc := controlPlane(ctx, t)
	const lease, retry = 8 * time.Second, time.Second
	replica := func(name string) *proc.Process {
		t.Helper()
		var ports [2]int
		for i := range ports {
			var err error
			if ports[i], err = proc.FreePort(); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command(providerBinary, "--leader-election",
			"--leader-election-lease-duration="+lease.String(), "--leader-election-renew-deadline=6s", "--leader-election-retry-period="+retry.String(),
			"--no-install-lock-policy", "--no-install-tenant-policy", "--no-install-in-use-policy",
			"--metrics-bind-address=127.0.0.1:"+strconv.Itoa(ports[0]), "--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(ports[1]))
		cmd.Env = append(os.Environ(), "KUBECONFIG="+cp.Kubeconfig, "POD_NAMESPACE="+ns)
		p, err := proc.Start(cmd, filepath.Join(t.TempDir(), name+".log"), syscall.SIGKILL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Stop(syscall.SIGKILL, time.Second) })
		return p
	}
	// holder waits until the Lease is held by someone other than was,
	// and returns the holder and how long that took.
	holder := func(was string) (string, time.Duration, *coordinationv1.Lease) {
		t.Helper()
		start := time.Now()
		var l *coordinationv1.Lease
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			var err error
			l, err = kc.CoordinationV1().Leases(ns).Get(ctx, leaderElectionID, metav1.GetOptions{})
			return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" && *l.Spec.HolderIdentity != was, nil
		})
		if err != nil {
			t.Fatalf("no new holder of the Lease (was %q): %v", was, err)
		}
		return *l.Spec.HolderIdentity, time.Since(start), l
	}

	first := replica("first")
	leader, _, l := holder("")
	if d := l.Spec.LeaseDurationSeconds; d == nil || time.Duration(*d)*time.Second != lease {
		t.Errorf("the Lease's duration is %v s, want %v from --leader-election-lease-duration", d, lease)
	}
	second := replica("second")
	// The standby is up and waiting before the leader dies.
	time.Sleep(3 * time.Second)
	if err := syscall.Kill(first.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	leader, took, _ := holder(leader)
	t.Logf("after SIGKILL of the leader, the standby took over in %.1f s (lease %v, retry %v)", took.Seconds(), lease, retry)
	// client-go counts the lease from when the standby saw the last
	// renewal, not from the renewal itself, and the standby looks every
	// retry period with a jitter of up to 1.2 more. So the worst case is a
	// jittered look to see the leader's last renewal, the lease, and a
	// jittered look to find it expired; a second covers this test's polling
	// and a loaded machine.
	if limit := lease + 2*(retry*22/10) + time.Second; took > limit {
		t.Errorf("the standby took over %.1f s after the leader was killed, more than the lease (%v) and two jittered retries (%v in all)", took.Seconds(), lease, limit)
	}

	replica("third")
	time.Sleep(3 * time.Second)
	if err := syscall.Kill(second.Pid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_, took, _ = holder(leader)
	t.Logf("after SIGTERM of the leader, the standby took over in %.1f s", took.Seconds())
	if took > 3*retry {
		t.Errorf("the standby took over %.1f s after the leader was stopped gracefully; a leader that stops releases the Lease, so it should take a retry period (%v)", took.Seconds(), retry)
	}
}
