package v1alpha1_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

func plan(action v1alpha1.PlanAction, omitted int32, stmts ...string) v1alpha1.Plan {
	return v1alpha1.Plan{Action: action, Statements: stmts, Omitted: omitted, Summary: fmt.Sprintf("%s: %s", action, v1alpha1.Statements(len(stmts)+int(omitted)))}
}

func TestProvisioningPlanOf(t *testing.T) {
	role := &v1alpha1.ProvisioningStep{Kind: v1alpha1.PostgreSQLRoleKind, Name: "orders-owner", Plan: plan(v1alpha1.PlanCreate, 0, `CREATE ROLE "orders_owner" NOLOGIN`, `COMMENT ON ROLE "orders_owner" IS 'owner'`)}
	db := &v1alpha1.ProvisioningStep{Kind: v1alpha1.PostgreSQLDatabaseKind, Name: "orders", Plan: plan(v1alpha1.PlanCreate, 0, `CREATE DATABASE "orders" OWNER "orders_owner"`)}
	login := &v1alpha1.ProvisioningStep{Kind: v1alpha1.PostgreSQLRoleKind, Name: "orders-login", Plan: plan(v1alpha1.PlanUpdate, 5, `GRANT SELECT ON TABLE t0 TO app`)}
	cases := map[string]struct {
		reason string
		steps  []*v1alpha1.ProvisioningStep
		want   *v1alpha1.ProvisioningPlan
	}{
		"NothingPending": {
			reason: "Resources without a plan leave no plan at all.",
			steps:  []*v1alpha1.ProvisioningStep{nil, nil},
		},
		"InOrder": {
			reason: "The steps keep the order given (the owner role before the database it owns) and the summary counts every statement.",
			steps:  []*v1alpha1.ProvisioningStep{role, db},
			want:   &v1alpha1.ProvisioningPlan{Steps: []v1alpha1.ProvisioningStep{*role, *db}, Summary: "Create: 3 statements in 2 resources"},
		},
		"SkipsUpToDate": {
			reason: "A resource with nothing pending is not a step.",
			steps:  []*v1alpha1.ProvisioningStep{nil, db},
			want:   &v1alpha1.ProvisioningPlan{Steps: []v1alpha1.ProvisioningStep{*db}, Summary: "Create: 1 statement in 1 resource"},
		},
		"MixedActionsAndOmitted": {
			reason: "Each action is named once, in order, and statements a long plan cut are counted.",
			steps:  []*v1alpha1.ProvisioningStep{db, login},
			want:   &v1alpha1.ProvisioningPlan{Steps: []v1alpha1.ProvisioningStep{*db, *login}, Summary: "Create, Update: 7 statements in 2 resources"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, v1alpha1.ProvisioningPlanOf(tc.steps...)); diff != "" {
				t.Errorf("%s\nProvisioningPlanOf (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestStepOf(t *testing.T) {
	r := &v1alpha1.PostgreSQLRole{}
	r.SetName("orders-owner")
	if s := v1alpha1.StepOf(r, v1alpha1.PostgreSQLRoleKind); s != nil {
		t.Errorf("a role with no plan is a step: %+v", s)
	}
	p := plan(v1alpha1.PlanCreate, 0, `CREATE ROLE "orders_owner" NOLOGIN`)
	r.Status.AtProvider.Plan = &p
	want := &v1alpha1.ProvisioningStep{Kind: v1alpha1.PostgreSQLRoleKind, Name: "orders-owner", Plan: p}
	got := v1alpha1.StepOf(r, v1alpha1.PostgreSQLRoleKind)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("StepOf (-want +got):\n%s", diff)
	}
	got.Plan.Statements[0] = "changed"
	if r.Status.AtProvider.Plan.Statements[0] == "changed" {
		t.Error("a step shares its statements with the resource's status")
	}
}
