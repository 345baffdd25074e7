package v1alpha1

import (
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PostgreSQLSchemaParameters are the schema's settings in PostgreSQL.
// +kubebuilder:validation:XValidation:rule="has(self.database) != has(self.databaseRef)",message="set exactly one of database or databaseRef"
// +kubebuilder:validation:XValidation:rule="has(self.name) == has(oldSelf.name) && (!has(self.name) || self.name == oldSelf.name)",message="name cannot be changed: a schema is never re-pointed; create a new PostgreSQLSchema instead"
// +kubebuilder:validation:XValidation:rule="has(self.database) == has(oldSelf.database) && (!has(self.database) || self.database == oldSelf.database)",message="database cannot be changed: a schema cannot move between databases"
// +kubebuilder:validation:XValidation:rule="has(self.databaseRef) == has(oldSelf.databaseRef) && (!has(self.databaseRef) || self.databaseRef == oldSelf.databaseRef)",message="databaseRef cannot be changed: a schema cannot move between databases"
// +kubebuilder:validation:XValidation:rule="!(has(self.owner) && has(self.ownerRef))",message="set owner or ownerRef, not both"
type PostgreSQLSchemaParameters struct {
	// Name of the schema in PostgreSQL. Defaults to metadata.name, which
	// must then be a valid identifier. Names starting with pg_ are reserved
	// by PostgreSQL. It cannot change once set.
	// +kubebuilder:validation:Pattern=`^[a-z_][a-z0-9_]{0,62}$`
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('pg_')",message="schema names starting with pg_ are reserved by PostgreSQL"
	// +optional
	Name *string `json:"name,omitempty"`

	// Database the schema lives in, by its PostgreSQL name.
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9_]{0,62}$`
	// +optional
	Database *string `json:"database,omitempty"`

	// DatabaseRef names a PostgreSQLDatabase in this namespace, on the same
	// Instance, that the schema lives in; the schema waits until it exists.
	// +optional
	DatabaseRef *LocalReference `json:"databaseRef,omitempty"`

	// Owner is the role that owns the schema (AUTHORIZATION). Defaults to
	// the Instance's admin role. Can change later (ALTER SCHEMA … OWNER TO).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Owner *string `json:"owner,omitempty"`

	// OwnerRef names a PostgreSQLRole in this namespace whose role owns the
	// schema; the schema waits until that role exists.
	// +optional
	OwnerRef *LocalReference `json:"ownerRef,omitempty"`

	// Comment on the schema (COMMENT ON SCHEMA). The provider appends its
	// ownership marker to it.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Comment *string `json:"comment,omitempty"`

	// RevokePublicPrivileges keeps PUBLIC (every role) from holding CREATE
	// or USAGE on the schema: whatever PUBLIC is granted there, by hand or
	// otherwise, is revoked at the next poll. Access is then given by
	// PostgreSQLGrants only.
	// +optional
	RevokePublicPrivileges bool `json:"revokePublicPrivileges,omitempty"`

	// CascadeOnDelete, when the Delete management policy drops the schema,
	// drops the objects it contains too (DROP SCHEMA … CASCADE). Otherwise
	// the drop is RESTRICT: it fails while the schema holds objects, and the
	// condition lists them.
	// +optional
	CascadeOnDelete bool `json:"cascadeOnDelete,omitempty"`
}

// A PostgreSQLSchemaSpec defines the desired state of a PostgreSQLSchema.
type PostgreSQLSchemaSpec struct {
	// ManagementPolicies say what the provider may do. The default leaves
	// out Delete: deleting the PostgreSQLSchema (or its CRD) keeps the
	// schema and its objects. Dropping is an explicit choice: add Delete (or
	// use ["*"]). Use ["Observe"] to import an existing schema read-only.
	// +kubebuilder:default={"Observe","Create","Update","LateInitialize"}
	// +optional
	ManagementPolicies xpv2.ManagementPolicies `json:"managementPolicies,omitempty"`

	// InstanceRef names the PostgreSQLInstance the schema lives on. It
	// cannot change.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="instanceRef cannot be changed: a schema cannot move between servers"
	InstanceRef InstanceReference `json:"instanceRef"`

	// ForProvider holds the schema's settings in PostgreSQL.
	ForProvider PostgreSQLSchemaParameters `json:"forProvider"`
}

// PostgreSQLSchemaObservation is the schema as last observed.
type PostgreSQLSchemaObservation struct {
	// Name of the schema in PostgreSQL.
	// +optional
	Name string `json:"name,omitempty"`
	// Database the schema lives in.
	// +optional
	Database string `json:"database,omitempty"`
	// InstanceUID is the UID of the PostgreSQLInstance the schema was bound
	// to on first connect.
	// +optional
	InstanceUID string `json:"instanceUID,omitempty"`
	// SystemIdentifier of the server the schema was bound to.
	// +optional
	SystemIdentifier string `json:"systemIdentifier,omitempty"`
	// Owner, as observed.
	// +optional
	Owner string `json:"owner,omitempty"`
	// PublicPrivileges are the privileges PUBLIC holds on the schema.
	// +optional
	PublicPrivileges []string `json:"publicPrivileges,omitempty"`
	// DriftStatus reports changes made on the server, not through
	// this resource (lastDrift).
	DriftStatus `json:",inline"`
	// PlanStatus shows the statements the next step would send
	// (plan).
	PlanStatus `json:",inline"`
}

// A PostgreSQLSchemaStatus represents the observed state of a
// PostgreSQLSchema.
type PostgreSQLSchemaStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	// AtProvider is the schema as last observed.
	// +optional
	AtProvider PostgreSQLSchemaObservation `json:"atProvider,omitempty"`
}

// A PostgreSQLSchema is a schema inside a database on a PostgreSQL server.
// It and its objects are retained when the resource is deleted unless the
// Delete management policy is chosen.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,postgresql},shortName=pgschema
// +kubebuilder:validation:XValidation:rule="has(self.spec.forProvider.name) || (self.metadata.name.matches('^[a-z_][a-z0-9_]{0,62}$') && !self.metadata.name.startsWith('pg_'))",message="metadata.name is not a valid PostgreSQL schema name (^[a-z_][a-z0-9_]{0,62}$, not starting with pg_): set spec.forProvider.name"
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="INSTANCE",type="string",JSONPath=".spec.instanceRef.name"
// +kubebuilder:printcolumn:name="DATABASE",type="string",JSONPath=".status.atProvider.database"
// +kubebuilder:printcolumn:name="EXTERNAL-NAME",type="string",JSONPath=".metadata.annotations.crossplane\\.io/external-name"
// +kubebuilder:printcolumn:name="OWNER",type="string",JSONPath=".status.atProvider.owner",priority=1
// +kubebuilder:printcolumn:name="PENDING",type="string",JSONPath=".status.atProvider.plan.summary"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +mrgen:managed
type PostgreSQLSchema struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PostgreSQLSchemaSpec   `json:"spec"`
	Status PostgreSQLSchemaStatus `json:"status,omitempty"`
}

// PostgreSQLSchemaList contains a list of PostgreSQLSchema.
// +kubebuilder:object:root=true
type PostgreSQLSchemaList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PostgreSQLSchema `json:"items"`
}

// SchemaName is the schema's name in PostgreSQL: spec.forProvider.name,
// else metadata.name.
func (s *PostgreSQLSchema) SchemaName() string {
	if s.Spec.ForProvider.Name != nil {
		return *s.Spec.ForProvider.Name
	}
	return s.GetName()
}
