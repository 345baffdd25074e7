package configuration_test

import (
	"bytes"
	"context"
	"flag"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ayatori/provider-postgresql/configuration"
	"github.com/ayatori/provider-postgresql/internal/fixture/controlplane"
	"github.com/ayatori/provider-postgresql/internal/fixture/proc"
	"github.com/ayatori/provider-postgresql/internal/manifest"
)

var update = flag.Bool("update", false, "rewrite the render golden files from what the render produces")

// crossplaneTools returns the folder of the Crossplane binaries that
// hack/crossplane-tools.sh builds, failing the test when they are missing.
func crossplaneTools(t *testing.T, root string) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(root, "hack", "crossplane-tools.sh"), "--dir").Output()
	if err != nil {
		t.Fatalf("hack/crossplane-tools.sh --dir: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	for _, b := range []string{"crossplane", "crossplane-cli", "function-auto-ready"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			t.Fatalf("%s is missing from %s: run `make tools` (it builds Crossplane core, its CLI and function-auto-ready from the Go module proxy, once)", b, dir)
		}
	}
	return dir
}

// serve starts a composition function on a free loopback port, insecure
// (render's Development runtime), and returns its address.
func serve(t *testing.T, name string, bin string) string {
	t.Helper()
	port, err := proc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	p, err := proc.Start(exec.Command(bin, "--insecure", "--address="+addr), filepath.Join(t.TempDir(), name+".log"), syscall.SIGKILL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(syscall.SIGTERM, 5*time.Second) })
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			_ = c.Close()
			return addr
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s did not listen on %s; its log:\n%s", name, addr, p.LogTail())
	return ""
}

// TestRender renders the shipped Composition with the real functions and
// Crossplane's render engine (no Docker) for a table of tenants, compares
// the output with golden files, and has the API server validate every
// rendered object against the provider's CRDs and the XRD's (dry run).
func TestRender(t *testing.T) {
	suite.Server(t)
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	tools := crossplaneTools(t, root)
	fn := filepath.Join(t.TempDir(), "function-tenant")
	build := exec.Command("go", "build", "-o", fn, "./cmd/function-tenant")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("cannot build the function: %v\n%s", err, out)
	}
	tenantAddr := serve(t, "function-tenant", fn)
	readyAddr := serve(t, "function-auto-ready", filepath.Join(tools, "function-auto-ready"))
	functions := filepath.Join(t.TempDir(), "functions.yaml")
	if err := os.WriteFile(functions, []byte(`apiVersion: pkg.crossplane.io/v1
kind: Function
metadata:
  name: `+configuration.FunctionTenant+`
  annotations:
    render.crossplane.io/runtime: Development
    render.crossplane.io/runtime-development-target: `+tenantAddr+`
spec:
  package: ghcr.io/ayatori/function-postgresql-tenant:v0.1.0
---
apiVersion: pkg.crossplane.io/v1
kind: Function
metadata:
  name: `+configuration.FunctionAutoReady+`
  annotations:
    render.crossplane.io/runtime: Development
    render.crossplane.io/runtime-development-target: `+readyAddr+`
spec:
  package: xpkg.crossplane.io/crossplane-contrib/function-auto-ready:v0.7.0
`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, ns := range []string{"shop", "finance"} {
		if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}

	testdata := filepath.Join(root, "configuration", "testdata", "render")
	// namespaced is a namespaced Tenant through its own Composition: it
	// composes what the claim of secret-name does, in its own namespace.
	for _, c := range []string{"defaults", "explicit-names", "extensions", "secret-name", "database-ref", "pending", "vault-instance", "namespaced"} {
		t.Run(c, func(t *testing.T) {
			composition := "composition.yaml"
			if c == "namespaced" {
				composition = "tenant-composition.yaml"
			}
			args := []string{"composition", "render", filepath.Join(testdata, c+".xr.yaml"), filepath.Join(root, "configuration", composition), functions,
				"--crossplane-binary=" + filepath.Join(tools, "crossplane"), "--include-full-xr"}
			// Cases with an observed binding show what is composed once
			// the provider bound the tenant's database; the others, that
			// nothing but the request is composed before.
			if obs := filepath.Join(testdata, c+".observed.yaml"); exists(obs) {
				args = append(args, "--observed-resources="+obs)
			}
			cmd := exec.CommandContext(ctx, filepath.Join(tools, "crossplane-cli"), args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("render: %v\n%s", err, stderr.String())
			}
			golden := filepath.Join(testdata, c+".golden.yaml")
			if *update {
				if err := os.WriteFile(golden, out, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run the test with -update to write it)", err)
			}
			if diff := cmp.Diff(string(want), string(out)); diff != "" {
				t.Errorf("render output differs from %s (-want +got):\n%s", golden, diff)
			}
			validate(ctx, t, out)
		})
	}
}

// validate creates every rendered object in dry-run mode: the API server
// checks it against the installed CRDs (schema and CEL) without storing it.
func validate(ctx context.Context, t *testing.T, rendered []byte) {
	t.Helper()
	objs, err := manifest.Decode(rendered)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, u := range objs {
		if u.GetKind() == "Result" {
			continue
		}
		// Render sets UIDs that the API server would assign itself.
		u.SetOwnerReferences(nil)
		if err := kube.Create(ctx, u, client.DryRunAll); err != nil {
			t.Errorf("the API server refuses the rendered %s %s: %v", u.GetKind(), u.GetName(), err)
		}
		n++
	}
	if n < 2 {
		t.Errorf("only %d objects rendered", n)
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
