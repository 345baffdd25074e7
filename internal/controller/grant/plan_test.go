package grant_test

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
	sql(ctx, t, `CREATE SCHEMA plans; CREATE TABLE plans.a (id int); CREATE TABLE plans.b (id int); CREATE ROLE mgroup_p;
		CREATE ROLE gp_grow; CREATE ROLE gp_shrink; CREATE ROLE gp_unlist; CREATE ROLE gp_member`)
	tables := func(role string, objects []string, ps ...v1alpha1.Privilege) v1alpha1.PostgreSQLGrantParameters {
		return v1alpha1.PostgreSQLGrantParameters{
			Role: ptr.To(role), ObjectType: v1alpha1.GrantObjectTable, Database: ptr.To("postgres"), Schema: ptr.To("plans"),
			Objects: objects, Privileges: ps,
		}
	}
	cases := map[string]struct {
		role     string
		existing *v1alpha1.PostgreSQLGrantParameters
		want     v1alpha1.PostgreSQLGrantParameters
		says     []string
	}{
		"Grant": {
			role: "gp_grow",
			want: tables("gp_grow", []string{"a", "b"}, "SELECT", "INSERT"),
			says: []string{"GRANT INSERT, SELECT ON TABLE"},
		},
		"Shrink": {
			role:     "gp_shrink",
			existing: ptr.To(tables("gp_shrink", []string{"a"}, "SELECT", "INSERT", "UPDATE")),
			want:     tables("gp_shrink", []string{"a"}, "SELECT"),
			says:     []string{"REVOKE INSERT, UPDATE ON TABLE"},
		},
		"ObjectUnlisted": {
			role:     "gp_unlist",
			existing: ptr.To(tables("gp_unlist", []string{"a", "b"}, "SELECT")),
			want:     tables("gp_unlist", []string{"a"}, "SELECT"),
			says:     []string{`REVOKE SELECT ON TABLE "plans"."b"`},
		},
		"Membership": {
			role: "gp_member",
			want: v1alpha1.PostgreSQLGrantParameters{Role: ptr.To("gp_member"), ObjectType: v1alpha1.GrantObjectMembership, MemberOf: ptr.To("mgroup_p")},
			says: []string{`GRANT "mgroup_p" TO "gp_member"`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := newGrant("plan-"+strings.ToLower(name), tc.want)
			if tc.existing != nil {
				g.Spec.ForProvider = *tc.existing
				env.CreateForTest(ctx, t, g)
				env.Ready(ctx, t, g, corev1.ConditionTrue, xpv2.ReasonAvailable)
			}
			t.Cleanup(func() { _ = env.Kube.Delete(context.WithoutCancel(ctx), g) })
			preview := env.Preview(g, tc.existing == nil, func() { g.Spec.ForProvider = tc.want })
			plan := strings.Join(env.PlanIsTheTruth(ctx, t, g, preview, tc.role), "\n")
			for _, want := range tc.says {
				if !strings.Contains(plan, want) {
					t.Errorf("the plan does not say %q:\n%s", want, plan)
				}
			}
		})
	}
}
