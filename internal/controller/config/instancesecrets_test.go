package config

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
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
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp, s := startControlPlane(ctx, t)
	o := ManagerOptions(s, nil)
	o.Metrics = metricsserver.Options{BindAddress: "0"}
	mgr, err := ctrl.NewManager(cp.Config, o)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := InstanceSecrets(mgr, "provider").(*memo)
	if !ok {
		t.Fatal("InstanceSecrets returned no memo")
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
