package boundary_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

// TestNamespaceSelector: an Instance's namespaceSelector keeps a namespace
// it does not select from creating anything on the server, and applies to
// new work only: once the label that admitted a namespace is removed, its
// resources can still be deleted (and what they made dropped), so the
// namespace is never stuck; new work there is refused from then on, even
// before the provider's cache has seen the label go.
func TestNamespaceSelector(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	const label = "postgresql.example.org/tenants"
	for _, n := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "chosen", Labels: map[string]string{label: "yes"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "outside"}},
	} {
		env.Create(ctx, t, n)
	}
	in := env.Main.DeepCopy()
	in.ObjectMeta = metav1.ObjectMeta{Name: "selective"}
	in.Status = v1alpha1.PostgreSQLInstanceStatus{}
	in.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{label: "yes"}}
	env.Create(ctx, t, in)
	env.Ready(ctx, t, in, corev1.ConditionTrue, xpv2.ReasonAvailable)

	newRole := func(namespace, name string) *v1alpha1.PostgreSQLRole {
		return &v1alpha1.PostgreSQLRole{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: strings.ReplaceAll(name, "_", "-")},
			Spec: v1alpha1.PostgreSQLRoleSpec{
				ManagementPolicies: xpv2.ManagementPolicies{xpv2.ManagementActionAll},
				InstanceRef:        v1alpha1.InstanceReference{Name: in.Name},
				ForProvider:        v1alpha1.PostgreSQLRoleParameters{Name: ptr.To(name)},
			},
		}
	}
	pg := env.Connect(ctx, t, "postgres")
	exists := func(role string) bool {
		t.Helper()
		var n int
		if err := pg.QueryRow(ctx, "SELECT count(*) FROM pg_roles WHERE rolname = $1", role).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	refused := func(t *testing.T, r *v1alpha1.PostgreSQLRole) {
		t.Helper()
		err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
			if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), r); err != nil {
				return false, err
			}
			c := r.GetCondition(xpv2.TypeSynced)
			return c.Status == corev1.ConditionFalse && strings.Contains(c.Message, "namespaceSelector does not select it"), nil
		})
		if err != nil {
			t.Fatalf("%s/%s was not refused by the namespaceSelector: %v (Synced: %q)", r.Namespace, r.Name, err, r.GetCondition(xpv2.TypeSynced).Message)
		}
		// A poll later, still nothing on the server.
		time.Sleep(3 * time.Second)
		if exists(r.RoleName()) {
			t.Errorf("role %s was created for a namespace the Instance does not select", r.Name)
		}
	}

	outsider := newRole("outside", "sel_outsider")
	t.Run("RefusedNamespaceCreatesNothing", func(t *testing.T) {
		env.Create(ctx, t, outsider)
		refused(t, outsider)
	})

	kept := newRole("chosen", "sel_kept")
	env.Create(ctx, t, kept)
	env.Ready(ctx, t, kept, corev1.ConditionTrue, xpv2.ReasonAvailable)
	if !exists("sel_kept") {
		t.Fatal("the selected namespace's role is not on the server")
	}

	// The platform withdraws the namespace. The controllers' cache has
	// not seen it yet (held so, deterministically, for as long as the
	// subtest runs): a check of the namespace against the cache provisions
	// the next role; one against the API server refuses it.
	caught := env.LagNamespaces(ctx, t)
	chosen := &corev1.Namespace{}
	if err := env.Kube.Get(ctx, client.ObjectKey{Name: "chosen"}, chosen); err != nil {
		t.Fatal(err)
	}
	delete(chosen.Labels, label)
	if err := env.Kube.Update(ctx, chosen); err != nil {
		t.Fatal(err)
	}

	late := newRole("chosen", "sel_late")
	t.Run("NewWorkRefusedAfterTheLabelGoes", func(t *testing.T) {
		env.Create(ctx, t, late)
		refused(t, late)
	})
	caught()

	t.Run("DeletionStillWorks", func(t *testing.T) {
		if err := env.Kube.Delete(ctx, kept); err != nil {
			t.Fatal(err)
		}
		env.Gone(ctx, t, kept)
		if exists("sel_kept") {
			t.Error("the role was not dropped on deletion after its namespace was withdrawn")
		}
		// Refused ones go too: they never made anything.
		for _, r := range []*v1alpha1.PostgreSQLRole{outsider, late} {
			if err := env.Kube.Delete(ctx, r); err != nil {
				t.Fatal(err)
			}
			env.Gone(ctx, t, r)
		}
	})
}
