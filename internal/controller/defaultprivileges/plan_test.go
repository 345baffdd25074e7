package defaultprivileges_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
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
	env.AdminSQL(ctx, t, "postgres", "CREATE ROLE o458p; CREATE ROLE dp_grow; CREATE ROLE dp_shrink")
	sql(ctx, t, "CREATE SCHEMA s458p AUTHORIZATION o458p")
	params := func(role string, ps ...v1alpha1.Privilege) v1alpha1.PostgreSQLDefaultPrivilegesParameters {
		return v1alpha1.PostgreSQLDefaultPrivilegesParameters{
			Role: ptr.To(role), Owner: ptr.To("o458p"), Database: ptr.To("postgres"), Schema: ptr.To("s458p"),
			ObjectType: v1alpha1.DefaultPrivilegesTables, Privileges: ps,
		}
	}
	cases := map[string]struct {
		role     string
		existing *v1alpha1.PostgreSQLDefaultPrivilegesParameters
		want     v1alpha1.PostgreSQLDefaultPrivilegesParameters
		says     []string
	}{
		"Grant": {
			role: "dp_grow",
			want: params("dp_grow", "SELECT", "INSERT"),
			says: []string{"ALTER DEFAULT PRIVILEGES", "GRANT INSERT, SELECT ON TABLES"},
		},
		"Shrink": {
			role:     "dp_shrink",
			existing: ptr.To(params("dp_shrink", "SELECT", "INSERT", "DELETE")),
			want:     params("dp_shrink", "SELECT"),
			says:     []string{"REVOKE DELETE, INSERT ON TABLES"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := newDefaults("plan-"+strings.ToLower(name), tc.want)
			if tc.existing != nil {
				d.Spec.ForProvider = *tc.existing
				env.CreateForTest(ctx, t, d)
				env.Ready(ctx, t, d, corev1.ConditionTrue, xpv2.ReasonAvailable)
			}
			t.Cleanup(func() { _ = env.Kube.Delete(context.WithoutCancel(ctx), d) })
			preview := env.Preview(d, tc.existing == nil, func() { d.Spec.ForProvider = tc.want })
			plan := strings.Join(env.PlanIsTheTruth(ctx, t, d, preview, tc.role), "\n")
			for _, want := range tc.says {
				if !strings.Contains(plan, want) {
					t.Errorf("the plan does not say %q:\n%s", want, plan)
				}
			}
		})
	}
}
