package secretmemo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/manager"
	"github.com/ayatori/provider-postgresql/internal/fixture/controlplane"
	"github.com/ayatori/provider-postgresql/internal/fixture/tier"
)

// countingReader counts the reads that reach the API server.
type countingReader struct {
	client.Reader
	gets atomic.Int64
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets.Add(1)
	return c.Reader.Get(ctx, key, obj, opts...)
}

// TestInstanceSecrets: a Secret or ConfigMap of the provider's namespace
// is read from the API server once per version: again after a rotation or
// a label taken away, never while it is unchanged. One of another
// namespace (a tenant's) is read from the API server every time, and a
// deleted one is gone.
func TestInstanceSecrets(t *testing.T) {
	tier.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mgr, _, m, api := startManager(ctx, t, func(mgr ctrl.Manager) (any, *memo, error) {
		r, err := InstanceSecrets(mgr, "provider")
		if err != nil {
			return nil, nil, err
		}
		m, ok := r.(*memo)
		if !ok {
			return nil, nil, errors.New("InstanceSecrets returned no memo")
		}
		return nil, m, nil
	})

	kube := mgr.GetClient()
	for _, ns := range []string{"provider", "tenant"} {
		if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	optedIn := map[string]string{v1alpha1.LabelAdminCredential: "true"}
	admin := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "provider", Name: "admin", Labels: optedIn},
		Data:       map[string][]byte{"password": []byte("one")},
	}
	tenant := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "admin", Labels: optedIn},
		Data:       map[string][]byte{"password": []byte("a-tenant's")},
	}
	ca := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "provider", Name: "ca"},
		Data:       map[string]string{"ca.crt": "first"},
	}
	for _, o := range []client.Object{admin, tenant, ca} {
		if err := kube.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	// read reads ns/name of obj's kind and returns what value gives of
	// it, and how many API requests that took.
	read := func(ns, name string, obj client.Object, value func() string) (string, int64, error) {
		before := api.gets.Load()
		err := m.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)
		return value(), api.gets.Load() - before, err
	}
	password := func(ns, name string) (string, int64, error) {
		s := &corev1.Secret{}
		return read(ns, name, s, func() string { return string(s.Data["password"]) })
	}
	bundle := func() (string, int64, error) {
		c := &corev1.ConfigMap{}
		return read("provider", "ca", c, func() string { return c.Data["ca.crt"] })
	}
	// steady holds that ten reads of get give want without an API
	// request, once the metadata cache has caught up (a request or two).
	steady := func(what string, get func() (string, int64, error), want string) {
		t.Helper()
		var requests int64
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			got, n, err := get()
			if err == nil && got == want && n == 0 {
				break
			}
			requests += n
			if time.Now().After(deadline) {
				t.Fatalf("%s: read %q (err %v), want %q, from memory within 30 s", what, got, err, want)
			}
		}
		if requests == 0 {
			t.Errorf("%s: %q was never read from the API server", what, want)
		}
		for range 10 {
			if got, n, err := get(); err != nil || got != want || n != 0 {
				t.Fatalf("%s: read %q with %d API requests (err %v), want %q with none", what, got, n, err, want)
			}
		}
	}

	steady("the admin Secret", func() (string, int64, error) { return password("provider", "admin") }, "one")
	steady("the CA bundle ConfigMap", bundle, "first")

	// A rotation is read once it shows in the metadata.
	admin.Data["password"] = []byte("two")
	if err := kube.Update(ctx, admin); err != nil {
		t.Fatal(err)
	}
	steady("the rotated admin Secret", func() (string, int64, error) { return password("provider", "admin") }, "two")
	ca.Data["ca.crt"] = "second"
	if err := kube.Update(ctx, ca); err != nil {
		t.Fatal(err)
	}
	steady("the renewed CA bundle", bundle, "second")

	for range 3 {
		if got, n, err := password("tenant", "admin"); err != nil || got != "a-tenant's" || n != 1 {
			t.Fatalf("a labelled Secret of another namespace read %q with %d API requests (err %v), want it from the API server every time", got, n, err)
		}
	}

	// The label taken away: the caller sees the Secret without it.
	admin.Labels = nil
	if err := kube.Update(ctx, admin); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := &corev1.Secret{}
		if err := m.Get(ctx, client.ObjectKey{Namespace: "provider", Name: "admin"}, s); err == nil && s.Labels[v1alpha1.LabelAdminCredential] == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the admin Secret still reads with its label 30 s after it was taken away")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := kube.Delete(ctx, admin); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, _, err := password("provider", "admin"); kerrors.IsNotFound(err) {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("a deleted admin Secret: got %v, want NotFound", err)
		}
	}
}

// shared is the package's API server, with the provider's CRDs, started
// by the first test that needs it.
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

// startManager starts a manager on the package's API server, with the
// memo mk builds on it reading the API server through a counting reader.
func startManager[T any](ctx context.Context, t *testing.T, mk func(ctrl.Manager) (T, *memo, error)) (ctrl.Manager, T, *memo, *countingReader) {
	t.Helper()
	shared.Server(t) //nolint:contextcheck // The shared API server outlives the context of the test that starts it.
	s, err := manager.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	o := manager.Options(s, nil)
	o.Metrics = metricsserver.Options{BindAddress: "0"}
	t.Cleanup(o.EventBroadcaster.Shutdown) //nolint:staticcheck // The deprecated option is the one a manager takes an event broadcaster from.
	mgr, err := ctrl.NewManager(sharedCP.Config, o)
	if err != nil {
		t.Fatal(err)
	}
	v, m, err := mk(mgr)
	if err != nil {
		t.Fatal(err)
	}
	api := &countingReader{Reader: m.api}
	m.api = api
	mctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return mgr, v, m, api
}

