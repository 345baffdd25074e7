package instance_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/instance"
	"github.com/ayatori/provider-postgresql/internal/fixture/changelogsink"
	"github.com/ayatori/provider-postgresql/internal/fixture/pgserver"
	"github.com/ayatori/provider-postgresql/internal/fixture/pki"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

var env *providertest.Env

// suite is the package's environment, started by the first test that
// declares it needs it.
var suite = providertest.Suite(providertest.Options{
	AdminTokenCommands: []string{tokenCommand}, AdminTokenDirs: []string{tokenDir},
	ChangeLogSocket: changeLogSocket,
	// Each session the server authorizes is logged, to be matched with
	// the logins a token source's issuer judged.
	Postgres: pgserver.Options{ExtraConfig: []string{"log_connections = on"}},
}, func(e *providertest.Env) { env = e })

var (
	// changes keeps the change log entries the provider sends to
	// changeLogSocket.
	changes         *changelogsink.Sink
	changeLogSocket = changelogsink.Path("pgprov-instance")
)

// TestMain serves the change log sink before any test starts the
// provider, which connects on its first entry.
func TestMain(m *testing.M) {
	os.Exit(changelogsink.Around(changeLogSocket, func(s *changelogsink.Sink) { changes = s }, func() int { return suite.Run(m) }))
}

// newInstance returns an Instance pointing at the test server, reading the
// named admin and CA Secrets.
func newInstance(name, adminSecret, caSecret string) *v1alpha1.PostgreSQLInstance {
	pg := env.Postgres
	in := &v1alpha1.PostgreSQLInstance{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.PostgreSQLInstanceSpec{
			Endpoint:           v1alpha1.Endpoint{Host: pg.Host, Hostaddr: pg.Hostaddr, Port: int32(pg.Port)},
			AdminCredentialRef: &v1alpha1.AdminCredentialReference{Name: adminSecret},
		},
	}
	if caSecret != "" {
		in.Spec.CABundleRef = &v1alpha1.CABundleReference{Name: caSecret}
	}
	return in
}

func create(ctx context.Context, t *testing.T, obj client.Object) {
	t.Helper()
	if err := env.Kube.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
}

// waitReady waits for the Instance's Ready condition to have the given
// status and reason, and returns the Instance as last seen.
func waitReady(ctx context.Context, t *testing.T, name string, status corev1.ConditionStatus, reason xpv2.ConditionReason, timeout time.Duration) *v1alpha1.PostgreSQLInstance {
	t.Helper()
	in := &v1alpha1.PostgreSQLInstance{}
	err := providertest.Wait(ctx, timeout, func(ctx context.Context) (bool, error) {
		if err := env.Kube.Get(ctx, client.ObjectKey{Name: name}, in); err != nil {
			return false, err
		}
		c := in.GetCondition(xpv2.TypeReady)
		return c.Status == status && c.Reason == reason, nil
	})
	if err != nil {
		b, _ := json.MarshalIndent(in.Status, "", "  ")
		t.Fatalf("Instance %s: Ready never became %s/%s: %v\nstatus: %s", name, status, reason, err, b)
	}
	return in
}

