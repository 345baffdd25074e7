package reconciler

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/ayatori/provider-postgresql/apis"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/ayatori/provider-postgresql/internal/fixture/controlplane"
	"github.com/ayatori/provider-postgresql/internal/fixture/tier"
)

// TestConflictsRetryWithoutBackOff: a reconcile whose write, through the
// manager's client, loses to a newer version of the object is retried
// after conflictRetry, not after the back-off its earlier failures grew,
// whether crossplane-runtime swallows the conflict or returns it; writes
// that do not conflict leave the back-off alone. The conflicts are real
// answers of a real API server.
func TestConflictsRetryWithoutBackOff(t *testing.T) {
	tier.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp, s := startControlPlane(ctx, t)
	// The client every provider manager is built with
	// (manager.Options).
	kube, err := NewClient(cp.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	// A Namespace has a status subresource, as every managed kind does.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "conflicted", Labels: map[string]string{"v": "0"}}}
	if err := kube.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	// stale is the object as a lagging cache would hand it out: one
	// version behind the server.
	stale := ns.DeepCopy()
	ns.Labels["v"] = "1"
	if err := kube.Update(ctx, ns); err != nil {
		t.Fatal(err)
	}

	writes := map[string]func(context.Context) error{
		"Update": func(ctx context.Context) error { return kube.Update(ctx, stale.DeepCopy()) },
		"Patch": func(ctx context.Context) error {
			return kube.Patch(ctx, stale.DeepCopy(), client.MergeFromWithOptions(stale.DeepCopy(), client.MergeFromWithOptimisticLock{}))
		},
		"StatusUpdate": func(ctx context.Context) error { return kube.Status().Update(ctx, stale.DeepCopy()) },
		"StatusPatch": func(ctx context.Context) error {
			return kube.Status().Patch(ctx, stale.DeepCopy(), client.MergeFromWithOptions(stale.DeepCopy(), client.MergeFromWithOptimisticLock{}))
		},
	}
	for name, write := range writes {
		t.Run(name, func(t *testing.T) {
			if err := write(ctx); !kerrors.IsConflict(err) {
				t.Fatalf("the write of an outdated version: got %v, want a conflict", err)
			}
			want := reconcile.Result{RequeueAfter: conflictRetry}
			swallowed := run(ctx, t, func(ctx context.Context) (reconcile.Result, error) {
				if err := write(ctx); !kerrors.IsConflict(err) {
					t.Errorf("got %v, want a conflict", err)
				}
				return requeue, nil
			})
			if diff := cmp.Diff(want, swallowed); diff != "" {
				t.Errorf("conflict swallowed: result (-want +got):\n%s", diff)
			}
			returned := run(ctx, t, func(ctx context.Context) (reconcile.Result, error) {
				return requeue, errors.Wrap(write(ctx), "cannot update managed resource status")
			})
			if diff := cmp.Diff(want, returned); diff != "" {
				t.Errorf("conflict returned: result (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("NoConflict", func(t *testing.T) {
		got := run(ctx, t, func(ctx context.Context) (reconcile.Result, error) {
			fresh := &corev1.Namespace{}
			if err := kube.Get(ctx, client.ObjectKeyFromObject(ns), fresh); err != nil {
				return reconcile.Result{}, err
			}
			fresh.Labels["v"] = "2"
			if err := kube.Update(ctx, fresh); err != nil {
				return reconcile.Result{}, err
			}
			return requeue, nil
		})
		if diff := cmp.Diff(requeue, got); diff != "" {
			t.Errorf("an error's requeue after a write that went through: result (-want +got):\n%s", diff)
		}
	})
}

// run reconciles once through Wrap, as every controller of the provider
// does, with f in place of the managed reconciler.
func run(ctx context.Context, t *testing.T, f func(context.Context) (reconcile.Result, error)) reconcile.Result {
	t.Helper()
	r := Wrap(Waits{Unwatched: time.Minute, Watched: 10 * time.Minute}, reconcile.Func(func(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) { return f(ctx) }))
	res, err := r.Reconcile(ctx, reconcile.Request{})
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	return res
}

// shared is the package's API server, with the provider's CRDs, started
// by the first test that needs it: tests keep to namespaces of their own
// (testNamespace) and cluster-scoped names no other uses.
var shared = tier.NewFixture(2*time.Minute, func(ctx context.Context) (func() error, error) {
	cp, err := controlplane.Start(ctx, controlplane.Options{})
	if err != nil {
		return nil, err
	}
	sharedCP = cp
	return cp.Stop, nil
})

// sharedCP is the API server shared started.
var sharedCP *controlplane.ControlPlane

func TestMain(m *testing.M) { os.Exit(shared.Run(m)) }

// startControlPlane returns the package's API server for t, started if
// no test has yet, with the provider's scheme.
func startControlPlane(_ context.Context, t *testing.T) (*controlplane.ControlPlane, *runtime.Scheme) {
	t.Helper()
	shared.Server(t) //nolint:contextcheck // The shared API server outlives the context of the test that starts it.
	s, err := scheme()
	if err != nil {
		t.Fatal(err)
	}
	return sharedCP, s
}

// testNamespace creates, once, the namespace of t's top-level test on the
// shared API server and returns its name.
func testNamespace(ctx context.Context, t *testing.T) string {
	t.Helper()
	root, _, _ := strings.Cut(t.Name(), "/")
	name := strings.Trim(nonDNS.ReplaceAllString(strings.ToLower(root), "-"), "-")
	if len(name) > 63 {
		name = strings.Trim(name[:63], "-")
	}
	cp, s := startControlPlane(ctx, t)
	c, err := client.New(cp.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !kerrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return name
}

var nonDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// scheme is the provider's (manager.Scheme, which this package cannot
// import: the manager is built on it).
func scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, apis.AddToScheme(s)
}
