package instance_test

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

// heldUntil deletes in and checks that it stays, its Synced condition
// saying why (containing want), until release has run; then that it goes.
func heldUntil(ctx context.Context, t *testing.T, in *v1alpha1.PostgreSQLInstance, want string, release func()) {
	t.Helper()
	if err := env.Kube.Delete(ctx, in); err != nil {
		t.Fatal(err)
	}
	got := &v1alpha1.PostgreSQLInstance{}
	err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(in), got); err != nil {
			return false, err
		}
		return strings.Contains(got.GetCondition(xpv2.TypeSynced).Message, want), nil
	})
	if err != nil {
		t.Fatalf("Instance %s: the held deletion is not explained (want %q): %v; Synced %+v", in.Name, want, err, got.GetCondition(xpv2.TypeSynced))
	}
	if got.Status.Phase != v1alpha1.InstancePhaseDeleting {
		t.Errorf("Instance %s: phase = %q while its deletion is held, want Deleting", in.Name, got.Status.Phase)
	}
	// Still there a while later: held, not merely slow.
	time.Sleep(3 * time.Second)
	if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(in), got); err != nil {
		t.Fatalf("Instance %s went while its deletion should be held: %v", in.Name, err)
	}
	release()
	err = providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		err := env.Kube.Get(ctx, client.ObjectKeyFromObject(in), &v1alpha1.PostgreSQLInstance{})
		return kerrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("Instance %s was not deleted once nothing held it: %v", in.Name, err)
	}
}

func database(namespace, name, instanceName string) *v1alpha1.PostgreSQLDatabase {
	return &v1alpha1.PostgreSQLDatabase{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       v1alpha1.PostgreSQLDatabaseSpec{InstanceRef: v1alpha1.InstanceReference{Name: instanceName}},
	}
}

// TestInstanceDeletionHeldWhateverItsPolicies: a database on an Instance
// holds its deletion when the Instance's managementPolicies leave out
// Delete (crossplane-runtime then removes its finalizer without observing)
// and when the Instance never connected (crossplane-runtime adds its
// finalizer only after an observation succeeds).
func TestInstanceDeletionHeldWhateverItsPolicies(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	if err := env.Namespace(ctx, "hold-policies"); err != nil {
		t.Fatal(err)
	}

	t.Run("WithoutDeleteInItsPolicies", func(t *testing.T) {
		in, err := env.Instance(ctx, "nodelete")
		if err != nil {
			t.Fatal(err)
		}
		providertest.Update(ctx, t, env, in, func(in *v1alpha1.PostgreSQLInstance) {
			in.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve, xpv2.ManagementActionCreate, xpv2.ManagementActionUpdate, xpv2.ManagementActionLateInitialize}
		})
		db := database("hold-policies", "nodeletedb", in.Name)
		env.Create(ctx, t, db)
		env.Ready(ctx, t, db, corev1.ConditionTrue, xpv2.ReasonAvailable)
		heldUntil(ctx, t, in, "1 resource(s) still refer to this Instance: PostgreSQLDatabase hold-policies/nodeletedb", func() {
			if err := env.Kube.Delete(ctx, db); err != nil {
				t.Fatal(err)
			}
			env.Gone(ctx, t, db)
		})
	})

	t.Run("NeverConnected", func(t *testing.T) {
		// Its admin Secret does not exist: the Instance is never Ready.
		in := newInstance("neverconnected", "no-such-admin-secret", "")
		env.Create(ctx, t, in)
		got := waitReady(ctx, t, in.Name, corev1.ConditionFalse, "CredentialsUnavailable", 30*time.Second)
		if !slices.Contains(got.GetFinalizers(), "finalizer.managedresource.crossplane.io") {
			t.Errorf("an Instance that never connected has no finalizer: %v", got.GetFinalizers())
		}
		db := database("hold-policies", "neverdb", in.Name)
		env.Create(ctx, t, db)
		heldUntil(ctx, t, in, "1 resource(s) still refer to this Instance: PostgreSQLDatabase hold-policies/neverdb", func() {
			if err := env.Kube.Delete(ctx, db); err != nil {
				t.Fatal(err)
			}
			env.Gone(ctx, t, db)
		})
	})
}

// TestInstanceDeletionHeldWhenTheLookUpFails: an Instance nothing refers
// to stays while the provider cannot list one of the kinds that could: a
// failed look-up is not "no references".
func TestInstanceDeletionHeldWhenTheLookUpFails(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	in, err := env.Instance(ctx, "lookupfails")
	if err != nil {
		t.Fatal(err)
	}
	restore := env.FailLists(t, func(l client.ObjectList) error {
		if _, ok := l.(*v1alpha1.PostgreSQLBindingList); ok {
			return kerrors.NewServiceUnavailable("the API server is not answering")
		}
		return nil
	})
	heldUntil(ctx, t, in, "deletion held: cannot tell whether anything still refers to this Instance: cannot list the PostgreSQLBindings", restore)
}

