// Package pending shows what the provider's next step would send to a
// resource's server: the plan in status.atProvider.plan and the UpToDate
// condition. Each kind computes the statements in Observe with the code
// that sends them; this package records them, bounded and with passwords
// redacted, so that a platform team can apply a change with
// managementPolicies: [Observe], read what widening the policies would
// do, and only then widen them.
package pending

import (
	"fmt"
	"regexp"
	"slices"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/controller/management"
)

// Bounds of a plan in status: a resource's status is read on every
// kubectl get and written with every change, so a plan of thousands of
// grants is cut, saying how many statements were left off.
const (
	MaxStatements = 20
	MaxLength     = 1000
)

// Redacted is what a password or verifier reads in a plan.
const Redacted = "'<redacted>'"

// secret matches the literal after PASSWORD, doubled quotes included.
var secret = regexp.MustCompile(`(?i)(\bPASSWORD\s+)'(?:[^']|'')*'`)

// Redact returns stmt with every password literal replaced by Redacted.
func Redact(stmt string) string {
	return secret.ReplaceAllString(stmt, "${1}"+Redacted)
}

// Of returns the plan of action for stmts, redacted and bounded, without
// the statements that only guard a step (postgres.IsGuard); nil when
// nothing is left.
func Of(action v1alpha1.PlanAction, stmts []string) *v1alpha1.Plan {
	stmts = slices.DeleteFunc(slices.Clone(stmts), postgres.IsGuard)
	if len(stmts) == 0 {
		return nil
	}
	p := &v1alpha1.Plan{Action: action, Statements: make([]string, 0, min(len(stmts), MaxStatements))}
	for i, s := range stmts {
		if i == MaxStatements {
			p.Omitted = int32(len(stmts) - MaxStatements) //nolint:gosec // A plan has far fewer than 2^31 statements.
			break
		}
		s = Redact(s)
		if r := []rune(s); len(r) > MaxLength {
			s = string(r[:MaxLength]) + "…"
		}
		p.Statements = append(p.Statements, s)
	}
	p.Summary = fmt.Sprintf("%s: %s", action, v1alpha1.Statements(len(stmts)))
	return p
}

// Set records the plan of action for stmts in *at and says in mg's
// UpToDate condition whether anything is pending. For a resource observed
// read-only, the message says the plan is what widening its management
// policies would send; nothing is.
func Set(mg resource.Managed, at **v1alpha1.Plan, action v1alpha1.PlanAction, stmts []string) {
	SetWhy(mg, at, action, stmts, "")
}

// SetWhy is Set for a plan that holds something the spec change does not
// explain: why says what, after the summary.
func SetWhy(mg resource.Managed, at **v1alpha1.Plan, action v1alpha1.PlanAction, stmts []string, why string) {
	*at = Of(action, stmts)
	if *at == nil {
		mg.SetConditions(upToDate())
		return
	}
	if why != "" {
		(*at).Summary += "; " + why
	}
	msg := fmt.Sprintf("%s pending; status.atProvider.plan lists them", (*at).Summary)
	if management.ObserveOnly(mg) {
		msg += ". Nothing is sent while managementPolicies is [Observe]: widening the policies sends them"
	}
	mg.SetConditions(xpv2.Condition{
		Type: v1alpha1.TypeUpToDate, Status: corev1.ConditionFalse, LastTransitionTime: metav1.Now(),
		Reason: v1alpha1.ReasonChangesPending, Message: msg,
	})
}

// Sent records that the plan in *at was sent: nothing is pending.
func Sent(mg resource.Managed, at **v1alpha1.Plan) {
	*at = nil
	mg.SetConditions(upToDate())
}

func upToDate() xpv2.Condition {
	return xpv2.Condition{
		Type: v1alpha1.TypeUpToDate, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now(),
		Reason: v1alpha1.ReasonNoChangesPending,
	}
}
