package v1alpha1

import (
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BindingPhase is where a PostgreSQLBinding stands.
// +kubebuilder:validation:Enum=Pending;Bound
type BindingPhase string

// Binding phases.
const (
	// BindingPending: the database is not bound to this binding (yet); the
	// Ready condition says why.
	BindingPending BindingPhase = "Pending"
	// BindingBound: the database's binding names this binding's UID.
	BindingBound BindingPhase = "Bound"
)

// Reasons of a PostgreSQLBinding's Ready condition when it is not Bound.
// Each names one way a database can be held from a tenant.
const (
	// ReasonBound: the database is bound to this binding.
	ReasonBound xpv2.ConditionReason = "Bound"
	// ReasonDatabaseNotFound: no PostgreSQLDatabase of that name exists in
	// the namespace, and the binding does not provision one.
	ReasonDatabaseNotFound xpv2.ConditionReason = "DatabaseNotFound"
	// ReasonProvisioning: the database is being provisioned or observed.
	ReasonProvisioning xpv2.ConditionReason = "Provisioning"
	// ReasonBoundToAnotherTenant: the database is bound to another
	// binding.
	ReasonBoundToAnotherTenant xpv2.ConditionReason = "BoundToAnotherTenant"
	// ReasonReleased: the database was bound to a tenant that is gone; an
	// admin re-opens it.
	ReasonReleased xpv2.ConditionReason = "Released"
	// ReasonNotOffered: the database was neither provisioned for this
	// binding nor offered to tenants by an admin.
	ReasonNotOffered xpv2.ConditionReason = "NotOffered"
	// ReasonPrivilegedOwner: the database's owner role has SUPERUSER,
	// CREATEROLE, BYPASSRLS or REPLICATION, so membership of it cannot be
	// handed to a tenant.
	ReasonPrivilegedOwner xpv2.ConditionReason = "PrivilegedOwner"
	// ReasonMismatch: a PostgreSQLDatabase of that name exists but is not
	// the database the binding asks to provision (another server or
	// another name).
	ReasonMismatch xpv2.ConditionReason = "Mismatch"
	// ReasonRestored: the database was brought back from a backup and
	// goes back to the binding it was bound to, by name; it waits for
	// that binding, or for its ownership to be settled.
	ReasonRestored xpv2.ConditionReason = "Restored"
)

// BindingProvision asks the provider to provision the database of a
// binding when it does not exist: a PostgreSQLDatabase reserved for this
// binding, owned by a NOLOGIN owner role that is kept with the database.
// +kubebuilder:validation:XValidation:rule="self.instanceRef == oldSelf.instanceRef && self.database == oldSelf.database",message="the instance and database of a provisioned database cannot change"
// +kubebuilder:validation:XValidation:rule="has(self.managementPolicies) == has(oldSelf.managementPolicies) && (!has(self.managementPolicies) || self.managementPolicies == oldSelf.managementPolicies)",message="managementPolicies (the reclaim policy) is fixed at provisioning"
type BindingProvision struct {
	// InstanceRef names the PostgreSQLInstance to create the database on.
	InstanceRef InstanceReference `json:"instanceRef"`

	// Database is the database's name in PostgreSQL. Its owner role is
	// <database>_owner (shortened to fit 63 characters).
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9_]{0,62}$`
	Database string `json:"database"`

	// Extensions to install in the database. Append-only once installed:
	// an entry the database has installed (status.database.extensions)
	// cannot be removed, and no extension is ever uninstalled; one never
	// installed (a misspelt name) can be, and leaves the database's list.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9_][a-z0-9_-]{0,62}$`
	// +optional
	Extensions []string `json:"extensions,omitempty"`

	// ManagementPolicies of the provisioned PostgreSQLDatabase and its owner
	// role. This is the database's reclaim policy: without Delete (the
	// default) the data outlives the tenant. Fixed at provisioning; the
	// platform sets it in the tenant Composition, never the tenant.
	// +kubebuilder:default={"Observe","Create","Update","LateInitialize"}
	// +optional
	ManagementPolicies xpv2.ManagementPolicies `json:"managementPolicies,omitempty"`
}

// A PostgreSQLBindingSpec is what a tenant asks to be bound to.
// +kubebuilder:validation:XValidation:rule="has(self.provision) == has(oldSelf.provision)",message="provision cannot be added or removed"
type PostgreSQLBindingSpec struct {
	// Tenant names the PostgreSQLTenant claim, in this namespace, that the
	// binding serves. Shown in the database's binding and in messages.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="tenant cannot be changed"
	Tenant string `json:"tenant"`

	// DatabaseRef names the PostgreSQLDatabase, in this namespace, to bind.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="databaseRef cannot be changed: a binding never moves to another database"
	DatabaseRef LocalReference `json:"databaseRef"`

	// Provision creates the PostgreSQLDatabase named by databaseRef when it
	// does not exist, reserved for this binding (dynamic provisioning).
	// Without it the binding only binds a database an admin registered and
	// offered (spec.binding.offered).
	// +optional
	Provision *BindingProvision `json:"provision,omitempty"`

	// Crossplane is what the provider records on the binding for
	// Crossplane's tools. Written by the provider; a value set here is
	// replaced on the binding's next reconcile.
	// +optional
	Crossplane *BindingCrossplane `json:"crossplane,omitempty"`
}

// BindingCrossplane is what Crossplane's tools read of a binding.
type BindingCrossplane struct {
	// ResourceRefs are the objects the binding stands for: the
	// PostgreSQLDatabase bound to it or provisioned for it and, when the
	// database names one, its owner PostgreSQLRole. Kept in the shape of
	// a composite resource's spec.crossplane.resourceRefs so that
	// `crossplane resource trace` of a tenant goes on from its binding to
	// them. Empty while nothing is bound or provisioned.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=4
	// +optional
	ResourceRefs []ResourceRef `json:"resourceRefs,omitempty"`
}

