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

	"github.com/ayatori/provider-postgresql/internal/controller"
)

const module = "github.com/ayatori/provider-postgresql/"

// kindPackages are the packages that each reconcile one kind, read from
// the registration (every controller's setup function). They are leaves of
// the controller tree: what two of them share lives in a package of its
// own (oninstance, serverobject, privilege, locked, ...), so that changing
// one kind never means reading another, and the Instance controller is one
// user of the contract the kinds share rather than its home.
func kindPackages() []string {
	var out []string
	for _, pkgs := range controller.ControllerPackages(module) {
		for _, p := range pkgs {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	slices.Sort(out)
	return out
}

var kinds = kindPackages()

// registration is the one package that imports the kinds: it sets them up.
const registration = "internal/controller"

// functions are the composition function's packages. Crossplane runs the
// function beside every claim; it reads and writes API objects and nothing
// else, so it is built from the API types, the function SDK and itself
// (functionMay): never from the provider's controllers, whose database
// driver and manager would only make its image bigger and its attack
// surface wider.
var functions = []string{"cmd/function-tenant", "internal/tenant"}

// functionMay are the module's packages a function package may reach, as
// prefixes.
var functionMay = []string{"apis/", "internal/tenant", "internal/version"}

// functionMayNot are outside packages no function package may reach: the
// database driver, and controller-runtime's manager and reconcilers.
var functionMayNot = []string{"github.com/jackc/", "sigs.k8s.io/controller-runtime/pkg/manager", "sigs.k8s.io/controller-runtime/pkg/reconcile"}

// layering returns every import of graph (package → its non-test imports,
// module-relative; an outside import is its full path) that breaks the
// layering: a kind importing another kind, anything but the registration
// importing a kind, or a function package reaching beyond what it may.
func layering(graph map[string][]string) []string {
	out := reachable(graph)
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

// reachable returns what the function packages import, directly or through
// the module's packages they import, that they may not.
func reachable(graph map[string][]string) []string {
	var out []string
	seen := map[string]bool{}
	queue := slices.Clone(functions)
	for len(queue) > 0 {
		pkg := queue[0]
		queue = queue[1:]
		if seen[pkg] {
			continue
		}
		seen[pkg] = true
		for _, imp := range graph[pkg] {
			outside := strings.Contains(strings.Split(imp, "/")[0], ".")
			switch {
			case outside && slices.ContainsFunc(functionMayNot, func(p string) bool { return strings.HasPrefix(imp, p) }):
				out = append(out, pkg+" imports "+imp+": the composition function is built from the API types and the function SDK only")
			case !outside && !slices.ContainsFunc(functionMay, func(p string) bool { return strings.HasPrefix(imp, p) }):
				out = append(out, pkg+" imports "+imp+": the composition function is built from the API types and the function SDK only")
			case !outside:
				queue = append(queue, imp)
			}
		}
	}
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
		"FunctionImportsTheAPI": {
			graph: map[string][]string{
				"cmd/function-tenant": {"internal/tenant", "internal/version", "github.com/crossplane/function-sdk-go"},
				"internal/tenant":     {"apis/database/v1alpha1"},
			},
		},
		"FunctionReachesTheDriver": {
			graph: map[string][]string{
				"cmd/function-tenant":    {"internal/tenant"},
				"internal/tenant":        {"apis/database/v1alpha1", "internal/controller/pending"},
				"apis/database/v1alpha1": {"github.com/jackc/pgx/v5"},
			},
			want: []string{
				"apis/database/v1alpha1 imports github.com/jackc/pgx/v5: the composition function is built from the API types and the function SDK only",
				"internal/tenant imports internal/controller/pending: the composition function is built from the API types and the function SDK only",
			},
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
	for _, k := range append(append(slices.Clone(kinds), functions...), registration) {
		if _, ok := graph[k]; !ok {
			t.Fatalf("no package %s: the lists of packages in this test are out of date", k)
		}
	}
	for _, v := range layering(graph) {
		t.Error(v)
	}
}

// imports reads the module's import graph (its own packages relative to
// the module, outside ones by their path, the standard library left out)
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
			if !strings.Contains(strings.Split(p, "/")[0], ".") {
				continue // the standard library
			}
			if imp := strings.TrimPrefix(p, module); !slices.Contains(graph[pkg], imp) {
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
