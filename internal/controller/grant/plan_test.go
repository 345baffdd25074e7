package grant_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
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
	// By grantee: each case's statements name it.
	cases := map[string]providertest.PlanCase[*v1alpha1.PostgreSQLGrant]{
		"gp_grow": {
			Change: func(g *v1alpha1.PostgreSQLGrant) {
				g.Spec.ForProvider = tables("gp_grow", []string{"a", "b"}, "SELECT", "INSERT")
			},
			Says: []string{"GRANT INSERT, SELECT ON TABLE"},
		},
		"gp_shrink": {
			Existing: func(g *v1alpha1.PostgreSQLGrant) {
				g.Spec.ForProvider = tables("gp_shrink", []string{"a"}, "SELECT", "INSERT", "UPDATE")
			},
			Change: func(g *v1alpha1.PostgreSQLGrant) { g.Spec.ForProvider = tables("gp_shrink", []string{"a"}, "SELECT") },
			Says:   []string{"REVOKE INSERT, UPDATE ON TABLE"},
		},
		"gp_unlist": {
			Existing: func(g *v1alpha1.PostgreSQLGrant) {
				g.Spec.ForProvider = tables("gp_unlist", []string{"a", "b"}, "SELECT")
			},
			Change: func(g *v1alpha1.PostgreSQLGrant) { g.Spec.ForProvider = tables("gp_unlist", []string{"a"}, "SELECT") },
			Says:   []string{`REVOKE SELECT ON TABLE "plans"."b"`},
		},
		"gp_member": {
			Change: func(g *v1alpha1.PostgreSQLGrant) {
				g.Spec.ForProvider = v1alpha1.PostgreSQLGrantParameters{Role: ptr.To("gp_member"), ObjectType: v1alpha1.GrantObjectMembership, MemberOf: ptr.To("mgroup_p")}
			},
			Says: []string{`GRANT "mgroup_p" TO "gp_member"`},
		},
	}
	dir, err := env.Postgres.TablespaceDir("ts_plan")
	if err != nil {
		t.Fatal(err)
	}
	env.SQL(ctx, t, "postgres", fmt.Sprintf("CREATE TABLESPACE ts_plan OWNER %s LOCATION '%s'", postgres.QuoteIdentifier(env.AdminUser()), dir))
	sql(ctx, t, "CREATE ROLE gp_space; CREATE ROLE gp_shared; CREATE ROLE mshared_p")
	cases["gp_space"] = providertest.PlanCase[*v1alpha1.PostgreSQLGrant]{
		Change: func(g *v1alpha1.PostgreSQLGrant) {
			g.Spec.ForProvider = v1alpha1.PostgreSQLGrantParameters{Role: ptr.To("gp_space"), ObjectType: v1alpha1.GrantObjectTablespace, Tablespace: ptr.To("ts_plan"), Privileges: []v1alpha1.Privilege{"ALL"}}
		},
		Says: []string{`GRANT CREATE ON TABLESPACE "ts_plan" TO "gp_space"`},
	}
	if serverVersion(ctx, t) >= 160000 {
		// A role shared for its privileges: the plan shows SET withheld.
		cases["gp_shared"] = providertest.PlanCase[*v1alpha1.PostgreSQLGrant]{
			Change: func(g *v1alpha1.PostgreSQLGrant) {
				g.Spec.ForProvider = v1alpha1.PostgreSQLGrantParameters{Role: ptr.To("gp_shared"), ObjectType: v1alpha1.GrantObjectMembership, MemberOf: ptr.To("mshared_p")}
			},
			Says: []string{`GRANT "mshared_p" TO "gp_shared" WITH SET FALSE`},
		}
	}
	providertest.PlanCases(ctx, t, env, cases, func(role string) (*v1alpha1.PostgreSQLGrant, string) {
		return newGrant(strings.ReplaceAll("plan-"+role, "_", "-"), v1alpha1.PostgreSQLGrantParameters{}), role
	})
}
