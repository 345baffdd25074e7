package v1alpha1_test

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/internal/fixture/controlplane"
)

// conditionConstructors are crossplane's condition constructors, by name,
// with the reason each sets. A call to one the table lacks fails the test
// below, so a new one cannot slip by unclassified.
var conditionConstructors = map[string]func() xpv2.Condition{
	"Available":        xpv2.Available,
	"Unavailable":      xpv2.Unavailable,
	"Creating":         xpv2.Creating,
	"Deleting":         xpv2.Deleting,
	"ReconcileSuccess": xpv2.ReconcileSuccess,
	"ReconcileError":   func() xpv2.Condition { return xpv2.ReconcileError(errors.New("any")) },
	"ReconcilePaused":  xpv2.ReconcilePaused,
	"ObserveMatched":   xpv2.ObserveMatched,
	"UpdateRequested":  xpv2.UpdateRequested,
	"UpdateRestricted": xpv2.UpdateRestricted,
	"UpdateFailed":     xpv2.UpdateFailed,
	"PausedUnknown":    xpv2.PausedUnknown,
}

// classes are the classes docs/reasons.md defines.
var classes = []string{"Progress", "Notice", "Retry", "Conflict", "Refused", "Invalid"}

// TestEveryReasonIsClassified: every condition reason the provider can set
// (a string constant named reason… in its code, or a crossplane condition
// its code or crossplane-runtime's managed reconciler constructs) has one
// row in docs/reasons.md, with one of the classes, and every row is a
// reason the code can set. The reasons are read from the code, so a new
// one fails here until the table says what it means.
func TestEveryReasonIsClassified(t *testing.T) {
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]string{} // reason -> where
	for _, dir := range []string{"apis", "cmd", "internal"} {
		scan(t, filepath.Join(root, dir), set, true)
	}
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", "github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed").Output()
	if err != nil {
		t.Fatalf("go list crossplane-runtime's managed reconciler: %v", err)
	}
	scan(t, strings.TrimSpace(string(out)), set, false)
	if len(set) < 30 {
		t.Fatalf("found only %d reasons in the code: the scan is broken (%v)", len(set), set)
	}

	doc, err := os.ReadFile(filepath.Join(root, "docs", "reasons.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([A-Za-z]+)` \\| ([A-Za-z]+) \\| [^|]+ \\| [^|]+ \\|$")
	documented := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		if _, dup := documented[m[1]]; dup {
			t.Errorf("docs/reasons.md lists %s twice", m[1])
		}
		documented[m[1]] = m[2]
		if !slices.Contains(classes, m[2]) {
			t.Errorf("docs/reasons.md gives %s the class %q, not one of %v", m[1], m[2], classes)
		}
	}
	var missing, stale []string
	for r, where := range set {
		if _, ok := documented[r]; !ok {
			missing = append(missing, r+" ("+where+")")
		}
	}
	for r := range documented {
		if _, ok := set[r]; !ok {
			stale = append(stale, r)
		}
	}
	slices.Sort(missing)
	slices.Sort(stale)
	if diff := cmp.Diff([]string(nil), missing); diff != "" {
		t.Errorf("reasons the code can set that docs/reasons.md does not classify (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string(nil), stale); diff != "" {
		t.Errorf("reasons docs/reasons.md lists that no code sets (-want +got):\n%s", diff)
	}
}

// scan adds to set the reasons the Go files below dir can set: with
// consts, string constants named Reason… or reason… (not event reasons);
// always, the reasons of the crossplane condition constructors called.
func scan(t *testing.T, dir string, set map[string]string, consts bool) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
			strings.Contains(path, string(filepath.Separator)+"fixture"+string(filepath.Separator)) {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		xp := importName(f, "github.com/crossplane/crossplane/apis/v2/core/v2")
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				if !consts || eventReason(n.Type) {
					return true
				}
				for i, name := range n.Names {
					if !strings.HasPrefix(strings.ToLower(name.Name), "reason") || i >= len(n.Values) {
						continue
					}
					if lit, ok := n.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, _ := strconv.Unquote(lit.Value)
						set[v] = fset.Position(lit.Pos()).String()
					}
				}
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok || xp == "" {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); !ok || id.Name != xp {
					return true
				}
				if c, ok := conditionConstructors[sel.Sel.Name]; ok {
					set[string(c().Reason)] = fset.Position(n.Pos()).String()
				} else if strings.ToUpper(sel.Sel.Name[:1]) == sel.Sel.Name[:1] && !strings.HasPrefix(sel.Sel.Name, "New") {
					t.Errorf("%s calls %s.%s: add it to conditionConstructors if it makes a condition", fset.Position(n.Pos()), xp, sel.Sel.Name)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// importName is the name f gives the package of path, "" when f does not
// import it.
func importName(f *ast.File, path string) string {
	for _, i := range f.Imports {
		if p, _ := strconv.Unquote(i.Path.Value); p == path {
			if i.Name != nil {
				return i.Name.Name
			}
			return "v2"
		}
	}
	return ""
}

// eventReason reports whether a const's type is an event reason.
func eventReason(typ ast.Expr) bool {
	sel, ok := typ.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Reason"
}
