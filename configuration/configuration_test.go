package configuration

import (
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// TestFunctionRefsMatchDependencies guards the names the pipeline calls
// functions by: Crossplane installs the Configuration's dependencies under
// names derived from their repositories, and a functionRef that names
// anything else leaves every claim unready once installed as a package.
func TestFunctionRefsMatchDependencies(t *testing.T) {
	b, err := Files.ReadFile("crossplane.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Spec struct {
			DependsOn []struct {
				Kind    string `json:"kind"`
				Package string `json:"package"`
			} `json:"dependsOn"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	var installed []string
	for _, d := range meta.Spec.DependsOn {
		if d.Kind != "Function" {
			continue
		}
		repo, err := name.NewRepository(d.Package)
		if err != nil {
			t.Fatalf("dependsOn %q: %v", d.Package, err)
		}
		installed = append(installed, dnsLabel(repo.RepositoryStr()))
	}

	objs, err := Objects()
	if err != nil {
		t.Fatal(err)
	}
	// Each Composition (the claim's and the namespaced Tenant's) calls the
	// functions the Configuration depends on, each once.
	var refs []string
	compositions := 0
	for _, o := range objs {
		if o.GetKind() != "Composition" {
			continue
		}
		compositions++
		if compositions > 1 {
			var again []string
			steps, _, _ := unstructured.NestedSlice(o.Object, "spec", "pipeline")
			for _, s := range steps {
				m, _ := s.(map[string]any)
				ref, _, _ := unstructured.NestedString(m, "functionRef", "name")
				again = append(again, ref)
			}
			sort.Strings(again)
			if diff := cmp.Diff(refs, again); diff != "" {
				t.Errorf("Composition %s calls other functions than the first (-first +this):\n%s", o.GetName(), diff)
			}
			continue
		}
		steps, _, _ := unstructured.NestedSlice(o.Object, "spec", "pipeline")
		for _, s := range steps {
			m, ok := s.(map[string]any)
			if !ok {
				t.Fatalf("a pipeline step is %T", s)
			}
			ref, _, _ := unstructured.NestedString(m, "functionRef", "name")
			refs = append(refs, ref)
		}
		sort.Strings(refs)
	}
	if compositions != 2 {
		t.Errorf("%d Compositions, want the claim's and the namespaced Tenant's", compositions)
	}
	sort.Strings(installed)
	sort.Strings(refs)
	if diff := cmp.Diff(installed, refs); diff != "" {
		t.Errorf("the pipeline's functionRefs differ from the names Crossplane installs the dependencies under (-installed +functionRefs):\n%s", diff)
	}
	if diff := cmp.Diff([]string{FunctionTenant, FunctionAutoReady}, refs); diff != "" {
		t.Errorf("FunctionTenant/FunctionAutoReady are stale (-constants +functionRefs):\n%s", diff)
	}
}

// dnsLabel is how Crossplane names a dependency from its repository
// (ayatori/function-x is ayatori-function-x): lower-case letters and
// digits kept, separators become dashes, at most 63 characters. The
// install test in e2e/install proves it against Crossplane itself.
func dnsLabel(repo string) string {
	var b strings.Builder
	for _, r := range repo {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '.', r == '/', r == ':', r == '-':
			b.WriteByte('-')
		}
	}
	s := b.String()
	if len(s) > 63 {
		s = s[:63]
	}
	return strings.Trim(s, "-")
}
