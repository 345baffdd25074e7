package v1alpha1

import (
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConfigurationParameter is a setting applied to every session of a role
// (ALTER ROLE … SET name TO 'value').
type ConfigurationParameter struct {
	// Name of the setting, such as statement_timeout or work_mem; custom
	// settings take a prefix (myapp.flag).
	// +kubebuilder:validation:Pattern=`^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$`
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// Value of the setting, applied as one string literal.
	// +kubebuilder:validation:MaxLength=1024
	Value string `json:"value"`
}

// PostgreSQLRoleParameters are the role's attributes in PostgreSQL. Unset
// fields take CREATE ROLE's defaults.
type PostgreSQLRoleParameters struct {
	// Name of the role in PostgreSQL. Defaults to metadata.name, which must
	// then be a valid identifier. It cannot change once set.
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9_]{0,62}$`
	// +optional
	Name *string `json:"name,omitempty"`

	// Login lets the role log in (LOGIN). A role that logs in gets a
	// password and publishes a connection Secret.
	// +kubebuilder:default=false
	// +optional
	Login *bool `json:"login,omitempty"`

	// Inherit makes the role use the privileges of the roles it is a member
	// of without SET ROLE (INHERIT).
	// +kubebuilder:default=true
	// +optional
	Inherit *bool `json:"inherit,omitempty"`

	// CreateDB lets the role create databases (CREATEDB).
	// +kubebuilder:default=false
	// +optional
	CreateDB *bool `json:"createDb,omitempty"`

	// CreateRole lets the role create roles (CREATEROLE).
	// +kubebuilder:default=false
	// +optional
	CreateRole *bool `json:"createRole,omitempty"`

	// Replication lets the role stream replication (REPLICATION). Setting it
	// needs a superuser admin.
	// +kubebuilder:default=false
	// +optional
	Replication *bool `json:"replication,omitempty"`

	// BypassRLS makes row-level security policies not apply to the role
	// (BYPASSRLS). Setting it needs a superuser admin.
	// +kubebuilder:default=false
	// +optional
	BypassRLS *bool `json:"bypassRls,omitempty"`

	// ConnectionLimit caps the role's concurrent sessions; -1 is no limit.
	// +kubebuilder:default=-1
	// +kubebuilder:validation:Minimum=-1
	// +optional
	ConnectionLimit *int32 `json:"connectionLimit,omitempty"`

	// ValidUntil is when the role's password stops working (VALID UNTIL).
	// Absent means never. Once it has passed, the role's Ready condition is
	// False with reason PasswordExpired and the password is not re-set:
	// move it forward (or remove it) to let the role log in again.
	// +optional
	ValidUntil *metav1.Time `json:"validUntil,omitempty"`

	// MemberOf lists roles this role is a member of (GRANT … TO role).
	// A role removed from this list is revoked; memberships granted by
	// other means (a PostgreSQLGrant, a person) are left alone.
	// +listType=set
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	// +optional
	MemberOf []string `json:"memberOf,omitempty"`

	// ConfigurationParameters are settings applied to every session of the
	// role. Settings not listed are reset.
	// +listType=map
	// +listMapKey=name
	// +optional
	ConfigurationParameters []ConfigurationParameter `json:"configurationParameters,omitempty"`

	// Comment on the role (COMMENT ON ROLE). The provider appends its
	// ownership marker to it.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Comment *string `json:"comment,omitempty"`

	// PasswordSecretRef names a key of a Secret in the role's namespace
	// holding the password to set, in printable ASCII. Without it a
	// password of 40 random letters and digits is generated. A change of
	// the Secret is applied at the next reconcile.
	// +optional
	PasswordSecretRef *SecretKeyReference `json:"passwordSecretRef,omitempty"`
}

// SecretKeyReference names a key of a Secret in the resource's namespace.
type SecretKeyReference struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Key of the Secret holding the value.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}

// OwnedObjectsPolicy says what happens to what a role still owns when the
// Delete management policy drops it.
// +kubebuilder:validation:Enum=Refuse;Reassign;Drop
type OwnedObjectsPolicy string

// Owned objects policies.
const (
	// OwnedObjectsRefuse leaves everything in place: the drop fails and the
	// condition lists what the role owns.
	OwnedObjectsRefuse OwnedObjectsPolicy = "Refuse"
	// OwnedObjectsReassign runs REASSIGN OWNED BY role TO reassignOwnedTo,
	// then DROP OWNED BY role (which now only revokes its privileges).
	OwnedObjectsReassign OwnedObjectsPolicy = "Reassign"
	// OwnedObjectsDrop runs DROP OWNED BY role: its objects and their data
	// are destroyed.
	OwnedObjectsDrop OwnedObjectsPolicy = "Drop"
)

// A PostgreSQLRoleSpec defines the desired state of a PostgreSQLRole.
// +kubebuilder:validation:XValidation:rule="!has(self.ownedObjectsOnDelete) || self.ownedObjectsOnDelete != 'Reassign' || has(self.reassignOwnedTo)",message="ownedObjectsOnDelete Reassign needs reassignOwnedTo"
// +kubebuilder:validation:XValidation:rule="has(self.forProvider.name) == has(oldSelf.forProvider.name) && (!has(self.forProvider.name) || self.forProvider.name == oldSelf.forProvider.name)",message="forProvider.name cannot be changed: create a new PostgreSQLRole instead"
type PostgreSQLRoleSpec struct {
	// ManagementPolicies say what the provider may do. The default leaves
	// out Delete: deleting the PostgreSQLRole keeps the role in PostgreSQL.
	// Add Delete (or use ["*"]) to drop the role with it; a role that
	// still owns objects is then not dropped, and the condition says what
	// it owns. Use ["Observe"] to import an existing role read-only.
	// +kubebuilder:default={"Observe","Create","Update","LateInitialize"}
	// +optional
	ManagementPolicies xpv2.ManagementPolicies `json:"managementPolicies,omitempty"`

	// InstanceRef names the PostgreSQLInstance the role lives on. It cannot
	// change.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="instanceRef cannot be changed: a role cannot move between servers"
	InstanceRef InstanceReference `json:"instanceRef"`

	// ForProvider holds the role's attributes in PostgreSQL.
	// +kubebuilder:default={}
	// +optional
	ForProvider PostgreSQLRoleParameters `json:"forProvider"`

	// WriteConnectionSecretToReference names the Secret, in the role's
	// namespace, that receives username, password, host, hostaddr, port,
	// database, sslmode, uri, jdbc-url, pgpass (a libpq password file line),
	// pg_service.conf (a libpq service named after the role, without the
	// password) and (when the Instance has a CA bundle) ca.crt. An
	// Observe-only import publishes nothing.
	// +optional
	WriteConnectionSecretToReference *xpv2.LocalSecretReference `json:"writeConnectionSecretToRef,omitempty"`

	// OwnedObjectsOnDelete says what happens, when the Delete management
	// policy drops the role, to what it still owns and the privileges it
	// holds, in the Instance's maintenance database and in every database
	// a PostgreSQLDatabase manages on the same Instance: Refuse (the drop
	// fails and says what blocks it), Reassign (REASSIGN OWNED to
	// reassignOwnedTo, then DROP OWNED for the privileges) or Drop (DROP
	// OWNED: the objects and their data are destroyed). Databases the role
	// owns are never dropped.
	// +kubebuilder:default=Refuse
	// +optional
	OwnedObjectsOnDelete OwnedObjectsPolicy `json:"ownedObjectsOnDelete,omitempty"`

	// ReassignOwnedTo is the role that receives what this role owns, with
	// ownedObjectsOnDelete Reassign.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +optional
	ReassignOwnedTo string `json:"reassignOwnedTo,omitempty"`

	// ConnectionDatabase is the database the connection Secret's database,
	// uri and jdbc-url name. Defaults to the Instance's maintenance database.
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9_]{0,62}$`
	// +optional
	ConnectionDatabase string `json:"connectionDatabase,omitempty"`
}

