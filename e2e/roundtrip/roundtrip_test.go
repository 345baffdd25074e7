// Package roundtrip sets a server up from examples/ with the provider,
// inventories it with kubectl pg inventory into another namespace, and
// compares what each says about the server.
package roundtrip

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/fixture/controlplane"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
	"github.com/ayatori/provider-postgresql/internal/manifest"
	"github.com/ayatori/provider-postgresql/internal/pgctl"
)

// The examples' namespace, and the one the inventory writes to.
const (
	ns          = "shop"
	inventoried = "copy"
)

var env *providertest.Env

var suite = providertest.Suite(providertest.Options{PollInterval: 2 * time.Second, Instance: "main", Namespaces: []string{ns, inventoried}},
	func(e *providertest.Env) { env = e })

func TestMain(m *testing.M) { os.Exit(suite.Run(m)) }

// examples are the folders of examples/ whose resources live on an
// Instance (the Instance, the lock and the tenant need what this suite
// does not run: the Instance's own endpoint, Crossplane).
var examples = []string{"role", "database", "schema", "grant", "defaultprivileges"}

// TestExamplesRoundTrip: what the examples make on a server, inventoried
// with --include-managed into another namespace, is described as the
// examples describe it, field by field. Some fields say what to do rather
// than what is: those are compared for what they made (allInSchema with
// the tables the schema holds), or named as what the catalog cannot tell.
func TestExamplesRoundTrip(t *testing.T) {
	suite.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	var applied []client.Object
	for _, dir := range examples {
		files, err := filepath.Glob(filepath.Join(root, "examples", dir, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := manifest.Decode(b)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			for _, u := range objs {
				if err := env.Kube.Create(ctx, u); err != nil {
					t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
				}
				o, err := typed(u.Object, u.GetKind())
				if err != nil {
					t.Fatal(err)
				}
				applied = append(applied, o)
			}
		}
	}
	for _, o := range applied {
		if c, ok := o.(providertest.Conditioned); ok {
			env.Ready(ctx, t, c, corev1.ConditionTrue, xpv2.ReasonAvailable)
		}
	}
	// A table in the schema, created by its owner: the grant on all its
	// tables covers it at the next poll, the default privileges at once.
	env.SQL(ctx, t, "orders", "SET ROLE orders_owner; CREATE TABLE sales.invoices (id int)")
	err = providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		var ok bool
		err := env.Connect(ctx, t, "orders").QueryRow(ctx, "SELECT has_table_privilege('orders_reader', 'sales.invoices', 'SELECT')").Scan(&ok)
		return ok, err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Read back: the selectors were resolved into references.
	for _, o := range applied {
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatal(err)
		}
	}

	dir := t.TempDir()
	var out, progress bytes.Buffer
	cli := &pgctl.CLI{Kube: env.Kube, Out: &out, Err: &progress, Namespace: inventoried,
		Inventory: pgctl.InventoryOptions{Instance: "main", ProviderNamespace: providertest.Namespace, Dir: dir, IncludeManaged: true}}
	if err := cli.Run(ctx, []string{"inventory"}); err != nil {
		t.Fatalf("kubectl pg inventory: %v\n%s%s", err, progress.String(), out.String())
	}
	t.Logf("kubectl pg inventory --include-managed:\n%s", out.String())
	inv := read(t, filepath.Join(dir, inventoried))

	r := resolver{applied}
	for _, o := range applied {
		var diff string
		switch x := o.(type) {
		case *v1alpha1.PostgreSQLRole:
			diff = r.role(x, inv)
		case *v1alpha1.PostgreSQLDatabase:
			diff = r.database(x, inv)
		case *v1alpha1.PostgreSQLSchema:
			diff = r.schema(x, inv)
		case *v1alpha1.PostgreSQLGrant:
			diff = r.grant(ctx, t, x, inv)
		case *v1alpha1.PostgreSQLDefaultPrivileges:
			diff = r.defaults(x, inv)
		}
		if diff != "" {
			t.Errorf("%T %s: the inventory does not say what the example says (-example +inventory):\n%s", o, o.GetName(), diff)
		}
	}
}

// typed converts an object of the provider's kinds to its Go type.
func typed(obj map[string]any, kind string) (client.Object, error) {
	for _, k := range v1alpha1.Kinds {
		if k.Kind == kind {
			o := k.New()
			return o, runtime.DefaultUnstructuredConverter.FromUnstructured(obj, o)
		}
	}
	return nil, fmt.Errorf("%s is not a kind of the provider", kind)
}

