package controller_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/cluster"
	"github.com/ayatori/provider-postgresql/internal/controller"
	"github.com/ayatori/provider-postgresql/internal/fixture/controlplane"
	"github.com/ayatori/provider-postgresql/internal/manifest"
	"github.com/ayatori/provider-postgresql/internal/tenant"
)

// adminPersona is the ClusterRole that may manage every kind.
const adminPersona = "provider-postgresql:database-admin"

// TestEveryKindIsEverywhere walks the scheme and the CRDs and checks every
// kind against each place a kind must be known: declared in v1alpha1.Kinds
// with traits its type really has (the lists derived from them, Lock
// targets, what holds an Instance, the polled kinds and the plan metrics,
// are then right), a CRD of its scope, a controller (and so a place in
// the layering), RBAC for the platform's admin, a row in the kind docs,
// an activation group in the install guide, a place in the backup
// runbook when it lives in a namespace, and an example. A new kind
// missing from any of them fails here, whatever review misses.
func TestEveryKindIsEverywhere(t *testing.T) {
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	read := func(rel string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	declared := map[string]v1alpha1.KindInfo{}
	for _, k := range v1alpha1.Kinds {
		declared[k.Kind] = k
	}

	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ours := reflect.TypeFor[v1alpha1.Lock]().PkgPath()
	for gvk, typ := range scheme.AllKnownTypes() {
		if _, ok := declared[gvk.Kind]; !ok && typ.PkgPath() == ours && !strings.HasSuffix(gvk.Kind, "List") {
			t.Errorf("%s is in the scheme but not declared in v1alpha1.Kinds", gvk.Kind)
		}
	}
	crds := crdsOf(t, filepath.Join(root, "package", "crds"))
	for kind := range crds {
		if _, ok := declared[kind]; !ok {
			t.Errorf("package/crds has a CRD for %s, which v1alpha1.Kinds does not declare", kind)
		}
	}

	controllers := controller.ControllerPackages(module)
	admin := personaResources(t, adminPersona)
	kindDocs := read("docs/kinds/README.md")
	install := read("docs/install.md")
	runbook := read("docs/operations.md")
	examples, err := manifest.KindsIn(filepath.Join(root, "examples"))
	if err != nil {
		t.Fatal(err)
	}
	composed := reflect.TypeOf(tenant.Request).Out(0).Elem().Name()

	for _, k := range v1alpha1.Kinds {
		t.Run(k.Kind, func(t *testing.T) {
			obj := k.New()
			for _, trait := range []struct {
				name     string
				declared bool
				has      bool
			}{
				{"Managed (a resource.Managed)", k.Managed, implements[resource.Managed](obj)},
				{"OnInstance (an InstanceUser)", k.OnInstance, implements[v1alpha1.InstanceUser](obj)},
				{"Planned (a Planned)", k.Planned, implements[v1alpha1.Planned](obj)},
				{"EntersDatabases (a DatabaseUser)", k.EntersDatabases, implements[v1alpha1.DatabaseUser](obj)},
				{"Composed (what the tenant Composition requests)", k.Composed, composed == k.Kind},
			} {
				if trait.declared != trait.has {
					t.Errorf("v1alpha1.Kinds declares %s %t, but its type says %t", trait.name, trait.declared, trait.has)
				}
			}
			if k.Planned && !k.Managed {
				t.Error("a planned kind must be managed: the plan metrics list it as managed resources")
			}
			if k.Lockable && !k.Managed {
				t.Error("a lockable kind must be managed: Locks protect what the provider manages on a server")
			}

			crd, ok := crds[k.Kind]
			switch {
			case !ok:
				t.Fatal("no CRD in package/crds: run make generate")
			case (crd.Spec.Scope == apiextensionsv1.ClusterScoped) != k.Cluster:
				t.Errorf("v1alpha1.Kinds declares Cluster %t, its CRD's scope is %s", k.Cluster, crd.Spec.Scope)
			}
			plural := crd.Spec.Names.Plural

			if len(controllers[k.Kind]) == 0 {
				t.Error("no controller in internal/controller/controller.go reconciles it")
			}
			if !slices.Contains(admin, plural) {
				t.Errorf("cluster/personas.yaml: %s may not manage %s", adminPersona, plural)
			}
			row := regexp.MustCompile("(?m)^\\|[^\\n]*`" + k.Kind + "`[^\\n]*\\]\\(([^)]+)\\)").FindStringSubmatch(kindDocs)
			if row == nil {
				t.Errorf("docs/kinds/README.md has no row for `%s` linking its page", k.Kind)
			} else if _, err := os.Stat(filepath.Join(root, "docs", "kinds", row[1])); err != nil {
				t.Errorf("docs/kinds/README.md links %s's page %s, which is not there", k.Kind, row[1])
			}
			if !strings.Contains(install, "`"+plural+"`") {
				t.Errorf("docs/install.md does not name %s in the activation groups", plural)
			}
			if !k.Cluster && !regexp.MustCompile(`kubectl get [^\n]*\b`+plural+`\b`).MatchString(runbook) {
				t.Errorf("docs/operations.md's namespace backup does not list %s: a restore would lose them", plural)
			}
			if examples[k.Kind] == 0 && (!k.Composed || examples["PostgreSQLTenant"] == 0) {
				t.Error("examples/ has no object of this kind (a kind the tenant Composition composes is shown by the claim's example)")
			}
		})
	}
}

func implements[I any](obj v1alpha1.Object) bool {
	_, ok := any(obj).(I)
	return ok
}

// crdsOf reads the CRDs in dir by the kind they serve.
func crdsOf(t *testing.T, dir string) map[string]*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, v1alpha1.Group+"_*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in %s (%v)", dir, err)
	}
	out := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(b, crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[crd.Spec.Names.Kind] = crd
	}
	return out
}

// personaResources are the resources of this group that the ClusterRole
// named persona in cluster/personas.yaml grants.
func personaResources(t *testing.T, persona string) []string {
	t.Helper()
	b, err := cluster.Manifests.ReadFile("personas.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := manifest.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" || o.GetName() != persona {
			continue
		}
		rules, _ := o.Object["rules"].([]any)
		for _, r := range rules {
			rule, _ := r.(map[string]any)
			groups, _ := rule["apiGroups"].([]any)
			if !slices.Contains(groups, any(v1alpha1.Group)) {
				continue
			}
			res, _ := rule["resources"].([]any)
			for _, s := range res {
				out = append(out, fmt.Sprint(s))
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("cluster/personas.yaml has no ClusterRole %s granting this group", persona)
	}
	return out
}