func TestInstanceReady(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	pg := env.Postgres
	if err := env.AdminSecret(ctx, "ready-admin", pg.AdminUser, pg.AdminPassword); err != nil {
		t.Fatal(err)
	}
	if err := env.CASecret(ctx, "ready-ca"); err != nil {
		t.Fatal(err)
	}
	create(ctx, t, newInstance("ready", "ready-admin", "ready-ca"))
	in := waitReady(ctx, t, "ready", corev1.ConditionTrue, xpv2.ReasonAvailable, time.Minute)

	conn, err := pg.Connect(ctx, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx) //nolint:errcheck // Test.
	var id, version string
	if err := conn.QueryRow(ctx, "SELECT system_identifier::text, split_part(current_setting('server_version'), ' ', 1) FROM pg_control_system()").Scan(&id, &version); err != nil {
		t.Fatal(err)
	}
	if in.Status.Phase != v1alpha1.InstancePhaseReady {
		t.Errorf("phase = %q, want Ready", in.Status.Phase)
	}
	if in.Status.SystemIdentifier != id || in.Status.PostgreSQLVersion != version {
		t.Errorf("identity = %s %s, want %s %s", in.Status.SystemIdentifier, in.Status.PostgreSQLVersion, id, version)
	}
	if p := in.Status.AdminPrivileges; p == nil || !p.Superuser || !p.Sufficient {
		t.Errorf("adminPrivileges = %+v, want a sufficient superuser", p)
	}
	found := false
	for _, x := range in.Status.AvailableExtensions {
		found = found || (x.Name == "pgcrypto" && x.DefaultVersion != "")
	}
	if !found {
		t.Errorf("pgcrypto is not among the %d available extensions", len(in.Status.AvailableExtensions))
	}
	if in.Status.ObservedGeneration != in.Generation {
		t.Errorf("observedGeneration = %d, want %d", in.Status.ObservedGeneration, in.Generation)
	}
	if c := in.GetCondition(xpv2.TypeSynced); c.Status != corev1.ConditionTrue {
		t.Errorf("Synced = %+v", c)
	}

	t.Run("AdminSecretChangeRevalidatesPromptly", func(t *testing.T) {
		// The poll interval is 10 minutes: only the Secret watch can make
		// this happen within seconds.
		s := &corev1.Secret{}
		if err := env.Kube.Get(ctx, client.ObjectKey{Namespace: providertest.Namespace, Name: "ready-admin"}, s); err != nil {
			t.Fatal(err)
		}
		s.Data["password"] = []byte("not-the-password")
		if err := env.Kube.Update(ctx, s); err != nil {
			t.Fatal(err)
		}
		in := waitReady(ctx, t, "ready", corev1.ConditionFalse, v1alpha1.ReasonUnreachable, 20*time.Second)
		if msg := in.GetCondition(xpv2.TypeReady).Message; !strings.Contains(msg, "password authentication failed") {
			t.Errorf("Ready message = %q, want it to say the password was refused", msg)
		}
		s.Data["password"] = []byte(pg.AdminPassword)
		if err := env.Kube.Update(ctx, s); err != nil {
			t.Fatal(err)
		}
		waitReady(ctx, t, "ready", corev1.ConditionTrue, xpv2.ReasonAvailable, 20*time.Second)
	})

	t.Run("NoSecretInStatusOrEvents", func(t *testing.T) {
		assertNoSecret(ctx, t, "ready", pg.AdminPassword, "not-the-password")
	})
}