// read loads the manifests under dir.
func read(t *testing.T, dir string) []client.Object {
	t.Helper()
	var out []client.Object
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		objs, err := manifest.Decode(b)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		for _, u := range objs {
			o, err := typed(u.Object, u.GetKind())
			if err != nil {
				return err
			}
			out = append(out, o)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// find returns the inventory's objects of type T that match.
func find[T client.Object](inv []client.Object, match func(T) bool) []T {
	var out []T
	for _, o := range inv {
		if x, ok := o.(T); ok && match(x) {
			out = append(out, x)
		}
	}
	return out
}

// A resolver turns the examples' references into the PostgreSQL names
// they reference.
type resolver struct{ applied []client.Object }

func (r resolver) name(kind string, ref *v1alpha1.LocalReference, direct *string) string {
	if direct != nil {
		return *direct
	}
	if ref == nil {
		return ""
	}
	for _, o := range r.applied {
		if o.GetName() != ref.Name {
			continue
		}
		switch x := o.(type) {
		case *v1alpha1.PostgreSQLRole:
			if kind == "role" {
				return x.RoleName()
			}
		case *v1alpha1.PostgreSQLDatabase:
			if kind == "database" {
				return x.DatabaseName()
			}
		case *v1alpha1.PostgreSQLSchema:
			if kind == "schema" {
				return x.SchemaName()
			}
		}
	}
	return "unresolved " + kind + " " + ref.Name
}

// said keeps what the example sets of got: a field the example leaves out
// is the provider's default, which the inventory writes as it is.
func said[V any](example, got *V) *V {
	if example == nil {
		return nil
	}
	return got
}

func (resolver) role(x *v1alpha1.PostgreSQLRole, inv []client.Object) string {
	found := find(inv, func(o *v1alpha1.PostgreSQLRole) bool { return *o.Spec.ForProvider.Name == x.RoleName() })
	if len(found) != 1 {
		return fmt.Sprintf("%d roles named %s in the inventory", len(found), x.RoleName())
	}
	e, g := x.Spec.ForProvider, found[0].Spec.ForProvider
	type view struct {
		Login, Inherit, CreateDB, CreateRole, Replication, BypassRLS *bool
		ConnectionLimit                                              *int32
		Config                                                       []v1alpha1.ConfigurationParameter
		Comment                                                      *string
		MemberOf                                                     []string
	}
	want := view{e.Login, e.Inherit, e.CreateDB, e.CreateRole, e.Replication, e.BypassRLS, e.ConnectionLimit, e.ConfigurationParameters, e.Comment, e.MemberOf}
	got := view{said(e.Login, g.Login), said(e.Inherit, g.Inherit), said(e.CreateDB, g.CreateDB), said(e.CreateRole, g.CreateRole),
		said(e.Replication, g.Replication), said(e.BypassRLS, g.BypassRLS), said(e.ConnectionLimit, g.ConnectionLimit), nil, said(e.Comment, g.Comment), nil}
	if e.ConfigurationParameters != nil {
		got.Config = g.ConfigurationParameters
	}
	if e.MemberOf != nil {
		got.MemberOf = g.MemberOf
	}
	return cmp.Diff(want, got)
}

func (r resolver) database(x *v1alpha1.PostgreSQLDatabase, inv []client.Object) string {
	found := find(inv, func(o *v1alpha1.PostgreSQLDatabase) bool { return *o.Spec.ForProvider.Name == x.DatabaseName() })
	if len(found) != 1 {
		return fmt.Sprintf("%d databases named %s in the inventory", len(found), x.DatabaseName())
	}
	e, g := x.Spec.ForProvider, found[0].Spec.ForProvider
	type view struct {
		Owner, Encoding, LCCollate, LCCtype, Comment string
		ConnectionLimit                              *int32
		AllowConnections, IsTemplate                 *bool
		RevokePublicPrivileges                       bool
		Extensions                                   []string
	}
	owner := r.name("role", e.OwnerRef, e.Owner)
	want := view{owner, ptr.Deref(e.Encoding, ""), ptr.Deref(e.LCCollate, ""), ptr.Deref(e.LCCtype, ""), ptr.Deref(e.Comment, ""),
		e.ConnectionLimit, e.AllowConnections, e.IsTemplate, e.RevokePublicPrivileges, nil}
	got := view{ptr.Deref(g.Owner, ""), "", "", "", ptr.Deref(g.Comment, ""),
		said(e.ConnectionLimit, g.ConnectionLimit), said(e.AllowConnections, g.AllowConnections), said(e.IsTemplate, g.IsTemplate), g.RevokePublicPrivileges, nil}
	if e.Encoding != nil {
		got.Encoding = ptr.Deref(g.Encoding, "")
	}
	if e.LCCollate != nil {
		got.LCCollate = ptr.Deref(g.LCCollate, "")
	}
	if e.LCCtype != nil {
		got.LCCtype = ptr.Deref(g.LCCtype, "")
	}
	// An extension's version and schema, when the example leaves them
	// out, are the server's defaults: the inventory writes them as
	// installed.
	for _, x := range e.Extensions {
		want.Extensions = append(want.Extensions, x.Name)
	}
	for _, x := range g.Extensions {
		got.Extensions = append(got.Extensions, x.Name)
	}
	slices.Sort(want.Extensions)
	slices.Sort(got.Extensions)
	// template and strategy say how the database was made, which the
	// catalog does not keep.
	return cmp.Diff(want, got)
}

func (r resolver) schema(x *v1alpha1.PostgreSQLSchema, inv []client.Object) string {
	db := r.name("database", x.Spec.ForProvider.DatabaseRef, x.Spec.ForProvider.Database)
	found := find(inv, func(o *v1alpha1.PostgreSQLSchema) bool {
		return *o.Spec.ForProvider.Name == x.SchemaName() && *o.Spec.ForProvider.Database == db
	})
	if len(found) != 1 {
		return fmt.Sprintf("%d schemas %s.%s in the inventory", len(found), db, x.SchemaName())
	}
	e, g := x.Spec.ForProvider, found[0].Spec.ForProvider
	type view struct{ Owner, Comment string }
	// revokePublicPrivileges on a schema keeps PUBLIC out later; PUBLIC
	// holds nothing on a new schema anyway, so the catalog cannot tell
	// the example's intent from the default.
	return cmp.Diff(view{r.name("role", e.OwnerRef, e.Owner), ptr.Deref(e.Comment, "")}, view{ptr.Deref(g.Owner, ""), ptr.Deref(g.Comment, "")})
}

// grant compares a grant by what it gives: the inventory's grants of the
// same grantee on the same target hold every privilege the example
// lists, on every object it covers (allInSchema: the tables the schema
// holds now). A plain membership is the member role's memberOf.
func (r resolver) grant(ctx context.Context, t *testing.T, x *v1alpha1.PostgreSQLGrant, inv []client.Object) string {
	e := x.Spec.ForProvider
	role := r.name("role", e.RoleRef, e.Role)
	if e.ObjectType == v1alpha1.GrantObjectMembership {
		group := r.name("role", e.MemberOfRef, e.MemberOf)
		members := find(inv, func(o *v1alpha1.PostgreSQLRole) bool { return *o.Spec.ForProvider.Name == role })
		if len(members) != 1 || !slices.Contains(members[0].Spec.ForProvider.MemberOf, group) {
			return fmt.Sprintf("role %s is not a member of %s in the inventory", role, group)
		}
		return ""
	}
	db := r.name("database", e.DatabaseRef, e.Database)
	schema := r.name("schema", e.SchemaRef, e.Schema)
	objects := e.Objects
	if ptr.Deref(e.AllInSchema, false) {
		rows, err := env.Connect(ctx, t, db).Query(ctx, "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f') ORDER BY 1", schema)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				t.Fatal(err)
			}
			objects = append(objects, n)
		}
		if rows.Err() != nil || len(objects) == 0 {
			t.Fatalf("schema %s.%s holds no table to compare allInSchema with: %v", db, schema, rows.Err())
		}
	}
	if len(objects) == 0 {
		objects = []string{""}
	}
	var missing []string
	for _, obj := range objects {
		for _, p := range e.Privileges {
			held := find(inv, func(o *v1alpha1.PostgreSQLGrant) bool {
				g := o.Spec.ForProvider
				return *g.Role == role && g.ObjectType == e.ObjectType && ptr.Deref(g.Database, "") == db && ptr.Deref(g.Schema, "") == schema &&
					(obj == "" || slices.Contains(g.Objects, obj)) && slices.Contains(g.Privileges, p) &&
					ptr.Deref(g.WithGrantOption, false) == ptr.Deref(e.WithGrantOption, false)
			})
			if len(held) == 0 {
				missing = append(missing, fmt.Sprintf("%s on %s %s to %s", p, e.ObjectType, strings.Trim(db+"."+schema+"."+obj, "."), role))
			}
		}
	}
	if len(missing) > 0 {
		return "the inventory grants none of: " + strings.Join(missing, "; ")
	}
	return ""
}

func (r resolver) defaults(x *v1alpha1.PostgreSQLDefaultPrivileges, inv []client.Object) string {
	e := x.Spec.ForProvider
	role, owner := r.name("role", e.RoleRef, e.Role), r.name("role", e.OwnerRef, e.Owner)
	db, schema := r.name("database", e.DatabaseRef, e.Database), r.name("schema", e.SchemaRef, e.Schema)
	found := find(inv, func(o *v1alpha1.PostgreSQLDefaultPrivileges) bool {
		g := o.Spec.ForProvider
		return *g.Role == role && *g.Owner == owner && *g.Database == db && ptr.Deref(g.Schema, "") == schema &&
			g.ObjectType == e.ObjectType && g.WithGrantOption == e.WithGrantOption
	})
	if len(found) != 1 {
		return fmt.Sprintf("%d default privileges of %s's %s in %s.%s for %s in the inventory", len(found), owner, e.ObjectType, db, schema, role)
	}
	want, got := slices.Clone(e.Privileges), slices.Clone(found[0].Spec.ForProvider.Privileges)
	slices.Sort(want)
	slices.Sort(got)
	return cmp.Diff(want, got)
}
