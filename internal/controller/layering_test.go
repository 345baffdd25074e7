package controller_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const module = "github.com/ayatori/provider-postgresql/"

// kinds are the packages that each reconcile one kind. They are leaves of
// the controller tree: what two of them share lives in a package of its
// own (oninstance, serverobject, privilege, locked, ...), so that changing
// one kind never means reading another, and the Instance controller is one
// user of the contract the kinds share rather than its home.
var kinds = []string{
	"internal/controller/instance",
	"internal/controller/role",
	"internal/controller/database",
	"internal/controller/schema",
	"internal/controller/grant",
	"internal/controller/defaultprivileges",
	"internal/controller/binding",
	"internal/controller/lock",
}

// registration is the one package that imports the kinds: it sets them up.
const registration = "internal/controller"

// layering returns every import of graph (package → its non-test imports,
// module-relative) that breaks the layering: a kind importing another kind,
// or anything but the registration importing a kind.
func layering(graph map[string][]string) []string {
	var out []string
	for pkg, imports := range graph {
		for _, imp := range imports {
			if !slices.Contains(kinds, imp) || pkg == registration {
				continue
			}
			switch {
			case slices.Contains(kinds, pkg):
				out = append(out, pkg+" imports "+imp+": kind packages do not import each other; move what they share into a package of its own")
			default:
				out = append(out, pkg+" imports "+imp+": only "+registration+" imports a kind package; shared code must not depend on a kind")
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestLayeringRules: the check itself, on made-up graphs.
func TestLayeringRules(t *testing.T) {
	cases := map[string]struct {
		graph map[string][]string
		want  []string
	}{
		"RegistrationImportsEveryKind": {
			graph: map[string][]string{registration: kinds},
		},
		"KindImportsTheSharedContract": {
			graph: map[string][]string{"internal/controller/role": {"internal/controller/oninstance", "internal/clients/postgres"}},
		},
		"KindImportsTheInstanceController": {
			graph: map[string][]string{"internal/controller/role": {"internal/controller/instance"}},
			want:  []string{"internal/controller/role imports internal/controller/instance: kind packages do not import each other; move what they share into a package of its own"},
		},
		"KindImportsAnotherKind": {
			graph: map[string][]string{"internal/controller/schema": {"internal/controller/lock"}},
			want:  []string{"internal/controller/schema imports internal/controller/lock: kind packages do not import each other; move what they share into a package of its own"},
		},
		"SharedContractImportsAKind": {
			graph: map[string][]string{"internal/controller/oninstance": {"internal/controller/database"}},
			want:  []string{"internal/controller/oninstance imports internal/controller/database: only internal/controller imports a kind package; shared code must not depend on a kind"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, layering(tc.graph)); diff != "" {
				t.Errorf("layering(...): -want, +got:\n%s", diff)
			}
		})
	}
}

// TestLayering holds the repository's own import graph (non-test files) to
// the layering. make lint runs it.
func TestLayering(t *testing.T) {
	graph, err := imports(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range append(slices.Clone(kinds), registration) {
		if _, ok := graph[k]; !ok {
			t.Fatalf("no package %s: the list of kinds in this test is out of date", k)
		}
	}
	for _, v := range layering(graph) {
		t.Error(v)
	}
}

// imports reads the module's import graph, restricted to its own packages,
// from the import clauses of every non-test Go file under root.
func imports(root string) (map[string][]string, error) {
	graph := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") || n == "testdata" || n == "tools") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		for _, s := range f.Imports {
			p, err := strconv.Unquote(s.Path.Value)
			if err != nil {
				return err
			}
			if imp, ok := strings.CutPrefix(p, module); ok && !slices.Contains(graph[pkg], imp) {
				graph[pkg] = append(graph[pkg], imp)
			}
		}
		if _, ok := graph[pkg]; !ok {
			graph[pkg] = nil
		}
		return nil
	})
	return graph, err
}
