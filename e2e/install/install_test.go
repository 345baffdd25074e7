// Package install installs the product the way docs/install.md tells a
// platform team to: the packages `make xpkg` builds, pushed to a registry on
// loopback, installed by Crossplane core's package manager, with Crossplane's
// RBAC manager binding the provider's ServiceAccount. The guide's shell
// blocks run as written.
package install

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ayatori/provider-postgresql/internal/fixture/controlplane"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// TestMain removes the packages built for the tests of this folder.
func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// packages builds the packages once, as `make xpkg` does (VERSION v0.1.0),
// and returns their folder.
func packages(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		var root string
		if root, buildErr = controlplane.RepoRoot(); buildErr != nil {
			return
		}
		if buildDir, buildErr = os.MkdirTemp("", "xpkg-"); buildErr != nil {
			return
		}
		start := time.Now()
		cmd := exec.Command(filepath.Join(root, "hack", "xpkg.sh"), buildDir)
		cmd.Env = append(os.Environ(), "VERSION=v0.1.0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("hack/xpkg.sh: %w\n%s", err, out)
			return
		}
		t.Logf("hack/xpkg.sh built the packages in %s", time.Since(start).Round(time.Second))
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildDir
}
