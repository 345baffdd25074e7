package index_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ayatori/provider-postgresql/internal/controller/index"
	"github.com/ayatori/provider-postgresql/internal/fixture/controlplane"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
	"github.com/ayatori/provider-postgresql/internal/fixture/tier"
)

// TestNamespacedIndex: a list of the cache in one namespace matching the
// field finds that namespace's objects with the value and no other
// namespace's; the index holds one key per value in its object's namespace
// and no cluster-wide key (controller-runtime's IndexField would add one
// per value, the memory this package saves), so a list across namespaces
// matching the field finds nothing.
func TestNamespacedIndex(t *testing.T) {
	tier.Server(t)
	ctx := context.Background()
	cp := controlplane.StartT(ctx, t, controlplane.Options{NoCRDs: true})
	kube := cp.CoreClient(t)
	cm := func(ns, name, app string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app}}}
	}
	for _, ns := range []string{"shop", "victims"} {
		if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range []client.Object{cm("shop", "a", "orders"), cm("shop", "b", "billing"), cm("victims", "c", "orders")} {
		if err := kube.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	c, err := cache.New(cp.Config, cache.Options{Scheme: kube.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := index.Field(ctx, c, &corev1.ConfigMap{}, "app", func(o client.Object) []string {
		if app := o.GetLabels()["app"]; app != "" {
			return []string{app}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// The app label as if it were unique cluster-wide, as a UID is.
	if err := index.Unique(ctx, c, &corev1.ConfigMap{}, "unique", func(o client.Object) []string {
		if app := o.GetLabels()["app"]; app != "" {
			return []string{app}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}

	names := func(opts ...client.ListOption) []string {
		t.Helper()
		l := &corev1.ConfigMapList{}
		if err := c.List(ctx, l, opts...); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, o := range l.Items {
			if o.Labels["app"] != "" {
				out = append(out, o.Namespace+"/"+o.Name)
			}
		}
		slices.Sort(out)
		return out
	}
	err = providertest.Wait(ctx, 30*time.Second, func(context.Context) (bool, error) {
		return len(names(client.InNamespace("shop"), client.MatchingFields{"app": "orders"})) > 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		opts []client.ListOption
		want []string
	}{
		"OwnNamespace":      {opts: []client.ListOption{client.InNamespace("shop"), client.MatchingFields{"app": "orders"}}, want: []string{"shop/a"}},
		"OtherValue":        {opts: []client.ListOption{client.InNamespace("shop"), client.MatchingFields{"app": "billing"}}, want: []string{"shop/b"}},
		"OtherNamespace":    {opts: []client.ListOption{client.InNamespace("victims"), client.MatchingFields{"app": "orders"}}, want: []string{"victims/c"}},
		"NoSuchValue":       {opts: []client.ListOption{client.InNamespace("victims"), client.MatchingFields{"app": "billing"}}},
		"AcrossNamespaces":  {opts: []client.ListOption{client.MatchingFields{"app": "orders"}}},
		"NamespaceNotFound": {opts: []client.ListOption{client.InNamespace("nobody"), client.MatchingFields{"app": "orders"}}},
		// Unique: found across namespaces, wherever it is, and only so.
		"UniqueAcrossNamespaces": {opts: []client.ListOption{client.MatchingFields{"unique": "billing"}}, want: []string{"shop/b"}},
		"UniqueInANamespace":     {opts: []client.ListOption{client.InNamespace("shop"), client.MatchingFields{"unique": "billing"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, names(tc.opts...)); diff != "" {
				t.Errorf("list (-want +got):\n%s", diff)
			}
		})
	}

	inf, err := c.GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	sii, ok := inf.(toolscache.SharedIndexInformer)
	if !ok {
		t.Fatalf("the cache's informer is a %T, not a SharedIndexInformer", inf)
	}
	keys := sii.GetIndexer().ListIndexFuncValues("field:app")
	slices.Sort(keys)
	want := []string{"shop/billing", "shop/orders", "victims/orders"}
	if diff := cmp.Diff(want, slices.Compact(keys)); diff != "" {
		t.Errorf("index keys (-want +got):\n%s", diff)
	}
}
