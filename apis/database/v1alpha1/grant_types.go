package v1alpha1

import (
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Privilege is a privilege PostgreSQL grants. ALL stands for every
// privilege of the object type on the server's version (MAINTAIN, for
// tables, only exists from PostgreSQL 17).
// +kubebuilder:validation:Enum=ALL;CONNECT;CREATE;TEMPORARY;USAGE;SELECT;INSERT;UPDATE;DELETE;TRUNCATE;REFERENCES;TRIGGER;MAINTAIN;EXECUTE
type Privilege string

// GrantObjectType is what a PostgreSQLGrant grants on.
// +kubebuilder:validation:Enum=Database;Schema;Table;Sequence;Function;Membership;Tablespace
type GrantObjectType string

// Object types of a PostgreSQLGrant.
const (
	GrantObjectDatabase   GrantObjectType = "Database"
	GrantObjectSchema     GrantObjectType = "Schema"
	GrantObjectTable      GrantObjectType = "Table"
	GrantObjectSequence   GrantObjectType = "Sequence"
	GrantObjectFunction   GrantObjectType = "Function"
	GrantObjectMembership GrantObjectType = "Membership"
	GrantObjectTablespace GrantObjectType = "Tablespace"
)

// RoleSelector selects a PostgreSQLRole in the same namespace by its
// labels. The first match by name is resolved once into the sibling
// reference field, which then stays put.
type RoleSelector struct {
	// MatchLabels a PostgreSQLRole must carry.
	// +kubebuilder:validation:MinProperties=1
	MatchLabels map[string]string `json:"matchLabels"`
}

// PostgreSQLGrantParameters say which privileges a role is granted on what.
// +kubebuilder:validation:XValidation:rule="has(self.role) != (has(self.roleRef) || has(self.roleSelector))",message="set exactly one of role, or roleRef/roleSelector: the grantee"
// +kubebuilder:validation:XValidation:rule="has(self.role) == has(oldSelf.role) && (!has(self.role) || self.role == oldSelf.role)",message="role cannot be changed: create a new PostgreSQLGrant for another grantee"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.roleRef) || (has(self.roleRef) && self.roleRef == oldSelf.roleRef)",message="roleRef cannot be changed once set: create a new PostgreSQLGrant for another grantee"
// +kubebuilder:validation:XValidation:rule="self.objectType == oldSelf.objectType",message="objectType cannot be changed: create a new PostgreSQLGrant"
// +kubebuilder:validation:XValidation:rule="has(self.database) == has(oldSelf.database) && (!has(self.database) || self.database == oldSelf.database)",message="database cannot be changed: create a new PostgreSQLGrant"
// +kubebuilder:validation:XValidation:rule="has(self.databaseRef) == has(oldSelf.databaseRef) && (!has(self.databaseRef) || self.databaseRef == oldSelf.databaseRef)",message="databaseRef cannot be changed: create a new PostgreSQLGrant"
// +kubebuilder:validation:XValidation:rule="has(self.schema) == has(oldSelf.schema) && (!has(self.schema) || self.schema == oldSelf.schema)",message="schema cannot be changed: create a new PostgreSQLGrant"
// +kubebuilder:validation:XValidation:rule="has(self.schemaRef) == has(oldSelf.schemaRef) && (!has(self.schemaRef) || self.schemaRef == oldSelf.schemaRef)",message="schemaRef cannot be changed: create a new PostgreSQLGrant"
// +kubebuilder:validation:XValidation:rule="has(self.allInSchema) == has(oldSelf.allInSchema) && (!has(self.allInSchema) || self.allInSchema == oldSelf.allInSchema)",message="allInSchema cannot be changed: create a new PostgreSQLGrant"
// +kubebuilder:validation:XValidation:rule="has(self.memberOf) == has(oldSelf.memberOf) && (!has(self.memberOf) || self.memberOf == oldSelf.memberOf)",message="memberOf cannot be changed: create a new PostgreSQLGrant"
// +kubebuilder:validation:XValidation:rule="has(self.memberOfRef) == has(oldSelf.memberOfRef) && (!has(self.memberOfRef) || self.memberOfRef == oldSelf.memberOfRef)",message="memberOfRef cannot be changed: create a new PostgreSQLGrant"
// +kubebuilder:validation:XValidation:rule="self.objectType in ['Membership', 'Tablespace'] || has(self.database) != has(self.databaseRef)",message="objectType Database, Schema, Table, Sequence and Function need exactly one of database or databaseRef"
// +kubebuilder:validation:XValidation:rule="self.objectType in ['Database', 'Membership', 'Tablespace'] || has(self.schema) != has(self.schemaRef)",message="objectType Schema, Table, Sequence and Function need exactly one of schema or schemaRef"
// +kubebuilder:validation:XValidation:rule="!(self.objectType in ['Database', 'Membership', 'Tablespace']) || !(has(self.schema) || has(self.schemaRef))",message="schema and schemaRef only apply to objectType Schema, Table, Sequence and Function"
// +kubebuilder:validation:XValidation:rule="!(self.objectType in ['Membership', 'Tablespace']) || !(has(self.database) || has(self.databaseRef))",message="database and databaseRef do not apply to objectType Membership and Tablespace: role membership and tablespaces are server-wide"
// +kubebuilder:validation:XValidation:rule="(self.objectType == 'Tablespace') == has(self.tablespace)",message="objectType Tablespace needs tablespace, which applies to it alone",fieldPath=".tablespace"
// +kubebuilder:validation:XValidation:rule="has(self.tablespace) == has(oldSelf.tablespace) && (!has(self.tablespace) || self.tablespace == oldSelf.tablespace)",message="tablespace cannot be changed: create a new PostgreSQLGrant"
// +kubebuilder:validation:XValidation:rule="self.objectType != 'Tablespace' || !has(self.privileges) || self.privileges.all(p, p in ['ALL', 'CREATE'])",message="privileges on a Tablespace are ALL or CREATE",fieldPath=".privileges"
// +kubebuilder:validation:XValidation:rule="!(self.objectType in ['Table', 'Sequence', 'Function']) || (has(self.objects) && size(self.objects) > 0) != (has(self.allInSchema) && self.allInSchema)",message="objectType Table, Sequence and Function need exactly one of objects or allInSchema: true",fieldPath=".objects"
// +kubebuilder:validation:XValidation:rule="self.objectType in ['Table', 'Sequence', 'Function'] || !(has(self.objects) || has(self.allInSchema))",message="objects and allInSchema only apply to objectType Table, Sequence and Function",fieldPath=".objects"
// +kubebuilder:validation:XValidation:rule="!(self.objectType in ['Table', 'Sequence']) || !has(self.objects) || self.objects.all(o, o.matches('^[a-z_][a-z0-9_]{0,62}$'))",message="objects of objectType Table and Sequence are names matching ^[a-z_][a-z0-9_]{0,62}$",fieldPath=".objects"
// +kubebuilder:validation:XValidation:rule="self.objectType != 'Function' || !has(self.objects) || self.objects.all(o, o.matches('^[a-z_][a-z0-9_]{0,62}[(][a-z0-9_ ,.\\\\[\\\\]\"]*[)]$'))",message="objects of objectType Function are signatures such as add_item(integer, text)",fieldPath=".objects"
// +kubebuilder:validation:XValidation:rule="self.objectType == 'Membership' || (has(self.privileges) && size(self.privileges) > 0)",message="privileges must list at least one privilege",fieldPath=".privileges"
// +kubebuilder:validation:XValidation:rule="self.objectType != 'Membership' || !has(self.privileges) || size(self.privileges) == 0",message="privileges do not apply to objectType Membership (use withAdminOption, inherit, set)",fieldPath=".privileges"
// +kubebuilder:validation:XValidation:rule="self.objectType != 'Database' || !has(self.privileges) || self.privileges.all(p, p in ['ALL', 'CONNECT', 'CREATE', 'TEMPORARY'])",message="privileges on a Database are ALL, CONNECT, CREATE or TEMPORARY",fieldPath=".privileges"
// +kubebuilder:validation:XValidation:rule="self.objectType != 'Schema' || !has(self.privileges) || self.privileges.all(p, p in ['ALL', 'USAGE', 'CREATE'])",message="privileges on a Schema are ALL, USAGE or CREATE",fieldPath=".privileges"
// +kubebuilder:validation:XValidation:rule="self.objectType != 'Table' || !has(self.privileges) || self.privileges.all(p, p in ['ALL', 'SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER', 'MAINTAIN'])",message="privileges on a Table are ALL, SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER or MAINTAIN (PostgreSQL 17+)",fieldPath=".privileges"
// +kubebuilder:validation:XValidation:rule="self.objectType != 'Sequence' || !has(self.privileges) || self.privileges.all(p, p in ['ALL', 'USAGE', 'SELECT', 'UPDATE'])",message="privileges on a Sequence are ALL, USAGE, SELECT or UPDATE",fieldPath=".privileges"
// +kubebuilder:validation:XValidation:rule="self.objectType != 'Function' || !has(self.privileges) || self.privileges.all(p, p in ['ALL', 'EXECUTE'])",message="privileges on a Function are ALL or EXECUTE",fieldPath=".privileges"
// +kubebuilder:validation:XValidation:rule="self.objectType == 'Membership' || !(has(self.memberOf) || has(self.memberOfRef) || has(self.withAdminOption) || has(self.inherit) || has(self.set))",message="memberOf, memberOfRef, withAdminOption, inherit and set only apply to objectType Membership"
// +kubebuilder:validation:XValidation:rule="self.objectType != 'Membership' || has(self.memberOf) != has(self.memberOfRef)",message="objectType Membership needs exactly one of memberOf or memberOfRef"
// +kubebuilder:validation:XValidation:rule="self.objectType != 'Membership' || !has(self.withGrantOption)",message="withGrantOption does not apply to objectType Membership (use withAdminOption)"
type PostgreSQLGrantParameters struct {
	// Role is the grantee, by its PostgreSQL name.
	// +kubebuilder:validation:Pattern=`^[a-z_][a-z0-9_]{0,62}$`
	// +optional
	Role *string `json:"role,omitempty"`

	// RoleRef names the grantee: a PostgreSQLRole in this namespace on the
	// same Instance. The grant waits until the role exists.
	// +optional
	RoleRef *LocalReference `json:"roleRef,omitempty"`

	// RoleSelector selects the grantee among the PostgreSQLRoles of this
	// namespace by label; the match is recorded in roleRef.
	// +optional
	RoleSelector *RoleSelector `json:"roleSelector,omitempty"`

	// ObjectType is what is granted on: a Database, a Schema, Tables,
	// Sequences or Functions in a schema, or Membership in another role.
	// It cannot change.
	ObjectType GrantObjectType `json:"objectType"`

	// Database holding the target, by its PostgreSQL name; for objectType
	// Database, the target itself.
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9_]{0,62}$`
	// +optional
	Database *string `json:"database,omitempty"`

	// DatabaseRef names a PostgreSQLDatabase in this namespace, on the same
	// Instance, instead of database.
	// +optional
	DatabaseRef *LocalReference `json:"databaseRef,omitempty"`

	// Schema holding the target, by its PostgreSQL name; for objectType
	// Schema, the target itself.
	// +kubebuilder:validation:Pattern=`^[a-z_][a-z0-9_]{0,62}$`
	// +optional
	Schema *string `json:"schema,omitempty"`

	// SchemaRef names a PostgreSQLSchema in this namespace, in the same
	// database, instead of schema.
	// +optional
	SchemaRef *LocalReference `json:"schemaRef,omitempty"`

	// Tablespace is the target of objectType Tablespace, by its PostgreSQL
	// name: CREATE on it lets the grantee put tables, indexes and
	// databases there. The Instance's spec.policy.allowTablespaces must
	// offer it.
	// +kubebuilder:validation:Pattern=`^[a-z_][a-z0-9_]{0,62}$`
	// +optional
	Tablespace *string `json:"tablespace,omitempty"`

	// Objects are the tables or sequences (by name) or the functions (by
	// signature, such as add_item(integer, text)) in the schema. A grant
	// waits until they all exist. An object removed from the list has the
	// privileges this grant gave revoked.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=512
	// +listType=set
	// +optional
	Objects []string `json:"objects,omitempty"`

	// AllInSchema grants on every table, sequence or function (procedures
	// excepted) of the schema, including those created later: the grant is
	// not Ready while one of them lacks the privileges, and the next poll
	// grants them. It cannot change.
	// +optional
	AllInSchema *bool `json:"allInSchema,omitempty"`

	// Privileges this grant owns on the target. Each must fit the object
	// type (CONNECT, CREATE, TEMPORARY on databases; USAGE, CREATE on
	// schemas; SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES,
	// TRIGGER, MAINTAIN on tables; USAGE, SELECT, UPDATE on sequences;
	// EXECUTE on functions; CREATE on tablespaces; ALL on any). Removing one revokes it, if this
	// grant granted it.
	// +kubebuilder:validation:MaxItems=14
	// +listType=set
	// +optional
	Privileges []Privilege `json:"privileges,omitempty"`

	// WithGrantOption lets the grantee grant the privileges on (WITH GRANT
	// OPTION).
	// +optional
	WithGrantOption *bool `json:"withGrantOption,omitempty"`

	// MemberOf is the role the grantee becomes a member of, for objectType
	// Membership (GRANT memberOf TO role).
	// +kubebuilder:validation:Pattern=`^[a-z_][a-z0-9_]{0,62}$`
	// +optional
	MemberOf *string `json:"memberOf,omitempty"`

	// MemberOfRef names a PostgreSQLRole in this namespace instead of
	// memberOf.
	// +optional
	MemberOfRef *LocalReference `json:"memberOfRef,omitempty"`

	// WithAdminOption lets the grantee grant the membership on (WITH ADMIN
	// OPTION).
	// +optional
	WithAdminOption *bool `json:"withAdminOption,omitempty"`

	// Inherit says whether the grantee inherits the privileges of memberOf
	// through this membership (WITH INHERIT, PostgreSQL 16+). Absent leaves
	// the server's default: the grantee's INHERIT attribute.
	// +optional
	Inherit *bool `json:"inherit,omitempty"`

	// Set says whether the grantee may SET ROLE to memberOf through this
	// membership (WITH SET, PostgreSQL 16+). Absent leaves the server's
	// default: true.
	// +optional
	Set *bool `json:"set,omitempty"`
}

// A PostgreSQLGrantSpec defines the desired state of a PostgreSQLGrant.
type PostgreSQLGrantSpec struct {
	// ManagementPolicies say what the provider may do. The default includes
	// Delete: deleting the PostgreSQLGrant revokes what it granted, and
	// nothing else. Leave out Delete to keep the privileges when the
	// resource goes.
	// +kubebuilder:default={"*"}
	// +optional
	ManagementPolicies xpv2.ManagementPolicies `json:"managementPolicies,omitempty"`

	// InstanceRef names the PostgreSQLInstance the grant lives on. It
	// cannot change.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="instanceRef cannot be changed: a grant cannot move between servers"
	InstanceRef InstanceReference `json:"instanceRef"`

	// ForProvider says what is granted to whom.
	ForProvider PostgreSQLGrantParameters `json:"forProvider"`
}

// PostgreSQLGrantObservation is the grant as last observed.
type PostgreSQLGrantObservation struct {
	// InstanceUID is the UID of the PostgreSQLInstance the grant was bound
	// to on first connect.
	// +optional
	InstanceUID string `json:"instanceUID,omitempty"`
	// SystemIdentifier of the server the grant was bound to.
	// +optional
	SystemIdentifier string `json:"systemIdentifier,omitempty"`
	// Role is the grantee's PostgreSQL name.
	// +optional
	Role string `json:"role,omitempty"`
	// Database holding the target.
	// +optional
	Database string `json:"database,omitempty"`
	// Schema holding the target.
	// +optional
	Schema string `json:"schema,omitempty"`
	// MemberOf is the role the grantee is made a member of.
	// +optional
	MemberOf string `json:"memberOf,omitempty"`
	// Tablespace is the tablespace granted on.
	// +optional
	Tablespace string `json:"tablespace,omitempty"`
	// Privileges the grantee holds on every target object, of those the
	// spec lists (ALL expanded for the server's version).
	// +optional
	Privileges []string `json:"privileges,omitempty"`
	// AppliedPrivileges are the privileges this grant granted (those the
	// grantee did not already hold): what it revokes when they leave the
	// spec or the grant is deleted.
	// +optional
	AppliedPrivileges []string `json:"appliedPrivileges,omitempty"`
	// AppliedObjects are the named objects this grant granted on: one
	// removed from spec.forProvider.objects has its privileges revoked.
	// +optional
	AppliedObjects []string `json:"appliedObjects,omitempty"`
	// AppliedGrantOption is true when this grant gave the grant (or, for a
	// membership, admin) option.
	// +optional
	AppliedGrantOption bool `json:"appliedGrantOption,omitempty"`
	// AppliedMembership is true when this grant made the grantee a member
	// (it was not one before).
	// +optional
	AppliedMembership bool `json:"appliedMembership,omitempty"`
	// DriftStatus reports changes made on the server, not through
	// this resource (lastDrift).
	DriftStatus `json:",inline"`
	// PlanStatus shows the statements the next step would send
	// (plan).
	PlanStatus `json:",inline"`
}

// A PostgreSQLGrantStatus represents the observed state of a
// PostgreSQLGrant.
type PostgreSQLGrantStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	// AtProvider is the grant as last observed.
	// +optional
	AtProvider PostgreSQLGrantObservation `json:"atProvider,omitempty"`
}

// A PostgreSQLGrant owns privileges of a role on a database, a schema,
// tables, sequences or functions, or a role's membership in another role.
// It is Ready when the role holds every privilege it lists, whatever else
// the role holds; it revokes only what it granted.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,postgresql},shortName=pggrant
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="INSTANCE",type="string",JSONPath=".spec.instanceRef.name"
// +kubebuilder:printcolumn:name="ROLE",type="string",JSONPath=".status.atProvider.role"
// +kubebuilder:printcolumn:name="TYPE",type="string",JSONPath=".spec.forProvider.objectType"
// +kubebuilder:printcolumn:name="DATABASE",type="string",JSONPath=".status.atProvider.database"
// +kubebuilder:printcolumn:name="PRIVILEGES",type="string",JSONPath=".status.atProvider.privileges",priority=1
// +kubebuilder:printcolumn:name="PENDING",type="string",JSONPath=".status.atProvider.plan.summary"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +mrgen:managed
type PostgreSQLGrant struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PostgreSQLGrantSpec   `json:"spec"`
	Status PostgreSQLGrantStatus `json:"status,omitempty"`
}

// PostgreSQLGrantList contains a list of PostgreSQLGrant.
// +kubebuilder:object:root=true
type PostgreSQLGrantList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PostgreSQLGrant `json:"items"`
}

// Reasons of a grant's or default privileges' Ready condition beyond the
// common ones.
const (
	// ReasonNotHeld: the grantee lacks some of the listed privileges (or
	// the membership); the provider is granting them.
	ReasonNotHeld xpv2.ConditionReason = "NotHeld"
	// ReasonUnsupported: the server cannot grant what is asked (a 16+ or
	// 17+ feature on an older server).
	ReasonUnsupported xpv2.ConditionReason = "Unsupported"
)
