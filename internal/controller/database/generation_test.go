package database_test

import (
	"context"
	"fmt"
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

// generationed is what every kind's status says of the generation it
// describes.
type generationed interface {
	providertest.Conditioned
}

// TestStatusDescribesTheGenerationOnFailure: on every kind the provider
// reconciles, one Ready condition and status.observedGeneration follow the
// spec when the reconcile fails too. Each object is created broken (its
// target missing or refused), then its spec is changed while it stays
// broken: the failure reported must be the new generation's.
//
//nolint:forcetypeassert // Each case's funcs take that case's object.
func TestStatusDescribesTheGenerationOnFailure(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	in := v1alpha1.InstanceReference{Name: main.Name}
	cases := map[string]struct {
		obj    generationed
		change func(client.Object)
		// observed reads status.observedGeneration.
		observed func(client.Object) int64
	}{
		"PostgreSQLDatabase": {
			obj: &v1alpha1.PostgreSQLDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gendb"}, Spec: v1alpha1.PostgreSQLDatabaseSpec{
				InstanceRef: in, ForProvider: v1alpha1.PostgreSQLDatabaseParameters{Extensions: []v1alpha1.Extension{{Name: "gen_no_such_extension"}}}}},
			change:   func(o client.Object) { o.(*v1alpha1.PostgreSQLDatabase).Spec.ForProvider.Comment = ptr.To("changed") },
			observed: func(o client.Object) int64 { return o.(*v1alpha1.PostgreSQLDatabase).Status.ObservedGeneration },
		},
		"PostgreSQLRole": {
			obj: &v1alpha1.PostgreSQLRole{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "genrole"}, Spec: v1alpha1.PostgreSQLRoleSpec{
				InstanceRef: in, ForProvider: v1alpha1.PostgreSQLRoleParameters{MemberOf: []string{"gen_no_such_group"}}}},
			change: func(o client.Object) {
				o.(*v1alpha1.PostgreSQLRole).Spec.ForProvider.ConnectionLimit = ptr.To(int32(3))
			},
			observed: func(o client.Object) int64 { return o.(*v1alpha1.PostgreSQLRole).Status.ObservedGeneration },
		},
		"PostgreSQLSchema": {
			obj: &v1alpha1.PostgreSQLSchema{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "genschema"}, Spec: v1alpha1.PostgreSQLSchemaSpec{
				InstanceRef: in, ForProvider: v1alpha1.PostgreSQLSchemaParameters{Database: ptr.To("postgres")}}},
			change:   func(o client.Object) { o.(*v1alpha1.PostgreSQLSchema).Spec.ForProvider.Comment = ptr.To("changed") },
			observed: func(o client.Object) int64 { return o.(*v1alpha1.PostgreSQLSchema).Status.ObservedGeneration },
		},
		"PostgreSQLGrant": {
			obj: &v1alpha1.PostgreSQLGrant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gen-grant"}, Spec: v1alpha1.PostgreSQLGrantSpec{
				InstanceRef: in, ForProvider: v1alpha1.PostgreSQLGrantParameters{Role: ptr.To("gen_no_such_role"), ObjectType: v1alpha1.GrantObjectDatabase,
					Database: ptr.To("gen_no_such_db"), Privileges: []v1alpha1.Privilege{"CONNECT"}}}},
			change: func(o client.Object) {
				g := o.(*v1alpha1.PostgreSQLGrant)
				g.Spec.ForProvider.Privileges = append(g.Spec.ForProvider.Privileges, "TEMPORARY")
			},
			observed: func(o client.Object) int64 { return o.(*v1alpha1.PostgreSQLGrant).Status.ObservedGeneration },
		},
		"PostgreSQLDefaultPrivileges": {
			obj: &v1alpha1.PostgreSQLDefaultPrivileges{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gen-defaults"}, Spec: v1alpha1.PostgreSQLDefaultPrivilegesSpec{
				InstanceRef: in, ForProvider: v1alpha1.PostgreSQLDefaultPrivilegesParameters{Role: ptr.To("gen_no_such_role"), Owner: ptr.To("gen_no_such_owner"),
					Database: ptr.To("gen_no_such_db"), ObjectType: "Tables", Privileges: []v1alpha1.Privilege{"SELECT"}}}},
			change: func(o client.Object) {
				d := o.(*v1alpha1.PostgreSQLDefaultPrivileges)
				d.Spec.ForProvider.Privileges = append(d.Spec.ForProvider.Privileges, "INSERT")
			},
			observed: func(o client.Object) int64 {
				return o.(*v1alpha1.PostgreSQLDefaultPrivileges).Status.ObservedGeneration
			},
		},
		"PostgreSQLBinding": {
			obj: &v1alpha1.PostgreSQLBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gen-binding"}, Spec: v1alpha1.PostgreSQLBindingSpec{
				Tenant: "gen-tenant", DatabaseRef: v1alpha1.LocalReference{Name: "gentenant"},
				Provision: &v1alpha1.BindingProvision{InstanceRef: v1alpha1.InstanceReference{Name: "gen-no-such-instance"}, Database: "gentenant"}}},
			change: func(o client.Object) {
				b := o.(*v1alpha1.PostgreSQLBinding)
				b.Spec.Provision.Extensions = append(b.Spec.Provision.Extensions, "pgcrypto")
			},
			observed: func(o client.Object) int64 { return o.(*v1alpha1.PostgreSQLBinding).Status.ObservedGeneration },
		},
		"Lock": {
			obj: &v1alpha1.Lock{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gen-lock"}, Spec: v1alpha1.LockSpec{
				TargetRef: v1alpha1.TargetReference{Kind: v1alpha1.PostgreSQLDatabaseKind, Name: "gen-no-such-database"}}},
			change:   func(o client.Object) { o.(*v1alpha1.Lock).Spec.Reason = "changed" },
			observed: func(o client.Object) int64 { return o.(*v1alpha1.Lock).Status.ObservedGeneration },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := tc.obj
			env.Create(ctx, t, o)
			t.Cleanup(func() { _ = env.Kube.Delete(context.WithoutCancel(ctx), o) })
			describes := func(gen int64) error {
				return providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
					if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
						return false, err
					}
					r := o.GetCondition(xpv2.TypeReady)
					return o.GetGeneration() == gen && r.Status == corev1.ConditionFalse && r.ObservedGeneration == gen && tc.observed(o) == gen, nil
				})
			}
			if err := describes(1); err != nil {
				t.Fatalf("the failure of generation 1 is not reported as such: %v\n%s", err, status(o, tc.observed))
			}
			providertest.Update(ctx, t, env, o, func(o generationed) { tc.change(o) })
			if err := describes(2); err != nil {
				t.Fatalf("after a spec change, the failure is not reported for generation 2: %v\n%s", err, status(o, tc.observed))
			}
		})
	}
}

func status(o providertest.Conditioned, observed func(client.Object) int64) string {
	r := o.GetCondition(xpv2.TypeReady)
	return fmt.Sprintf("generation %d, status.observedGeneration %d, Ready %s/%s (observedGeneration %d): %s",
		o.GetGeneration(), observed(o), r.Status, r.Reason, r.ObservedGeneration, r.Message)
}
