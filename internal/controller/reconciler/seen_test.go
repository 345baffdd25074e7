package reconciler

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/fixture/tier"
)

// TestCreatePendingResetsStatus: crossplane-runtime's managed reconciler,
// run on a real API server, connects one external client for the
// reconcile, and between Observe and Create stores the create-pending
// annotation with an update whose answer replaces the object: what
// Observe wrote in status is gone when Create runs. This is why a kind
// keeps what Create needs of its observation in a Seen, on the external
// client. If crossplane-runtime stops replacing the object, or stops
// connecting once per reconcile, this test fails: the Seen copies can
// then be reconsidered.
func TestCreatePendingResetsStatus(t *testing.T) {
	tier.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp, s := startControlPlane(ctx, t)
	mgr, err := ctrl.NewManager(cp.Config, ctrl.Options{Scheme: s, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()
	role := &v1alpha1.PostgreSQLRole{ObjectMeta: metav1.ObjectMeta{Name: "seen", Namespace: testNamespace(ctx, t)}, Spec: v1alpha1.PostgreSQLRoleSpec{InstanceRef: v1alpha1.InstanceReference{Name: "main"}}}
	if err := apiClient(t, cp, s).Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	// The reconciler reads through the manager's cache: wait for the role.
	key := client.ObjectKeyFromObject(role)
	for mgr.GetClient().Get(ctx, key, &v1alpha1.PostgreSQLRole{}) != nil {
		select {
		case <-ctx.Done():
			t.Fatal("the manager's cache never saw the role")
		case <-time.After(50 * time.Millisecond):
		}
	}

	const observed = "written-by-observe"
	var connects, observes int
	var atCreate *string
	var seen Seen[string]
	connector := managed.ExternalConnectorFn(func(context.Context, resource.Managed) (managed.ExternalClient, error) {
		connects++
		seen = Seen[string]{} // A new client: nothing carried over.
		return &managed.ExternalClientFns{
			ObserveFn: func(_ context.Context, mg resource.Managed) (managed.ExternalObservation, error) {
				observes++
				r := mg.(*v1alpha1.PostgreSQLRole) //nolint:forcetypeassert // The reconciler's kind.
				r.Status.AtProvider.InstanceUID = observed
				kept := observed
				seen.Keep(&kept)
				return managed.ExternalObservation{ResourceExists: false}, nil
			},
			CreateFn: func(_ context.Context, mg resource.Managed) (managed.ExternalCreation, error) {
				r := mg.(*v1alpha1.PostgreSQLRole) //nolint:forcetypeassert // The reconciler's kind.
				got := r.Status.AtProvider.InstanceUID
				atCreate = &got
				return managed.ExternalCreation{}, nil
			},
			DisconnectFn: func(context.Context) error { return nil },
		}, nil
	})
	r := managed.NewReconciler(mgr, resource.ManagedKind(v1alpha1.PostgreSQLRoleGroupVersionKind),
		managed.WithExternalConnector(connector), managed.WithInitializers(),
		managed.WithFinalizer(resource.NewNopFinalizer()), managed.WithCreationGracePeriod(0), managed.WithManagementPolicies())
	if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	switch {
	case connects != 1 || observes != 1:
		got := &v1alpha1.PostgreSQLRole{}
		_ = apiClient(t, cp, s).Get(ctx, key, got)
		t.Fatalf("one reconcile connected %d times and observed %d times, want once each (conditions %+v)", connects, observes, got.Status.Conditions)
	case atCreate == nil:
		t.Fatal("Create was not called for a role Observe did not find")
	case *atCreate == observed:
		t.Errorf("Create saw the status Observe wrote (%q): crossplane-runtime no longer resets the object between them", *atCreate)
	}
	if o, err := seen.Get(); err != nil || *o != observed {
		t.Errorf("the Seen of the reconcile's client holds %v (%v), want what Observe kept", o, err)
	}
}

func TestSeen(t *testing.T) {
	var s Seen[string]
	if _, err := s.Get(); err == nil {
		t.Error("Get before any Observe: no error")
	}
	v := "observed"
	s.Keep(&v)
	if got, err := s.Get(); err != nil || got != &v {
		t.Errorf("Get after Keep = %v, %v; want what was kept", got, err)
	}
	s.Forget()
	if _, err := s.Get(); err == nil {
		t.Error("Get after Forget (an Observe that failed): no error")
	}
}
