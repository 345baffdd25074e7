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

// TestPasswordFixation is someone who may create Secrets in a namespace,
// but not read them, creating one in advance under the name a login
// role's connection Secret will have (a claim's is predictable), with a
// password of their choosing. The role must never take that password,
// nor write its credentials into that Secret: it says whose Secret it is
// and waits; once the Secret is gone it publishes its own.
func TestPasswordFixation(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	const chosen = "password-chosen-by-someone-else"
	planted := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fixed-postgresql"},
		Data:       map[string][]byte{"username": []byte("fixed"), "password": []byte(chosen)},
	}
	env.Create(ctx, t, planted)
	r := role("main", "fixed", func(r *v1alpha1.PostgreSQLRole) {
		r.Spec.ForProvider.Login = ptr.To(true)
		r.Spec.WriteConnectionSecretToReference = &xpv2.LocalSecretReference{Name: planted.Name}
	})
	env.Create(ctx, t, r)
	err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), r)
		c := r.GetCondition(xpv2.TypeReady)
		return err == nil && c.Reason == v1alpha1.ReasonConflict && strings.Contains(c.Message, "this PostgreSQLRole did not create it (it has no controller"), err
	})
	if err != nil {
		t.Fatalf("the planted Secret is not refused: %v (Ready: %+v)", err, r.GetCondition(xpv2.TypeReady))
	}
	time.Sleep(3 * time.Second) // A poll later.
	got := &corev1.Secret{}
	if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(planted), got); err != nil {
		t.Fatal(err)
	}
	if string(got.Data["password"]) != chosen || len(got.Data) != 2 || len(got.OwnerReferences) != 0 {
		t.Errorf("the planted Secret was written to or adopted: keys %d, owners %v", len(got.Data), got.OwnerReferences)
	}
	if env.Holds(ctx, t, "EXISTS (SELECT FROM pg_roles WHERE rolname = 'fixed')") {
		t.Error("the role was created while its Secret is someone else's")
	}

	// The Secret goes: the role publishes its own, with a password nobody chose.
	if err := env.Kube.Delete(ctx, planted); err != nil {
		t.Fatal(err)
	}
	env.Ready(ctx, t, r, corev1.ConditionTrue, xpv2.ReasonAvailable)
	d, err := env.ConnectionSecret(ctx, ns, planted.Name)
	if err != nil {
		t.Fatal(err)
	}
	if string(d["password"]) == chosen || len(d["password"]) == 0 {
		t.Error("the role's password is the planted one, or empty")
	}
	conn, err := providertest.ConnectWithSecret(ctx, d, "postgres")
	if err != nil {
		t.Fatalf("the published Secret does not log in: %v", err)
	}
	_ = conn.Close(ctx)

	// Later, the provider's Secret deleted and another planted in its
	// place while the provider is down: the role keeps its password.
	if err := env.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := env.Kube.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: planted.Name}}); err != nil {
		t.Fatal(err)
	}
	replanted := planted.DeepCopy()
	replanted.ResourceVersion = ""
	env.Create(ctx, t, replanted)
	if err := env.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	err = providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), r)
		return err == nil && r.GetCondition(xpv2.TypeReady).Reason == v1alpha1.ReasonConflict, err
	})
	if err != nil {
		t.Fatalf("the Secret planted over the provider's is not refused: %v (Ready: %+v)", err, r.GetCondition(xpv2.TypeReady))
	}
	time.Sleep(3 * time.Second) // A poll later.
	planted2 := d
	planted2["password"] = []byte(chosen)
	if c, err := providertest.ConnectWithSecret(ctx, planted2, "postgres"); err == nil {
		_ = c.Close(ctx)
		t.Error("the role's password became the planted one")
	}
	if err := env.Kube.Delete(ctx, replanted); err != nil {
		t.Fatal(err)
	}
	env.Ready(ctx, t, r, corev1.ConditionTrue, xpv2.ReasonAvailable)
}
