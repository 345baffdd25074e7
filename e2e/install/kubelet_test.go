package install

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/ayatori/provider-postgresql/internal/fixture/proc"
)

// A kubelet stands in for the kubelet this machine does not run, for one
// provider: it runs the packaged provider binary for the provider's current
// Deployment, with that Deployment's container arguments and environment,
// authenticated as its ServiceAccount by a token the API server issued.
// When Crossplane replaces the Deployment (an upgrade) the process is
// replaced; when it deletes it (an uninstall) the process stops. A process
// that exits on its own is started again after the back-off of a pod's
// restartPolicy Always (10 s, doubling, at most 5 min), as a real kubelet
// would; those restarts are counted apart from the Deployment's starts and
// their causes are kept for the test's report.
type kubelet struct {
	kc       kubernetes.Interface
	cfg      *rest.Config
	provider string
	bin, dir string

	mu      sync.Mutex
	cur     *proc.Process
	uid     types.UID
	sa      string
	probe   int
	metrics int
	starts  int
	lastErr error
	// restarts counts the starts after the process exited on its own
	// (a pod's restartCount); exits says why each one ended.
	restarts  int
	exits     []string
	exitedAt  time.Time
	restartIn time.Duration
	// backoff is the first restart's delay; 0 is a pod's 10 s.
	backoff time.Duration
}

// The back-off of a crashing container, as the kubelet has it.
const (
	restartBackoff    = 10 * time.Second
	maxRestartBackoff = 5 * time.Minute
)

