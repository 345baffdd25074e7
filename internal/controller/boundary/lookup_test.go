package boundary_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/boundary"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

// TestNamespaceLookupReadsOneResource: the boundary tells whether a
// marker's UID is a role or database of the namespace by looking that UID
// up, reading at most the one resource, however many the namespace holds:
// a check runs before every change of every resource, and listing the
// namespace's roles and databases each time made a wave of thousands cost
// CPU with the square of their number (a return to it fails here). A
// UID of another namespace's resource, an unknown one, a database's UID
// asked of the roles, or no marker at all, is not the namespace's.
func TestNamespaceLookupReadsOneResource(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	const many = 30
	in := v1alpha1.InstanceReference{Name: env.Main.Name}
	// Roles with no login that nobody grants: the controllers create them
	// on the server, which does not matter here.
	newRole := func(namespace, name string) *v1alpha1.PostgreSQLRole {
		return &v1alpha1.PostgreSQLRole{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Spec: v1alpha1.PostgreSQLRoleSpec{InstanceRef: in}}
	}
	var objs []client.Object
	for i := range many {
		objs = append(objs, newRole(ns, fmt.Sprintf("lk%d", i)))
	}
	theirs := newRole("victims", "lktheirs")
	db := &v1alpha1.PostgreSQLDatabase{ObjectMeta: metav1.ObjectMeta{Name: "lk-db", Namespace: ns}, Spec: v1alpha1.PostgreSQLDatabaseSpec{
		InstanceRef: in, ForProvider: v1alpha1.PostgreSQLDatabaseParameters{Name: ptr.To("lk_db")},
	}}
	objs = append(objs, theirs, db)
	env.CreateForTest(ctx, t, objs...)

	c, _ := env.Cache(ctx, t)
	for _, o := range []client.Object{&v1alpha1.PostgreSQLRole{}, &v1alpha1.PostgreSQLDatabase{}} {
		if err := boundary.IndexUID(c, o); err != nil {
			t.Fatal(err)
		}
	}
	err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		l := &v1alpha1.PostgreSQLRoleList{}
		err := c.List(ctx, l)
		return len(l.Items) >= many+1, err
	})
	if err != nil {
		t.Fatal(err)
	}
	reader := &providertest.CountingReader{Reader: c}
	mine := boundary.NamespaceOf(reader, ns)

	cases := map[string]struct {
		members boundary.Members
		uid     string
		want    bool
	}{
		"OwnRole":              {members: mine.Roles, uid: string(objs[7].GetUID()), want: true},
		"OwnDatabase":          {members: mine.Databases, uid: string(db.GetUID()), want: true},
		"AnotherNamespaceRole": {members: mine.Roles, uid: string(theirs.GetUID())},
		"DatabaseAsRole":       {members: mine.Roles, uid: string(db.GetUID())},
		"UnknownUID":           {members: mine.Roles, uid: "00000000-0000-0000-0000-000000000000"},
		"NoMarker":             {members: mine.Roles, uid: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			reader.Listed()
			got, err := tc.members(ctx, tc.uid)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("managed from %s: got %t, want %t", ns, got, tc.want)
			}
			if n := reader.Listed(); n > 1 {
				t.Errorf("the lookup read %d resources of the namespace's %d; want at most the one", n, many+1)
			}
		})
	}
}
