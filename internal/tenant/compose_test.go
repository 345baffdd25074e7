package tenant

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

func TestDynamic(t *testing.T) {
	cases := map[string]struct {
		reason string
		spec   Spec
		opts   Options
		status Status
		// check inspects the composed resources.
		check func(t *testing.T, r map[string]client.Object)
	}{
		"Defaults": {
			reason: "Names default to the claim's name; the Secret to <instance>-<claim>-postgresql.",
			spec:   Spec{InstanceRef: "main", ClaimNamespace: "shop", ClaimName: "orders"},
			status: Status{Instance: "main", Database: "orders", LoginRole: "orders", SecretName: "main-orders-postgresql"},
			check: func(t *testing.T, r map[string]client.Object) {
				owner := roleOf(t, r, OwnerRole)
				db := databaseOf(t, r)
				login := roleOf(t, r, LoginRole)
				if owner.Namespace != "shop" || db.Namespace != "shop" || login.Namespace != "shop" {
					t.Errorf("namespaces %s %s %s, want the claim's", owner.Namespace, db.Namespace, login.Namespace)
				}
				if *owner.Spec.ForProvider.Name != "orders_owner" || *owner.Spec.ForProvider.Login {
					t.Errorf("owner role %s login %t", *owner.Spec.ForProvider.Name, *owner.Spec.ForProvider.Login)
				}
				if !db.Spec.ForProvider.RevokePublicPrivileges {
					t.Error("the tenant database lets every role connect")
				}
				if db.Spec.ForProvider.OwnerRef.Name != owner.Name || *db.Spec.ForProvider.Name != "orders" {
					t.Errorf("database %s owned by %s", *db.Spec.ForProvider.Name, db.Spec.ForProvider.OwnerRef.Name)
				}
				retain := xpv2.ManagementPolicies{"Observe", "Create", "Update", "LateInitialize"}
				if diff := cmp.Diff(retain, db.Spec.ManagementPolicies); diff != "" {
					t.Errorf("database policies (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(retain, owner.Spec.ManagementPolicies); diff != "" {
					t.Errorf("owner role policies (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(xpv2.ManagementPolicies{"*"}, login.Spec.ManagementPolicies); diff != "" {
					t.Errorf("login role policies (-want +got): the login must go with the claim\n%s", diff)
				}
				p := login.Spec.ForProvider
				if *p.Name != "orders" || !*p.Login || !cmp.Equal(p.MemberOf, []string{"orders_owner"}) ||
					!cmp.Equal(p.ConfigurationParameters, []v1alpha1.ConfigurationParameter{{Name: "role", Value: "orders_owner"}}) {
					t.Errorf("login role %+v", p)
				}
				if login.Spec.WriteConnectionSecretToReference.Name != "main-orders-postgresql" || login.Spec.ConnectionDatabase != "orders" {
					t.Errorf("login Secret %s for database %s", login.Spec.WriteConnectionSecretToReference.Name, login.Spec.ConnectionDatabase)
				}
				if login.Spec.OwnedObjectsOnDelete != v1alpha1.OwnedObjectsReassign || login.Spec.ReassignOwnedTo != "orders_owner" {
					t.Errorf("login role owned objects: %s to %s", login.Spec.OwnedObjectsOnDelete, login.Spec.ReassignOwnedTo)
				}
			},
		},
		"ExplicitNamesAndExtensions": {
			reason: "A claim whose name is no identifier names its database and role.",
			spec: Spec{InstanceRef: "main", Database: "orders_v2", LoginRole: "orders_app", Extensions: []string{"pgcrypto", "citext"},
				SecretName: "db-creds", ClaimNamespace: "shop", ClaimName: "orders-v2"},
			status: Status{Instance: "main", Database: "orders_v2", LoginRole: "orders_app", SecretName: "db-creds"},
			check: func(t *testing.T, r map[string]client.Object) {
				db := databaseOf(t, r)
				if diff := cmp.Diff([]v1alpha1.Extension{{Name: "pgcrypto"}, {Name: "citext"}}, db.Spec.ForProvider.Extensions); diff != "" {
					t.Errorf("extensions (-want +got):\n%s", diff)
				}
				if db.Name != "orders-v2" || r[LoginRole].GetName() != "orders-v2-login" || r[OwnerRole].GetName() != "orders-v2-owner" {
					t.Errorf("names %s %s %s", db.Name, r[LoginRole].GetName(), r[OwnerRole].GetName())
				}
			},
		},
		"DeleteData": {
			reason: "The platform may choose to drop the data with the claim.",
			spec:   Spec{InstanceRef: "main", ClaimNamespace: "shop", ClaimName: "scratch"},
			opts:   Options{DeleteData: true},
			status: Status{Instance: "main", Database: "scratch", LoginRole: "scratch", SecretName: "main-scratch-postgresql"},
			check: func(t *testing.T, r map[string]client.Object) {
				if p := databaseOf(t, r).Spec.ManagementPolicies; !cmp.Equal(p, xpv2.ManagementPolicies{"*"}) {
					t.Errorf("database policies %v", p)
				}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := Dynamic(tc.spec, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.status, c.Status); diff != "" {
				t.Errorf("%s\nstatus (-want +got):\n%s", tc.reason, diff)
			}
			if len(c.Resources) != 3 {
				t.Fatalf("%d resources, want 3", len(c.Resources))
			}
			tc.check(t, c.Resources)
		})
	}
}

func TestDynamicRefusesWhatItCannotCompose(t *testing.T) {
	if _, err := Dynamic(Spec{InstanceRef: "main"}, Options{}); err == nil || !strings.Contains(err.Error(), "spec.claimRef") {
		t.Errorf("without a claim: %v", err)
	}
	if _, err := Dynamic(Spec{ClaimNamespace: "shop", ClaimName: "x"}, Options{}); err == nil || !strings.Contains(err.Error(), "spec.instanceRef.name") {
		t.Errorf("without an instance: %v", err)
	}
}

func TestExplicit(t *testing.T) {
	s := Spec{DatabaseRef: "legacy", ClaimNamespace: "shop", ClaimName: "reports"}
	if _, err := Explicit(s, Registered{Instance: "main"}); err == nil || !strings.Contains(err.Error(), "waiting for PostgreSQLDatabase shop/legacy") {
		t.Errorf("before the database observed its owner: %v", err)
	}
	c, err := Explicit(s, Registered{Instance: "main", Database: "legacy_db", Owner: "legacy_owner"})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Resources) != 1 {
		t.Fatalf("the explicit path composed %d resources, want only the login role", len(c.Resources))
	}
	login := roleOf(t, c.Resources, LoginRole)
	if !cmp.Equal(login.Spec.ForProvider.MemberOf, []string{"legacy_owner"}) || login.Spec.ConnectionDatabase != "legacy_db" {
		t.Errorf("login role %+v", login.Spec)
	}
	if diff := cmp.Diff(Status{Instance: "main", Database: "legacy_db", LoginRole: "reports", SecretName: "main-reports-postgresql"}, c.Status); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
}

func TestOwnerRoleName(t *testing.T) {
	long := strings.Repeat("a", 63)
	if got := OwnerRoleName(long); len(got) != 63 || !strings.HasSuffix(got, "_owner") {
		t.Errorf("OwnerRoleName(63 a) = %q (%d)", got, len(got))
	}
	if got := OwnerRoleName("orders"); got != "orders_owner" {
		t.Errorf("OwnerRoleName(orders) = %q", got)
	}
}

func roleOf(t *testing.T, r map[string]client.Object, name string) *v1alpha1.PostgreSQLRole {
	t.Helper()
	role, ok := r[name].(*v1alpha1.PostgreSQLRole)
	if !ok {
		t.Fatalf("%s is a %T, want a PostgreSQLRole", name, r[name])
	}
	return role
}

func databaseOf(t *testing.T, r map[string]client.Object) *v1alpha1.PostgreSQLDatabase {
	t.Helper()
	db, ok := r[Database].(*v1alpha1.PostgreSQLDatabase)
	if !ok {
		t.Fatalf("%s is a %T, want a PostgreSQLDatabase", Database, r[Database])
	}
	return db
}
