package role_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/role"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

// TestSecretEventReadsOnlyItsRoles: a Secret's event wakes the roles of
// its namespace whose passwordSecretRef names it, and finding them reads
// those roles and no others. Every login role writes its connection
// Secret, so a list of the namespace per Secret event made a wave of
// thousands of roles cost CPU with the square of their number; a return
// to it fails here. A Secret of the same name in another namespace wakes
// nothing.
func TestSecretEventReadsOnlyItsRoles(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	const many = 30
	newRole := func(name, secret string) *v1alpha1.PostgreSQLRole {
		return &v1alpha1.PostgreSQLRole{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: v1alpha1.PostgreSQLRoleSpec{InstanceRef: v1alpha1.InstanceReference{Name: main.Name}, ForProvider: v1alpha1.PostgreSQLRoleParameters{
				PasswordSecretRef: &v1alpha1.SecretKeyReference{Name: secret, Key: "password"},
			}},
		}
	}
	var objs []client.Object
	for i := range many {
		objs = append(objs, newRole(fmt.Sprintf("si%d", i), fmt.Sprintf("si-own-%d", i)))
	}
	objs = append(objs, newRole("sia", "si-shared"), newRole("sib", "si-shared"))
	env.CreateForTest(ctx, t, objs...)

	// Every namespace, as the provider's cache: a lookup in another
	// namespace must find nothing because there is nothing there.
	c, _ := env.Cache(ctx, t)
	if err := role.IndexPasswordSecrets(c); err != nil {
		t.Fatal(err)
	}
	err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		l := &v1alpha1.PostgreSQLRoleList{}
		err := c.List(ctx, l, client.InNamespace(ns))
		return len(l.Items) >= many+2, err
	})
	if err != nil {
		t.Fatal(err)
	}
	reader := &providertest.CountingReader{Reader: c}
	wake := role.RolesUsingSecret(reader)

	shared := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "si-shared", Namespace: ns}}
	want := []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: ns, Name: "sia"}}, {NamespacedName: client.ObjectKey{Namespace: ns, Name: "sib"}}}
	less := func(a, b reconcile.Request) bool { return a.Name < b.Name }
	if diff := cmp.Diff(want, wake(ctx, shared), cmpopts.SortSlices(less)); diff != "" {
		t.Errorf("woken by the shared Secret (-want +got):\n%s", diff)
	}
	if n := reader.Listed(); n != int64(len(want)) {
		t.Errorf("finding the %d roles of a Secret read %d roles of the namespace's %d; want only them", len(want), n, many+2)
	}
	elsewhere := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "si-shared", Namespace: "elsewhere"}}
	if got := wake(ctx, elsewhere); len(got) != 0 {
		t.Errorf("a Secret of another namespace woke %v", got)
	}
}