// TestConnectionSecrets: a login role's connection Secret is read once per
// version; a password the provider has just written is what the next read
// returns, never the version before it (which the metadata cache may
// still show); a Secret deleted by someone else leaves memory. A Secret
// the tenant wrote (a passwordSecretRef's) is never kept: read from the
// API server every time. Other kinds pass through.
func TestConnectionSecrets(t *testing.T) {
	tier.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mgr, c, m, api := startManager(ctx, t, func(mgr ctrl.Manager) (client.Client, *memo, error) {
		c, err := ConnectionSecrets(mgr, mgr.GetClient())
		if err != nil {
			return nil, nil, err
		}
		mc, ok := c.(*memoClient)
		if !ok {
			return nil, nil, errors.New("ConnectionSecrets returned no memoClient")
		}
		return c, mc.memo, nil
	})
	kube := mgr.GetClient()
	if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: "team-a", Name: "app-db"}
	gvk := v1alpha1.PostgreSQLRoleGroupVersionKind
	role := metav1.OwnerReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: "app", UID: "6f1c0e52-5a8e-4c59-9d7e-000000000001", Controller: ptr.To(true)}
	if err := c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, OwnerReferences: []metav1.OwnerReference{role}},
		Data:       map[string][]byte{"password": []byte("p0")},
	}); err != nil {
		t.Fatal(err)
	}
	// The tenant's own: one not controlled by a role, one controlled by
	// something else that happens to be named like a role.
	other := role
	other.APIVersion = "example.org/v1"
	for name, owners := range map[string][]metav1.OwnerReference{"tenant-pw": nil, "lookalike": {other}} {
		if err := kube.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: name, OwnerReferences: owners},
			Data:       map[string][]byte{"password": []byte("tenant's")},
		}); err != nil {
			t.Fatal(err)
		}
	}
	readKey := func(key client.ObjectKey) (string, int64) {
		t.Helper()
		before := api.gets.Load()
		s := &corev1.Secret{}
		if err := c.Get(ctx, key, s); err != nil {
			t.Fatal(err)
		}
		return string(s.Data["password"]), api.gets.Load() - before
	}
	read := func() (string, int64) { t.Helper(); return readKey(key) }
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if got, n := read(); got == "p0" && n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the connection Secret is still read from the API server 30 s after it was written")
		}
	}

	// The tenant's Secrets, read as often as the connection Secret was,
	// are read from the API server every time, and never kept.
	for _, name := range []string{"tenant-pw", "lookalike"} {
		for range 5 {
			if got, n := readKey(client.ObjectKey{Namespace: key.Namespace, Name: name}); got != "tenant's" || n != 1 {
				t.Fatalf("the tenant's Secret %s read %q with %d API requests, want it from the API server every time", name, got, n)
			}
		}
	}
	m.mu.Lock()
	for k := range m.read {
		if k.key != key {
			t.Errorf("the memo keeps %s, which no role controls", k.key)
		}
	}
	m.mu.Unlock()

	// Twenty rotations, each read at once: the metadata cache has seldom
	// seen the write by then, and what was read before it must not answer.
	for i := 1; i <= 20; i++ {
		want := fmt.Sprintf("p%d", i)
		s := &corev1.Secret{}
		if err := c.Get(ctx, key, s); err != nil {
			t.Fatal(err)
		}
		s.Data["password"] = []byte(want)
		if err := c.Update(ctx, s); err != nil {
			t.Fatal(err)
		}
		if got, _ := read(); got != want {
			t.Fatalf("read right after writing %q: got %q", want, got)
		}
	}

	// Deleted by someone else: dropped from memory once the watch sees it.
	if err := kube.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		m.mu.Lock()
		n := len(m.read)
		m.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the Secret was deleted the memo still keeps %d objects", n)
		}
	}

	// Another kind goes to the wrapped client, which has it.
	before := api.gets.Load()
	if err := c.Get(ctx, client.ObjectKey{Name: "team-a"}, &corev1.Namespace{}); err != nil {
		t.Fatal(err)
	}
	if n := api.gets.Load() - before; n != 0 {
		t.Errorf("a Namespace was read through the memo's API reader (%d requests)", n)
	}
}

// informersFailing answers GetInformer as a cache does when it cannot
// sync: with an error, once ctx ends when block is set.
type informersFailing struct {
	cache.Informers
	block bool
}

func (f informersFailing) GetInformer(ctx context.Context, _ client.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	if f.block {
		<-ctx.Done()
	}
	return nil, errors.New("Timeout: failed waiting for *v1.PartialObjectMetadata Informer to sync")
}

// TestMemoEvictionStopsQuietly: a provider stopped before the Secret
// informer synced (shut down right after it started) stops without an
// error, which its manager logged as one at every such shutdown; an
// informer that fails while the provider runs is still an error.
func TestMemoEvictionStopsQuietly(t *testing.T) {
	m := &memo{read: map[memoKey]client.Object{}}

	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	if err := m.evict(ctx, informersFailing{block: true}, []string{"Secret"}); err != nil {
		t.Errorf("stopped before the informer synced: %v, want no error", err)
	}

	err := m.evict(context.Background(), informersFailing{}, []string{"Secret"})
	if err == nil || !strings.Contains(err.Error(), "cannot watch Secrets for deletions") {
		t.Errorf("an informer failing while running: %v, want the error", err)
	}
}
