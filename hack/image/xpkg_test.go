package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/ayatori/provider-postgresql/internal/fixture/controlplane"
)

// TestProviderPackage builds the provider's .xpkg the way `make xpkg` does
// and unpacks it: the package layer holds the Provider meta and every CRD
// of package/crds, and the embedded runtime image runs the provider as a
// non-root user on this machine's architecture.
func TestProviderPackage(t *testing.T) {
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cmd := exec.Command(filepath.Join(root, "hack", "xpkg.sh"), out)
	cmd.Env = append(os.Environ(), "VERSION=v0.0.0-test")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/xpkg.sh: %v\n%s", err, b)
	}
	path := filepath.Join(out, "provider-postgresql.xpkg")
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("provider-postgresql.xpkg: %.1f MiB", float64(st.Size())/(1<<20))
	if st.Size() > 40<<20 {
		t.Errorf("the package is %d bytes; keep the image small", st.Size())
	}

	img, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		t.Fatalf("the .xpkg is not an image tarball: %v", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if ep := cfg.Config.Entrypoint; len(ep) != 1 || ep[0] != "/usr/local/bin/provider" {
		t.Errorf("entrypoint %v", ep)
	}
	if u := cfg.Config.User; u != User+":"+User {
		t.Errorf("user %q, want the non-root %s", u, User)
	}
	if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s", cfg.OS, cfg.Architecture)
	}

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
			if h.Typeflag == tar.TypeReg && (h.Name == "package.yaml" || strings.HasSuffix(h.Name, "bin/provider")) {
				b, _ := io.ReadAll(tr)
				files[h.Name] = b
			}
		}
		_ = rc.Close()
	}
	if len(files["usr/local/bin/provider"]) == 0 {
		t.Error("the runtime image holds no provider binary")
	}
	pkg := files["package.yaml"]
	if len(pkg) == 0 {
		t.Fatal("no package.yaml layer")
	}
	var kinds, crds []string
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(pkg), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatal(err)
		}
		if len(u.Object) == 0 {
			continue
		}
		kinds = append(kinds, u.GetKind())
		if u.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, u.GetName())
		}
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
}
