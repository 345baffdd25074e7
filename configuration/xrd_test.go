package configuration_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	xpextv1 "github.com/crossplane/crossplane/apis/v2/apiextensions/v1"
	"github.com/google/go-cmp/cmp"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/xcrd"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/cluster"
	"github.com/ayatori/provider-postgresql/configuration"
	"github.com/ayatori/provider-postgresql/internal/admission"
	"github.com/ayatori/provider-postgresql/internal/controller/pending"
	"github.com/ayatori/provider-postgresql/internal/fixture/controlplane"
	"github.com/ayatori/provider-postgresql/internal/fixture/tier"
	"github.com/ayatori/provider-postgresql/internal/tenant"
)

// kube reaches a real API server serving the claim and composite CRDs that
// Crossplane's own generator (xcrd) derives from the shipped XRD, as
// Crossplane core does when the XRD is applied.
var kube client.Client

// suite is the package's API server, started by the first test that
// declares it needs it.
var suite = tier.NewFixture(2*time.Minute, func(ctx context.Context) (func() error, error) {
	cp, err := controlplane.Start(ctx, controlplane.Options{})
	if err != nil {
		return nil, errors.Wrap(err, "cannot start the control plane")
	}
	crds, err := tenantCRDs()
	if err != nil {
		return nil, errors.Join(err, cp.Stop())
	}
	if _, err := envtest.InstallCRDs(cp.Config, envtest.CRDInstallOptions{CRDs: crds}); err != nil {
		return nil, errors.Join(errors.Wrap(err, "the API server refused the CRDs generated from the XRD"), cp.Stop())
	}
	// The provider's PostgreSQLDatabase, which the tenant policy reads.
	root, err := controlplane.RepoRoot()
	if err != nil {
		return nil, errors.Join(err, cp.Stop())
	}
	if _, err := envtest.InstallCRDs(cp.Config, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(root, "package", "crds", "database.ayatori.ddupan.top_postgresqldatabases.yaml")},
	}); err != nil {
		return nil, errors.Join(err, cp.Stop())
	}
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, errors.Join(err, cp.Stop())
	}
	if kube, err = client.New(cp.Config, client.Options{Scheme: s}); err != nil {
		return nil, errors.Join(err, cp.Stop())
	}
	// The tenant policy, as the provider installs it at start-up.
	policy, err := admission.Manifests(cluster.TenantPolicyFile)
	if err != nil {
		return nil, errors.Join(err, cp.Stop())
	}
	for _, o := range policy {
		if err := kube.Create(ctx, o); err != nil {
			return nil, errors.Join(err, cp.Stop())
		}
	}
	return cp.Stop, nil
})

func TestMain(m *testing.M) { os.Exit(suite.Run(m)) }

func tenantCRDs() ([]*extv1.CustomResourceDefinition, error) {
	xrd, err := readXRD("definition.yaml")
	if err != nil {
		return nil, err
	}
	xr, err := xcrd.ForCompositeResource(xrd)
	if err != nil {
		return nil, fmt.Errorf("composite CRD: %w", err)
	}
	claim, err := xcrd.ForCompositeResourceClaim(xrd)
	if err != nil {
		return nil, fmt.Errorf("claim CRD: %w", err)
	}
	// The namespaced Tenant: an apiextensions.crossplane.io/v2 XRD, whose
	// fields the v1 type holds.
	txrd, err := readXRD("tenant-definition.yaml")
	if err != nil {
		return nil, err
	}
	tenant, err := xcrd.ForCompositeResource(txrd)
	if err != nil {
		return nil, fmt.Errorf("Tenant CRD: %w", err)
	}
	// Core owns them by the XRD; here there is no XRD object to own them.
	xr.OwnerReferences, claim.OwnerReferences, tenant.OwnerReferences = nil, nil, nil
	return []*extv1.CustomResourceDefinition{xr, claim, tenant}, nil
}

