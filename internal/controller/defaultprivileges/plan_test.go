package defaultprivileges_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

// TestPlanIsTheTruth: a change applied with managementPolicies [Observe]
// shows its plan and sends nothing; widened, the provider sends the plan,
// statement for statement.
func TestPlanIsTheTruth(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	env.AdminSQL(ctx, t, "postgres", "CREATE ROLE o458p; CREATE ROLE dp_grow; CREATE ROLE dp_shrink")
	sql(ctx, t, "CREATE SCHEMA s458p AUTHORIZATION o458p")
	params := func(role string, ps ...v1alpha1.Privilege) v1alpha1.PostgreSQLDefaultPrivilegesParameters {
		return v1alpha1.PostgreSQLDefaultPrivilegesParameters{
			Role: ptr.To(role), Owner: ptr.To("o458p"), Database: ptr.To("postgres"), Schema: ptr.To("s458p"),
			ObjectType: v1alpha1.DefaultPrivilegesTables, Privileges: ps,
		}
	}
	// By grantee: each case's statements name it.
	cases := map[string]providertest.PlanCase[*v1alpha1.PostgreSQLDefaultPrivileges]{
		"dp_grow": {
			Change: func(d *v1alpha1.PostgreSQLDefaultPrivileges) {
				d.Spec.ForProvider = params("dp_grow", "SELECT", "INSERT")
			},
			Says: []string{"ALTER DEFAULT PRIVILEGES", "GRANT INSERT, SELECT ON TABLES"},
		},
		"dp_shrink": {
			Existing: func(d *v1alpha1.PostgreSQLDefaultPrivileges) {
				d.Spec.ForProvider = params("dp_shrink", "SELECT", "INSERT", "DELETE")
			},
			Change: func(d *v1alpha1.PostgreSQLDefaultPrivileges) { d.Spec.ForProvider = params("dp_shrink", "SELECT") },
			Says:   []string{"REVOKE DELETE, INSERT ON TABLES"},
		},
	}
	providertest.PlanCases(ctx, t, env, cases, func(role string) (*v1alpha1.PostgreSQLDefaultPrivileges, string) {
		return newDefaults(strings.ReplaceAll("plan-"+role, "_", "-"), v1alpha1.PostgreSQLDefaultPrivilegesParameters{}), role
	})
}
