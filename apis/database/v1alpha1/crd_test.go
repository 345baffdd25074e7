package v1alpha1_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/fixture/controlplane"
	"github.com/ayatori/provider-postgresql/internal/fixture/tier"
)

// kube reaches the real API server of this test package, with the CRDs
// from package/crds installed; discover asks it what it serves.
var (
	kube     client.Client
	discover discovery.DiscoveryInterface
)

// suite is the package's API server, started by the first test that
// declares it needs it.
var suite = tier.NewFixture(2*time.Minute, func(ctx context.Context) (func() error, error) {
	cp, err := controlplane.Start(ctx, controlplane.Options{})
	if err != nil {
		return nil, errors.Wrap(err, "cannot start the control plane")
	}
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, errors.Join(err, cp.Stop())
	}
	if kube, err = client.New(cp.Config, client.Options{Scheme: s}); err != nil {
		return nil, errors.Join(err, cp.Stop())
	}
	if discover, err = discovery.NewDiscoveryClientForConfig(cp.Config); err != nil {
		return nil, errors.Join(err, cp.Stop())
	}
	return cp.Stop, nil
})

func TestMain(m *testing.M) { os.Exit(suite.Run(m)) }

func validInstance(name string) *v1alpha1.PostgreSQLInstance {
	return &v1alpha1.PostgreSQLInstance{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.PostgreSQLInstanceSpec{
			Endpoint:           v1alpha1.Endpoint{Host: "db.example.com", Hostaddr: "10.0.0.5"},
			AdminCredentialRef: &v1alpha1.AdminCredentialReference{Name: "main-admin"},
		},
	}
}

func TestInstanceDefaults(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	in := validInstance("defaults")
	if err := kube.Create(ctx, in); err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { _ = kube.Delete(ctx, in) })

	got := &v1alpha1.PostgreSQLInstance{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(in), got); err != nil {
		t.Fatal(err)
	}
	want := v1alpha1.PostgreSQLInstanceSpec{
		ManagementPolicies: xpv2.ManagementPolicies{xpv2.ManagementActionAll},
		Endpoint: v1alpha1.Endpoint{
			Host: "db.example.com", Hostaddr: "10.0.0.5", Port: 5432, Database: "postgres", SSLMode: v1alpha1.SSLModeVerifyFull,
		},
		AdminCredentialRef: &v1alpha1.AdminCredentialReference{Name: "main-admin", UsernameKey: "username", PasswordKey: "password"},
	}
	if diff := cmp.Diff(want, got.Spec); diff != "" {
		t.Errorf("the API server's defaults (-want +got):\n%s", diff)
	}
}

