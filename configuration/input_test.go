package configuration_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	input "github.com/ayatori/provider-postgresql/apis/tenant/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/fixture/controlplane"
	"github.com/ayatori/provider-postgresql/internal/fixture/registry"
	"github.com/ayatori/provider-postgresql/internal/manifest"
)

// TestInputValidates runs `crossplane resource validate`, as a platform
// engineer would, with the input CRD the function's package ships: the
// shipped Composition and its step's input pass, and an input with a
// misspelt field, an unknown delivery, a ClusterSecretStore, a duration
// that is not one and a rotation the login role refuses fails, each
// naming its field. The CLI fetches Crossplane's own schemas from an
// image; here that image is Crossplane core's CRDs in a package on a
// loopback registry.
func TestInputValidates(t *testing.T) {
	suite.Server(t)
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	tools := crossplaneTools(t, root)
	cli := filepath.Join(tools, "crossplane-cli")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	work := t.TempDir()
	image := crossplaneSchemaImage(ctx, t, cli, work)

	comp, err := os.ReadFile(filepath.Join(root, "configuration", "composition.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	inputs := stepInputs(t, comp)
	if len(inputs) == 0 {
		t.Fatal("configuration/composition.yaml has no step whose input is the tenant function's")
	}
	good := filepath.Join(work, "good")
	if err := os.MkdirAll(good, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(good, "composition.yaml"), comp)
	for i, in := range inputs {
		b, err := yaml.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(good, "input-"+string(rune('a'+i))+".yaml"), b)
	}
	extensions := filepath.Join(root, "cmd", "function-tenant", "package", "input")
	validate := func(resources string) (string, error) {
		cmd := exec.CommandContext(ctx, cli, "resource", "validate", extensions, resources,
			"--cache-dir="+filepath.Join(work, "cache"), "--crossplane-image="+image, "--error-on-missing-schemas")
		cmd.Env = append(os.Environ(), "HOME="+work)
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	if out, err := validate(good); err != nil {
		t.Fatalf("the shipped Composition and its input do not validate: %v\n%s", err, out)
	} else {
		t.Logf("validate of the shipped Composition:\n%s", out)
		for _, want := range []string{"Kind=Composition, postgresqltenant validated successfully", "Kind=Input,  validated successfully", " 0 failure cases"} {
			if !strings.Contains(out, want) {
				t.Errorf("validate's output does not say %q:\n%s", want, out)
			}
		}
	}

	bad := filepath.Join(work, "bad.yaml")
	writeFile(t, bad, []byte(`apiVersion: `+input.GroupVersionKind.GroupVersion().String()+`
kind: Input
deleteDta: true
delivery: Vault
openBao:
  secretStoreRef: {name: postgresql, kind: ClusterSecretStore}
  refreshInterval: a minute
credentialRotation:
  mode: InPlace
  gracePeriod: 2h
`))
	out, err := validate(bad)
	t.Logf("validate of a bad input:\n%s", out)
	if err == nil {
		t.Fatalf("an input with five mistakes validates:\n%s", out)
	}
	for _, field := range []string{"deleteDta", "delivery", "openBao.secretStoreRef.kind", "openBao.refreshInterval", "gracePeriod and endSessionsAfter need mode Alternating"} {
		if !strings.Contains(out, field) {
			t.Errorf("validate's output does not name %q:\n%s", field, out)
		}
	}
}

// stepInputs returns the inputs of a Composition's steps that are the
// tenant function's.
func stepInputs(t *testing.T, comp []byte) []map[string]any {
	t.Helper()
	objs, err := manifest.Decode(comp)
	if err != nil {
		t.Fatal(err)
	}
	var inputs []map[string]any
	for _, o := range objs {
		steps, _, err := unstructured.NestedSlice(o.Object, "spec", "pipeline")
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range steps {
			step, ok := s.(map[string]any)
			if !ok {
				t.Fatalf("a pipeline step is a %T", s)
			}
			in, _, _ := unstructured.NestedMap(step, "input")
			if in["apiVersion"] == input.GroupVersionKind.GroupVersion().String() {
				inputs = append(inputs, in)
			}
		}
	}
	return inputs
}

// crossplaneSchemaImage pushes a package of Crossplane core's CRDs to a
// loopback registry and returns its reference, for validate's
// --crossplane-image.
func crossplaneSchemaImage(ctx context.Context, t *testing.T, cli, work string) string {
	t.Helper()
	crds, err := controlplane.CrossplaneCRDDir(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pkg := filepath.Join(work, "crossplane-schemas")
	if err := os.MkdirAll(pkg, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(pkg, "crossplane.yaml"), []byte("apiVersion: meta.pkg.crossplane.io/v1\nkind: Provider\nmetadata:\n  name: crossplane-schemas\n"))
	files, err := filepath.Glob(filepath.Join(crds, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in %s: %v", crds, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(pkg, filepath.Base(f)), b)
	}
	xpkg := filepath.Join(work, "crossplane-schemas.xpkg")
	if b, err := exec.CommandContext(ctx, cli, "xpkg", "build", "--package-root="+pkg, "-o", xpkg).CombinedOutput(); err != nil {
		t.Fatalf("xpkg build: %v\n%s", err, b)
	}
	reg, err := registry.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Stop)
	if err := reg.Push(ctx, xpkg, "crossplane/crossplane", "stable", ""); err != nil {
		t.Fatal(err)
	}
	return reg.Host + "/crossplane/crossplane:stable"
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
