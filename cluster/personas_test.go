package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ayatori/provider-postgresql/cluster"
	"github.com/ayatori/provider-postgresql/internal/fixture/controlplane"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
	"github.com/ayatori/provider-postgresql/internal/fixture/tier"
	"github.com/ayatori/provider-postgresql/internal/manifest"
)

// TestPersonas applies cluster/personas.yaml to a real API server (with
// the ClusterRole aggregation controller) and asks the authorizer what each
// persona may do: a tenant (bound to the tenant role, or to Kubernetes'
// built-in edit role through aggregation) claims and reads its Secrets,
// but never creates or edits the managed kinds, bindings or composites, nor
// writes a claim's status; a database admin manages all of it.
func TestPersonas(t *testing.T) {
	tier.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp := controlplane.StartT(ctx, t, controlplane.Options{ControllerManager: true, NoCRDs: true})
	kube := cp.CoreClient(t)
	b, err := cluster.Manifests.ReadFile("personas.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := manifest.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range objs {
		if err := kube.Create(ctx, u); err != nil {
			t.Fatalf("cannot apply %s: %v", u.GetName(), err)
		}
	}
	for _, ns := range []string{"shop", "finance"} {
		if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	bind := func(ns, user, role string) {
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: user}},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		}
		if err := kube.Create(ctx, rb); err != nil {
			t.Fatal(err)
		}
	}
	bind("shop", "alice", "provider-postgresql:tenant")
	bind("shop", "alice-view", "provider-postgresql:tenant-view")
	bind("shop", "carol", "edit")
	if err := kube.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "dba"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "dba"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "provider-postgresql:database-admin"},
	}); err != nil {
		t.Fatal(err)
	}

	type ask struct {
		verb, resource, sub, ns string
		allowed                 bool
	}
	tenant := []ask{
		{"create", "postgresqltenants", "", "shop", true},
		{"delete", "postgresqltenants", "", "shop", true},
		{"get", "secrets", "", "shop", true},
		{"create", "postgresqltenants", "", "finance", false},
		{"update", "postgresqltenants", "status", "shop", false},
		// The namespaced Tenant, the Crossplane v2 way: its own, in its
		// namespace, never its status.
		{"create", "tenants", "", "shop", true},
		{"delete", "tenants", "", "shop", true},
		{"create", "tenants", "", "finance", false},
		{"update", "tenants", "status", "shop", false},
		{"create", "postgresqldatabases", "", "shop", false},
		{"update", "postgresqldatabases", "", "shop", false},
		{"patch", "postgresqldatabases", "status", "shop", false},
		{"delete", "postgresqldatabases", "", "shop", false},
		{"create", "postgresqlroles", "", "shop", false},
		{"create", "postgresqlgrants", "", "shop", false},
		{"create", "postgresqlbindings", "", "shop", false},
		{"update", "postgresqlbindings", "", "shop", false},
		{"create", "xpostgresqltenants", "", "", false},
		{"create", "postgresqlinstances", "", "", false},
		{"create", "locks", "", "shop", false},
	}
	cases := map[string][]ask{
		"alice": tenant,
		"carol": tenant,
		"alice-view": {
			{"get", "postgresqldatabases", "", "shop", true},
			{"list", "postgresqlbindings", "", "shop", true},
			{"create", "postgresqltenants", "", "shop", false},
			{"get", "tenants", "", "shop", true},
			{"create", "tenants", "", "shop", false},
			{"update", "postgresqldatabases", "", "shop", false},
		},
		"dba": {
			{"create", "postgresqlinstances", "", "", true},
			{"create", "postgresqldatabases", "", "shop", true},
			{"update", "postgresqldatabases", "", "finance", true},
			{"delete", "postgresqldatabases", "", "shop", true},
			{"create", "postgresqlroles", "", "shop", true},
			{"create", "clusterlocks", "", "", true},
			// Status is the provider's alone.
			{"update", "postgresqldatabases", "status", "shop", false},
		},
	}
	for user, asks := range cases {
		for _, a := range asks {
			t.Run(fmt.Sprintf("%s/%s/%s/%s/%s", user, a.verb, a.resource, a.sub, a.ns), func(t *testing.T) {
				group := "database.ayatori.ddupan.top"
				if a.resource == "secrets" {
					group = ""
				}
				// Aggregation takes a moment after the roles are created; each user's
				// allowed asks come first, so its refusals are checked after it.
				err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
					sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
						User: user,
						ResourceAttributes: &authzv1.ResourceAttributes{
							Namespace: a.ns, Verb: a.verb, Group: group, Resource: a.resource, Subresource: a.sub,
						},
					}}
					if err := kube.Create(ctx, sar); err != nil {
						return false, err
					}
					return sar.Status.Allowed == a.allowed, nil
				})
				if err != nil {
					t.Errorf("%s may %s %s %s in %q: want %t", user, a.verb, a.resource, a.sub, a.ns, a.allowed)
				}
			})
		}
	}
}