func readXRD(file string) (*xpextv1.CompositeResourceDefinition, error) {
	b, err := configuration.Files.ReadFile(file)
	if err != nil {
		return nil, err
	}
	xrd := &xpextv1.CompositeResourceDefinition{}
	return xrd, yaml.Unmarshal(b, xrd)
}

func claim(name, spec string) *unstructured.Unstructured {
	return tenantOf("PostgreSQLTenant", name, spec)
}

// tenantOf is a PostgreSQLTenant claim or a namespaced Tenant.
func tenantOf(kind, name, spec string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(`{"apiVersion": "database.ayatori.ddupan.top/v1alpha1", "kind": "`+kind+`",
		"metadata": {"name": "`+name+`", "namespace": "default"}, "spec": `+spec+`}`), &u.Object); err != nil {
		panic(err)
	}
	return u
}

func TestClaimValidation(t *testing.T) {
	suite.Server(t)
	long := strings.Repeat("i", 200)
	cases := map[string]struct {
		name, spec string
		want       []string
	}{
		"NameNotAnIdentifier": {
			name: "orders-v2", spec: `{"instanceRef": {"name": "main"}}`,
			want: []string{"metadata.name is not a valid PostgreSQL identifier", "set spec.database and spec.loginRole"},
		},
		"BothInstanceAndDatabaseRef": {
			name: "both", spec: `{"instanceRef": {"name": "main"}, "databaseRef": {"name": "legacy"}}`,
			want: []string{"spec", "set exactly one of spec.instanceRef"},
		},
		"Neither": {
			name: "neither", spec: `{}`,
			want: []string{"set exactly one of spec.instanceRef"},
		},
		"DatabaseNotAnIdentifier": {
			name: "baddb", spec: `{"instanceRef": {"name": "main"}, "database": "Orders-DB"}`,
			want: []string{"spec.database", "should match"},
		},
		"OverLongNames": {
			name: "longer", spec: `{"instanceRef": {"name": "` + long + `x` + strings.Repeat("y", 40) + `"}}`,
			want: []string{"exceed 241 characters", "shorten them"},
		},
		"OverLongNamesWithANamedSecret": {
			name: "longer", spec: `{"instanceRef": {"name": "` + long + `x` + strings.Repeat("y", 40) + `"}, "secretName": "creds"}`,
			want: []string{"exceed 241 characters"},
		},
		"BadSecretName": {
			name: "badsecret", spec: `{"instanceRef": {"name": "main"}, "secretName": "Not_A_Name"}`,
			want: []string{"spec.secretName", "should match"},
		},
		"ExtensionsWithDatabaseRef": {
			name: "extref", spec: `{"databaseRef": {"name": "legacy"}, "extensions": ["citext"]}`,
			want: []string{"spec.extensions only apply with spec.instanceRef"},
		},
	}
	// The claim and the namespaced Tenant keep the same rules.
	for _, kind := range []string{"PostgreSQLTenant", "Tenant"} {
		for name, tc := range cases {
			t.Run(kind+"/"+name, func(t *testing.T) {
				err := kube.Create(context.Background(), tenantOf(kind, tc.name, tc.spec))
				if err == nil {
					t.Fatalf("the %s was accepted", kind)
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
			})
		}
	}
}

func TestClaimAcceptedAndFrozen(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	c := claim("orders", `{"instanceRef": {"name": "main"}, "extensions": ["pgcrypto"]}`)
	if err := kube.Create(ctx, c); err != nil {
		t.Fatalf("a valid claim was refused: %v", err)
	}
	named := claim("orders-v2", `{"instanceRef": {"name": "main"}, "database": "orders_v2", "loginRole": "orders_v2"}`)
	if err := kube.Create(ctx, named); err != nil {
		t.Fatalf("a claim naming its database and role was refused: %v", err)
	}
	ref := claim("reports", `{"databaseRef": {"name": "legacy"}}`)
	if err := kube.Create(ctx, ref); err != nil {
		t.Fatalf("an explicit claim was refused: %v", err)
	}

	for what, tc := range map[string]struct {
		mutate func(u *unstructured.Unstructured)
		want   string
	}{
		"SettingTheDatabaseLater": {func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "orders_new", "spec", "database")
		}, "spec.database cannot be set or removed after creation"},
		"ChangingTheInstance": {func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "other", "spec", "instanceRef", "name")
		}, "spec.instanceRef cannot be changed"},
	} {
		t.Run(what, func(t *testing.T) {
			cur := c.DeepCopy()
			if err := kube.Get(ctx, client.ObjectKeyFromObject(c), cur); err != nil {
				t.Fatal(err)
			}
			tc.mutate(cur)
			err := kube.Update(ctx, cur)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("update: %v, want %q", err, tc.want)
			}
		})
	}
	t.Run("AppendingAnExtension", func(t *testing.T) {
		cur := c.DeepCopy()
		if err := kube.Get(ctx, client.ObjectKeyFromObject(c), cur); err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedStringSlice(cur.Object, []string{"pgcrypto", "citext"}, "spec", "extensions")
		if err := kube.Update(ctx, cur); err != nil {
			t.Errorf("appending an extension was refused: %v", err)
		}
	})
	t.Run("ChangingTheDatabaseName", func(t *testing.T) {
		cur := named.DeepCopy()
		if err := kube.Get(ctx, client.ObjectKeyFromObject(named), cur); err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedField(cur.Object, "orders_v3", "spec", "database")
		if err := kube.Update(ctx, cur); err == nil || !strings.Contains(err.Error(), "spec.database cannot be changed") {
			t.Errorf("update: %v", err)
		}
	})
}