func TestInstanceNotReady(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	pg := env.Postgres
	conn, err := pg.Connect(ctx, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx) //nolint:errcheck // Test.
	if _, err := conn.Exec(ctx, "CREATE ROLE weak_admin LOGIN PASSWORD 'weak-password-1'"); err != nil {
		t.Fatal(err)
	}
	other, err := pki.NewCA("not the server's CA")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.AdminSecret(ctx, "nr-admin", pg.AdminUser, pg.AdminPassword); err != nil {
		t.Fatal(err)
	}
	if err := env.AdminSecret(ctx, "nr-weak", "weak_admin", "weak-password-1"); err != nil {
		t.Fatal(err)
	}
	if err := env.CASecret(ctx, "nr-ca"); err != nil {
		t.Fatal(err)
	}
	create(ctx, t, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "nr-other-ca", Namespace: providertest.Namespace},
		Data:       map[string]string{"bundle.pem": string(other.CertPEM)},
	})

	cases := map[string]struct {
		reason string
		in     func() *v1alpha1.PostgreSQLInstance
		want   xpv2.ConditionReason
		msg    string
	}{
		"UnknownCA": {
			reason: "A CA bundle that did not sign the server certificate is named as the problem.",
			in: func() *v1alpha1.PostgreSQLInstance {
				in := newInstance("nr-unknown-ca", "nr-admin", "")
				in.Spec.CABundleRef = &v1alpha1.CABundleReference{Kind: v1alpha1.CABundleKindConfigMap, Name: "nr-other-ca", Key: "bundle.pem"}
				return in
			},
			want: v1alpha1.ReasonUnreachable,
			msg:  "not signed by a trusted CA",
		},
		"HostNotInCertificate": {
			reason: "A host the certificate does not name is reported as such.",
			in: func() *v1alpha1.PostgreSQLInstance {
				in := newInstance("nr-host", "nr-admin", "nr-ca")
				in.Spec.Endpoint.Host = "wrong-name.localtest"
				return in
			},
			want: v1alpha1.ReasonUnreachable,
			msg:  "no DNS SAN matching endpoint.host",
		},
		"InsufficientPrivileges": {
			reason: "A plain login role connects but is not enough.",
			in:     func() *v1alpha1.PostgreSQLInstance { return newInstance("nr-weak", "nr-weak", "nr-ca") },
			want:   v1alpha1.ReasonInsufficientPrivileges,
			msg:    "must be a superuser, or have CREATEDB and CREATEROLE",
		},
		"MissingSecret": {
			reason: "A missing admin Secret is named, with its namespace.",
			in:     func() *v1alpha1.PostgreSQLInstance { return newInstance("nr-missing", "does-not-exist", "nr-ca") },
			want:   v1alpha1.ReasonCredentialsUnavailable,
			msg:    "cannot read the admin credentials Secret crossplane-system/does-not-exist",
		},
		"MissingKey": {
			reason: "A Secret without the named key says which key.",
			in: func() *v1alpha1.PostgreSQLInstance {
				in := newInstance("nr-key", "nr-admin", "nr-ca")
				in.Spec.AdminCredentialRef.PasswordKey = "pass"
				return in
			},
			want: v1alpha1.ReasonCredentialsUnavailable,
			msg:  `has no key "pass"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := tc.in()
			create(ctx, t, in)
			got := waitReady(ctx, t, in.Name, corev1.ConditionFalse, tc.want, time.Minute)
			if msg := got.GetCondition(xpv2.TypeReady).Message; !strings.Contains(msg, tc.msg) {
				t.Errorf("%s\nReady message = %q, want it to contain %q", tc.reason, msg, tc.msg)
			}
			if got.Status.Phase == v1alpha1.InstancePhaseReady {
				t.Errorf("%s\nphase = Ready while Ready is False", tc.reason)
			}
			assertNoSecret(ctx, t, in.Name, pg.AdminPassword, "weak-password-1")
		})
	}
}

// TestInstanceDeletion deletes Instances whose server is unreachable and
// whose Secret is gone: neither may make an Instance undeletable.
func TestInstanceDeletion(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	in := newInstance("unreachable", "gone-admin", "")
	in.Spec.Endpoint.Port = 1 // Nothing listens there.
	create(ctx, t, in)
	waitReady(ctx, t, in.Name, corev1.ConditionFalse, v1alpha1.ReasonCredentialsUnavailable, time.Minute)
	if err := env.Kube.Delete(ctx, in); err != nil {
		t.Fatal(err)
	}
	err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		err := env.Kube.Get(ctx, client.ObjectKeyFromObject(in), &v1alpha1.PostgreSQLInstance{})
		return kerrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("an unreachable Instance without credentials was never deleted: %v", err)
	}
}

// assertNoSecret fails if any secret value appears in the Instance's status
// or in the events about it.
func assertNoSecret(ctx context.Context, t *testing.T, name string, secrets ...string) {
	t.Helper()
	in := &v1alpha1.PostgreSQLInstance{}
	if err := env.Kube.Get(ctx, client.ObjectKey{Name: name}, in); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	events := &corev1.EventList{}
	if err := env.Kube.List(ctx, events); err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, e := range events.Items {
		if e.InvolvedObject.Name == name {
			texts = append(texts, e.Message)
		}
	}
	all := string(b) + strings.Join(texts, "\n")
	for _, s := range secrets {
		if strings.Contains(all, s) {
			t.Errorf("a secret value appears in the Instance or its events")
		}
	}
}

// TestInstanceDeletionHeldWhileReferenced: an Instance with a Database and
// a Role on it is not deleted, its condition names them, and it goes once
// they are gone. Nothing on the server is touched.
func TestInstanceDeletionHeldWhileReferenced(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	in, err := env.Instance(ctx, "held")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Namespace(ctx, "held-users"); err != nil {
		t.Fatal(err)
	}
	db := &v1alpha1.PostgreSQLDatabase{
		ObjectMeta: metav1.ObjectMeta{Name: "helddb", Namespace: "held-users"},
		Spec:       v1alpha1.PostgreSQLDatabaseSpec{InstanceRef: v1alpha1.InstanceReference{Name: "held"}},
	}
	role := &v1alpha1.PostgreSQLRole{
		ObjectMeta: metav1.ObjectMeta{Name: "heldrole", Namespace: "held-users"},
		Spec:       v1alpha1.PostgreSQLRoleSpec{InstanceRef: v1alpha1.InstanceReference{Name: "held"}},
	}
	create(ctx, t, db)
	create(ctx, t, role)
	for _, o := range []client.Object{db, role} {
		err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
			u := o.DeepCopyObject().(client.Object) //nolint:forcetypeassert // Same type.
			if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(o), u); err != nil {
				return false, err
			}
			c, ok := u.(interface {
				GetCondition(xpv2.ConditionType) xpv2.Condition
			})
			return ok && c.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue, nil
		})
		if err != nil {
			t.Fatalf("%s never became Ready: %v", o.GetName(), err)
		}
	}

	if err := env.Kube.Delete(ctx, in); err != nil {
		t.Fatal(err)
	}
	got := &v1alpha1.PostgreSQLInstance{}
	err = providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(in), got); err != nil {
			return false, err
		}
		// crossplane-runtime reports a refused Delete on Synced (Ready says
		// Deleting).
		return strings.Contains(got.GetCondition(xpv2.TypeSynced).Message, "2 resource(s) still refer to this Instance"), nil
	})
	if err != nil {
		t.Fatalf("the held deletion is not explained: %v; Synced %+v", err, got.GetCondition(xpv2.TypeSynced))
	}
	msg := got.GetCondition(xpv2.TypeSynced).Message
	for _, want := range []string{"PostgreSQLDatabase held-users/helddb", "PostgreSQLRole held-users/heldrole"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message %q does not name %s", msg, want)
		}
	}
	if got.Status.Phase != v1alpha1.InstancePhaseDeleting {
		t.Errorf("phase = %q, want Deleting", got.Status.Phase)
	}

	// A tenant's claim holds it from the start: its composite and the
	// binding that will provision on it.
	composite := tenantComposite(ctx, t, "held", "heldtenant-x1", "held-users")
	binding := &v1alpha1.PostgreSQLBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "heldtenant", Namespace: "held-users"},
		Spec: v1alpha1.PostgreSQLBindingSpec{
			Tenant: "heldtenant", DatabaseRef: v1alpha1.LocalReference{Name: "heldtenant"},
			Provision: &v1alpha1.BindingProvision{InstanceRef: v1alpha1.InstanceReference{Name: "held"}, Database: "heldtenant"},
		},
	}
	create(ctx, t, binding)
	err = providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		users, err := instance.References(ctx, env.Kube, got)
		if err != nil {
			return false, err
		}
		all := strings.Join(users, ", ")
		return strings.Contains(all, "XPostgreSQLTenant heldtenant-x1 (claim held-users/heldtenant)") && strings.Contains(all, "PostgreSQLBinding held-users/heldtenant"), nil
	})
	if err != nil {
		t.Fatalf("a tenant's composite and binding do not hold the Instance: %v", err)
	}
	// The Instance being deleted, nothing is provisioned for the binding.
	err = providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		b := &v1alpha1.PostgreSQLBinding{}
		err := env.Kube.Get(ctx, client.ObjectKeyFromObject(binding), b)
		return err == nil && strings.Contains(b.GetCondition(xpv2.TypeReady).Message, "being deleted: nothing new is provisioned"), err
	})
	if err != nil {
		t.Fatalf("the binding does not say that nothing is provisioned on an Instance being deleted: %v", err)
	}
	if err := env.Kube.Get(ctx, client.ObjectKey{Namespace: "held-users", Name: "heldtenant"}, &v1alpha1.PostgreSQLDatabase{}); !kerrors.IsNotFound(err) {
		t.Errorf("a database was provisioned on an Instance being deleted: %v", err)
	}
	// Nor does anything of any other kind start on it: a grant or default
	// privileges asked for now are refused, and nothing is granted.
	grant := &v1alpha1.PostgreSQLGrant{
		ObjectMeta: metav1.ObjectMeta{Name: "heldgrant", Namespace: "held-users"},
		Spec: v1alpha1.PostgreSQLGrantSpec{InstanceRef: v1alpha1.InstanceReference{Name: "held"}, ForProvider: v1alpha1.PostgreSQLGrantParameters{
			Role: ptr.To("heldrole"), ObjectType: v1alpha1.GrantObjectDatabase, Database: ptr.To("helddb"), Privileges: []v1alpha1.Privilege{"CREATE"},
		}},
	}
	defaults := &v1alpha1.PostgreSQLDefaultPrivileges{
		ObjectMeta: metav1.ObjectMeta{Name: "helddefaults", Namespace: "held-users"},
		Spec: v1alpha1.PostgreSQLDefaultPrivilegesSpec{InstanceRef: v1alpha1.InstanceReference{Name: "held"}, ForProvider: v1alpha1.PostgreSQLDefaultPrivilegesParameters{
			Role: ptr.To("heldrole"), Owner: ptr.To("heldrole"), Database: ptr.To("helddb"), ObjectType: "Tables", Privileges: []v1alpha1.Privilege{"SELECT"},
		}},
	}
	for _, o := range []providertest.Conditioned{grant, defaults} {
		create(ctx, t, o)
		err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
			err := env.Kube.Get(ctx, client.ObjectKeyFromObject(o), o)
			return err == nil && strings.Contains(o.GetCondition(xpv2.TypeSynced).Message, `PostgreSQLInstance "held" is being deleted: nothing new is provisioned`), err
		})
		if err != nil {
			t.Errorf("%s was not refused on an Instance being deleted: %v (Synced: %q)", o.GetName(), err, o.GetCondition(xpv2.TypeSynced).Message)
		}
	}
	if env.Holds(ctx, t, "has_database_privilege('heldrole', 'helddb', 'CREATE')") {
		t.Error("a grant was made on an Instance being deleted")
	}
	if env.Holds(ctx, t, "count(*) > 0 FROM pg_default_acl WHERE defaclrole = 'heldrole'::regrole") {
		t.Error("default privileges were set on an Instance being deleted")
	}
	for _, o := range []client.Object{binding, composite, grant, defaults} {
		if err := env.Kube.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// Still held a while later.
	time.Sleep(2 * time.Second)
	if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(in), got); err != nil {
		t.Fatalf("the Instance went while still referenced: %v", err)
	}

	for _, o := range []client.Object{db, role} {
		if err := env.Kube.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// The Instance watches its users: it goes as soon as they are gone,
	// without waiting for its back-off.
	err = providertest.Wait(ctx, 20*time.Second, func(ctx context.Context) (bool, error) {
		err := env.Kube.Get(ctx, client.ObjectKeyFromObject(in), &v1alpha1.PostgreSQLInstance{})
		return kerrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("the Instance was not deleted after its users went: %v", err)
	}
	// Retained by default: the database is still on the server.
	conn, err := env.Postgres.Connect(ctx, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx) //nolint:errcheck // Test.
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = 'helddb'").Scan(&n); err != nil || n != 1 {
		t.Errorf("the retained database is gone (count %d, err %v)", n, err)
	}
}

// tenantComposite installs a minimal CRD for the tenant composite kind
// (the one Crossplane derives from the tenant XRD) and creates a composite
// naming instance, as the PostgreSQLTenant claim namespace/heldtenant's
// would.
func tenantComposite(ctx context.Context, t *testing.T, instanceName, name, namespace string) *unstructured.Unstructured {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "xpostgresqltenants.database.ayatori.ddupan.top"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: v1alpha1.Group, Scope: apiextensionsv1.ClusterScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "XPostgreSQLTenant", ListKind: "XPostgreSQLTenantList", Plural: "xpostgresqltenants", Singular: "xpostgresqltenant"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: v1alpha1.Version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", XPreserveUnknownFields: ptr.To(true)},
					},
				}},
			}},
		},
	}
	if err := envtest.CreateCRDs(env.ControlPlane.Config, []*apiextensionsv1.CustomResourceDefinition{crd}); err != nil {
		t.Fatal(err)
	}
	if err := envtest.WaitForCRDs(env.ControlPlane.Config, []*apiextensionsv1.CustomResourceDefinition{crd}, envtest.CRDInstallOptions{MaxTime: 30 * time.Second, PollInterval: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": "XPostgreSQLTenant",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"instanceRef": map[string]any{"name": instanceName},
			"claimRef":    map[string]any{"namespace": namespace, "name": "heldtenant"},
		},
	}}
	// The client's REST mapper learns the new kind on its next miss.
	err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		err := env.Kube.Create(ctx, u)
		return err == nil, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestRevokePublicConnect: spec.sharedDatabases.revokePublicConnect takes
// CONNECT on template1 and the maintenance database from PUBLIC, the admin
// keeping it, and says so on the SharedDatabasesRestricted condition; a
// login the provider creates is still checked and Ready, but can no
// longer connect there. An admin that may not (a managed service's, which
// owns neither) is told what a database administrator runs, and nothing
// changes.
func TestRevokePublicConnect(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	admin := env.Connect(ctx, t, "postgres")
	public := func() []string {
		t.Helper()
		var open []string
		if err := admin.QueryRow(ctx, `SELECT coalesce(array_agg(datname::text ORDER BY datname), '{}') FROM pg_database
		  WHERE datname IN ('template1', 'postgres') AND has_database_privilege('public', oid, 'CONNECT')`).Scan(&open); err != nil {
			t.Fatal(err)
		}
		return open
	}
	in, err := env.Instance(ctx, "shared")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Namespace(ctx, "shared-ns"); err != nil && !kerrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Back as every other test of the package expects the server.
		_ = env.Kube.Delete(context.WithoutCancel(ctx), in)
		env.Gone(context.WithoutCancel(ctx), t, in)
		if _, err := admin.Exec(context.WithoutCancel(ctx), "GRANT CONNECT ON DATABASE postgres, template1 TO PUBLIC"); err != nil {
			t.Error(err)
		}
	})
	if got := waitReady(ctx, t, in.Name, corev1.ConditionTrue, xpv2.ReasonAvailable, time.Minute); got.GetCondition(v1alpha1.TypeSharedDatabasesRestricted).Reason != v1alpha1.ReasonPublicConnectKept {
		t.Errorf("before asking: SharedDatabasesRestricted %+v, want PublicConnectKept", got.GetCondition(v1alpha1.TypeSharedDatabasesRestricted))
	}
	providertest.Update(ctx, t, env, in, func(in *v1alpha1.PostgreSQLInstance) { in.Spec.SharedDatabases.RevokePublicConnect = true })
	want := v1alpha1.ReasonPublicConnectRevoked
	if providertest.ManagedAdmin() {
		want = v1alpha1.ReasonCannotRevoke
	}
	err = providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		err := env.Kube.Get(ctx, client.ObjectKeyFromObject(in), in)
		return err == nil && in.GetCondition(v1alpha1.TypeSharedDatabasesRestricted).Reason == want, err
	})
	if err != nil {
		t.Fatalf("SharedDatabasesRestricted never became %s: %+v", want, in.GetCondition(v1alpha1.TypeSharedDatabasesRestricted))
	}
	if providertest.ManagedAdmin() {
		if msg := in.GetCondition(v1alpha1.TypeSharedDatabasesRestricted).Message; !strings.Contains(msg, "REVOKE CONNECT ON DATABASE") {
			t.Errorf("the refusal does not name the statements a database administrator runs: %q", msg)
		}
		if diff := cmp.Diff([]string{"postgres", "template1"}, public()); diff != "" {
			t.Errorf("PUBLIC's CONNECT changed under an admin that may not change it (-want +got):\n%s", diff)
		}
		// The database administrator runs them (the admin of Instance
		// shared is shared_admin); the Instance sees it done.
		if _, err := admin.Exec(ctx, "GRANT CONNECT ON DATABASE postgres, template1 TO shared_admin; REVOKE CONNECT ON DATABASE postgres, template1 FROM PUBLIC"); err != nil {
			t.Fatal(err)
		}
		err = providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
			err := env.Kube.Get(ctx, client.ObjectKeyFromObject(in), in)
			return err == nil && in.GetCondition(v1alpha1.TypeSharedDatabasesRestricted).Reason == v1alpha1.ReasonPublicConnectRevoked, err
		})
		if err != nil {
			t.Fatalf("once a DBA revoked it, SharedDatabasesRestricted never said so: %+v", in.GetCondition(v1alpha1.TypeSharedDatabasesRestricted))
		}
	}
	if open := public(); len(open) > 0 {
		t.Errorf("PUBLIC may still connect to %v", open)
	}
	waitReady(ctx, t, in.Name, corev1.ConditionTrue, xpv2.ReasonAvailable, time.Minute)

	// A login the provider creates: its password is checked (a managed
	// admin, which cannot read verifiers, logs in as it, to the maintenance
	// database, which it may no longer connect to) and it is Ready; it
	// connects nowhere PUBLIC could before.
	login := providertest.Role("shared-ns", in.Name, "shared_login")
	login.Spec.ForProvider.Login = ptr.To(true)
	login.Spec.WriteConnectionSecretToReference = &xpv2.LocalSecretReference{Name: "shared-login"}
	create(ctx, t, login)
	t.Cleanup(func() {
		_ = env.Kube.Delete(context.WithoutCancel(ctx), login)
		env.Gone(context.WithoutCancel(ctx), t, login)
	})
	env.Ready(ctx, t, login, corev1.ConditionTrue, xpv2.ReasonAvailable)
	secret, err := env.ConnectionSecret(ctx, "shared-ns", "shared-login")
	if err != nil {
		t.Fatal(err)
	}
	// A provider started afresh has no memory of passwords it checked: a
	// managed admin's checks it by logging in as the role, which the
	// server now refuses the maintenance database only after taking the
	// password.
	logged := len(env.ProviderLog())
	if err := env.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	err = providertest.Wait(ctx, time.Minute, func(context.Context) (bool, error) {
		after := env.ProviderLog()[logged:]
		for _, line := range strings.Split(after, "\n") {
			if strings.Contains(line, "shared-login") && (strings.Contains(line, "External resource is up to date") || strings.Contains(line, "cannot log in as the role")) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatal("the restarted provider did not observe the login role within a minute")
	}
	if after := env.ProviderLog()[logged:]; strings.Contains(after, "cannot log in as the role to check its password") {
		t.Errorf("the login's password check failed once PUBLIC's CONNECT on the maintenance database was revoked")
	}
	env.Ready(ctx, t, login, corev1.ConditionTrue, xpv2.ReasonAvailable)
	for _, db := range []string{"postgres", "template1"} {
		c, err := providertest.ConnectWithSecret(ctx, secret, db)
		if err == nil {
			_ = c.Close(ctx)
			t.Errorf("the login connected to %s after PUBLIC's CONNECT was revoked", db)
		} else if !strings.Contains(err.Error(), "permission denied for database") {
			t.Errorf("connecting to %s: %v, want permission denied", db, err)
		}
	}
}

// TestInstanceInUseRefused: with the shipped in-use policy, deleting an
// Instance that a database refers to is refused at admission, saying how
// many resources refer to it, so its deletion is never set; once the
// database has gone the deletion is accepted.
func TestInstanceInUseRefused(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	env.InstallInUsePolicy(ctx, t)
	in, err := env.Instance(ctx, "inuse")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Namespace(ctx, "inuse-users"); err != nil {
		t.Fatal(err)
	}
	db := &v1alpha1.PostgreSQLDatabase{
		ObjectMeta: metav1.ObjectMeta{Name: "inusedb", Namespace: "inuse-users"},
		Spec:       v1alpha1.PostgreSQLDatabaseSpec{InstanceRef: v1alpha1.InstanceReference{Name: "inuse"}},
	}
	create(ctx, t, db)
	got := &v1alpha1.PostgreSQLInstance{}
	err = providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		err := env.Kube.Get(ctx, client.ObjectKeyFromObject(in), got)
		return err == nil && got.Status.UsedBy == 1, err
	})
	if err != nil {
		t.Fatalf("status.usedBy = %d, want 1: %v", got.Status.UsedBy, err)
	}
	env.DeleteDenied(ctx, t, got, "PostgreSQLInstance inuse is in use: 1 resource(s) refer to it (status.usedBy). Delete them first")
	if err := env.Kube.Delete(ctx, got); err == nil {
		t.Fatal("deleting an Instance in use was accepted")
	}
	if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(in), got); err != nil || got.GetDeletionTimestamp() != nil {
		t.Fatalf("the refused deletion was set anyway: %v, %v", err, got.GetDeletionTimestamp())
	}

	// Its user gone, the Instance counts again at once and may go.
	if err := env.Kube.Delete(ctx, db); err != nil {
		t.Fatal(err)
	}
	env.Gone(ctx, t, db)
	err = providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		err := env.Kube.Delete(ctx, got)
		return err == nil, client.IgnoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("the unused Instance's deletion is still refused: %v", err)
	}
	env.Gone(ctx, t, got)
}
