// Command mrgen writes the Crossplane managed-resource method sets for API
// types that declare their own spec instead of embedding crossplane-runtime's
// stock one.
//
// angryjet (crossplane-tools) only recognises types that embed the stock
// spec, which we cannot use: it carries a providerConfigRef we never read
// and a managementPolicies default that controller-gen cannot override. So
// each managed kind declares ManagementPolicies (and, where it publishes a
// connection Secret, WriteConnectionSecretToReference) in its own spec and
// marks the type with the comment
//
//	+mrgen:managed
//
// For every marked type T, mrgen writes into zz_generated.managed.go the
// methods that make *T a resource.Managed and a
// resource.LocalConnectionSecretOwner, and makes TList a
// resource.ManagedList. A kind without WriteConnectionSecretToReference gets
// a getter that always returns nil: crossplane-runtime refuses to reconcile a
// kind that implements neither connection-secret interface.
//
// Usage:
//
//	go run ./hack/mrgen <package dir> [<package dir> ...]
package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/template"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

const (
	marker = "+mrgen:managed"
	// ownSecret marks a managed type whose controller writes its
	// connection Secret itself: crossplane-runtime is told it has none.
	ownSecret  = "+mrgen:delivers-own-secret"
	outputFile = "zz_generated.managed.go"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: mrgen <package dir> [<package dir> ...]")
		os.Exit(2)
	}
	for _, dir := range os.Args[1:] {
		if err := generate(dir); err != nil {
			fmt.Fprintf(os.Stderr, "mrgen: %s: %v\n", dir, err)
			os.Exit(1)
		}
	}
}

// generate writes the method sets of the marked types in dir, or removes a
// stale output file when no type is marked.
func generate(dir string) error {
	src, err := Generate(dir)
	if err != nil {
		return err
	}
	out := filepath.Join(dir, outputFile)
	if src == nil {
		if err := os.Remove(out); err != nil && !os.IsNotExist(err) {
			return errors.Errorf("cannot remove stale %s: %w", out, err)
		}
		return nil
	}
	return os.WriteFile(out, src, 0o644)
}

// A kind is one marked managed resource type.
type kind struct {
	Name string
	// PublishesSecret is true when the spec has WriteConnectionSecretToReference.
	PublishesSecret bool
	// OwnSecret is true for a type marked +mrgen:delivers-own-secret: its
	// controller writes the Secret, so crossplane-runtime's publisher,
	// which would write it again after each step, sees none.
	OwnSecret bool
	// HasList is true when the package declares <Name>List.
	HasList bool
}

// Generate returns the formatted source of zz_generated.managed.go for the
// package in dir, or nil when no type in it is marked.
func Generate(dir string) ([]byte, error) {
	files, err := parsePackage(dir)
	if err != nil {
		return nil, err
	}
	structs, marked, own := collect(files)
	if len(marked) == 0 {
		return nil, nil
	}
	sort.Strings(marked)

	kinds := make([]kind, 0, len(marked))
	for _, name := range marked {
		k, err := inspect(name, structs)
		k.OwnSecret = own[name]
		if k.OwnSecret && !k.PublishesSecret {
			return nil, errors.Errorf("%s is marked %s but its spec has no WriteConnectionSecretToReference", name, ownSecret)
		}
		if err != nil {
			return nil, err
		}
		kinds = append(kinds, k)
	}

	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, struct {
		Package string
		Kinds   []kind
	}{Package: files[0].Name.Name, Kinds: kinds}); err != nil {
		return nil, errors.Errorf("cannot render: %w", err)
	}
	src, err := format.Source(buf.Bytes())
	if err != nil {
		return nil, errors.Errorf("cannot format generated source: %w\n%s", err, buf.String())
	}
	return src, nil
}

// parsePackage parses the hand-written Go files of the package in dir.
func parsePackage(dir string) ([]*ast.File, error) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, errors.Errorf("cannot read package: %w", err)
	}
	var files []*ast.File
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") || strings.HasPrefix(n, "zz_generated") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.ParseComments)
		if err != nil {
			return nil, errors.Errorf("cannot parse %s: %w", n, err)
		}
		if len(files) > 0 && f.Name.Name != files[0].Name.Name {
			return nil, errors.Errorf("%s is package %s, not %s", n, f.Name.Name, files[0].Name.Name)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, errors.New("no Go files")
	}
	return files, nil
}