// TestInstanceDeletionNotHeldByUnselectedNamespaces: what a namespace the
// Instance's namespaceSelector does not select asks for could never have
// been provisioned, and does not hold the Instance's deletion: a tenant's
// claim, a binding, a database that never connected. A database of a
// selected namespace does, until it goes.
func TestInstanceDeletionNotHeldByUnselectedNamespaces(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	const label = "postgresql.example.org/unselected-test"
	for _, n := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "hold-chosen", Labels: map[string]string{label: "yes"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "hold-outside"}},
	} {
		env.Create(ctx, t, n)
	}
	in, err := env.Instance(ctx, "selecting")
	if err != nil {
		t.Fatal(err)
	}
	providertest.Update(ctx, t, env, in, func(in *v1alpha1.PostgreSQLInstance) {
		in.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{label: "yes"}}
	})
	outsider := database("hold-outside", "outsiderdb", in.Name)
	binding := &v1alpha1.PostgreSQLBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "outsidetenant", Namespace: "hold-outside"},
		Spec: v1alpha1.PostgreSQLBindingSpec{
			Tenant: "outsidetenant", DatabaseRef: v1alpha1.LocalReference{Name: "outsidetenant"},
			Provision: &v1alpha1.BindingProvision{InstanceRef: v1alpha1.InstanceReference{Name: in.Name}, Database: "outsidetenant"},
		},
	}
	env.Create(ctx, t, outsider, binding)
	tenantComposite(ctx, t, in.Name, "outsidetenant-x1", "hold-outside")
	chosen := database("hold-chosen", "chosendb", in.Name)
	env.Create(ctx, t, chosen)
	env.Ready(ctx, t, chosen, corev1.ConditionTrue, xpv2.ReasonAvailable)

	heldUntil(ctx, t, in, "1 resource(s) still refer to this Instance: PostgreSQLDatabase hold-chosen/chosendb", func() {
		if err := env.Kube.Delete(ctx, chosen); err != nil {
			t.Fatal(err)
		}
		env.Gone(ctx, t, chosen)
	})
}

// TestInstancePhaseAndGeneration: a new Instance reads Pending before the
// provider has looked at it; once the spec changes and the new endpoint
// fails, the status says so for that generation and no longer shows the
// version and identity of the server reached before.
func TestInstancePhaseAndGeneration(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	if err := env.AdminSecret(ctx, "phase-admin", env.Postgres.AdminUser, env.Postgres.AdminPassword); err != nil {
		t.Fatal(err)
	}
	if err := env.CASecret(ctx, "phase-ca"); err != nil {
		t.Fatal(err)
	}
	in := newInstance("phase", "phase-admin", "phase-ca")
	// Paused: the provider writes nothing but a condition.
	in.Annotations = map[string]string{meta.AnnotationKeyReconciliationPaused: "true"}
	env.Create(ctx, t, in)
	if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(in), in); err != nil {
		t.Fatal(err)
	}
	if in.Status.Phase != v1alpha1.InstancePhasePending {
		t.Errorf("a new Instance's phase = %q, want Pending", in.Status.Phase)
	}
	providertest.Update(ctx, t, env, in, func(in *v1alpha1.PostgreSQLInstance) { delete(in.Annotations, meta.AnnotationKeyReconciliationPaused) })
	got := waitReady(ctx, t, in.Name, corev1.ConditionTrue, xpv2.ReasonAvailable, 30*time.Second)
	if got.Status.SystemIdentifier == "" || got.Status.PostgreSQLVersion == "" || got.Status.ObservedGeneration != got.Generation {
		t.Fatalf("a Ready Instance's status: identity %q, version %q, observedGeneration %d of %d", got.Status.SystemIdentifier, got.Status.PostgreSQLVersion, got.Status.ObservedGeneration, got.Generation)
	}

	// A port nothing listens on.
	providertest.Update(ctx, t, env, got, func(in *v1alpha1.PostgreSQLInstance) { in.Spec.Endpoint.Port = int32(freePort(t)) })
	got = waitReady(ctx, t, in.Name, corev1.ConditionFalse, "Unreachable", 30*time.Second)
	if got.Status.ObservedGeneration != got.Generation {
		t.Errorf("observedGeneration = %d after a failed validation of generation %d", got.Status.ObservedGeneration, got.Generation)
	}
	if c := got.GetCondition(xpv2.TypeReady); c.ObservedGeneration != got.Generation {
		t.Errorf("the Ready condition's observedGeneration = %d, want %d", c.ObservedGeneration, got.Generation)
	}
	if got.Status.Phase != v1alpha1.InstancePhaseValidating || got.Status.SystemIdentifier != "" || got.Status.PostgreSQLVersion != "" || got.Status.AdminPrivileges != nil {
		t.Errorf("after the endpoint moved and failed: phase %q, identity %q, version %q, admin %+v; want Validating and nothing of the old server",
			got.Status.Phase, got.Status.SystemIdentifier, got.Status.PostgreSQLVersion, got.Status.AdminPrivileges)
	}
	if err := env.Kube.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
}

// freePort returns a loopback port nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()                     //nolint:errcheck // Test.
	return l.Addr().(*net.TCPAddr).Port //nolint:forcetypeassert // A TCP listener.
}
