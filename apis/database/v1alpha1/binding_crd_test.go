package v1alpha1_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

// TestBindingIsFrozen: what a binding asks for cannot be changed once
// created (a binding never moves to another database, and the reclaim
// policy of what it provisions is fixed), except that extensions may be
// added, and removed while the database has not installed them.
func TestBindingIsFrozen(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	b := &v1alpha1.PostgreSQLBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "orders"},
		Spec: v1alpha1.PostgreSQLBindingSpec{
			Tenant: "orders", DatabaseRef: v1alpha1.LocalReference{Name: "orders"},
			Provision: &v1alpha1.BindingProvision{InstanceRef: v1alpha1.InstanceReference{Name: "main"}, Database: "orders", Extensions: []string{"pgcrypto"}},
		},
	}
	if err := kube.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.Delete(ctx, b) })
	got := &v1alpha1.PostgreSQLBinding{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(b), got); err != nil {
		t.Fatal(err)
	}
	if p := got.Spec.Provision.ManagementPolicies; len(p) != 4 || p[0] != xpv2.ManagementActionObserve {
		t.Errorf("the provisioned database's default reclaim policy is %v, want retain (no Delete)", p)
	}
	cases := map[string]struct {
		mutate func(*v1alpha1.PostgreSQLBinding)
		want   string
	}{
		"Tenant":      {func(b *v1alpha1.PostgreSQLBinding) { b.Spec.Tenant = "other" }, "tenant cannot be changed"},
		"DatabaseRef": {func(b *v1alpha1.PostgreSQLBinding) { b.Spec.DatabaseRef.Name = "ledger" }, "a binding never moves to another database"},
		"Database":    {func(b *v1alpha1.PostgreSQLBinding) { b.Spec.Provision.Database = "ledger" }, "cannot change"},
		"Reclaim": {func(b *v1alpha1.PostgreSQLBinding) {
			b.Spec.Provision.ManagementPolicies = xpv2.ManagementPolicies{"*"}
		}, "fixed at provisioning"},
		"NoProvision": {func(b *v1alpha1.PostgreSQLBinding) { b.Spec.Provision = nil }, "provision cannot be added or removed"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := got.DeepCopy()
			tc.mutate(u)
			err := kube.Update(ctx, u)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("update: %v, want a refusal saying %q", err, tc.want)
			}
		})
	}
	t.Run("ExtensionAdded", func(t *testing.T) {
		u := got.DeepCopy()
		u.Spec.Provision.Extensions = append(u.Spec.Provision.Extensions, "citext")
		if err := kube.Update(ctx, u); err != nil {
			t.Errorf("adding an extension: %v", err)
		}
	})
	t.Run("ExtensionRemoved", func(t *testing.T) {
		// The database has installed pgcrypto (and citext not yet).
		u := &v1alpha1.PostgreSQLBinding{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(b), u); err != nil {
			t.Fatal(err)
		}
		u.Status.Phase = v1alpha1.BindingBound
		u.Status.Database = &v1alpha1.BoundDatabase{Name: "orders", UID: "u", Instance: "main", Database: "orders", Owner: "orders_owner", Extensions: []string{"pgcrypto"}}
		if err := kube.Status().Update(ctx, u); err != nil {
			t.Fatal(err)
		}
		installed := u.DeepCopy()
		installed.Spec.Provision.Extensions = []string{"citext"}
		if err := kube.Update(ctx, installed); err == nil || !strings.Contains(err.Error(), "an extension the database has installed (status.database.extensions) cannot be removed") {
			t.Errorf("removing an installed extension: %v, want a refusal", err)
		}
		never := u.DeepCopy()
		never.Spec.Provision.Extensions = []string{"pgcrypto"}
		if err := kube.Update(ctx, never); err != nil {
			t.Errorf("removing an extension never installed: %v", err)
		}
	})
}

// TestDatabaseReservationIsFrozen: the binding a database was provisioned
// for cannot be changed or removed.
func TestDatabaseReservationIsFrozen(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	d := &v1alpha1.PostgreSQLDatabase{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "reserved"},
		Spec: v1alpha1.PostgreSQLDatabaseSpec{
			InstanceRef: v1alpha1.InstanceReference{Name: "main"},
			Binding:     v1alpha1.DatabaseBindingPolicy{ProvisionedFor: &v1alpha1.BindingReference{Name: "orders", UID: "uid-1"}},
		},
	}
	if err := kube.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.Delete(ctx, d) })
	for name, mutate := range map[string]func(*v1alpha1.PostgreSQLDatabase){
		"Changed": func(d *v1alpha1.PostgreSQLDatabase) { d.Spec.Binding.ProvisionedFor.UID = "uid-2" },
		"Removed": func(d *v1alpha1.PostgreSQLDatabase) { d.Spec.Binding.ProvisionedFor = nil },
	} {
		t.Run(name, func(t *testing.T) {
			u := &v1alpha1.PostgreSQLDatabase{}
			if err := kube.Get(ctx, client.ObjectKeyFromObject(d), u); err != nil {
				t.Fatal(err)
			}
			mutate(u)
			if err := kube.Update(ctx, u); err == nil || !strings.Contains(err.Error(), "provisionedFor is set by the provider") {
				t.Errorf("update: %v", err)
			}
		})
	}
	t.Run("OfferedAndReopenAreTheAdminsToChange", func(t *testing.T) {
		u := &v1alpha1.PostgreSQLDatabase{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(d), u); err != nil {
			t.Fatal(err)
		}
		u.Spec.Binding.Offered, u.Spec.Binding.Reopen = true, "uid-1"
		if err := kube.Update(ctx, u); err != nil {
			t.Errorf("update: %v", err)
		}
	})
}

// TestInstancePolicyValidation: the policy takes only known attributes and
// valid names.
func TestInstancePolicyValidation(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	for name, tc := range map[string]struct {
		policy v1alpha1.InstancePolicy
		want   string
	}{
		"UnknownAttribute": {v1alpha1.InstancePolicy{AllowRoleAttributes: []v1alpha1.PolicyRoleAttribute{"Superuser"}}, "allowRoleAttributes"},
		"BadTemplate":      {v1alpha1.InstancePolicy{AllowTemplates: []string{"Bad-Name"}}, "allowTemplates"},
		"BadSetting":       {v1alpha1.InstancePolicy{AllowSettings: []string{"a;b"}}, "allowSettings"},
	} {
		t.Run(name, func(t *testing.T) {
			in := validInstance("policy-" + strings.ToLower(name))
			in.Spec.Policy = tc.policy
			err := kube.Create(ctx, in)
			if err == nil {
				_ = kube.Delete(ctx, in)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("create: %v, want a refusal naming %s", err, tc.want)
			}
		})
	}
}
