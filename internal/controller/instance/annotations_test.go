package instance_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

// TestCrossplaneAnnotations: the per-resource annotations users of other
// Crossplane providers rely on work here too, through this provider's own
// poll scheduling (the package's default poll is 10 minutes):
// crossplane.io/poll-interval polls one resource more often while its
// neighbour keeps the default, down to --min-poll-interval and no more
// often, crossplane.io/paused makes a resource send
// nothing, and a crossplane.io/reconcile-requested-at bump observes at
// once.
func TestCrossplaneAnnotations(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	in, err := env.Instance(ctx, "annotations")
	if err != nil {
		t.Fatal(err)
	}
	const namespace = "annotations"
	if err := env.Namespace(ctx, namespace); err != nil {
		t.Fatal(err)
	}
	role := func(name string, annotations map[string]string) *v1alpha1.PostgreSQLRole {
		return &v1alpha1.PostgreSQLRole{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Annotations: annotations},
			Spec: v1alpha1.PostgreSQLRoleSpec{
				InstanceRef: v1alpha1.InstanceReference{Name: in.Name},
				ForProvider: v1alpha1.PostgreSQLRoleParameters{Login: ptr.To(false)},
			},
		}
	}
	exists := func(name string) bool {
		t.Helper()
		return env.Holds(ctx, t, "EXISTS (SELECT FROM pg_roles WHERE rolname = '"+name+"')")
	}

	t.Run("PollInterval", func(t *testing.T) {
		fast := role("annfast", map[string]string{meta.AnnotationKeyPollInterval: "5s"})
		slow := role("annslow", nil)
		// Whoever may annotate a resource cannot have it observed in a
		// loop: 100ms is raised to --min-poll-interval (5s).
		eager := role("anneager", map[string]string{meta.AnnotationKeyPollInterval: "100ms"})
		env.Create(ctx, t, fast, slow, eager)
		for _, r := range []*v1alpha1.PostgreSQLRole{fast, slow, eager} {
			env.Ready(ctx, t, r, corev1.ConditionTrue, xpv2.ReasonAvailable)
		}
		time.Sleep(2 * time.Second) // Past the reconciles of the creation.
		reads := env.CountReads(t, client.ObjectKeyFromObject(fast), client.ObjectKeyFromObject(slow), client.ObjectKeyFromObject(eager))
		time.Sleep(21 * time.Second)
		n := reads()
		t.Logf("in 21 s: %d reconciles with a 5 s poll-interval, %d with the default, %d with 100ms", n[0], n[1], n[2])
		if n[0] < 3 || n[0] > 8 {
			t.Errorf("a resource with a 5 s poll-interval was reconciled %d times in 21 s, want about 4", n[0])
		}
		if n[1] != 0 {
			t.Errorf("its neighbour, on the default 10-minute poll, was reconciled %d times", n[1])
		}
		if n[2] < 3 || n[2] > 8 {
			t.Errorf("a resource asking for a 100ms poll-interval was reconciled %d times in 21 s, want about 4 (every --min-poll-interval, 5 s)", n[2])
		}
	})

	t.Run("Paused", func(t *testing.T) {
		paused := role("annpaused", map[string]string{meta.AnnotationKeyReconciliationPaused: "true"})
		env.Create(ctx, t, paused)
		err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
			err := env.Kube.Get(ctx, client.ObjectKeyFromObject(paused), paused)
			return err == nil && paused.GetCondition(xpv2.TypeSynced).Reason == xpv2.ReasonReconcilePaused, err
		})
		if err != nil {
			t.Fatalf("the paused role does not say it is paused: %v (Synced %+v)", err, paused.GetCondition(xpv2.TypeSynced))
		}
		time.Sleep(2 * time.Second)
		if exists("annpaused") {
			t.Error("a paused role was created on the server")
		}
		providertest.Update(ctx, t, env, paused, func(r *v1alpha1.PostgreSQLRole) { delete(r.Annotations, meta.AnnotationKeyReconciliationPaused) })
		env.Ready(ctx, t, paused, corev1.ConditionTrue, xpv2.ReasonAvailable)
	})

	t.Run("ReconcileRequestedAt", func(t *testing.T) {
		r := role("annrequested", nil)
		env.Create(ctx, t, r)
		env.Ready(ctx, t, r, corev1.ConditionTrue, xpv2.ReasonAvailable)
		// Dropped by hand: the 10-minute poll would not notice for a while.
		env.SQL(ctx, t, "postgres", "DROP ROLE annrequested")
		const token = "2026-12-03T20:00:00Z"
		providertest.Update(ctx, t, env, r, func(r *v1alpha1.PostgreSQLRole) {
			meta.AddAnnotations(r, map[string]string{meta.AnnotationKeyReconcileRequestedAt: token})
		})
		err := providertest.Wait(ctx, 15*time.Second, func(ctx context.Context) (bool, error) {
			err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), r)
			return err == nil && r.Status.LastHandledReconcileAt == token && exists("annrequested"), err
		})
		if err != nil {
			t.Fatalf("the reconcile request was not handled at once: %v (lastHandledReconcileAt %q)", err, r.Status.LastHandledReconcileAt)
		}
	})
}
