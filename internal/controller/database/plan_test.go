package database_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

// TestPlanIsTheTruth: a change applied with managementPolicies [Observe]
// shows its plan and sends nothing; widened, the provider sends the plan,
// statement for statement.
func TestPlanIsTheTruth(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	heir := providertest.Role(ns, main.Name, "heir_p")
	env.CreateForTest(ctx, t, heir)
	env.Ready(ctx, t, heir, corev1.ConditionTrue, xpv2.ReasonAvailable)

	cases := map[string]providertest.PlanCase[*v1alpha1.PostgreSQLDatabase]{
		"Create": {
			Change: func(d *v1alpha1.PostgreSQLDatabase) {
				d.Spec.ForProvider.ConnectionLimit = ptr.To[int32](5)
				d.Spec.ForProvider.Comment = ptr.To("planned")
				d.Spec.ForProvider.Extensions = []v1alpha1.Extension{{Name: "citext"}}
			},
			Says: []string{"CREATE DATABASE", "CONNECTION LIMIT 5", "CREATE EXTENSION"},
		},
		"Settings": {
			Existing: func(d *v1alpha1.PostgreSQLDatabase) {},
			Change: func(d *v1alpha1.PostgreSQLDatabase) {
				d.Spec.ForProvider.ConnectionLimit = ptr.To[int32](7)
				d.Spec.ForProvider.AllowConnections = ptr.To(false)
				d.Spec.ForProvider.Comment = ptr.To("changed")
			},
			Says: []string{"CONNECTION LIMIT 7", "ALLOW_CONNECTIONS false", "COMMENT ON DATABASE"},
		},
		"Owner": {
			Existing: func(d *v1alpha1.PostgreSQLDatabase) {},
			Change: func(d *v1alpha1.PostgreSQLDatabase) {
				d.Spec.ForProvider.OwnerRef = &v1alpha1.LocalReference{Name: heir.Name}
			},
			Says: []string{`OWNER TO "heir_p"`},
		},
		"Extensions": {
			Existing: func(d *v1alpha1.PostgreSQLDatabase) {
				d.Spec.ForProvider.Extensions = []v1alpha1.Extension{{Name: "citext"}}
			},
			Change: func(d *v1alpha1.PostgreSQLDatabase) {
				d.Spec.ForProvider.Extensions = []v1alpha1.Extension{{Name: "citext"}, {Name: "pgcrypto"}}
			},
			Says: []string{`CREATE EXTENSION IF NOT EXISTS "pgcrypto"`},
		},
	}
	providertest.PlanCases(ctx, t, env, cases, func(name string) (*v1alpha1.PostgreSQLDatabase, string) {
		db := "plan_" + strings.ToLower(name)
		return newDatabase(strings.ReplaceAll(db, "_", "-"), func(d *v1alpha1.PostgreSQLDatabase) { d.Spec.ForProvider.Name = ptr.To(db) }), db
	})
}

// TestDeletePlanIsTheTruth: a database whose drop waits for its sessions
// shows the drop it will send, and sends exactly that once they end.
func TestDeletePlanIsTheTruth(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	d := newDatabase("plan-drop", func(d *v1alpha1.PostgreSQLDatabase) {
		d.Spec.ForProvider.Name = ptr.To("plan_drop")
		d.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
	})
	env.CreateForTest(ctx, t, d)
	waitReady(ctx, t, d, corev1.ConditionTrue, xpv2.ReasonAvailable)
	session, err := env.Postgres.Connect(ctx, "plan_drop")
	if err != nil {
		t.Fatal(err)
	}
	plan := env.DeletePlanIsTheTruth(ctx, t, d, func() { _ = session.Close(ctx) }, "plan_drop")
	if diff := cmp.Diff([]string{`DROP DATABASE IF EXISTS "plan_drop"`}, plan); diff != "" {
		t.Errorf("the drop's plan (-want +got):\n%s", diff)
	}
}

// TestImportStaysOutOfOthersDatabases: someone who may create
// PostgreSQLDatabases in another namespace imports a tenant's database
// read-only, listing extensions. The import is refused as another
// namespace's (Conflict): nothing of the database (its owner, settings,
// extensions, a plan against it) is recorded in the importer's namespace,
// and the message names neither the tenant's namespace nor its resource.
func TestImportStaysOutOfOthersDatabases(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	victim := newDatabase("plan-victim", func(d *v1alpha1.PostgreSQLDatabase) {
		d.Spec.ForProvider.Name = ptr.To("plan_victim")
		d.Spec.ForProvider.Extensions = []v1alpha1.Extension{{Name: "citext"}}
	})
	env.CreateForTest(ctx, t, victim)
	waitReady(ctx, t, victim, corev1.ConditionTrue, xpv2.ReasonAvailable)
	env.CreateForTest(ctx, t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "rival"}})
	spy := newDatabase("plan-spy", func(d *v1alpha1.PostgreSQLDatabase) {
		d.Namespace = "rival"
		d.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
		d.Spec.ForProvider.Name = ptr.To("plan_victim")
		d.Spec.ForProvider.ConnectionLimit = ptr.To[int32](3)
		d.Spec.ForProvider.Extensions = []v1alpha1.Extension{{Name: "citext"}, {Name: "pgcrypto"}}
	})
	env.CreateForTest(ctx, t, spy)
	got := waitReady(ctx, t, spy, corev1.ConditionFalse, v1alpha1.ReasonConflict)
	msg := got.GetCondition(xpv2.TypeReady).Message
	if !strings.Contains(msg, "managed from another namespace") {
		t.Errorf("the refusal does not say the database is another namespace's: %s", msg)
	}
	for _, never := range []string{ns + "/", victim.Name, string(victim.GetUID())} {
		if strings.Contains(msg, never) {
			t.Errorf("the refusal names the tenant's %q: %s", never, msg)
		}
	}
	if ap := got.Status.AtProvider; ap.Owner != "" || len(ap.Extensions) > 0 || ap.Plan != nil || ap.Encoding != "" {
		t.Errorf("the import recorded the tenant's database: %+v", ap)
	}
}