// PostgreSQLRoleObservation is the role as last observed.
type PostgreSQLRoleObservation struct {
	// Name of the role in PostgreSQL.
	// +optional
	Name string `json:"name,omitempty"`
	// InstanceUID is the UID of the PostgreSQLInstance the role was bound to
	// on first connect. A replaced Instance of the same name is a Conflict.
	// +optional
	InstanceUID string `json:"instanceUID,omitempty"`
	// SystemIdentifier of the server the role was bound to.
	// +optional
	SystemIdentifier string `json:"systemIdentifier,omitempty"`
	// Login, as observed.
	// +optional
	Login bool `json:"login,omitempty"`
	// MemberOf, as observed.
	// +optional
	MemberOf []string `json:"memberOf,omitempty"`
	// AppliedMemberOf are the memberships this resource granted: those it
	// revokes when they leave spec.forProvider.memberOf.
	// +optional
	AppliedMemberOf []string `json:"appliedMemberOf,omitempty"`
	// PasswordRotation is the last rotation request handled: the value of
	// the database.ayatori.ddupan.top/rotate-password annotation.
	// +optional
	PasswordRotation string `json:"passwordRotation,omitempty"`
}

// A PostgreSQLRoleStatus represents the observed state of a PostgreSQLRole.
type PostgreSQLRoleStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	// AtProvider is the role as last observed.
	// +optional
	AtProvider PostgreSQLRoleObservation `json:"atProvider,omitempty"`
}

// A PostgreSQLRole is a role on a PostgreSQL server: attributes,
// memberships, settings and, for a login role, a password published with
// the connection details in a Secret of its namespace.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,postgresql},shortName=pgrole
// +kubebuilder:validation:XValidation:rule="has(self.spec.forProvider.name) || self.metadata.name.matches('^[a-z][a-z0-9_]{0,62}$')",message="metadata.name is not a valid PostgreSQL identifier (^[a-z][a-z0-9_]{0,62}$): set spec.forProvider.name"
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="INSTANCE",type="string",JSONPath=".spec.instanceRef.name"
// +kubebuilder:printcolumn:name="EXTERNAL-NAME",type="string",JSONPath=".metadata.annotations.crossplane\\.io/external-name"
// +kubebuilder:printcolumn:name="LOGIN",type="boolean",JSONPath=".spec.forProvider.login",priority=1
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +mrgen:managed
type PostgreSQLRole struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PostgreSQLRoleSpec   `json:"spec"`
	Status PostgreSQLRoleStatus `json:"status,omitempty"`
}

// PostgreSQLRoleList contains a list of PostgreSQLRole.
// +kubebuilder:object:root=true
type PostgreSQLRoleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PostgreSQLRole `json:"items"`
}

// RoleName is the role's name in PostgreSQL: spec.forProvider.name, else
// metadata.name.
func (r *PostgreSQLRole) RoleName() string {
	if r.Spec.ForProvider.Name != nil {
		return *r.Spec.ForProvider.Name
	}
	return r.GetName()
}
