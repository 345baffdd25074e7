package reference_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/reference"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

// TestWakingReadsOnlyReferrers: when a database appears, finding the
// schemas that wait for it reads those schemas and no others, however many
// the namespace holds. A list of the namespace per appearance made a wave
// of thousands of resources cost CPU with the square of their number; a
// return to it fails here (it reads every schema of the namespace). A
// database of another namespace wakes none of them.
func TestWakingReadsOnlyReferrers(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	const many = 40
	in := v1alpha1.InstanceReference{Name: env.Main.Name}
	schema := func(name string, p v1alpha1.PostgreSQLSchemaParameters) *v1alpha1.PostgreSQLSchema {
		return &v1alpha1.PostgreSQLSchema{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1alpha1.PostgreSQLSchemaSpec{InstanceRef: in, ForProvider: p}}
	}
	var objs []client.Object
	for i := range many {
		objs = append(objs, schema(fmt.Sprintf("ix%d", i), v1alpha1.PostgreSQLSchemaParameters{DatabaseRef: &v1alpha1.LocalReference{Name: fmt.Sprintf("ixdb%d", i)}}))
	}
	// One waits for the database by its PostgreSQL name, one for a role
	// of the same name as the database resource.
	objs = append(objs,
		schema("ixpg", v1alpha1.PostgreSQLSchemaParameters{Database: ptr.To("ix_seven")}),
		schema("ixowner", v1alpha1.PostgreSQLSchemaParameters{Database: ptr.To("ix_other"), OwnerRef: &v1alpha1.LocalReference{Name: "ixdb7"}}),
	)
	env.CreateForTest(ctx, t, objs...)

	// Every namespace, as the provider's cache: a lookup from another
	// namespace must find nothing because nothing there refers to it.
	c, _ := env.Cache(ctx, t)
	reader := &providertest.CountingReader{Reader: c}
	newList := func() client.ObjectList { return &v1alpha1.PostgreSQLSchemaList{} }
	if _, err := reference.WakeWaiting(c, reader, reference.Referrer{Object: &v1alpha1.PostgreSQLSchema{}, List: newList, Refs: schemaRefs}, &v1alpha1.PostgreSQLDatabase{}); err != nil {
		t.Fatal(err)
	}
	err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		l := &v1alpha1.PostgreSQLSchemaList{}
		err := c.List(ctx, l, client.InNamespace(ns))
		return len(l.Items) >= many+2, err
	})
	if err != nil {
		t.Fatal(err)
	}
	reader.Listed()

	appeared := &v1alpha1.PostgreSQLDatabase{ObjectMeta: metav1.ObjectMeta{Name: "ixdb7", Namespace: ns}}
	appeared.Status.AtProvider.Name = "ix_seven"
	got := reference.Waiting(reader, newList)(ctx, appeared)
	want := []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: ns, Name: "ix7"}}, {NamespacedName: client.ObjectKey{Namespace: ns, Name: "ixpg"}}}
	less := func(a, b reconcile.Request) bool { return a.Name < b.Name }
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(less)); diff != "" {
		t.Errorf("woken (-want +got):\n%s", diff)
	}
	if n := reader.Listed(); n != int64(len(want)) {
		t.Errorf("finding the %d waiting schemas read %d schemas of the namespace's %d; want only them", len(want), n, many+2)
	}

	// Another tenant's database of the same name and PostgreSQL name wakes
	// nothing here.
	theirs := appeared.DeepCopy()
	theirs.Namespace = "elsewhere"
	if got := reference.Waiting(reader, newList)(ctx, theirs); len(got) != 0 {
		t.Errorf("a database of another namespace woke %v", got)
	}
}

// schemaRefs are what a schema refers to, as far as this test sets it.
func schemaRefs(o client.Object) []reference.Ref {
	p := o.(*v1alpha1.PostgreSQLSchema).Spec.ForProvider //nolint:forcetypeassert // Only schemas are indexed.
	db := reference.Collect(reference.RefTo(v1alpha1.PostgreSQLDatabaseKind, p.DatabaseRef), reference.NamedAs(v1alpha1.PostgreSQLDatabaseKind, p.Database))
	return append(db, reference.RefTo(v1alpha1.PostgreSQLRoleKind, p.OwnerRef)...)
}
