package v1alpha1

import (
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AnnotationLocked lists, comma-separated and sorted, the Locks (or
// ClusterLocks) protecting an object. The shipped admission policy refuses
// deleting an object while it is not empty. Only the provider (and
// Crossplane, copying a claim's annotations) may change it.
const AnnotationLocked = Group + "/locked"

// AnnotationLockReasons holds, one line per Lock of AnnotationLocked that
// has a reason, "name: reason": what the admission policy's denial shows
// after the Locks' names. It only informs; AnnotationLocked decides.
const AnnotationLockReasons = Group + "/lock-reasons"

// Reasons of a Lock's Ready condition.
const (
	// ReasonLockActive: the target carries the lock annotation and the
	// admission policy is installed and bound: deleting it is refused.
	ReasonLockActive xpv2.ConditionReason = "Active"
	// ReasonMissingReference: the target does not exist (yet).
	ReasonMissingReference xpv2.ConditionReason = "MissingReference"
	// ReasonInvalidTarget: the target cannot be protected by this Lock
	// (another API group, a Lock, an unknown kind, the wrong scope).
	ReasonInvalidTarget xpv2.ConditionReason = "InvalidTarget"
	// ReasonPolicyMissing: the target is annotated, but the admission
	// policy that enforces the annotation is not installed or not bound,
	// so deletes are not refused.
	ReasonPolicyMissing xpv2.ConditionReason = "PolicyMissing"
)

// TargetReference names the object a Lock protects.
type TargetReference struct {
	// APIVersion of the target. Defaults to this provider's group and
	// version; only kinds of group database.ayatori.ddupan.top can be
	// protected.
	// +kubebuilder:default="database.ayatori.ddupan.top/v1alpha1"
	// +kubebuilder:validation:MaxLength=253
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`
	// Kind of the target, such as PostgreSQLDatabase.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
	// Name of the target: in the Lock's own namespace for a Lock;
	// cluster-scoped for a ClusterLock.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// LockSpec says what a Lock protects, and why.
type LockSpec struct {
	// TargetRef is the protected object. It cannot change: create another
	// Lock instead.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="targetRef cannot be changed: create another Lock for another target"
	TargetRef TargetReference `json:"targetRef"`
	// Reason is free text shown in status, in the Crossplane Usage the Lock
	// maps to, and to whoever looks at the Lock.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Reason string `json:"reason,omitempty"`
}

// LockStatus is what a Lock observed.
type LockStatus struct {
	xpv2.ConditionedStatus `json:",inline"`
	// Active is true while the target carries the lock annotation and the
	// admission policy refuses its deletion.
	Active bool `json:"active"`
	// TargetUID is the UID of the target object last annotated.
	// +optional
	TargetUID string `json:"targetUID,omitempty"`
	// Usage names the Crossplane Usage (or ClusterUsage) that mirrors the
	// Lock, when Crossplane's protection API is served.
	// +optional
	Usage string `json:"usage,omitempty"`
	// ObservedGeneration is the generation last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// A Lock protects an object of this provider's API group, in its own
// namespace, from deletion: while it exists, the shipped admission policy
// refuses every delete of the target (kubectl, API, garbage collector,
// namespace deletion). Delete the Lock to lift the protection.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={postgresql},shortName=pglock
// +kubebuilder:printcolumn:name="KIND",type="string",JSONPath=".spec.targetRef.kind"
// +kubebuilder:printcolumn:name="TARGET",type="string",JSONPath=".spec.targetRef.name"
// +kubebuilder:printcolumn:name="ACTIVE",type="boolean",JSONPath=".status.active"
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].reason"
// +kubebuilder:printcolumn:name="REASON",type="string",JSONPath=".spec.reason",priority=1
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
type Lock struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   LockSpec   `json:"spec"`
	Status LockStatus `json:"status,omitempty"`
}

// LockList contains a list of Lock.
// +kubebuilder:object:root=true
type LockList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Lock `json:"items"`
}

// A ClusterLock protects a cluster-scoped object of this provider's API
// group, such as a PostgreSQLInstance, from deletion, like a Lock does in a
// namespace.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories={postgresql},shortName=pgclusterlock
// +kubebuilder:printcolumn:name="KIND",type="string",JSONPath=".spec.targetRef.kind"
// +kubebuilder:printcolumn:name="TARGET",type="string",JSONPath=".spec.targetRef.name"
// +kubebuilder:printcolumn:name="ACTIVE",type="boolean",JSONPath=".status.active"
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].reason"
// +kubebuilder:printcolumn:name="REASON",type="string",JSONPath=".spec.reason",priority=1
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
type ClusterLock struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   LockSpec   `json:"spec"`
	Status LockStatus `json:"status,omitempty"`
}

// ClusterLockList contains a list of ClusterLock.
// +kubebuilder:object:root=true
type ClusterLockList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterLock `json:"items"`
}

// Stamp records that the status, its conditions included, describes
// generation.
func (s *LockStatus) Stamp(generation int64) {
	for i := range s.Conditions {
		s.Conditions[i].ObservedGeneration = generation
	}
	s.ObservedGeneration = generation
}

// GetCondition returns the condition of type ct.
func (l *Lock) GetCondition(ct xpv2.ConditionType) xpv2.Condition { return l.Status.GetCondition(ct) }

// SetConditions sets conditions.
func (l *Lock) SetConditions(c ...xpv2.Condition) { l.Status.SetConditions(c...) }

// GetCondition returns the condition of type ct.
func (l *ClusterLock) GetCondition(ct xpv2.ConditionType) xpv2.Condition {
	return l.Status.GetCondition(ct)
}

// SetConditions sets conditions.
func (l *ClusterLock) SetConditions(c ...xpv2.Condition) { l.Status.SetConditions(c...) }

// GetLockSpec returns the Lock's spec.
func (l *Lock) GetLockSpec() LockSpec { return l.Spec }

// GetLockStatus returns the Lock's status, to be changed in place.
func (l *Lock) GetLockStatus() *LockStatus { return &l.Status }

// GetLockSpec returns the ClusterLock's spec.
func (l *ClusterLock) GetLockSpec() LockSpec { return l.Spec }

// GetLockStatus returns the ClusterLock's status, to be changed in place.
func (l *ClusterLock) GetLockStatus() *LockStatus { return &l.Status }