func TestInstanceValidation(t *testing.T) {
	suite.Server(t)
	cases := map[string]struct {
		reason string
		mutate func(*v1alpha1.PostgreSQLInstance)
		// want are substrings of the API server's message, which names the field.
		want []string
	}{
		"HostaddrNotAnIP": {
			reason: "CEL's isIP rejects a name where an address belongs.",
			mutate: func(in *v1alpha1.PostgreSQLInstance) { in.Spec.Endpoint.Hostaddr = "db.example.com" },
			want:   []string{"spec.endpoint.hostaddr", "hostaddr must be a single IPv4 or IPv6 address"},
		},
		"HostaddrTwoAddresses": {
			reason: "One address only: libpq's comma list is not accepted.",
			mutate: func(in *v1alpha1.PostgreSQLInstance) { in.Spec.Endpoint.Hostaddr = "10.0.0.5,10.0.0.6" },
			want:   []string{"spec.endpoint.hostaddr", "hostaddr must be a single IPv4 or IPv6 address"},
		},
		"PortOutOfRange": {
			reason: "Ports are 1-65535.",
			mutate: func(in *v1alpha1.PostgreSQLInstance) { in.Spec.Endpoint.Port = 70000 },
			want:   []string{"spec.endpoint.port", "less than or equal to 65535"},
		},
		"UnknownSSLMode": {
			reason: "sslMode is a closed set; prefer/allow would permit clear text silently.",
			mutate: func(in *v1alpha1.PostgreSQLInstance) { in.Spec.Endpoint.SSLMode = "prefer" },
			want:   []string{"spec.endpoint.sslMode", `Unsupported value: "prefer"`},
		},
		"MaintenanceDatabaseNotAnIdentifier": {
			reason: "The maintenance database must be a valid identifier.",
			mutate: func(in *v1alpha1.PostgreSQLInstance) { in.Spec.Endpoint.Database = "Post-Gres" },
			want:   []string{"spec.endpoint.database", "should match"},
		},
		"HostNotADNSName": {
			reason: "host is a DNS name.",
			mutate: func(in *v1alpha1.PostgreSQLInstance) { in.Spec.Endpoint.Host = "db_example" },
			want:   []string{"spec.endpoint.host", "should match"},
		},
		"CABundleWithSSLDisabled": {
			reason: "A CA bundle with TLS off is a mistake the user should hear about.",
			mutate: func(in *v1alpha1.PostgreSQLInstance) {
				in.Spec.Endpoint.SSLMode = v1alpha1.SSLModeDisable
				in.Spec.CABundleRef = &v1alpha1.CABundleReference{Name: "ca"}
			},
			want: []string{"caBundleRef has no effect with endpoint.sslMode disable"},
		},
		"NoAdminLogin": {
			reason: "An Instance names how its admin logs in.",
			mutate: func(in *v1alpha1.PostgreSQLInstance) { in.Spec.AdminCredentialRef = nil },
			want:   []string{"set exactly one of adminCredentialRef (a stored password) and adminTokenSource (a short-lived token)"},
		},
		"BothAdminLogins": {
			reason: "A stored password and a token at once would leave it unclear which is sent.",
			mutate: func(in *v1alpha1.PostgreSQLInstance) {
				in.Spec.AdminTokenSource = &v1alpha1.AdminTokenSource{Username: "admin", File: &v1alpha1.TokenFile{Path: "/var/run/tokens/admin"}}
			},
			want: []string{"set exactly one of adminCredentialRef"},
		},
		"TokenSourceWithNeitherKind": {
			reason: "A token comes from a command or a file.",
			mutate: func(in *v1alpha1.PostgreSQLInstance) {
				in.Spec.AdminCredentialRef = nil
				in.Spec.AdminTokenSource = &v1alpha1.AdminTokenSource{Username: "admin"}
			},
			want: []string{"spec.adminTokenSource", "adminTokenSource needs exactly one of exec and file"},
		},
		"TokenSourceWithBothKinds": {
			reason: "A token comes from one place.",
			mutate: func(in *v1alpha1.PostgreSQLInstance) {
				in.Spec.AdminCredentialRef = nil
				in.Spec.AdminTokenSource = &v1alpha1.AdminTokenSource{Username: "admin",
					File: &v1alpha1.TokenFile{Path: "/var/run/tokens/admin"}, Exec: &v1alpha1.TokenExec{Command: "/usr/bin/aws"}}
			},
			want: []string{"adminTokenSource needs exactly one of exec and file"},
		},
		"TokenCommandNotAbsolute": {
			reason: "A command is run by its path, never looked up in PATH.",
			mutate: func(in *v1alpha1.PostgreSQLInstance) {
				in.Spec.AdminCredentialRef = nil
				in.Spec.AdminTokenSource = &v1alpha1.AdminTokenSource{Username: "admin", Exec: &v1alpha1.TokenExec{Command: "aws"}}
			},
			want: []string{"spec.adminTokenSource.exec.command", "should match '^/'"},
		},
		"TokenEnvNameInvalid": {
			reason: "An environment variable's name is a shell identifier.",
			mutate: func(in *v1alpha1.PostgreSQLInstance) {
				in.Spec.AdminCredentialRef = nil
				in.Spec.AdminTokenSource = &v1alpha1.AdminTokenSource{Username: "admin", Exec: &v1alpha1.TokenExec{
					Command: "/usr/bin/aws", Env: []v1alpha1.TokenEnvVar{{Name: "AWS REGION", Value: "x"}},
				}}
			},
			want: []string{"spec.adminTokenSource.exec.env[0].name", "should match"},
		},
		"TokenFileNotAbsolute": {
			reason: "A token file is named by its absolute path.",
			mutate: func(in *v1alpha1.PostgreSQLInstance) {
				in.Spec.AdminCredentialRef = nil
				in.Spec.AdminTokenSource = &v1alpha1.AdminTokenSource{Username: "admin", File: &v1alpha1.TokenFile{Path: "tokens/admin"}}
			},
			want: []string{"spec.adminTokenSource.file.path", "should match '^/'"},
		},
		"SetRoleOfAnUnsharedRole": {
			reason: "SET widens a membership the policy allows; alone it would allow nothing, and a platform that wrote it meant something else.",
			mutate: func(in *v1alpha1.PostgreSQLInstance) {
				in.Spec.Policy = v1alpha1.InstancePolicy{AllowMembershipOf: []string{"readers"}, AllowSetRoleOf: []string{"readers", "writers"}}
			},
			want: []string{"spec.policy.allowSetRoleOf", "every role of allowSetRoleOf must also be in allowMembershipOf"},
		},
		"AdminOptionWithoutMembership": {
			reason: "ADMIN OPTION widens a membership the policy allows.",
			mutate: func(in *v1alpha1.PostgreSQLInstance) {
				in.Spec.Policy = v1alpha1.InstancePolicy{AllowAdminOptionOf: []string{"readers"}}
			},
			want: []string{"spec.policy.allowAdminOptionOf", "every role of allowAdminOptionOf must also be in allowMembershipOf"},
		},
		"UnknownManagementPolicy": {
			reason: "managementPolicies is Crossplane's closed set.",
			mutate: func(in *v1alpha1.PostgreSQLInstance) {
				in.Spec.ManagementPolicies = xpv2.ManagementPolicies{"Everything"}
			},
			want: []string{"spec.managementPolicies[0]", `Unsupported value: "Everything"`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := validInstance(strings.ToLower(name))
			tc.mutate(in)
			err := kube.Create(context.Background(), in)
			if err == nil {
				_ = kube.Delete(context.Background(), in)
				t.Fatalf("%s\nCreate succeeded; want a rejection", tc.reason)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s\nCreate error %q does not contain %q", tc.reason, err, w)
				}
			}
		})
	}
}