// run syncs until ctx ends, then stops the process.
func (k *kubelet) run(ctx context.Context) {
	for {
		err := k.sync(ctx)
		k.mu.Lock()
		k.lastErr = err
		k.mu.Unlock()
		select {
		case <-ctx.Done():
			k.stop()
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (k *kubelet) sync(ctx context.Context) error {
	list, err := k.kc.AppsV1().Deployments("crossplane-system").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	// Crossplane labels the pods, not the Deployment, with the provider.
	var d *appsv1.Deployment
	for i := range list.Items {
		x := &list.Items[i]
		if x.Spec.Selector == nil || x.Spec.Selector.MatchLabels["pkg.crossplane.io/provider"] != k.provider {
			continue
		}
		if x.DeletionTimestamp == nil && (d == nil || x.CreationTimestamp.After(d.CreationTimestamp.Time)) {
			d = x
		}
	}
	k.mu.Lock()
	running := k.uid
	k.mu.Unlock()
	if d == nil {
		k.stop()
		return nil
	}
	if d.UID != running {
		k.stop()
		if err := k.start(ctx, d); err != nil {
			return err
		}
	} else if err := k.restartExited(ctx, d); err != nil {
		return err
	}
	return k.report(ctx, d)
}

// restartExited starts the Deployment's process again if it exited on its
// own and its back-off has passed.
func (k *kubelet) restartExited(ctx context.Context, d *appsv1.Deployment) error {
	k.mu.Lock()
	p := k.cur
	k.mu.Unlock()
	if p == nil {
		return nil
	}
	select {
	case <-p.Exited():
	default:
		return nil
	}
	k.mu.Lock()
	if k.exitedAt.IsZero() {
		k.exitedAt = time.Now()
		first := k.backoff
		if first == 0 {
			first = restartBackoff
		}
		k.restartIn = min(first<<min(k.restarts, 5), maxRestartBackoff)
		k.exits = append(k.exits, fmt.Sprintf("start %d exited (%v) at %s; its log ends:\n%s",
			k.starts, p.ExitError(), k.exitedAt.Format(time.TimeOnly), lastLines(p.LogTail(), 8)))
	}
	due := time.Since(k.exitedAt) >= k.restartIn
	k.mu.Unlock()
	if !due {
		return nil
	}
	k.mu.Lock()
	k.restarts++
	k.exitedAt = time.Time{}
	k.mu.Unlock()
	return k.start(ctx, d)
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// report writes what the deployment controller would: the Deployment is
// available while the provider answers /readyz (its readiness probe).
func (k *kubelet) report(ctx context.Context, d *appsv1.Deployment) error {
	k.mu.Lock()
	port := k.probe
	k.mu.Unlock()
	status, n := corev1.ConditionFalse, int32(0)
	if readyz(port) {
		status, n = corev1.ConditionTrue, 1
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == status && d.Status.ObservedGeneration == d.Generation {
			return nil
		}
	}
	d = d.DeepCopy()
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: n, AvailableReplicas: n, UnavailableReplicas: 1 - n,
		Conditions: []appsv1.DeploymentCondition{{
			Type: appsv1.DeploymentAvailable, Status: status, Reason: "ReadinessProbe",
			Message: "the provider's /readyz (stood in for by e2e/install)", LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}},
	}
	_, err := k.kc.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	return err
}

func (k *kubelet) start(ctx context.Context, d *appsv1.Deployment) error {
	spec := d.Spec.Template.Spec
	var c *corev1.Container
	for i := range spec.Containers {
		if spec.Containers[i].Name == "package-runtime" {
			c = &spec.Containers[i]
		}
	}
	if c == nil {
		return fmt.Errorf("deployment %s has no package-runtime container", d.Name)
	}
	tok, err := k.kc.CoreV1().ServiceAccounts(d.Namespace).CreateToken(ctx, spec.ServiceAccountName,
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("cannot get a token for ServiceAccount %s: %w", spec.ServiceAccountName, err)
	}
	kubeconfig := filepath.Join(k.dir, "kubeconfig-"+string(d.UID))
	if err := clientcmd.WriteToFile(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"c": {Server: k.cfg.Host, CertificateAuthorityData: k.cfg.CAData}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"sa": {Token: tok.Status.Token}},
		Contexts:       map[string]*clientcmdapi.Context{"c": {Cluster: "c", AuthInfo: "sa"}},
		CurrentContext: "c",
	}, kubeconfig); err != nil {
		return err
	}
	ports := make([]int, 2)
	for i := range ports {
		if ports[i], err = proc.FreePort(); err != nil {
			return err
		}
	}
	// What the pod would see: the container's arguments and environment.
	// The listeners move to loopback ports: nothing here binds elsewhere.
	args := append(append([]string{}, c.Args...),
		"--metrics-bind-address=127.0.0.1:"+strconv.Itoa(ports[0]),
		"--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(ports[1]))
	env := []string{"KUBECONFIG=" + kubeconfig, "HOME=" + k.dir}
	for _, e := range c.Env {
		v := e.Value
		if f := e.ValueFrom; f != nil && f.FieldRef != nil {
			switch p := f.FieldRef.FieldPath; {
			case p == "metadata.namespace":
				v = d.Namespace
			case strings.HasPrefix(p, "metadata.labels['"):
				v = d.Spec.Template.Labels[strings.TrimSuffix(strings.TrimPrefix(p, "metadata.labels['"), "']")]
			}
		}
		env = append(env, e.Name+"="+v)
	}
	cmd := exec.Command(k.bin, args...)
	cmd.Env = env
	k.mu.Lock()
	defer k.mu.Unlock()
	if d.UID != k.uid {
		k.starts++
	}
	p, err := proc.Start(cmd, filepath.Join(k.dir, fmt.Sprintf("provider-%d-%d.log", k.starts, k.restarts)), syscall.SIGTERM)
	if err != nil {
		return err
	}
	k.cur, k.uid, k.sa, k.probe, k.metrics = p, d.UID, spec.ServiceAccountName, ports[1], ports[0]
	return nil
}

func (k *kubelet) stop() {
	k.mu.Lock()
	p := k.cur
	k.cur, k.uid, k.probe, k.metrics = nil, "", 0, 0
	k.exitedAt = time.Time{}
	k.mu.Unlock()
	if p != nil {
		p.Stop(syscall.SIGTERM, 35*time.Second)
	}
}

// ready waits until the provider started for the starts-th time answers
// /readyz, and returns the ServiceAccount it runs as.
func (k *kubelet) ready(ctx context.Context, starts int, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		k.mu.Lock()
		n, port, sa, p := k.starts, k.probe, k.sa, k.cur
		k.mu.Unlock()
		// A process that exited is restarted after its back-off: wait
		// for that, as a rollout waits for a pod to become ready.
		if n >= starts && port != 0 && readyz(port) {
			select {
			case <-p.Exited():
			default:
				return sa, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return "", fmt.Errorf("no ready provider (start %d) within %s; last error: %w; exits: %v", starts, timeout, k.lastErr, k.exits)
}

// logTail returns the end of the current provider's log.
func (k *kubelet) logTail() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cur == nil {
		return "(no provider running)"
	}
	return k.cur.LogTail()
}

// running reports whether a provider runs.
func (k *kubelet) running() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cur != nil
}

// readyz asks the provider's readiness endpoint, as a readiness probe would.
func readyz(port int) bool {
	if port == 0 {
		return false
	}
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/readyz")
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// status says how often the provider started, how often it was restarted
// after exiting on its own and why, and the last sync error.
func (k *kubelet) status() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	s := fmt.Sprintf("%d starts, %d restarts after an exit, last error: %v", k.starts, k.restarts, k.lastErr)
	for _, e := range k.exits {
		s += "\n  " + strings.ReplaceAll(e, "\n", "\n    ")
	}
	return s
}

// crashes returns why the provider exited on its own, each time.
func (k *kubelet) crashes() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.exits)
}

// controllers returns the names of the controllers the running provider
// has started, as its metrics list them (controller-runtime registers a
// controller's worker gauge when it starts), and how many times the
// provider was started.
func (k *kubelet) controllers(ctx context.Context) ([]string, int, error) {
	k.mu.Lock()
	port, starts := k.metrics, k.starts
	k.mu.Unlock()
	if port == 0 {
		return nil, starts, fmt.Errorf("no provider running")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(port)+"/metrics", nil)
	if err != nil {
		return nil, starts, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, starts, err
	}
	defer resp.Body.Close() //nolint:errcheck // Read only.
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, starts, err
	}
	const prefix = `controller_runtime_active_workers{controller="`
	var names []string
	for _, l := range strings.Split(string(b), "\n") {
		if name, ok := strings.CutPrefix(l, prefix); ok {
			name, _, _ = strings.Cut(name, `"`)
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names, starts, nil
}
