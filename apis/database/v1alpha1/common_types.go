package v1alpha1

import (
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// InstanceReference names the PostgreSQLInstance a resource lives on.
type InstanceReference struct {
	// Name of the cluster-scoped PostgreSQLInstance.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// Reasons of conditions shared by the managed kinds.
const (
	// ReasonConflict: the provider will not act because what it would act
	// on is not what it was bound to (another server, an object it did not
	// create). The message says what is confirmed, what is uncertain and
	// how to check by hand.
	ReasonConflict = "Conflict"

	// ReasonObserveOnly: the object exists and is observed read-only (an
	// import). Existence alone is not Ready: the provider changes nothing
	// and nothing may be delivered from it.
	ReasonObserveOnly = "ObserveOnly"

	// ReasonPolicyRefused: what the spec asks would cross the privilege
	// boundary between a namespace and the server that the Instance's
	// policy draws. The message names the field and the rule; nothing was
	// sent to the server.
	ReasonPolicyRefused = "PolicyRefused"

	// ReasonPasswordExpired: a login role's validUntil has passed; the
	// server refuses its password and the provider does not re-set it.
	ReasonPasswordExpired = "PasswordExpired"
)

// NotReady returns a Ready condition that is False for reason, with a
// message that says what is wrong and what to do. Every kind builds its
// Ready=False conditions with it.
func NotReady(reason xpv2.ConditionReason, message string) xpv2.Condition {
	return xpv2.Condition{
		Type: xpv2.TypeReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.Now(),
		Reason: reason, Message: message,
	}
}

// Conflict is the Ready condition of a resource the provider will not act
// on; msg says what is confirmed, what is uncertain and how to check.
func Conflict(msg string) xpv2.Condition {
	return NotReady(ReasonConflict, msg)
}

// ObserveOnly is the Ready condition of an object imported read-only:
// what names it.
func ObserveOnly(what string) xpv2.Condition {
	return NotReady(ReasonObserveOnly,
		what+" exists and is observed read-only (managementPolicies: [Observe]); status.atProvider shows what was read. "+
			"Nothing is changed and it is not delivered: existence alone is not Ready. To let this resource manage it, widen managementPolicies; "+
			"an object the provider did not create then reports a Conflict that says how an admin hands it over.")
}

// DriftStatus is what the provider knows of changes made to a resource's
// object on the server, not through the resource.
type DriftStatus struct {
	// LastDrift is the last such change found.
	// +optional
	LastDrift *Drift `json:"lastDrift,omitempty"`
	// DriftBaseline is what the provider last found the object to be
	// while it was as the spec asks (or, for an Observe-only resource, at
	// the last observation), and the generation of the spec it answers
	// to: a later observation of the same generation that differs found a
	// change made outside this resource.
	// +optional
	DriftBaseline *DriftBaseline `json:"driftBaseline,omitempty"`
	// LastDriftEvent is when the last DriftDetected event was raised: at
	// most one every ten minutes per resource.
	// +optional
	LastDriftEvent *metav1.Time `json:"lastDriftEvent,omitempty"`
}

// A Drift is a change made on the server outside the resource.
type Drift struct {
	// DetectedAt is when an observation found it.
	DetectedAt metav1.Time `json:"detectedAt"`
	// Fields are the fields that differed, with their values.
	Fields []DriftField `json:"fields"`
	// CorrectedAt is when an observation found the object as the spec
	// asks again; unset while the change stands (always, for an
	// Observe-only resource).
	// +optional
	CorrectedAt *metav1.Time `json:"correctedAt,omitempty"`
	// Reported says a DriftDetected event was raised for it.
	// +optional
	Reported bool `json:"reported,omitempty"`
}

// A DriftField is one field changed on the server.
type DriftField struct {
	// Field is the field's name, as in the spec.
	Field string `json:"field"`
	// Was is its value before the change.
	Was string `json:"was"`
	// Found is its value on the server.
	Found string `json:"found"`
}

// A DriftBaseline is the object as last found in line with the spec.
type DriftBaseline struct {
	// Generation is the spec's generation it answers to.
	Generation int64 `json:"generation"`
	// Fields are the values of the fields the resource manages.
	// +optional
	Fields map[string]string `json:"fields,omitempty"`
}

// Reasons of the UpToDate condition, which a resource observed read-only
// (managementPolicies: [Observe]) carries: its dry run.
const (
	// TypeUpToDate says whether the object on the server is as the spec
	// asks; only resources observed read-only carry it, since the
	// provider changes the others at once.
	TypeUpToDate xpv2.ConditionType = "UpToDate"

	// ReasonChangesPending: the object differs from the spec (or does
	// not exist) and status.atProvider.plan lists what widening the
	// management policies would send.
	ReasonChangesPending xpv2.ConditionReason = "ChangesPending"

	// ReasonNoChangesPending: the object is as the spec asks; widening
	// the management policies would send nothing.
	ReasonNoChangesPending xpv2.ConditionReason = "NoChangesPending"
)

// PlanAction is the step of the reconciler a plan's statements belong to.
// +kubebuilder:validation:Enum=Create;Update;Delete
type PlanAction string

// Plan actions.
const (
	PlanCreate PlanAction = "Create"
	PlanUpdate PlanAction = "Update"
	PlanDelete PlanAction = "Delete"
)

// A Plan lists the statements the provider's next step would send to the
// server for a resource, computed from the observation that decided it
// by the code that sends them. There is none when nothing is to be sent.
type Plan struct {
	// Action is the step: Create, Update or Delete.
	Action PlanAction `json:"action"`
	// Statements are the SQL statements, in the order they would be sent,
	// identifiers as sent. Passwords and password verifiers read
	// '<redacted>'. A long plan is cut (omitted counts the rest).
	// +listType=atomic
	Statements []string `json:"statements"`
	// Omitted is how many statements were left off the end of a long
	// plan.
	// +optional
	Omitted int32 `json:"omitted,omitempty"`
	// Summary is the plan in a few words, for kubectl get: "Update: 3
	// statements".
	Summary string `json:"summary"`
}

// PlanStatus is the plan part of a resource's observation.
type PlanStatus struct {
	// Plan is what the provider would send next: for a resource observed
	// read-only, what widening its management policies would do. Unset
	// when the object is as the spec asks.
	// +optional
	Plan *Plan `json:"plan,omitempty"`
}

// A Planned resource shows the statements its next step would send.
// +kubebuilder:object:generate=false
type Planned interface {
	GetPlan() *Plan
}

// GetPlan returns the role's plan.
func (mg *PostgreSQLRole) GetPlan() *Plan { return mg.Status.AtProvider.Plan }

// GetPlan returns the database's plan.
func (mg *PostgreSQLDatabase) GetPlan() *Plan { return mg.Status.AtProvider.Plan }

// GetPlan returns the schema's plan.
func (mg *PostgreSQLSchema) GetPlan() *Plan { return mg.Status.AtProvider.Plan }

// GetPlan returns the grant's plan.
func (mg *PostgreSQLGrant) GetPlan() *Plan { return mg.Status.AtProvider.Plan }

// GetPlan returns the default privileges' plan.
func (mg *PostgreSQLDefaultPrivileges) GetPlan() *Plan { return mg.Status.AtProvider.Plan }
