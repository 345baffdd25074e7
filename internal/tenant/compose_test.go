package tenant

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/google/go-cmp/cmp"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

func TestRequest(t *testing.T) {
	retain := xpv2.ManagementPolicies{"Observe", "Create", "Update", "LateInitialize"}
	cases := map[string]struct {
		reason string
		spec   Spec
		opts   Options
		want   v1alpha1.PostgreSQLBindingSpec
	}{
		"Dynamic": {
			reason: "A dynamic request provisions a database named after the claim, retained by default.",
			spec:   Spec{InstanceRef: "main", ClaimNamespace: "shop", ClaimName: "orders"},
			want: v1alpha1.PostgreSQLBindingSpec{Tenant: "orders", DatabaseRef: v1alpha1.LocalReference{Name: "orders"},
				Provision: &v1alpha1.BindingProvision{InstanceRef: v1alpha1.InstanceReference{Name: "main"}, Database: "orders", ManagementPolicies: retain}},
		},
		"DynamicNamesAndExtensions": {
			reason: "A claim whose name is no identifier names its database; extensions are passed on.",
			spec:   Spec{InstanceRef: "main", Database: "orders_v2", Extensions: []string{"pgcrypto", "citext"}, ClaimNamespace: "shop", ClaimName: "orders-v2"},
			want: v1alpha1.PostgreSQLBindingSpec{Tenant: "orders-v2", DatabaseRef: v1alpha1.LocalReference{Name: "orders-v2"},
				Provision: &v1alpha1.BindingProvision{InstanceRef: v1alpha1.InstanceReference{Name: "main"}, Database: "orders_v2",
					Extensions: []string{"pgcrypto", "citext"}, ManagementPolicies: retain}},
		},
		"DeleteData": {
			reason: "The platform, never the tenant, may choose to drop the data with the database's record.",
			spec:   Spec{InstanceRef: "main", ClaimNamespace: "shop", ClaimName: "scratch"},
			opts:   Options{DeleteData: true},
			want: v1alpha1.PostgreSQLBindingSpec{Tenant: "scratch", DatabaseRef: v1alpha1.LocalReference{Name: "scratch"},
				Provision: &v1alpha1.BindingProvision{InstanceRef: v1alpha1.InstanceReference{Name: "main"}, Database: "scratch", ManagementPolicies: xpv2.ManagementPolicies{"*"}}},
		},
		"Explicit": {
			reason: "An explicit request only asks for the admin-registered database; it provisions nothing.",
			spec:   Spec{DatabaseRef: "legacy", ClaimNamespace: "shop", ClaimName: "reports"},
			want:   v1alpha1.PostgreSQLBindingSpec{Tenant: "reports", DatabaseRef: v1alpha1.LocalReference{Name: "legacy"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := Request(tc.spec, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if b.Namespace != tc.spec.ClaimNamespace || b.Name != tc.spec.ClaimName {
				t.Errorf("binding %s/%s, want the claim's namespace and name", b.Namespace, b.Name)
			}
			if diff := cmp.Diff(tc.want, b.Spec); diff != "" {
				t.Errorf("%s\nspec (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestRequestRefusesWhatItCannotCompose(t *testing.T) {
	if _, err := Request(Spec{InstanceRef: "main"}, Options{}); err == nil || !strings.Contains(err.Error(), "spec.claimRef") {
		t.Errorf("without a claim: %v", err)
	}
	if _, err := Request(Spec{ClaimNamespace: "shop", ClaimName: "x"}, Options{}); err == nil || !strings.Contains(err.Error(), "spec.instanceRef or spec.databaseRef") {
		t.Errorf("without an instance or database: %v", err)
	}
}

// now is the time the compositions below run at.
var now = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

func TestAccess(t *testing.T) {
	bound := v1alpha1.BoundDatabase{Name: "legacy", UID: "u", Instance: "main", Database: "legacy_db", Owner: "legacy_owner"}
	ref := &ObjectRef{Name: "legacy", UID: "u"}
	cases := map[string]struct {
		reason   string
		spec     Spec
		opts     Options
		status   Status
		rotation *v1alpha1.PasswordRotation
		rotate   string
		// authentication is the login role's forProvider.authentication.
		authentication v1alpha1.RoleAuthentication
	}{
		"Defaults": {
			reason: "Names default to the claim's; the Secret to <instance>-<claim>-postgresql.",
			spec:   Spec{InstanceRef: "main", ClaimNamespace: "shop", ClaimName: "reports"},
			status: Status{Instance: "main", DatabaseRef: ref, Database: "legacy_db", LoginRole: "reports", SecretName: "main-reports-postgresql", Delivery: DeliverySecret},
		},
		"ExplicitPathTakesTheInstanceFromTheDatabase": {
			reason: "With databaseRef the Instance, and so the default Secret name, come from the bound database.",
			spec:   Spec{DatabaseRef: "legacy", LoginRole: "reports_app", SecretName: "creds", ClaimNamespace: "shop", ClaimName: "reports"},
			status: Status{Instance: "main", DatabaseRef: ref, Database: "legacy_db", LoginRole: "reports_app", SecretName: "creds", Delivery: DeliverySecret},
		},
		"RotationIsThePlatformsTheRequestTheTenants": {
			reason: "The Composition's input sets when and how credentials rotate; the claim's rotateCredentials asks for one now.",
			spec:   Spec{InstanceRef: "main", ClaimNamespace: "shop", ClaimName: "reports", RotateCredentials: "2026-12-01"},
			opts: Options{CredentialRotation: &v1alpha1.PasswordRotation{
				Mode: v1alpha1.RotationAlternating, Schedule: "@weekly", GracePeriod: &metav1.Duration{Duration: time.Hour},
			}},
			status: Status{Instance: "main", DatabaseRef: ref, Database: "legacy_db", LoginRole: "reports", SecretName: "main-reports-postgresql", Delivery: DeliverySecret},
			rotation: &v1alpha1.PasswordRotation{
				Mode: v1alpha1.RotationAlternating, Schedule: "@weekly", GracePeriod: &metav1.Duration{Duration: time.Hour},
			},
			rotate: "2026-12-01",
		},
		"CertificateLeavesPasswordRotationOut": {
			reason: "A certificate login has no password to rotate: it is renewed before it expires, and rotateCredentials still asks for a new one now.",
			spec:   Spec{InstanceRef: "main", ClaimNamespace: "shop", ClaimName: "reports", RotateCredentials: "2026-12-01", Authentication: "Certificate"},
			opts: Options{CredentialRotation: &v1alpha1.PasswordRotation{
				Mode: v1alpha1.RotationAlternating, Schedule: "@weekly", GracePeriod: &metav1.Duration{Duration: time.Hour},
			}},
			status:         Status{Instance: "main", DatabaseRef: ref, Database: "legacy_db", LoginRole: "reports", SecretName: "main-reports-postgresql", Delivery: DeliverySecret},
			rotate:         "2026-12-01",
			authentication: v1alpha1.AuthenticationCertificate,
		},
		"PasswordIsTheDefault": {
			reason: "authentication Password is what the claim gets without it.",
			spec:   Spec{InstanceRef: "main", ClaimNamespace: "shop", ClaimName: "reports", Authentication: "Password"},
			status: Status{Instance: "main", DatabaseRef: ref, Database: "legacy_db", LoginRole: "reports", SecretName: "main-reports-postgresql", Delivery: DeliverySecret},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := Access(tc.spec, tc.opts, bound, Seen{}, now)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.status, c.Status); diff != "" {
				t.Errorf("%s\nstatus (-want +got):\n%s", tc.reason, diff)
			}
			login, ok := c.Resources[LoginRole].(*v1alpha1.PostgreSQLRole)
			if !ok || len(c.Resources) != 1 {
				t.Fatalf("composed %v, want only the login role", c.Resources)
			}
			if login.Namespace != "shop" || login.Name != "reports-login" {
				t.Errorf("login role %s/%s", login.Namespace, login.Name)
			}
			if diff := cmp.Diff(xpv2.ManagementPolicies{"*"}, login.Spec.ManagementPolicies); diff != "" {
				t.Errorf("login role policies (-want +got): the login must go with the claim\n%s", diff)
			}
			p := login.Spec.ForProvider
			if *p.Name != tc.status.LoginRole || !*p.Login || !cmp.Equal(p.MemberOf, []string{"legacy_owner"}) ||
				!cmp.Equal(p.ConfigurationParameters, []v1alpha1.ConfigurationParameter{{Name: "role", Value: "legacy_owner"}}) {
				t.Errorf("login role %+v", p)
			}
			if login.Spec.WriteConnectionSecretToReference.Name != tc.status.SecretName || login.Spec.ConnectionDatabase != "legacy_db" || login.Spec.InstanceRef.Name != "main" {
				t.Errorf("login Secret %s for database %s on %s", login.Spec.WriteConnectionSecretToReference.Name, login.Spec.ConnectionDatabase, login.Spec.InstanceRef.Name)
			}
			if login.Spec.OwnedObjectsOnDelete != v1alpha1.OwnedObjectsReassign || login.Spec.ReassignOwnedTo != "legacy_owner" {
				t.Errorf("login role owned objects: %s to %s", login.Spec.OwnedObjectsOnDelete, login.Spec.ReassignOwnedTo)
			}
			if diff := cmp.Diff(tc.rotation, login.Spec.PasswordRotation); diff != "" {
				t.Errorf("%s\npasswordRotation (-want +got):\n%s", tc.reason, diff)
			}
			if p.Authentication != tc.authentication {
				t.Errorf("%s\nforProvider.authentication %q, want %q", tc.reason, p.Authentication, tc.authentication)
			}
			if got := login.GetAnnotations()[v1alpha1.AnnotationRotatePassword]; got != tc.rotate {
				t.Errorf("%s\nrotate-password annotation %q, want %q", tc.reason, got, tc.rotate)
			}
		})
	}
	if _, err := Access(Spec{ClaimNamespace: "shop", ClaimName: "x"}, Options{}, v1alpha1.BoundDatabase{Instance: "main", Database: "x"}, Seen{}, now); err == nil {
		t.Error("composed access without knowing the database's owner")
	}
}

// TestAccessShowsInstalledExtensions: the claim's status lists the
// extensions the bound database has installed, which the claim's schema
// then keeps from being removed.
func TestAccessShowsInstalledExtensions(t *testing.T) {
	bound := v1alpha1.BoundDatabase{Name: "orders", UID: "u", Instance: "main", Database: "orders", Owner: "orders_owner", Extensions: []string{"pgcrypto"}}
	c, err := Access(Spec{InstanceRef: "main", Extensions: []string{"pgcrypto", "pgcrytpo"}, ClaimNamespace: "shop", ClaimName: "orders"}, Options{}, bound, Seen{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"pgcrypto"}, c.Status.Extensions); diff != "" {
		t.Errorf("status.extensions (-want +got): only what the database installed\n%s", diff)
	}
}

// TestAccessRefusesOverLongNames: a claim whose Instance (for a registered
// database, the database's) and name together exceed 241 characters gets
// no login, and an error saying why, whether it names its Secret or not.
func TestAccessRefusesOverLongNames(t *testing.T) {
	long := strings.Repeat("i", 200)
	for name, s := range map[string]Spec{
		"RegisteredDatabase": {DatabaseRef: "legacy", ClaimNamespace: "shop", ClaimName: strings.Repeat("c", 42)},
		"NamedSecret":        {DatabaseRef: "legacy", SecretName: "creds", ClaimNamespace: "shop", ClaimName: strings.Repeat("c", 42)},
	} {
		t.Run(name, func(t *testing.T) {
			bound := v1alpha1.BoundDatabase{Name: "legacy", UID: "u", Instance: long, Database: "legacy_db", Owner: "legacy_owner"}
			c, err := Access(s, Options{}, bound, Seen{}, now)
			if err == nil || !strings.Contains(err.Error(), "exceed 241 characters") {
				t.Fatalf("composed %v, error %v; want a refusal naming the 241-character rule", c, err)
			}
		})
	}
	bound := v1alpha1.BoundDatabase{Name: "legacy", UID: "u", Instance: long, Database: "legacy_db", Owner: "legacy_owner"}
	if _, err := Access(Spec{DatabaseRef: "legacy", ClaimNamespace: "shop", ClaimName: strings.Repeat("c", 41)}, Options{}, bound, Seen{}, now); err != nil {
		t.Errorf("241 characters exactly: %v", err)
	}
}

// TestAccessOpenBao: with OpenBao delivery the login role writes to its
// Instance's credentialVault under the claim's name, not to a Secret; once
// it has, an ExternalSecret named <instance>-<claim>-postgresql projects
// exactly that path through the platform's store into the Secret the
// claim names, and the claim shows the credential's URL.
func TestAccessOpenBao(t *testing.T) {
	bound := v1alpha1.BoundDatabase{Name: "orders", UID: "u", Instance: "main", Database: "orders", Owner: "orders_owner"}
	opts := Options{Delivery: DeliveryOpenBao, OpenBao: &OpenBao{SecretStoreRef: StoreRef{Name: "postgresql"}}}
	spec := Spec{InstanceRef: "main", SecretName: "orders-db", ClaimNamespace: "shop", ClaimName: "orders"}

	before, err := Access(spec, opts, bound, Seen{}, now)
	if err != nil {
		t.Fatal(err)
	}
	login, ok := before.Resources[LoginRole].(*v1alpha1.PostgreSQLRole)
	if !ok || len(before.Resources) != 1 {
		t.Fatalf("before the role delivered: composed %v, want the login role alone", before.Resources)
	}
	if login.Spec.WriteConnectionSecretToReference != nil || login.Spec.WriteConnectionDetailsToVault == nil || login.Spec.WriteConnectionDetailsToVault.Name != "orders" {
		t.Errorf("the login role delivers to Secret %v and vault %v, want the vault path named orders only",
			login.Spec.WriteConnectionSecretToReference, login.Spec.WriteConnectionDetailsToVault)
	}

	vault := &v1alpha1.VaultDelivery{Path: "postgresql/main/shop/orders", URL: "https://openbao:8200/v1/secret/data/postgresql/main/shop/orders"}
	after, err := Access(spec, opts, bound, Seen{Login: delivering(login, vault)}, now)
	if err != nil {
		t.Fatal(err)
	}
	es, ok := after.Resources[Credentials].(*unstructured.Unstructured)
	if !ok {
		t.Fatalf("once delivered: composed %v, want an ExternalSecret", after.Resources)
	}
	want := map[string]any{
		"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
		"metadata": map[string]any{"namespace": "shop", "name": "main-orders-postgresql"},
		"spec": map[string]any{
			"refreshInterval": "1m",
			"secretStoreRef":  map[string]any{"name": "postgresql", "kind": "SecretStore"},
			"target":          map[string]any{"name": "orders-db", "creationPolicy": "Owner", "deletionPolicy": "Delete"},
			"dataFrom":        []any{map[string]any{"extract": map[string]any{"key": "postgresql/main/shop/orders"}}},
		},
	}
	if diff := cmp.Diff(want, es.Object); diff != "" {
		t.Errorf("ExternalSecret (-want +got):\n%s", diff)
	}
	order, ok := after.Resources[CredentialsOrder].(*unstructured.Unstructured)
	if !ok {
		t.Fatalf("once delivered: composed %v, want a Usage ordering the deletion", after.Resources)
	}
	wantOrder := map[string]any{
		"apiVersion": "protection.crossplane.io/v1beta1", "kind": "Usage",
		"metadata": map[string]any{"namespace": "shop", "name": "main-orders-postgresql-after-login"},
		"spec": map[string]any{
			"of":             map[string]any{"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret", "resourceRef": map[string]any{"name": "main-orders-postgresql"}},
			"by":             map[string]any{"apiVersion": "database.ayatori.ddupan.top/v1alpha1", "kind": "PostgreSQLRole", "resourceRef": map[string]any{"name": "orders-login"}},
			"replayDeletion": true,
		},
	}
	if diff := cmp.Diff(wantOrder, order.Object); diff != "" {
		t.Errorf("Usage (-want +got):\n%s", diff)
	}
	if after.Status.CredentialURL != vault.URL || after.Status.SecretName != "orders-db" {
		t.Errorf("status: credentialURL %q, secretName %q", after.Status.CredentialURL, after.Status.SecretName)
	}

	t.Run("ACertificateLoginGetsItsJDBCKeyDecoded", func(t *testing.T) {
		// The path holds the binary JDBC key in base64; the Secret gets
		// the key itself.
		cs := spec
		cs.Authentication = "Certificate"
		c, err := Access(cs, opts, bound, Seen{Login: delivering(login, vault)}, now)
		if err != nil {
			t.Fatal(err)
		}
		es, ok := c.Resources[Credentials].(*unstructured.Unstructured)
		if !ok {
			t.Fatalf("composed %v, want an ExternalSecret", c.Resources)
		}
		want := []any{map[string]any{
			"secretKey": "tls.key.pk8",
			"remoteRef": map[string]any{"key": "postgresql/main/shop/orders", "property": "tls.key.pk8.base64", "decodingStrategy": "Base64"},
		}}
		got, _, _ := unstructured.NestedSlice(es.Object, "spec", "data")
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ExternalSecret spec.data (-want +got):\n%s", diff)
		}
	})

	for name, o := range map[string]Options{
		"UnknownDelivery": {Delivery: "Carrier pigeon"},
		"BadGracePeriod":  {Delivery: DeliveryOpenBao, OpenBao: &OpenBao{SecretGracePeriod: "a day"}},
	} {
		t.Run(name, func(t *testing.T) {
			if c, err := Access(spec, o, bound, Seen{Login: delivering(login, vault)}, now); err == nil {
				t.Errorf("composed %v, want a refusal naming the input", c.Resources)
			}
		})
	}
}

// delivering is the login role r as the provider shows it once it has
// delivered to vault.
func delivering(r *v1alpha1.PostgreSQLRole, vault *v1alpha1.VaultDelivery) *v1alpha1.PostgreSQLRole {
	r = r.DeepCopy()
	r.Status.AtProvider.Vault = vault
	return r
}

// TestAccessRefusesAClusterSecretStore: a ClusterSecretStore's vault role
// reads every namespace's paths, so any namespace's ExternalSecret could
// name another tenant's: the Composition's input is refused, and nothing
// is composed.
func TestAccessRefusesAClusterSecretStore(t *testing.T) {
	bound := v1alpha1.BoundDatabase{Name: "orders", UID: "u", Instance: "main", Database: "orders", Owner: "orders_owner"}
	opts := Options{Delivery: DeliveryOpenBao, OpenBao: &OpenBao{SecretStoreRef: StoreRef{Name: "postgresql", Kind: "ClusterSecretStore"}}}
	spec := Spec{InstanceRef: "main", ClaimNamespace: "shop", ClaimName: "orders"}
	login := &v1alpha1.PostgreSQLRole{Spec: v1alpha1.PostgreSQLRoleSpec{WriteConnectionDetailsToVault: &v1alpha1.VaultPath{Name: "orders"}}}
	got, err := Access(spec, opts, bound, Seen{Login: delivering(login, &v1alpha1.VaultDelivery{Path: "postgresql/main/shop/orders"})}, now)
	if err == nil || !strings.Contains(err.Error(), "every tenant's credentials") {
		t.Errorf("Access with a ClusterSecretStore: %v, want a refusal that says why", err)
	}
	if got != nil {
		t.Errorf("Access composed %v with a ClusterSecretStore, want nothing", got.Resources)
	}
}

// TestAccessFollowsTheInstance: unless the Composition chooses, a tenant's
// credentials go through its Instance's credentialVault where it names
// one, else in a Secret the provider writes; a claim that had a Secret
// moves to the vault with both delivering for a grace period, until the
// ExternalSecret (merging into the Secret meanwhile) has synced, and then
// the ExternalSecret takes the Secret over; a login role that delivers to
// the vault keeps doing so.
func TestAccessFollowsTheInstance(t *testing.T) {
	spec := Spec{InstanceRef: "main", ClaimNamespace: "shop", ClaimName: "orders"}
	const secret = "main-orders-postgresql"
	vault := func(since time.Duration) *v1alpha1.VaultDelivery {
		return &v1alpha1.VaultDelivery{Path: "postgresql/main/shop/orders", URL: "https://openbao:8200/v1/secret/data/postgresql/main/shop/orders",
			Since: &metav1.Time{Time: now.Add(-since)}}
	}
	login := func(toSecret, toVault bool, delivered *v1alpha1.VaultDelivery) *v1alpha1.PostgreSQLRole {
		r := &v1alpha1.PostgreSQLRole{}
		if toSecret {
			r.Spec.WriteConnectionSecretToReference = &xpv2.LocalSecretReference{Name: secret}
		}
		if toVault {
			r.Spec.WriteConnectionDetailsToVault = &v1alpha1.VaultPath{Name: "orders"}
		}
		r.Status.AtProvider.Vault = delivered
		return r
	}
	// got is what a composition delivers, in a few words.
	type got struct {
		ToSecret, ToVault bool
		// ExternalSecret is its target's creationPolicy, "" for none.
		ExternalSecret string
		Usage          bool
		Delivery       Delivery
		Ends           *metav1.Time
		Again          time.Duration
	}
	ends := &metav1.Time{Time: now.Add(-time.Hour).Add(DefaultSecretGracePeriod)}
	cases := map[string]struct {
		vaultOnInstance bool
		opts            Options
		seen            Seen
		want            got
	}{
		"NoVaultOnTheInstance": {
			want: got{ToSecret: true, Delivery: DeliverySecret},
		},
		"NewClaimOnAVaultInstance": {
			vaultOnInstance: true,
			want:            got{ToVault: true, Delivery: DeliveryOpenBao},
		},
		"NewClaimDelivered": {
			vaultOnInstance: true, seen: Seen{Login: login(false, true, vault(0))},
			want: got{ToVault: true, ExternalSecret: "Owner", Usage: true, Delivery: DeliveryOpenBao},
		},
		"TheCompositionChoosesASecret": {
			vaultOnInstance: true, opts: Options{Delivery: DeliverySecret},
			want: got{ToSecret: true, Delivery: DeliverySecret},
		},
		"TheCompositionChoosesOpenBao": {
			opts: Options{Delivery: DeliveryOpenBao},
			want: got{ToVault: true, Delivery: DeliveryOpenBao},
		},
		"AVaultRoleStaysWhenTheInstanceLosesIt": {
			seen: Seen{Login: login(false, true, vault(0))},
			want: got{ToVault: true, ExternalSecret: "Owner", Usage: true, Delivery: DeliveryOpenBao},
		},
		"MoveStarts": {
			vaultOnInstance: true, seen: Seen{Login: login(true, false, nil)},
			want: got{ToSecret: true, ToVault: true, Delivery: DeliveryMoving},
		},
		"MoveWaitsForTheFirstDelivery": {
			vaultOnInstance: true, seen: Seen{Login: login(true, true, nil)},
			want: got{ToSecret: true, ToVault: true, Delivery: DeliveryMoving},
		},
		"MoveWithinTheGracePeriod": {
			vaultOnInstance: true, seen: Seen{Login: login(true, true, vault(time.Hour)), CredentialsSynced: true},
			want: got{ToSecret: true, ToVault: true, ExternalSecret: "Merge", Usage: true, Delivery: DeliveryMoving, Ends: ends, Again: DefaultSecretGracePeriod - time.Hour},
		},
		"GracePeriodOverButNotSynced": {
			vaultOnInstance: true, seen: Seen{Login: login(true, true, vault(25*time.Hour))},
			want: got{ToSecret: true, ToVault: true, ExternalSecret: "Merge", Usage: true, Delivery: DeliveryMoving, Ends: &metav1.Time{Time: now.Add(-time.Hour)}},
		},
		"GracePeriodOverAndSynced": {
			vaultOnInstance: true, seen: Seen{Login: login(true, true, vault(25*time.Hour)), CredentialsSynced: true},
			want: got{ToVault: true, ExternalSecret: "Owner", Usage: true, Delivery: DeliveryOpenBao},
		},
		"AShorterGracePeriod": {
			vaultOnInstance: true, opts: Options{OpenBao: &OpenBao{SecretGracePeriod: "30m"}},
			seen: Seen{Login: login(true, true, vault(31*time.Minute)), CredentialsSynced: true},
			want: got{ToVault: true, ExternalSecret: "Owner", Usage: true, Delivery: DeliveryOpenBao},
		},
		"Moved": {
			vaultOnInstance: true, seen: Seen{Login: login(false, true, vault(48*time.Hour)), CredentialsSynced: true},
			want: got{ToVault: true, ExternalSecret: "Owner", Usage: true, Delivery: DeliveryOpenBao},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			bound := v1alpha1.BoundDatabase{Name: "orders", UID: "u", Instance: "main", Database: "orders", Owner: "orders_owner", CredentialVault: tc.vaultOnInstance}
			c, err := Access(spec, tc.opts, bound, tc.seen, now)
			if err != nil {
				t.Fatal(err)
			}
			r, ok := c.Resources[LoginRole].(*v1alpha1.PostgreSQLRole)
			if !ok {
				t.Fatalf("composed %v, want a login role", c.Resources)
			}
			g := got{ToSecret: r.Spec.WriteConnectionSecretToReference != nil, ToVault: r.Spec.WriteConnectionDetailsToVault != nil,
				Delivery: c.Status.Delivery, Ends: c.Status.SecretDeliveryEnds, Again: c.Again}
			if es, ok := c.Resources[Credentials].(*unstructured.Unstructured); ok {
				g.ExternalSecret, _, _ = unstructured.NestedString(es.Object, "spec", "target", "creationPolicy")
				if target, _, _ := unstructured.NestedString(es.Object, "spec", "target", "name"); target != secret {
					t.Errorf("the ExternalSecret writes %q, want the claim's Secret %q", target, secret)
				}
			}
			_, g.Usage = c.Resources[CredentialsOrder]
			if diff := cmp.Diff(tc.want, g); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if g.ToSecret && r.Spec.WriteConnectionSecretToReference.Name != secret {
				t.Errorf("the login role writes Secret %q, want %q", r.Spec.WriteConnectionSecretToReference.Name, secret)
			}
			if want := (&ObjectRef{Name: "orders", UID: "u"}); !cmp.Equal(want, c.Status.DatabaseRef) {
				t.Errorf("status.databaseRef %+v, want %+v", c.Status.DatabaseRef, want)
			}
		})
	}
}