// collect returns the struct types of the files by name, and the names of
// the types marked +mrgen:managed, and which of those are marked
// +mrgen:delivers-own-secret.
func collect(files []*ast.File) (map[string]*ast.StructType, []string, map[string]bool) {
	structs := map[string]*ast.StructType{}
	var marked []string
	own := map[string]bool{}
	for _, f := range files {
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec) //nolint:forcetypeassert // A TYPE GenDecl only holds TypeSpecs.
				if st, ok := ts.Type.(*ast.StructType); ok {
					structs[ts.Name.Name] = st
				}
				doc := ts.Doc
				if doc == nil && len(gd.Specs) == 1 {
					doc = gd.Doc
				}
				if hasMarker(doc, marker) {
					marked = append(marked, ts.Name.Name)
					own[ts.Name.Name] = hasMarker(doc, ownSecret)
				}
			}
		}
	}
	return structs, marked, own
}

func hasMarker(doc *ast.CommentGroup, marker string) bool {
	if doc == nil {
		return false
	}
	for _, c := range doc.List {
		if strings.TrimSpace(strings.TrimPrefix(c.Text, "//")) == marker {
			return true
		}
	}
	return false
}

// inspect checks that a marked type has the shape the generated methods
// rely on, so a mistake fails generation instead of compilation.
func inspect(name string, structs map[string]*ast.StructType) (kind, error) {
	k := kind{Name: name}
	st, ok := structs[name]
	if !ok {
		return k, errors.Errorf("%s is marked %s but is not a struct", name, marker)
	}
	specType, ok := fieldType(st, "Spec")
	if !ok {
		return k, errors.Errorf("%s has no Spec field", name)
	}
	spec, ok := structs[specType]
	if !ok {
		return k, errors.Errorf("%s.Spec has type %s, which is not a struct of this package", name, specType)
	}
	if _, ok := fieldType(spec, "ManagementPolicies"); !ok {
		return k, errors.Errorf("%s has no ManagementPolicies field", specType)
	}
	if _, ok := fieldType(spec, "WriteConnectionSecretToReference"); ok {
		k.PublishesSecret = true
	}
	statusType, ok := fieldType(st, "Status")
	if !ok {
		return k, errors.Errorf("%s has no Status field", name)
	}
	status, ok := structs[statusType]
	if !ok {
		return k, errors.Errorf("%s.Status has type %s, which is not a struct of this package", name, statusType)
	}
	if !embeds(status, "ManagedResourceStatus") {
		return k, errors.Errorf("%s does not embed ManagedResourceStatus", statusType)
	}
	list, ok := structs[name+"List"]
	if ok {
		if _, ok := fieldType(list, "Items"); !ok {
			return k, errors.Errorf("%sList has no Items field", name)
		}
		k.HasList = true
	}
	return k, nil
}

// fieldType returns the name of the type of the named field, without any
// pointer, slice or package qualifier.
func fieldType(st *ast.StructType, field string) (string, bool) {
	for _, f := range st.Fields.List {
		for _, n := range f.Names {
			if n.Name == field {
				return typeName(f.Type), true
			}
		}
	}
	return "", false
}

func embeds(st *ast.StructType, name string) bool {
	for _, f := range st.Fields.List {
		if len(f.Names) == 0 && typeName(f.Type) == name {
			return true
		}
	}
	return false
}

func typeName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.Ident:
		return t.Name
	case *ast.StarExpr:
		return typeName(t.X)
	case *ast.ArrayType:
		return typeName(t.Elt)
	case *ast.SelectorExpr:
		return t.Sel.Name
	default:
		return ""
	}
}

