package schema_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
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
	heir := providertest.Role(ns, main.Name, "heir_s")
	env.CreateForTest(ctx, t, heir)
	env.Ready(ctx, t, heir, corev1.ConditionTrue, xpv2.ReasonAvailable)

	cases := map[string]providertest.PlanCase[*v1alpha1.PostgreSQLSchema]{
		"Create": {
			Change: func(s *v1alpha1.PostgreSQLSchema) {
				s.Spec.ForProvider.Comment = ptr.To("planned")
				s.Spec.ForProvider.RevokePublicPrivileges = true
			},
			Says: []string{"CREATE SCHEMA", "COMMENT ON SCHEMA"},
		},
		"Comment": {
			Existing: func(s *v1alpha1.PostgreSQLSchema) { s.Spec.ForProvider.Comment = ptr.To("before") },
			Change:   func(s *v1alpha1.PostgreSQLSchema) { s.Spec.ForProvider.Comment = ptr.To("after") },
			Says:     []string{"COMMENT ON SCHEMA", "after"},
		},
		"Owner": {
			Existing: func(s *v1alpha1.PostgreSQLSchema) {},
			Change: func(s *v1alpha1.PostgreSQLSchema) {
				s.Spec.ForProvider.OwnerRef = &v1alpha1.LocalReference{Name: heir.Name}
			},
			Says: []string{`OWNER TO "heir_s"`},
		},
	}
	providertest.PlanCases(ctx, t, env, cases, func(name string) (*v1alpha1.PostgreSQLSchema, string) {
		schema := "plan_" + strings.ToLower(name)
		return newSchema(strings.ReplaceAll(schema, "_", "-"), "postgres", func(s *v1alpha1.PostgreSQLSchema) { s.Spec.ForProvider.Name = ptr.To(schema) }), schema
	})
}

// TestDeletePlanIsTheTruth: a schema whose drop (RESTRICT) is refused
// while it holds a table shows the drop it retries, and sends exactly
// that once the table is gone.
func TestDeletePlanIsTheTruth(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	s := newSchema("plan-drop", "postgres", func(s *v1alpha1.PostgreSQLSchema) {
		s.Spec.ForProvider.Name = ptr.To("plan_drop")
		s.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
	})
	env.CreateForTest(ctx, t, s)
	env.Ready(ctx, t, s, corev1.ConditionTrue, xpv2.ReasonAvailable)
	env.AdminSQL(ctx, t, "postgres", "CREATE TABLE plan_drop.kept (id int)")
	plan := env.DeletePlanIsTheTruth(ctx, t, s, func() { env.AdminSQL(ctx, t, "postgres", "DROP TABLE plan_drop.kept") }, "plan_drop")
	if want := `DROP SCHEMA IF EXISTS "plan_drop" RESTRICT`; len(plan) != 1 || plan[0] != want {
		t.Errorf("the drop's plan is %q, want [%s]", plan, want)
	}
}
