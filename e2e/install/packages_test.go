package install

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ayatori/provider-postgresql/internal/fixture/controlplane"
	"github.com/ayatori/provider-postgresql/internal/fixture/tier"
	"github.com/ayatori/provider-postgresql/internal/manifest"
)

// TestPackages unpacks the packages `make xpkg` builds: each package
// layer holds its meta and objects, and each embedded runtime image runs its
// binary as a non-root user on this machine's architecture.
func TestPackages(t *testing.T) {
	tier.Server(t)
	out := packages(t)
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("Provider", func(t *testing.T) { providerPackage(t, root, out) })
	t.Run("Function", func(t *testing.T) {
		kinds, files := unpack(t, filepath.Join(out, "function-postgresql-tenant.xpkg"), "/usr/local/bin/function-tenant")
		if len(kinds) == 0 || kinds[0] != "Function" {
			t.Errorf("the package holds %v, want the Function meta first", kinds)
		}
		// Its input's CRD, for `crossplane resource validate`.
		if diff := cmp.Diff([]string{"inputs.tenant.fn.database.ayatori.ddupan.top"}, crdNames(t, files["package.yaml"])); diff != "" {
			t.Errorf("the function package's CRDs (-want +got):\n%s", diff)
		}
		if len(files["usr/local/bin/function-tenant"]) == 0 {
			t.Error("the runtime image holds no function binary")
		}
		if ex, ok := files[examplesFile]; ok {
			t.Errorf("the function package carries examples of its own: %s", ex)
		}
	})
	t.Run("Configuration", func(t *testing.T) {
		img, err := tarball.ImageFromPath(filepath.Join(out, "configuration-postgresql-tenant.xpkg"), nil)
		if err != nil {
			t.Fatal(err)
		}
		kinds, files := contents(t, img)
		// The claim's XRD and Composition, and the namespaced Tenant's.
		if got := strings.Join(kinds, ","); got != "Configuration,Composition,CompositeResourceDefinition,Composition,CompositeResourceDefinition" {
			t.Errorf("the Configuration package holds %v", kinds)
		}
		if diff := cmp.Diff(exampleKinds(t, filepath.Join(root, "examples", "tenant")), kindsOf(t, files[examplesFile])); diff != "" {
			t.Errorf("the Configuration package's examples (-examples/tenant +package):\n%s", diff)
		}
	})
}

// unpack opens a package with an embedded runtime image and checks the
// image's entrypoint, user, platform and size; it returns the kinds in the
// package layer and the binaries found.
func unpack(t *testing.T, path, entrypoint string) ([]string, map[string][]byte) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %.1f MiB", filepath.Base(path), float64(st.Size())/(1<<20))
	if st.Size() > maxPackageSize {
		t.Errorf("the package is %d bytes; keep the image small", st.Size())
	}
	img, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		t.Fatalf("%s is not an image tarball: %v", path, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if ep := cfg.Config.Entrypoint; len(ep) != 1 || ep[0] != entrypoint {
		t.Errorf("entrypoint %v, want %s", ep, entrypoint)
	}
	if u := cfg.Config.User; u != nonRoot+":"+nonRoot {
		t.Errorf("user %q, want the non-root %s", u, nonRoot)
	}
	if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s", cfg.OS, cfg.Architecture)
	}
	return contents(t, img)
}

// maxPackageSize bounds a package with its runtime image: keep them small.
const maxPackageSize = 40 << 20

// packageFiles returns the package's files of interest (package.yaml and
// binaries).
func packageFiles(t *testing.T, path string) map[string][]byte {
	t.Helper()
	img, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		t.Fatalf("%s is not an image tarball: %v", path, err)
	}
	_, files := contents(t, img)
	return files
}

// nonRoot is the user hack/image runs binaries as.
const nonRoot = "65532"

