package binding

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/manager"
	"github.com/ayatori/provider-postgresql/internal/fixture/controlplane"
	"github.com/ayatori/provider-postgresql/internal/fixture/tier"
)

// TestProvisionInOnePass: one reconcile of a binding that provisions
// creates its database and the database's owner role, owned by it: the
// database's create, which waits for its owner, does not also wait for the
// database's first status to bring the binding round again. Only the
// binding's reconciler runs here, once, against a real API server.
func TestProvisionInOnePass(t *testing.T) {
	tier.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp := controlplane.StartT(ctx, t, controlplane.Options{})
	s, err := manager.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	kube, err := client.New(cp.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	in := &v1alpha1.PostgreSQLInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "main"},
		Spec: v1alpha1.PostgreSQLInstanceSpec{
			Endpoint:           v1alpha1.Endpoint{Host: "db.example.internal", Hostaddr: "10.0.0.5", Port: 5432, Database: "postgres", SSLMode: "require"},
			AdminCredentialRef: &v1alpha1.AdminCredentialReference{Name: "postgres-admin"},
		},
	}
	b := &v1alpha1.PostgreSQLBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "orders"},
		Spec: v1alpha1.PostgreSQLBindingSpec{
			Tenant: "orders", DatabaseRef: v1alpha1.LocalReference{Name: "orders"},
			Provision: &v1alpha1.BindingProvision{InstanceRef: v1alpha1.InstanceReference{Name: "main"}, Database: "orders"},
		},
	}
	for _, o := range []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant"}}, in, b} {
		if err := kube.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	r := &reconciler{kube: kube, record: event.NewNopRecorder()}
	if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "tenant", Name: "orders"}}); err != nil {
		t.Fatal(err)
	}
	db := &v1alpha1.PostgreSQLDatabase{}
	if err := kube.Get(ctx, client.ObjectKey{Namespace: "tenant", Name: "orders"}, db); err != nil {
		t.Fatalf("the database was not provisioned: %v", err)
	}
	role := &v1alpha1.PostgreSQLRole{}
	if err := kube.Get(ctx, client.ObjectKey{Namespace: "tenant", Name: ownerRoleObject("orders")}, role); err != nil {
		t.Fatalf("the database's owner role was not provisioned in the same pass: %v", err)
	}
	if !ownedBy(role, db) || role.Spec.ForProvider.Name == nil || *role.Spec.ForProvider.Name != OwnerRoleName("orders") {
		t.Errorf("the owner role is not the database's: owners %v, name %v", role.GetOwnerReferences(), role.Spec.ForProvider.Name)
	}

	// The next pass records what the binding stands for, where
	// crossplane resource trace reads it; the one after writes nothing.
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "tenant", Name: "orders"}}
	got := &v1alpha1.PostgreSQLBinding{}
	var versions []string
	for range 2 {
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
		if err := kube.Get(ctx, req.NamespacedName, got); err != nil {
			t.Fatal(err)
		}
		versions = append(versions, got.GetResourceVersion())
	}
	api := v1alpha1.SchemeGroupVersion.String()
	want := &v1alpha1.BindingCrossplane{ResourceRefs: []v1alpha1.ResourceRef{
		{APIVersion: api, Kind: v1alpha1.PostgreSQLDatabaseKind, Name: "orders"},
		{APIVersion: api, Kind: v1alpha1.PostgreSQLRoleKind, Name: ownerRoleObject("orders")},
	}}
	if diff := cmp.Diff(want, got.Spec.Crossplane); diff != "" {
		t.Errorf("spec.crossplane of a binding whose database was provisioned (-want +got):\n%s", diff)
	}
	if versions[0] != versions[1] {
		t.Errorf("a reconcile with nothing new wrote the binding: resourceVersion %s, then %s", versions[0], versions[1])
	}
	if got.Status.ObservedGeneration != got.GetGeneration() {
		t.Errorf("status.observedGeneration %d after the refs were recorded at generation %d", got.Status.ObservedGeneration, got.GetGeneration())
	}

	// Whoever may edit the binding may point the field elsewhere (another
	// tenant's database, a Secret): the next pass puts back what it
	// stands for.
	forged := got.DeepCopy()
	forged.Spec.Crossplane = &v1alpha1.BindingCrossplane{ResourceRefs: []v1alpha1.ResourceRef{{APIVersion: "v1", Kind: "Secret", Name: "someone-elses"}}}
	if err := kube.Update(ctx, forged); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := kube.Get(ctx, req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got.Spec.Crossplane); diff != "" {
		t.Errorf("spec.crossplane after a hand-written one (-want +got):\n%s", diff)
	}
}

func TestStandsFor(t *testing.T) {
	api := v1alpha1.SchemeGroupVersion.String()
	b := &v1alpha1.PostgreSQLBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders", UID: "b-1"}, Spec: v1alpha1.PostgreSQLBindingSpec{Tenant: "orders", DatabaseRef: v1alpha1.LocalReference{Name: "orders"}}}
	db := func(phase v1alpha1.DatabasePhase, uid string, owner *v1alpha1.LocalReference) *v1alpha1.PostgreSQLDatabase {
		d := &v1alpha1.PostgreSQLDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders"}}
		d.Spec.ForProvider.OwnerRef = owner
		d.Status.Binding.Phase = phase
		if uid != "" {
			d.Status.Binding.BoundTo = &v1alpha1.BindingReference{Name: "orders", UID: uid, Tenant: "shop/orders"}
		}
		return d
	}
	database := v1alpha1.ResourceRef{APIVersion: api, Kind: v1alpha1.PostgreSQLDatabaseKind, Name: "orders"}
	cases := map[string]struct {
		db   *v1alpha1.PostgreSQLDatabase
		want []v1alpha1.ResourceRef
	}{
		"NoDatabase":           {db: nil},
		"NotBoundYet":          {db: db(v1alpha1.PhaseAvailable, "", &v1alpha1.LocalReference{Name: "owner"})},
		"BoundToAnother":       {db: db(v1alpha1.PhaseBound, "b-2", &v1alpha1.LocalReference{Name: "owner"})},
		"ReleasedByThisOne":    {db: db(v1alpha1.PhaseReleased, "b-1", nil)},
		"BoundOwnerByName":     {db: db(v1alpha1.PhaseBound, "b-1", nil), want: []v1alpha1.ResourceRef{database}},
		"BoundOwnerAsResource": {db: db(v1alpha1.PhaseBound, "b-1", &v1alpha1.LocalReference{Name: "owner"}), want: []v1alpha1.ResourceRef{database, {APIVersion: api, Kind: v1alpha1.PostgreSQLRoleKind, Name: "owner"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, standsFor(b, tc.db)); diff != "" {
				t.Errorf("standsFor (-want +got):\n%s", diff)
			}
		})
	}
}
