package database_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/drift"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

// TestDatabaseDrift: settings changed by hand on a managed database are
// reported with each field and its values, and put back.
func TestDatabaseDrift(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	d := newDatabase("drifted", func(d *v1alpha1.PostgreSQLDatabase) {
		d.Spec.ForProvider.ConnectionLimit = ptr.To[int32](20)
	})
	if err := env.Kube.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	waitReady(ctx, t, d, corev1.ConditionTrue, xpv2.ReasonAvailable)
	time.Sleep(3 * time.Second) // One more poll: the baseline.
	env.AdminSQL(ctx, t, "postgres", `ALTER DATABASE drifted CONNECTION LIMIT 2; ALTER DATABASE drifted IS_TEMPLATE true`)

	msg := env.WaitEvent(ctx, t, ns, "drifted", string(drift.ReasonDetected), 30*time.Second)
	for _, want := range []string{"connectionLimit: 20 → 2", "isTemplate: false → true", "changed on the server"} {
		if !strings.Contains(msg, want) {
			t.Errorf("DriftDetected says %q, want it to contain %q", msg, want)
		}
	}
	env.WaitEvent(ctx, t, ns, "drifted", string(drift.ReasonCorrected), 30*time.Second)
	var limit int
	var template bool
	if err := env.Connect(ctx, t, "postgres").QueryRow(ctx, "SELECT datconnlimit, datistemplate FROM pg_database WHERE datname = 'drifted'").Scan(&limit, &template); err != nil {
		t.Fatal(err)
	}
	if limit != 20 || template {
		t.Errorf("after the correction: connection limit %d, template %t; want 20, false", limit, template)
	}
}

// TestDatabaseMarkerRemovedByItsOwner: a database's owner may replace its
// comment, ownership marker and all. The provider then no longer acts on
// the database (a Conflict, nothing changed) and says that the marker of
// a database it created is gone, with the statement an admin runs to
// restore it; once run, the database is managed again.
func TestDatabaseMarkerRemovedByItsOwner(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	owner := providertest.Role(ns, main.Name, "marker_owner")
	d := newDatabase("marker-gone", func(d *v1alpha1.PostgreSQLDatabase) {
		d.Spec.ForProvider.Name = ptr.To("marker_gone")
		d.Spec.ForProvider.OwnerRef = &v1alpha1.LocalReference{Name: owner.Name}
		d.Spec.ForProvider.Comment = ptr.To("orders")
		d.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
	})
	env.Create(ctx, t, owner, d)
	waitReady(ctx, t, d, corev1.ConditionTrue, xpv2.ReasonAvailable)

	env.SQL(ctx, t, "postgres", "SET ROLE marker_owner; COMMENT ON DATABASE marker_gone IS 'mine now'")
	got := waitReady(ctx, t, d, corev1.ConditionFalse, v1alpha1.ReasonConflict)
	msg := got.GetCondition(xpv2.TypeReady).Message
	for _, want := range []string{"ownership marker is gone", "this PostgreSQLDatabase records that it created a database of this name at ", "Nothing was changed"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the Conflict says %q, want it to say %q", msg, want)
		}
	}
	comment := func() string {
		var c string
		if err := env.Connect(ctx, t, "postgres").QueryRow(ctx, "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = 'marker_gone'").Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := comment(); c != "mine now" {
		t.Errorf("the database in Conflict was changed: its comment is %q", c)
	}
	_, restore, ok := strings.Cut(msg, "restores the marker: ")
	if !ok {
		t.Fatalf("the Conflict offers no statement that restores the marker: %q", msg)
	}
	env.AdminSQL(ctx, t, "postgres", restore)
	waitReady(ctx, t, d, corev1.ConditionTrue, xpv2.ReasonAvailable)
	if err := providertest.Wait(ctx, 30*time.Second, func(context.Context) (bool, error) {
		return strings.HasPrefix(comment(), "orders\n"), nil
	}); err != nil {
		t.Errorf("the restored database's comment is %q, want the spec's %q with the marker", comment(), "orders")
	}
	// Managed again, down to its drop.
	if err := env.Kube.Delete(ctx, d); err != nil {
		t.Fatal(err)
	}
	waitGone(ctx, t, d)
	if exists(ctx, t, "marker_gone") {
		t.Error("the restored database was not dropped with its resource (managementPolicies: all)")
	}
	if err := env.Kube.Delete(ctx, owner); err != nil {
		t.Fatal(err)
	}
	env.Gone(ctx, t, owner)
}
