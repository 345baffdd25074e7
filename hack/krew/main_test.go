package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/ayatori/provider-postgresql/internal/fixture/controlplane"
	"github.com/ayatori/provider-postgresql/internal/fixture/tier"
)

// manifest is what a test reads of a krew manifest.
type manifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version   string `json:"version"`
		Platforms []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			SHA256 string `json:"sha256"`
			Bin    string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

// TestTemplate renders .krew.yaml as a release would, every platform
// built: each platform's address is its archive's on the release, with
// that archive's checksum.
func TestTemplate(t *testing.T) {
	built := map[string]string{}
	var want []string
	for _, p := range strings.Split(allPlatforms, ",") {
		goos, goarch, _ := strings.Cut(p, "/")
		name := fmt.Sprintf("kubectl-pg_v1.2.3_%s_%s.tar.gz", goos, goarch)
		built[name] = fmt.Sprintf("%064x", len(built)+1)
		want = append(want, fmt.Sprintf("%s/%s https://github.com/ayatori/provider-postgresql/releases/download/v1.2.3/%s %s kubectl-pg", goos, goarch, name, built[name]))
	}
	b, err := render(filepath.Join("..", "..", ".krew.yaml"), "v1.2.3", built)
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != "pg" || m.Spec.Version != "v1.2.3" {
		t.Errorf("rendered %s %s %s %s", m.APIVersion, m.Kind, m.Metadata.Name, m.Spec.Version)
	}
	var got []string
	for _, p := range m.Spec.Platforms {
		got = append(got, fmt.Sprintf("%s/%s %s %s %s", p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"], p.URI, p.SHA256, p.Bin))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("platforms (-want +got):\n%s", diff)
	}
	if err := run("1.2.3", t.TempDir(), "linux/amd64", ".krew.yaml"); err == nil || !strings.Contains(err.Error(), "not a release version") {
		t.Errorf("a version without its v: %v", err)
	}
	if err := run("v1.2.3", t.TempDir(), "plan9/amd64", ".krew.yaml"); err == nil || !strings.Contains(err.Error(), "-platforms") {
		t.Errorf("an unknown platform: %v", err)
	}
}

// TestKrewInstalls runs `make krew` for this machine's platform and
// installs the plugin with krew itself from the manifest and archive it
// wrote, as a user of a release would; kubectl then finds it and runs it.
func TestKrewInstalls(t *testing.T) {
	tier.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := exec.Command(filepath.Join(root, "hack", "krew-tools.sh"), "--dir").Output()
	if err != nil {
		t.Fatal(err)
	}
	krew := filepath.Join(strings.TrimSpace(string(dir)), "krew")
	if _, err := os.Stat(krew); err != nil {
		t.Fatalf("krew is missing (%v): run `make tools`", err)
	}
	out := t.TempDir()
	platform := runtime.GOOS + "/" + runtime.GOARCH
	cmd := exec.CommandContext(ctx, "go", "run", "./hack/krew", "-version", "v0.1.0", "-out", out, "-platforms", platform)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run ./hack/krew: %v\n%s", err, b)
	}
	b, err := os.ReadFile(filepath.Join(out, "kubectl-pg.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(out, fmt.Sprintf("kubectl-pg_v0.1.0_%s_%s.tar.gz", runtime.GOOS, runtime.GOARCH))
	a, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(a)
	if len(m.Spec.Platforms) != 1 || m.Spec.Platforms[0].SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("the manifest does not name the archive's checksum %x:\n%s", sum, b)
	}

	krewRoot := filepath.Join(t.TempDir(), "krew")
	env := append(os.Environ(), "KREW_ROOT="+krewRoot, "HOME="+t.TempDir(),
		"PATH="+filepath.Join(krewRoot, "bin")+":"+os.Getenv("KUBEBUILDER_ASSETS")+":"+os.Getenv("PATH"))
	install := exec.CommandContext(ctx, krew, "install", "--manifest="+filepath.Join(out, "kubectl-pg.yaml"), "--archive="+archive)
	install.Env = env
	if b, err := install.CombinedOutput(); err != nil || !strings.Contains(string(b), "Installed plugin: pg") {
		t.Fatalf("krew install: %v\n%s", err, b)
	}
	kubectl := exec.CommandContext(ctx, filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"), "pg", "version")
	kubectl.Env = env
	if b, err := kubectl.CombinedOutput(); err != nil || strings.TrimSpace(string(b)) != "kubectl-pg v0.1.0" {
		t.Errorf("kubectl pg version after krew install: %v, %q", err, b)
	}
}