// ResourceRef names an object in the binding's namespace.
type ResourceRef struct {
	// APIVersion of the object.
	// +kubebuilder:validation:MaxLength=253
	APIVersion string `json:"apiVersion"`
	// Kind of the object.
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
	// Name of the object.
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// BoundDatabase is what a Bound binding delivers.
type BoundDatabase struct {
	// Name of the PostgreSQLDatabase object.
	Name string `json:"name"`
	// UID of the PostgreSQLDatabase object.
	UID string `json:"uid"`
	// Instance is the PostgreSQLInstance the database lives on.
	Instance string `json:"instance"`
	// Database is the database's name in PostgreSQL.
	Database string `json:"database"`
	// Owner is the database's owner role, of which the tenant's login role
	// becomes a member.
	Owner string `json:"owner"`
	// Extensions installed in the database, of those it lists (its
	// status.atProvider.extensions): the ones the binding can no longer
	// remove.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +optional
	Extensions []string `json:"extensions,omitempty"`
	// CredentialVault is true when the PostgreSQLInstance names a
	// spec.credentialVault: the tenant's credentials are delivered through
	// it (unless the tenant Composition asks for a Secret).
	// +optional
	CredentialVault bool `json:"credentialVault,omitempty"`
}

// A PostgreSQLBindingStatus is the binding as the provider last saw it.
type PostgreSQLBindingStatus struct {
	xpv2.ConditionedStatus `json:",inline"`
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Phase is Bound once the database's binding names this binding's
	// UID, else Pending.
	// +optional
	Phase BindingPhase `json:"phase,omitempty"`
	// Database is what the binding delivers, once Bound.
	// +optional
	Database *BoundDatabase `json:"database,omitempty"`
	// Plan is what the provider would send next to the server for the
	// resources this binding provisioned (its database and the database's
	// owner role), as each shows it in status.atProvider.plan. Unset when
	// they are as their specs ask, and for a binding that provisions
	// nothing.
	// +optional
	Plan *ProvisioningPlan `json:"plan,omitempty"`
}

// ProvisioningPlan is the pending plans of the resources a binding
// provisioned, in the order the provider sends them.
type ProvisioningPlan struct {
	// Steps are the provisioned resources with changes pending, each with
	// its own plan: the owner role first (the database is created owned by
	// it), then the database.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	Steps []ProvisioningStep `json:"steps"`
	// Summary is the plan in a few words, for kubectl get: "Create: 6
	// statements in 2 resources".
	Summary string `json:"summary"`
}

// ProvisioningStep is one resource's pending plan.
type ProvisioningStep struct {
	// Kind of the resource: PostgreSQLRole or PostgreSQLDatabase.
	Kind string `json:"kind"`
	// Name of the resource, in the binding's namespace.
	Name string `json:"name"`
	// Plan is the resource's status.atProvider.plan.
	Plan Plan `json:"plan"`
}

// A PostgreSQLBinding is a tenant's request to be bound to one
// PostgreSQLDatabase of its namespace, the way a PersistentVolumeClaim asks
// for a PersistentVolume. The tenant Composition composes one for each
// PostgreSQLTenant; the provider's database controller alone decides which
// binding a database is bound to, and writes it on the database. Nothing is
// delivered to a tenant before its binding is Bound. Tenants cannot create
// bindings themselves (see cluster/personas.yaml).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.spec.provision) || !has(oldSelf.spec.provision.extensions) || !has(oldSelf.status) || !has(oldSelf.status.database) || !has(oldSelf.status.database.extensions) || oldSelf.spec.provision.extensions.all(e, !(e in oldSelf.status.database.extensions) || (has(self.spec.provision) && has(self.spec.provision.extensions) && e in self.spec.provision.extensions))",message="spec.provision.extensions: an extension the database has installed (status.database.extensions) cannot be removed, and is never uninstalled; only one never installed can be"
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,postgresql},shortName=pgbinding
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="PHASE",type="string",JSONPath=".status.phase"
// +kubebuilder:printcolumn:name="DATABASE",type="string",JSONPath=".spec.databaseRef.name"
// +kubebuilder:printcolumn:name="REASON",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].reason"
// +kubebuilder:printcolumn:name="PENDING",type="string",JSONPath=".status.plan.summary"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
type PostgreSQLBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PostgreSQLBindingSpec   `json:"spec"`
	Status PostgreSQLBindingStatus `json:"status,omitempty"`
}

// PostgreSQLBindingList contains a list of PostgreSQLBinding.
// +kubebuilder:object:root=true
type PostgreSQLBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PostgreSQLBinding `json:"items"`
}

// GetCondition returns the condition of type ct.
func (b *PostgreSQLBinding) GetCondition(ct xpv2.ConditionType) xpv2.Condition {
	return b.Status.GetCondition(ct)
}

// SetConditions sets conditions.
func (b *PostgreSQLBinding) SetConditions(c ...xpv2.Condition) {
	b.Status.SetConditions(c...)
}

// StampGeneration records in the status, its conditions included, that it
// describes the current generation.
func (b *PostgreSQLBinding) StampGeneration() {
	for i := range b.Status.Conditions {
		b.Status.Conditions[i].ObservedGeneration = b.GetGeneration()
	}
	b.Status.ObservedGeneration = b.GetGeneration()
}

// InstanceBinding implements InstanceUser: a binding that provisions
// refers to the Instance it provisions on. It is never bound to an
// Instance UID itself; its database is.
func (b *PostgreSQLBinding) InstanceBinding() (string, string) {
	if b.Spec.Provision == nil {
		return "", ""
	}
	return b.Spec.Provision.InstanceRef.Name, ""
}