// TestClaimExtensionsAppendOnlyOnceInstalled: an extension the database
// has installed (the claim's status.extensions) cannot be removed from the
// claim; one it never installed, a misspelt name, can.
func TestClaimExtensionsAppendOnlyOnceInstalled(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	c := claim("typo", `{"instanceRef": {"name": "main"}, "extensions": ["pgcrypto", "pgcrytpo"]}`)
	if err := kube.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.Delete(context.WithoutCancel(ctx), c) })
	_ = unstructured.SetNestedStringSlice(c.Object, []string{"pgcrypto"}, "status", "extensions")
	if err := kube.Status().Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	set := func(extensions ...string) error {
		cur := c.DeepCopy()
		if err := kube.Get(ctx, client.ObjectKeyFromObject(c), cur); err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedStringSlice(cur.Object, extensions, "spec", "extensions")
		return kube.Update(ctx, cur)
	}
	if err := set("pgcrytpo"); err == nil || !strings.Contains(err.Error(), "an extension the database has installed (status.extensions) cannot be removed") {
		t.Errorf("removing an installed extension: %v, want a refusal", err)
	}
	if err := set(); err == nil {
		t.Error("removing every extension, an installed one included, was accepted")
	}
	if err := set("pgcrypto"); err != nil {
		t.Errorf("removing an extension never installed was refused: %v", err)
	}
	if err := set("pgcrypto", "citext"); err != nil {
		t.Errorf("appending an extension was refused: %v", err)
	}
}