func TestInstanceStatusIsASubresource(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	in := validInstance("status-subresource")
	in.Status.Phase = v1alpha1.InstancePhaseReady
	if err := kube.Create(ctx, in); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.Delete(ctx, in) })
	got := &v1alpha1.PostgreSQLInstance{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(in), got); err != nil {
		t.Fatal(err)
	}
	// The create's status is dropped: what is read is the default.
	if got.Status.Phase != v1alpha1.InstancePhasePending {
		t.Errorf("status.phase = %q after a create, want the default Pending: status must only be written through the status subresource", got.Status.Phase)
	}
	gen := got.Generation
	got.Status.Phase = v1alpha1.InstancePhaseValidating
	if err := kube.Status().Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	if got.Generation != gen {
		t.Errorf("a status update moved metadata.generation from %d to %d", gen, got.Generation)
	}
}

// TestLockDefaultsAndNames: a Lock's targetRef.apiVersion is this
// provider's group and version when left out, set by the API server (the
// CRD), not by the controller; and Locks answer to short names and the
// postgresql category, since Crossplane core serves a Lock kind too and
// "kubectl get locks" may resolve to its.
func TestLockDefaultsAndNames(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	l := &v1alpha1.Lock{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "defaults"},
		Spec: v1alpha1.LockSpec{TargetRef: v1alpha1.TargetReference{Kind: v1alpha1.PostgreSQLDatabaseKind, Name: "orders"}}}
	if err := kube.Create(ctx, l); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.Delete(ctx, l) })
	got := &v1alpha1.Lock{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(l), got); err != nil {
		t.Fatal(err)
	}
	if av := got.Spec.TargetRef.APIVersion; av != v1alpha1.SchemeGroupVersion.String() {
		t.Errorf("targetRef.apiVersion = %q, want the API server's default %q", av, v1alpha1.SchemeGroupVersion)
	}
	resources, err := discover.ServerResourcesForGroupVersion(v1alpha1.SchemeGroupVersion.String())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"locks": "pglock", "clusterlocks": "pgclusterlock"}
	for _, r := range resources.APIResources {
		short, ok := want[r.Name]
		if !ok {
			continue
		}
		delete(want, r.Name)
		if !slices.Contains(r.ShortNames, short) || !slices.Contains(r.Categories, "postgresql") {
			t.Errorf("%s: short names %v, categories %v; want %s and postgresql", r.Name, r.ShortNames, r.Categories, short)
		}
	}
	if len(want) > 0 {
		t.Errorf("not served: %v", want)
	}
}
