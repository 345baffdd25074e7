package v1alpha1

import (
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultPrivilegesObjectType is the kind of objects default privileges
// apply to.
// +kubebuilder:validation:Enum=Tables;Sequences;Functions;Types;Schemas
type DefaultPrivilegesObjectType string

// Object types of PostgreSQLDefaultPrivileges.
const (
	DefaultPrivilegesTables    DefaultPrivilegesObjectType = "Tables"
	DefaultPrivilegesSequences DefaultPrivilegesObjectType = "Sequences"
	DefaultPrivilegesFunctions DefaultPrivilegesObjectType = "Functions"
	DefaultPrivilegesTypes     DefaultPrivilegesObjectType = "Types"
	DefaultPrivilegesSchemas   DefaultPrivilegesObjectType = "Schemas"
)

// PostgreSQLDefaultPrivilegesParameters say which privileges a role gets on
// objects another role creates later.
// +kubebuilder:validation:XValidation:rule="has(self.role) != (has(self.roleRef) || has(self.roleSelector))",message="set exactly one of role, or roleRef/roleSelector: the grantee"
// +kubebuilder:validation:XValidation:rule="has(self.role) == has(oldSelf.role) && (!has(self.role) || self.role == oldSelf.role)",message="role cannot be changed: create a new PostgreSQLDefaultPrivileges for another grantee"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.roleRef) || (has(self.roleRef) && self.roleRef == oldSelf.roleRef)",message="roleRef cannot be changed once set: create a new PostgreSQLDefaultPrivileges for another grantee"
// +kubebuilder:validation:XValidation:rule="has(self.owner) != has(self.ownerRef)",message="set exactly one of owner or ownerRef: the role whose new objects get the privileges"
// +kubebuilder:validation:XValidation:rule="has(self.owner) == has(oldSelf.owner) && (!has(self.owner) || self.owner == oldSelf.owner)",message="owner cannot be changed: create a new PostgreSQLDefaultPrivileges"
// +kubebuilder:validation:XValidation:rule="has(self.ownerRef) == has(oldSelf.ownerRef) && (!has(self.ownerRef) || self.ownerRef == oldSelf.ownerRef)",message="ownerRef cannot be changed: create a new PostgreSQLDefaultPrivileges"
// +kubebuilder:validation:XValidation:rule="has(self.database) != has(self.databaseRef)",message="set exactly one of database or databaseRef"
// +kubebuilder:validation:XValidation:rule="has(self.database) == has(oldSelf.database) && (!has(self.database) || self.database == oldSelf.database)",message="database cannot be changed: create a new PostgreSQLDefaultPrivileges"
// +kubebuilder:validation:XValidation:rule="has(self.databaseRef) == has(oldSelf.databaseRef) && (!has(self.databaseRef) || self.databaseRef == oldSelf.databaseRef)",message="databaseRef cannot be changed: create a new PostgreSQLDefaultPrivileges"
// +kubebuilder:validation:XValidation:rule="!(has(self.schema) && has(self.schemaRef))",message="set schema or schemaRef, not both"
// +kubebuilder:validation:XValidation:rule="has(self.schema) == has(oldSelf.schema) && (!has(self.schema) || self.schema == oldSelf.schema)",message="schema cannot be changed: create a new PostgreSQLDefaultPrivileges"
// +kubebuilder:validation:XValidation:rule="has(self.schemaRef) == has(oldSelf.schemaRef) && (!has(self.schemaRef) || self.schemaRef == oldSelf.schemaRef)",message="schemaRef cannot be changed: create a new PostgreSQLDefaultPrivileges"
// +kubebuilder:validation:XValidation:rule="self.objectType == oldSelf.objectType",message="objectType cannot be changed: create a new PostgreSQLDefaultPrivileges"
// +kubebuilder:validation:XValidation:rule="self.objectType != 'Schemas' || !(has(self.schema) || has(self.schemaRef))",message="default privileges on Schemas cannot be limited to a schema: leave out schema and schemaRef"
// +kubebuilder:validation:XValidation:rule="self.objectType != 'Tables' || self.privileges.all(p, p in ['ALL', 'SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER', 'MAINTAIN'])",message="privileges on Tables are ALL, SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER or MAINTAIN (PostgreSQL 17+)",fieldPath=".privileges"
// +kubebuilder:validation:XValidation:rule="self.objectType != 'Sequences' || self.privileges.all(p, p in ['ALL', 'USAGE', 'SELECT', 'UPDATE'])",message="privileges on Sequences are ALL, USAGE, SELECT or UPDATE",fieldPath=".privileges"
// +kubebuilder:validation:XValidation:rule="self.objectType != 'Functions' || self.privileges.all(p, p in ['ALL', 'EXECUTE'])",message="privileges on Functions are ALL or EXECUTE",fieldPath=".privileges"
// +kubebuilder:validation:XValidation:rule="self.objectType != 'Types' || self.privileges.all(p, p in ['ALL', 'USAGE'])",message="privileges on Types are ALL or USAGE",fieldPath=".privileges"
// +kubebuilder:validation:XValidation:rule="self.objectType != 'Schemas' || self.privileges.all(p, p in ['ALL', 'USAGE', 'CREATE'])",message="privileges on Schemas are ALL, USAGE or CREATE",fieldPath=".privileges"
type PostgreSQLDefaultPrivilegesParameters struct {
	// Role is the grantee, by its PostgreSQL name.
	// +kubebuilder:validation:Pattern=`^[a-z_][a-z0-9_]{0,62}$`
	// +optional
	Role *string `json:"role,omitempty"`

	// RoleRef names the grantee: a PostgreSQLRole in this namespace on the
	// same Instance.
	// +optional
	RoleRef *LocalReference `json:"roleRef,omitempty"`

	// RoleSelector selects the grantee among the PostgreSQLRoles of this
	// namespace by label; the match is recorded in roleRef.
	// +optional
	RoleSelector *RoleSelector `json:"roleSelector,omitempty"`

	// Owner is the role whose future objects get the privileges (ALTER
	// DEFAULT PRIVILEGES FOR ROLE owner).
	// +kubebuilder:validation:Pattern=`^[a-z_][a-z0-9_]{0,62}$`
	// +optional
	Owner *string `json:"owner,omitempty"`

	// OwnerRef names a PostgreSQLRole in this namespace instead of owner.
	// +optional
	OwnerRef *LocalReference `json:"ownerRef,omitempty"`

	// Database the default privileges apply in, by its PostgreSQL name.
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9_]{0,62}$`
	// +optional
	Database *string `json:"database,omitempty"`

	// DatabaseRef names a PostgreSQLDatabase in this namespace instead of
	// database.
	// +optional
	DatabaseRef *LocalReference `json:"databaseRef,omitempty"`

	// Schema limits the default privileges to objects created in it (IN
	// SCHEMA). Absent means objects created anywhere in the database.
	// +kubebuilder:validation:Pattern=`^[a-z_][a-z0-9_]{0,62}$`
	// +optional
	Schema *string `json:"schema,omitempty"`

	// SchemaRef names a PostgreSQLSchema in this namespace instead of
	// schema.
	// +optional
	SchemaRef *LocalReference `json:"schemaRef,omitempty"`

	// ObjectType is the kind of future objects: Tables, Sequences,
	// Functions, Types or Schemas. It cannot change.
	ObjectType DefaultPrivilegesObjectType `json:"objectType"`

	// Privileges granted on those objects when they are created; each must
	// fit the object type. Removing one revokes it, if this resource set
	// it.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=14
	// +listType=set
	Privileges []Privilege `json:"privileges"`

	// WithGrantOption lets the grantee grant the privileges on.
	// +optional
	WithGrantOption bool `json:"withGrantOption,omitempty"`
}

// A PostgreSQLDefaultPrivilegesSpec defines the desired state of a
// PostgreSQLDefaultPrivileges.
type PostgreSQLDefaultPrivilegesSpec struct {
	// ManagementPolicies say what the provider may do. The default includes
	// Delete: deleting the resource revokes the default privileges it set,
	// and nothing else.
	// +kubebuilder:default={"*"}
	// +optional
	ManagementPolicies xpv2.ManagementPolicies `json:"managementPolicies,omitempty"`

	// InstanceRef names the PostgreSQLInstance the default privileges live
	// on. It cannot change.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="instanceRef cannot be changed: default privileges cannot move between servers"
	InstanceRef InstanceReference `json:"instanceRef"`

	// ForProvider says which privileges whose future objects give to whom.
	ForProvider PostgreSQLDefaultPrivilegesParameters `json:"forProvider"`
}

// PostgreSQLDefaultPrivilegesObservation is the default privileges entry as
// last observed.
type PostgreSQLDefaultPrivilegesObservation struct {
	// InstanceUID is the UID of the PostgreSQLInstance this was bound to on
	// first connect.
	// +optional
	InstanceUID string `json:"instanceUID,omitempty"`
	// SystemIdentifier of the server this was bound to.
	// +optional
	SystemIdentifier string `json:"systemIdentifier,omitempty"`
	// Role is the grantee's PostgreSQL name.
	// +optional
	Role string `json:"role,omitempty"`
	// Owner is the role whose future objects get the privileges.
	// +optional
	Owner string `json:"owner,omitempty"`
	// Database the default privileges apply in.
	// +optional
	Database string `json:"database,omitempty"`
	// Schema the default privileges are limited to, if any.
	// +optional
	Schema string `json:"schema,omitempty"`
	// Privileges the grantee's entry in pg_default_acl holds, of those the
	// spec lists (ALL expanded for the server's version).
	// +optional
	Privileges []string `json:"privileges,omitempty"`
	// AppliedPrivileges are the privileges this resource set: what it
	// revokes when they leave the spec or the resource is deleted.
	// +optional
	AppliedPrivileges []string `json:"appliedPrivileges,omitempty"`
	// AppliedGrantOption is true when this resource gave the grant option.
	// +optional
	AppliedGrantOption bool `json:"appliedGrantOption,omitempty"`
	// DriftStatus reports changes made on the server, not through
	// this resource (lastDrift).
	DriftStatus `json:",inline"`
	// PlanStatus shows the statements the next step would send
	// (plan).
	PlanStatus `json:",inline"`
}

// A PostgreSQLDefaultPrivilegesStatus represents the observed state of a
// PostgreSQLDefaultPrivileges.
type PostgreSQLDefaultPrivilegesStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	// AtProvider is the entry as last observed.
	// +optional
	AtProvider PostgreSQLDefaultPrivilegesObservation `json:"atProvider,omitempty"`
}

// A PostgreSQLDefaultPrivileges gives a role privileges on the objects
// another role creates from now on (ALTER DEFAULT PRIVILEGES). It is Ready
// when the grantee's own entry in pg_default_acl, for that owner, schema
// and object type, holds every privilege it lists.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,postgresql},shortName=pgdefaultprivileges
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="INSTANCE",type="string",JSONPath=".spec.instanceRef.name"
// +kubebuilder:printcolumn:name="ROLE",type="string",JSONPath=".status.atProvider.role"
// +kubebuilder:printcolumn:name="OWNER",type="string",JSONPath=".status.atProvider.owner"
// +kubebuilder:printcolumn:name="TYPE",type="string",JSONPath=".spec.forProvider.objectType"
// +kubebuilder:printcolumn:name="DATABASE",type="string",JSONPath=".status.atProvider.database"
// +kubebuilder:printcolumn:name="PENDING",type="string",JSONPath=".status.atProvider.plan.summary"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +mrgen:managed
type PostgreSQLDefaultPrivileges struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PostgreSQLDefaultPrivilegesSpec   `json:"spec"`
	Status PostgreSQLDefaultPrivilegesStatus `json:"status,omitempty"`
}

// PostgreSQLDefaultPrivilegesList contains a list of
// PostgreSQLDefaultPrivileges.
// +kubebuilder:object:root=true
type PostgreSQLDefaultPrivilegesList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PostgreSQLDefaultPrivileges `json:"items"`
}
