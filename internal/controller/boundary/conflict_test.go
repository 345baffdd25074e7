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

// TestNamingAnotherTenantsObjects: a namespace names another tenant's
// database and role. Each is refused with a Conflict that says the object
// is another namespace's, and no more (not which namespace, resource or
// UID), and offers no statement that would hand it over: an admin who ran
// one would give the claimant the other tenant's data, or its login.
func TestNamingAnotherTenantsObjects(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	theirRole := &v1alpha1.PostgreSQLRole{
		ObjectMeta: metav1.ObjectMeta{Namespace: "victims", Name: "inventory-owner"},
		Spec:       v1alpha1.PostgreSQLRoleSpec{InstanceRef: v1alpha1.InstanceReference{Name: "main"}, ForProvider: v1alpha1.PostgreSQLRoleParameters{Name: ptr.To("inventory_owner")}},
	}
	theirDB := &v1alpha1.PostgreSQLDatabase{
		ObjectMeta: metav1.ObjectMeta{Namespace: "victims", Name: "inventory"},
		Spec:       v1alpha1.PostgreSQLDatabaseSpec{InstanceRef: v1alpha1.InstanceReference{Name: "main"}, ForProvider: v1alpha1.PostgreSQLDatabaseParameters{OwnerRef: &v1alpha1.LocalReference{Name: "inventory-owner"}}},
	}
	env.Create(ctx, t, theirRole, theirDB)
	env.Ready(ctx, t, theirDB, corev1.ConditionTrue, xpv2.ReasonAvailable)

	for _, c := range []struct {
		obj   providertest.Conditioned
		whose string
	}{
		{obj: database("main", "inventory", v1alpha1.PostgreSQLDatabaseParameters{}), whose: "managed from another namespace (its ownership marker names a PostgreSQLDatabase there)"},
		{obj: role("main", "inventory_owner", func(*v1alpha1.PostgreSQLRole) {}), whose: "managed from another namespace (its ownership marker names a PostgreSQLRole there)"},
	} {
		t.Run(c.obj.GetName(), func(t *testing.T) {
			env.Create(ctx, t, c.obj)
			err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
				err := env.Kube.Get(ctx, client.ObjectKeyFromObject(c.obj), c.obj)
				return err == nil && c.obj.GetCondition(xpv2.TypeReady).Reason == v1alpha1.ReasonConflict, err
			})
			if err != nil {
				t.Fatalf("%s is not refused: %v (Ready %+v)", c.obj.GetName(), err, c.obj.GetCondition(xpv2.TypeReady))
			}
			msg := c.obj.GetCondition(xpv2.TypeReady).Message
			for _, want := range []string{c.whose, "step: observe", "Confirmed:", "Uncertain:", "Check by hand:", "never handed over"} {
				if !strings.Contains(msg, want) {
					t.Errorf("the Conflict %q does not say %q", msg, want)
				}
			}
			for _, never := range []string{"COMMENT ON", string(c.obj.GetUID())} {
				if strings.Contains(msg, never) {
					t.Errorf("the Conflict %q offers a hand-over (%q)", msg, never)
				}
			}
			for _, never := range []string{"victims", string(theirRole.GetUID()), string(theirDB.GetUID())} {
				if strings.Contains(msg, never) {
					t.Errorf("the Conflict %q tells of the other namespace (%q)", msg, never)
				}
			}
		})
	}
}
