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
)

// TestPlanIsTheTruth: a change applied with managementPolicies [Observe]
// shows its plan and sends nothing; widened, the provider sends the plan,
// statement for statement.
func TestPlanIsTheTruth(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	heir := &v1alpha1.PostgreSQLRole{
		ObjectMeta: metav1.ObjectMeta{Name: "heir-p", Namespace: ns},
		Spec: v1alpha1.PostgreSQLRoleSpec{
			InstanceRef: v1alpha1.InstanceReference{Name: main.Name},
			ForProvider: v1alpha1.PostgreSQLRoleParameters{Name: ptr.To("heir_p")},
		},
	}
	env.CreateForTest(ctx, t, heir)
	env.Ready(ctx, t, heir, corev1.ConditionTrue, xpv2.ReasonAvailable)

	cases := map[string]struct {
		// existing, when set, is created managed first.
		existing func(d *v1alpha1.PostgreSQLDatabase)
		change   func(d *v1alpha1.PostgreSQLDatabase)
		// says are fragments the plan must hold.
		says []string
	}{
		"Create": {
			change: func(d *v1alpha1.PostgreSQLDatabase) {
				d.Spec.ForProvider.ConnectionLimit = ptr.To[int32](5)
				d.Spec.ForProvider.Comment = ptr.To("planned")
				d.Spec.ForProvider.Extensions = []v1alpha1.Extension{{Name: "citext"}}
			},
			says: []string{"CREATE DATABASE", "CONNECTION LIMIT 5", "CREATE EXTENSION"},
		},
		"Settings": {
			existing: func(d *v1alpha1.PostgreSQLDatabase) {},
			change: func(d *v1alpha1.PostgreSQLDatabase) {
				d.Spec.ForProvider.ConnectionLimit = ptr.To[int32](7)
				d.Spec.ForProvider.AllowConnections = ptr.To(false)
				d.Spec.ForProvider.Comment = ptr.To("changed")
			},
			says: []string{"CONNECTION LIMIT 7", "ALLOW_CONNECTIONS false", "COMMENT ON DATABASE"},
		},
		"Owner": {
			existing: func(d *v1alpha1.PostgreSQLDatabase) {},
			change: func(d *v1alpha1.PostgreSQLDatabase) {
				d.Spec.ForProvider.OwnerRef = &v1alpha1.LocalReference{Name: heir.Name}
			},
			says: []string{`OWNER TO "heir_p"`},
		},
		"Extensions": {
			existing: func(d *v1alpha1.PostgreSQLDatabase) {
				d.Spec.ForProvider.Extensions = []v1alpha1.Extension{{Name: "citext"}}
			},
			change: func(d *v1alpha1.PostgreSQLDatabase) {
				d.Spec.ForProvider.Extensions = []v1alpha1.Extension{{Name: "citext"}, {Name: "pgcrypto"}}
			},
			says: []string{`CREATE EXTENSION IF NOT EXISTS "pgcrypto"`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dbName := "plan_" + strings.ToLower(name)
			d := newDatabase(strings.ReplaceAll(dbName, "_", "-"), func(d *v1alpha1.PostgreSQLDatabase) {
				d.Spec.ForProvider.Name = ptr.To(dbName)
			})
			if tc.existing != nil {
				tc.existing(d)
				env.CreateForTest(ctx, t, d)
				waitReady(ctx, t, d, corev1.ConditionTrue, xpv2.ReasonAvailable)
			}
			preview := env.Preview(d, tc.existing == nil, func() { tc.change(d) })
			t.Cleanup(func() { _ = env.Kube.Delete(context.WithoutCancel(ctx), d) })
			plan := strings.Join(env.PlanIsTheTruth(ctx, t, d, preview, dbName), "\n")
			for _, s := range tc.says {
				if !strings.Contains(plan, s) {
					t.Errorf("the plan does not say %q:\n%s", s, plan)
				}
			}
		})
	}
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