// TestRegisteredDatabaseClaimNames: a claim naming a registered database
// takes its Instance from that PostgreSQLDatabase, and the tenant policy
// refuses it at creation when the Instance's name and the claim's exceed
// 241 characters together, named Secret or not; a claim naming a database
// not registered yet passes (the composition checks it later).
func TestRegisteredDatabaseClaimNames(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	instance := strings.Repeat("i", 200)
	db := &unstructured.Unstructured{}
	db.SetAPIVersion("database.ayatori.ddupan.top/v1alpha1")
	db.SetKind("PostgreSQLDatabase")
	db.SetNamespace("default")
	db.SetName("far")
	_ = unstructured.SetNestedField(db.Object, instance, "spec", "instanceRef", "name")
	if err := kube.Create(ctx, db); err != nil {
		t.Fatal(err)
	}
	tooLong := strings.Repeat("c", 42) // 200 + 42 = 242.
	// The policy takes a moment to see the new param.
	var err error
	wait := time.Now().Add(30 * time.Second)
	for time.Now().Before(wait) {
		c := claim(tooLong, `{"databaseRef": {"name": "far"}, "loginRole": "app"}`)
		if err = kube.Create(ctx, c); err != nil {
			break
		}
		_ = kube.Delete(ctx, c)
		time.Sleep(200 * time.Millisecond)
	}
	for _, want := range []string{"spec.databaseRef: PostgreSQLDatabase far is on PostgreSQLInstance " + instance, "exceed 241 characters"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("a claim of %d characters on a registered database of an Instance of 200: %v, want a refusal saying %q", len(tooLong), err, want)
		}
	}
	if err := kube.Create(ctx, claim(tooLong, `{"databaseRef": {"name": "far"}, "loginRole": "app", "secretName": "creds"}`)); err == nil {
		t.Error("a named Secret exempted the claim: the ExternalSecret is named <instance>-<name>-postgresql whatever secretName says")
	}
	if err := kube.Create(ctx, claim(strings.Repeat("c", 41), `{"databaseRef": {"name": "far"}, "loginRole": "app"}`)); err != nil {
		t.Errorf("241 characters exactly were refused: %v", err)
	}
	if err := kube.Create(ctx, claim(tooLong, `{"databaseRef": {"name": "not-yet"}, "loginRole": "app"}`)); err != nil {
		t.Errorf("a claim naming a database not registered yet was refused: %v", err)
	}
}

// TestClaimStatusShowsThePlan: the status the function writes in the
// composite (and Crossplane copies to the claim), every field of it with
// the plan, survives the claim's schema whole: a field the schema lacked
// would be pruned. The PENDING column shows the plan's summary.
func TestClaimStatusShowsThePlan(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	c := claim("planned", `{"instanceRef": {"name": "main"}}`)
	if err := kube.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.Delete(context.WithoutCancel(ctx), c) })
	plan := v1alpha1.ProvisioningPlanOf(
		&v1alpha1.ProvisioningStep{Kind: v1alpha1.PostgreSQLRoleKind, Name: "planned-owner", Plan: *pending.Of(v1alpha1.PlanCreate, []string{`CREATE ROLE "planned_owner"`})},
		&v1alpha1.ProvisioningStep{Kind: v1alpha1.PostgreSQLRoleKind, Name: "planned-login", Plan: v1alpha1.Plan{
			Action: v1alpha1.PlanUpdate, Statements: []string{`ALTER ROLE "planned" PASSWORD '<redacted>'`}, Omitted: 3, Summary: "Update: 4 statements",
		}},
	)
	written := tenant.Status{
		Instance: "main", DatabaseRef: &tenant.ObjectRef{Name: "planned", UID: "0d5c1c9e-6b0e-4f4e-9d1e-2f1a0c3b7a11"}, Database: "planned",
		LoginRole: "planned", SecretName: "main-planned-postgresql", Delivery: tenant.DeliveryMoving,
		SecretDeliveryEnds: &metav1.Time{Time: time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)},
		CredentialURL:      "https://openbao:8200/v1/secret/data/postgresql/main/default/planned", Extensions: []string{"pgcrypto"}, Plan: plan,
	}
	st, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&written)
	if err != nil {
		t.Fatal(err)
	}
	c.Object["status"] = st
	if err := kube.Status().Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	got := c.DeepCopy()
	if err := kube.Get(ctx, client.ObjectKeyFromObject(c), got); err != nil {
		t.Fatal(err)
	}
	back := tenant.Status{}
	raw, _, _ := unstructured.NestedMap(got.Object, "status")
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(written, back); diff != "" {
		t.Errorf("the claim's status as stored (-written +read):\n%s", diff)
	}

	crds, err := tenantCRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		if !slices.ContainsFunc(crd.Spec.Versions[0].AdditionalPrinterColumns, func(c extv1.CustomResourceColumnDefinition) bool {
			return c.Name == "PENDING" && c.JSONPath == ".status.plan.summary"
		}) {
			t.Errorf("%s has no PENDING column showing .status.plan.summary", crd.Name)
		}
	}
}
