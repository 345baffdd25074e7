// Package install installs the product the way docs/install.md tells a
// platform team to: the packages `make xpkg` builds, pushed to a registry on
// loopback, installed by Crossplane core's package manager, with Crossplane's
// RBAC manager binding the provider's ServiceAccount. The guide's shell
// blocks run as written.
package install

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
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

// A step is a shell block of docs/install.md marked `<!-- run: name -->`.
type step struct {
	name, script string
}

var (
	runMarker    = regexp.MustCompile(`^<!-- run: ([a-z0-9-]+) -->$`)
	notRunMarker = regexp.MustCompile(`^<!-- not run: .+ -->$`)
)

// guide reads the steps of docs/install.md in order. Every sh block must be
// marked, either to run or with the reason it does not, so that no command
// of the guide escapes the test unnoticed.
func guide(path string) ([]step, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close() //nolint:errcheck // Read only.
	var (
		steps  []step
		marker string
		marked bool
		in     bool
		block  strings.Builder
		line   int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line++
		l := sc.Text()
		switch {
		case in && l == "```":
			in = false
			if marker != "" {
				steps = append(steps, step{name: marker, script: block.String()})
			}
			marker, marked = "", false
		case in:
			block.WriteString(l + "\n")
		case l == "```sh":
			if !marked {
				return nil, fmt.Errorf("docs/install.md:%d: a sh block without a <!-- run: name --> or <!-- not run: reason --> marker", line)
			}
			in = true
			block.Reset()
		case runMarker.MatchString(l):
			marker, marked = runMarker.FindStringSubmatch(l)[1], true
		case notRunMarker.MatchString(l):
			marker, marked = "", true
		case strings.TrimSpace(l) != "":
			marker, marked = "", false
		}
	}
	return steps, sc.Err()
}
