package pending

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
)

func TestRedact(t *testing.T) {
	cases := map[string]struct {
		stmt string
		want string
	}{
		"Verifier": {
			stmt: `CREATE ROLE "app" LOGIN PASSWORD 'SCRAM-SHA-256$4096:c2FsdA==$a:b'`,
			want: `CREATE ROLE "app" LOGIN PASSWORD '<redacted>'`,
		},
		"DoubledQuotes": {
			stmt: `ALTER ROLE "app" PASSWORD 'it''s secret' VALID UNTIL 'infinity'`,
			want: `ALTER ROLE "app" PASSWORD '<redacted>' VALID UNTIL 'infinity'`,
		},
		"LowerCase": {
			stmt: `alter role app password 'x'`,
			want: `alter role app password '<redacted>'`,
		},
		"NoPassword": {
			stmt: `COMMENT ON ROLE "app" IS 'PASSWORD in a comment is not one'`,
			want: `COMMENT ON ROLE "app" IS 'PASSWORD in a comment is not one'`,
		},
		"PasswordNull": {
			stmt: `ALTER ROLE "app" PASSWORD NULL`,
			want: `ALTER ROLE "app" PASSWORD NULL`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Redact(tc.stmt)); diff != "" {
				t.Errorf("Redact(%q) (-want +got):\n%s", tc.stmt, diff)
			}
		})
	}
}

func TestOf(t *testing.T) {
	many := make([]string, MaxStatements+5)
	for i := range many {
		many[i] = fmt.Sprintf("GRANT SELECT ON TABLE t%d TO app", i)
	}
	long := "GRANT SELECT ON TABLE " + strings.Repeat("t", MaxLength) + " TO app"
	cases := map[string]struct {
		reason string
		action v1alpha1.PlanAction
		stmts  []string
		want   *v1alpha1.Plan
	}{
		"Nothing": {
			reason: "No statements, no plan.",
			action: v1alpha1.PlanUpdate,
			want:   nil,
		},
		"One": {
			reason: "The summary counts the statements in the singular.",
			action: v1alpha1.PlanCreate,
			stmts:  []string{`CREATE SCHEMA "s"`},
			want:   &v1alpha1.Plan{Action: v1alpha1.PlanCreate, Statements: []string{`CREATE SCHEMA "s"`}, Summary: "Create: 1 statement"},
		},
		"Redacted": {
			reason: "Passwords never reach the status.",
			action: v1alpha1.PlanUpdate,
			stmts:  []string{`ALTER ROLE "app" CONNECTION LIMIT 5`, `ALTER ROLE "app" PASSWORD 'SCRAM-SHA-256$x'`},
			want: &v1alpha1.Plan{Action: v1alpha1.PlanUpdate, Statements: []string{`ALTER ROLE "app" CONNECTION LIMIT 5`, `ALTER ROLE "app" PASSWORD '<redacted>'`},
				Summary: "Update: 2 statements"},
		},
		"Guards": {
			reason: "The transaction-local setting that guards a step changes nothing that lasts: a plan of it alone is none.",
			action: v1alpha1.PlanCreate,
			stmts:  []string{postgres.NoSelfGrantSQL},
			want:   nil,
		},
		"Cut": {
			reason: "A long plan keeps its first statements and counts the rest; the summary counts them all.",
			action: v1alpha1.PlanUpdate,
			stmts:  many,
			want:   &v1alpha1.Plan{Action: v1alpha1.PlanUpdate, Statements: many[:MaxStatements], Omitted: 5, Summary: fmt.Sprintf("Update: %d statements", len(many))},
		},
		"LongStatement": {
			reason: "A statement longer than MaxLength is cut with an ellipsis.",
			action: v1alpha1.PlanUpdate,
			stmts:  []string{long},
			want:   &v1alpha1.Plan{Action: v1alpha1.PlanUpdate, Statements: []string{long[:MaxLength] + "…"}, Summary: "Update: 1 statement"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Of(tc.action, tc.stmts)); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestSet(t *testing.T) {
	type want struct {
		Summary string
		Status  corev1.ConditionStatus
		Reason  xpv2.ConditionReason
	}
	cases := map[string]struct {
		reason   string
		policies xpv2.ManagementPolicies
		stmts    []string
		why      string
		want     want
		says     string
	}{
		"Managed": {
			reason:   "A managed resource's plan is sent next.",
			policies: xpv2.ManagementPolicies{xpv2.ManagementActionAll},
			stmts:    []string{"ALTER DATABASE d CONNECTION LIMIT 5"},
			want:     want{Summary: "Update: 1 statement", Status: corev1.ConditionFalse, Reason: v1alpha1.ReasonChangesPending},
		},
		"ObserveOnly": {
			reason:   "A resource observed read-only says that nothing is sent until its policies widen.",
			policies: xpv2.ManagementPolicies{xpv2.ManagementActionObserve},
			stmts:    []string{"ALTER DATABASE d CONNECTION LIMIT 5"},
			want:     want{Summary: "Update: 1 statement", Status: corev1.ConditionFalse, Reason: v1alpha1.ReasonChangesPending},
			says:     "widening the policies sends them",
		},
		"Why": {
			reason:   "A statement the spec change does not explain (a password set again) says why, in the summary and the condition.",
			policies: xpv2.ManagementPolicies{xpv2.ManagementActionAll},
			stmts:    []string{"ALTER ROLE r WITH CONNECTION LIMIT 5", "ALTER ROLE r PASSWORD 'x'"},
			why:      "the password is set again",
			want:     want{Summary: "Update: 2 statements; the password is set again", Status: corev1.ConditionFalse, Reason: v1alpha1.ReasonChangesPending},
			says:     "Update: 2 statements; the password is set again pending",
		},
		"UpToDate": {
			reason:   "Nothing pending: no plan, and the condition says so.",
			policies: xpv2.ManagementPolicies{xpv2.ManagementActionObserve},
			want:     want{Status: corev1.ConditionTrue, Reason: v1alpha1.ReasonNoChangesPending},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			mg := &v1alpha1.PostgreSQLDatabase{}
			mg.Spec.ManagementPolicies = tc.policies
			SetWhy(mg, &mg.Status.AtProvider.Plan, v1alpha1.PlanUpdate, tc.stmts, tc.why)
			c := mg.GetCondition(v1alpha1.TypeUpToDate)
			got := want{Status: c.Status, Reason: c.Reason}
			if p := mg.Status.AtProvider.Plan; p != nil {
				got.Summary = p.Summary
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
			if !strings.Contains(c.Message, tc.says) {
				t.Errorf("%s\nthe condition's message %q does not say %q", tc.reason, c.Message, tc.says)
			}
			Sent(mg, &mg.Status.AtProvider.Plan)
			if mg.Status.AtProvider.Plan != nil || mg.GetCondition(v1alpha1.TypeUpToDate).Status != corev1.ConditionTrue {
				t.Errorf("after Sent, the plan is %v and UpToDate %v", mg.Status.AtProvider.Plan, mg.GetCondition(v1alpha1.TypeUpToDate))
			}
		})
	}
}