var tmpl = template.Must(template.New("managed").Parse(`// Code generated by hack/mrgen. DO NOT EDIT.

package {{ .Package }}

import (
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
)
{{ range .Kinds }}
var (
	_ resource.Managed                    = &{{ .Name }}{}
	_ resource.LocalConnectionSecretOwner = &{{ .Name }}{}
{{- if .HasList }}
	_ resource.ManagedList                = &{{ .Name }}List{}
{{- end }}
)

// GetCondition of this {{ .Name }}.
func (mg *{{ .Name }}) GetCondition(ct xpv2.ConditionType) xpv2.Condition {
	return mg.Status.GetCondition(ct)
}

// SetConditions of this {{ .Name }}.
func (mg *{{ .Name }}) SetConditions(c ...xpv2.Condition) {
	mg.Status.SetConditions(c...)
}

// GetManagementPolicies of this {{ .Name }}.
func (mg *{{ .Name }}) GetManagementPolicies() xpv2.ManagementPolicies {
	return mg.Spec.ManagementPolicies
}

// SetManagementPolicies of this {{ .Name }}.
func (mg *{{ .Name }}) SetManagementPolicies(r xpv2.ManagementPolicies) {
	mg.Spec.ManagementPolicies = r
}

// GetObservedGeneration of this {{ .Name }}.
func (mg *{{ .Name }}) GetObservedGeneration() int64 {
	return mg.Status.GetObservedGeneration()
}

// SetObservedGeneration of this {{ .Name }}.
func (mg *{{ .Name }}) SetObservedGeneration(generation int64) {
	mg.Status.SetObservedGeneration(generation)
}

// StampGeneration records in this {{ .Name }}'s status, its conditions
// included, that it describes the current generation: the provider's one
// status writer calls it on every write.
func (mg *{{ .Name }}) StampGeneration() {
	for i := range mg.Status.Conditions {
		mg.Status.Conditions[i].ObservedGeneration = mg.GetGeneration()
	}
	mg.Status.SetObservedGeneration(mg.GetGeneration())
}

// GetLastHandledReconcileAt of this {{ .Name }}.
func (mg *{{ .Name }}) GetLastHandledReconcileAt() string {
	return mg.Status.GetLastHandledReconcileAt()
}

// SetLastHandledReconcileAt of this {{ .Name }}.
func (mg *{{ .Name }}) SetLastHandledReconcileAt(token string) {
	mg.Status.SetLastHandledReconcileAt(token)
}
{{ if .OwnSecret }}
// GetWriteConnectionSecretToReference of this {{ .Name }} is always nil, for
// crossplane-runtime: its controller writes the Secret that
// spec.writeConnectionSecretToRef names itself.
func (mg *{{ .Name }}) GetWriteConnectionSecretToReference() *xpv2.LocalSecretReference {
	return nil
}

// SetWriteConnectionSecretToReference of this {{ .Name }}.
func (mg *{{ .Name }}) SetWriteConnectionSecretToReference(r *xpv2.LocalSecretReference) {
	mg.Spec.WriteConnectionSecretToReference = r
}
{{ else if .PublishesSecret }}
// GetWriteConnectionSecretToReference of this {{ .Name }}.
func (mg *{{ .Name }}) GetWriteConnectionSecretToReference() *xpv2.LocalSecretReference {
	return mg.Spec.WriteConnectionSecretToReference
}

// SetWriteConnectionSecretToReference of this {{ .Name }}.
func (mg *{{ .Name }}) SetWriteConnectionSecretToReference(r *xpv2.LocalSecretReference) {
	mg.Spec.WriteConnectionSecretToReference = r
}
{{ else }}
// GetWriteConnectionSecretToReference of this {{ .Name }} is always nil: it
// publishes no connection details.
func (mg *{{ .Name }}) GetWriteConnectionSecretToReference() *xpv2.LocalSecretReference {
	return nil
}

// SetWriteConnectionSecretToReference of this {{ .Name }} does nothing: it
// publishes no connection details.
func (mg *{{ .Name }}) SetWriteConnectionSecretToReference(_ *xpv2.LocalSecretReference) {}
{{ end }}
{{- if .HasList }}
// GetItems of this {{ .Name }}List.
func (l *{{ .Name }}List) GetItems() []resource.Managed {
	items := make([]resource.Managed, len(l.Items))
	for i := range l.Items {
		items[i] = &l.Items[i]
	}
	return items
}
{{ end }}
{{- end }}`))