func providerPackage(t *testing.T, root, out string) {
	kinds, files := unpack(t, filepath.Join(out, "provider-postgresql.xpkg"), "/usr/local/bin/provider")
	crds := crdNames(t, files["package.yaml"])
	if len(files["usr/local/bin/provider"]) == 0 {
		t.Error("the runtime image holds no provider binary")
	}
	if len(kinds) == 0 || kinds[0] != "Provider" {
		t.Errorf("the package starts with %v, want the Provider meta", kinds)
	}
	entries, err := os.ReadDir(filepath.Join(root, "package", "crds"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range entries {
		// database.ayatori.ddupan.top_locks.yaml -> locks.database.ayatori.ddupan.top
		group, plural, _ := strings.Cut(strings.TrimSuffix(e.Name(), ".yaml"), "_")
		want = append(want, plural+"."+group)
	}
	sort.Strings(want)
	sort.Strings(crds)
	if strings.Join(want, ",") != strings.Join(crds, ",") {
		t.Errorf("package CRDs %v, want every CRD of package/crds %v", crds, want)
	}
	// Every example of examples/ but those of examples/tenant (the
	// Configuration's: the claim and the namespaced Tenant), as a package
	// registry shows them.
	wantEx := exampleKinds(t, filepath.Join(root, "examples"))
	for k, n := range exampleKinds(t, filepath.Join(root, "examples", "tenant")) {
		if wantEx[k] -= n; wantEx[k] == 0 {
			delete(wantEx, k)
		}
	}
	if diff := cmp.Diff(wantEx, kindsOf(t, files[examplesFile])); diff != "" {
		t.Errorf("the provider package's examples (-examples/ +package):\n%s", diff)
	}
}

// examplesFile is where crossplane xpkg build puts a package's examples.
const examplesFile = ".up/examples.yaml"

// kindsOf counts the objects of each kind in a YAML stream.
func kindsOf(t *testing.T, b []byte) map[string]int {
	t.Helper()
	if len(b) == 0 {
		t.Error("the package carries no examples")
		return nil
	}
	n := map[string]int{}
	for _, u := range decode(t, b) {
		n[u.GetKind()]++
	}
	return n
}

// exampleKinds counts the objects of each kind in the YAML files under dir.
func exampleKinds(t *testing.T, dir string) map[string]int {
	t.Helper()
	n, err := manifest.KindsIn(dir)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// contents reads the package layer's kinds and the files of interest (the
// package itself and binaries) from an image.
func contents(t *testing.T, img v1.Image) ([]string, map[string][]byte) {
	t.Helper()
	files := map[string][]byte{}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Typeflag == tar.TypeReg && (h.Name == "package.yaml" || h.Name == examplesFile || strings.HasPrefix(h.Name, "usr/local/bin/")) {
				b, _ := io.ReadAll(tr)
				files[h.Name] = b
			}
		}
		_ = rc.Close()
	}
	pkg := files["package.yaml"]
	if len(pkg) == 0 {
		t.Fatal("no package.yaml layer")
	}
	var kinds []string
	for _, u := range decode(t, pkg) {
		kinds = append(kinds, u.GetKind())
	}
	return kinds, files
}

func decode(t *testing.T, b []byte) []*unstructured.Unstructured {
	t.Helper()
	objs, err := manifest.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func crdNames(t *testing.T, pkg []byte) []string {
	t.Helper()
	var crds []string
	for _, u := range decode(t, pkg) {
		if u.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, u.GetName())
		}
	}
	return crds
}

// TestDockerfiles keeps cluster/images/*/Dockerfile, for those who build
// with Docker, in step with the images make xpkg builds: the same command
// built statically, at the same path, run as the same non-root user.
func TestDockerfiles(t *testing.T) {
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for image, c := range map[string]struct{ pkg, bin string }{
		"provider-postgresql":        {"./cmd/provider", "provider"},
		"function-postgresql-tenant": {"./cmd/function-tenant", "function-tenant"},
	} {
		b, err := os.ReadFile(filepath.Join(root, "cluster", "images", image, "Dockerfile"))
		if err != nil {
			t.Fatal(err)
		}
		df := string(b)
		for _, want := range []string{
			"CGO_ENABLED=0",
			"-o /out/" + c.bin + " " + c.pkg + "\n",
			"COPY --from=build /out/" + c.bin + " /usr/local/bin/" + c.bin + "\n",
			"USER " + nonRoot + ":" + nonRoot + "\n",
			`ENTRYPOINT ["/usr/local/bin/` + c.bin + `"]`,
		} {
			if !strings.Contains(df, want) {
				t.Errorf("cluster/images/%s/Dockerfile lacks %q", image, want)
			}
		}
	}
}
