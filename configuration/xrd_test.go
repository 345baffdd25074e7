package configuration_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	xpextv1 "github.com/crossplane/crossplane/apis/v2/apiextensions/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/xcrd"

	"github.com/ayatori/provider-postgresql/configuration"
	"github.com/ayatori/provider-postgresql/internal/fixture/controlplane"
	"github.com/ayatori/provider-postgresql/internal/fixture/tier"
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
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, errors.Join(err, cp.Stop())
	}
	if kube, err = client.New(cp.Config, client.Options{Scheme: s}); err != nil {
		return nil, errors.Join(err, cp.Stop())
	}
	return cp.Stop, nil
})

func TestMain(m *testing.M) { os.Exit(suite.Run(m)) }

func tenantCRDs() ([]*extv1.CustomResourceDefinition, error) {
	b, err := configuration.Files.ReadFile("definition.yaml")
	if err != nil {
		return nil, err
	}
	xrd := &xpextv1.CompositeResourceDefinition{}
	if err := yaml.Unmarshal(b, xrd); err != nil {
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
	// Core owns them by the XRD; here there is no XRD object to own them.
	xr.OwnerReferences, claim.OwnerReferences = nil, nil
	return []*extv1.CustomResourceDefinition{xr, claim}, nil
}

func claim(name, spec string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(`{"apiVersion": "database.ayatori.ddupan.top/v1alpha1", "kind": "PostgreSQLTenant",
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
			want: []string{"exceed 241 characters", "set spec.secretName"},
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
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := kube.Create(context.Background(), claim(tc.name, tc.spec))
			if err == nil {
				t.Fatal("the claim was accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
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
		"RemovingAnExtension": {func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedStringSlice(u.Object, []string{}, "spec", "extensions")
		}, "spec.extensions is append-only"},
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
