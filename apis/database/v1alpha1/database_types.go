package v1alpha1

import (
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LocaleProvider is the provider of a database's default collation.
// +kubebuilder:validation:Enum=libc;icu
type LocaleProvider string

// Locale providers.
const (
	LocaleProviderLibc LocaleProvider = "libc"
	LocaleProviderICU  LocaleProvider = "icu"
)

// CreateStrategy is how CREATE DATABASE copies its template.
// +kubebuilder:validation:Enum=wal_log;file_copy
type CreateStrategy string

// Extension is an extension ensured present in a database.
type Extension struct {
	// Name of the extension, as pg_available_extensions lists it.
	// +kubebuilder:validation:Pattern=`^[a-z0-9_][a-z0-9_-]{0,62}$`
	Name string `json:"name"`
	// Version to install, or update to (ALTER EXTENSION … UPDATE TO).
	// Absent means the server's default version at creation; an installed
	// extension is then left at its version.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Version *string `json:"version,omitempty"`
	// Schema to install the extension's objects in, or move them to (ALTER
	// EXTENSION … SET SCHEMA). The schema must exist. Absent: the schema
	// the extension's control file fixes, else public. An extension that
	// is not trusted (its script runs with superuser privileges) is only
	// installed or updated in a schema where no one but superusers and
	// the provider's admin may create objects; elsewhere it is refused
	// with reason ExtensionUnsafe, since objects placed there first would
	// run as the admin.
	// +kubebuilder:validation:Pattern=`^[a-z_][a-z0-9_]{0,62}$`
	// +optional
	Schema *string `json:"schema,omitempty"`
}

// PostgreSQLDatabaseParameters are the database's settings in PostgreSQL.
// +kubebuilder:validation:XValidation:rule="has(self.name) == has(oldSelf.name) && (!has(self.name) || self.name == oldSelf.name)",message="name cannot be changed: a database is never re-pointed; create a new PostgreSQLDatabase instead"
// +kubebuilder:validation:XValidation:rule="has(self.template) == has(oldSelf.template) && (!has(self.template) || self.template == oldSelf.template)",message="template is fixed at creation (CREATE DATABASE … TEMPLATE) and cannot be changed"
// +kubebuilder:validation:XValidation:rule="has(self.encoding) == has(oldSelf.encoding) && (!has(self.encoding) || self.encoding == oldSelf.encoding)",message="encoding is fixed at creation and cannot be changed"
// +kubebuilder:validation:XValidation:rule="has(self.lcCollate) == has(oldSelf.lcCollate) && (!has(self.lcCollate) || self.lcCollate == oldSelf.lcCollate)",message="lcCollate is fixed at creation and cannot be changed"
// +kubebuilder:validation:XValidation:rule="has(self.lcCtype) == has(oldSelf.lcCtype) && (!has(self.lcCtype) || self.lcCtype == oldSelf.lcCtype)",message="lcCtype is fixed at creation and cannot be changed"
// +kubebuilder:validation:XValidation:rule="has(self.localeProvider) == has(oldSelf.localeProvider) && (!has(self.localeProvider) || self.localeProvider == oldSelf.localeProvider)",message="localeProvider is fixed at creation and cannot be changed"
// +kubebuilder:validation:XValidation:rule="has(self.icuLocale) == has(oldSelf.icuLocale) && (!has(self.icuLocale) || self.icuLocale == oldSelf.icuLocale)",message="icuLocale is fixed at creation and cannot be changed"
// +kubebuilder:validation:XValidation:rule="has(self.strategy) == has(oldSelf.strategy) && (!has(self.strategy) || self.strategy == oldSelf.strategy)",message="strategy only applies at creation and cannot be changed"
// +kubebuilder:validation:XValidation:rule="has(self.tablespace) == has(oldSelf.tablespace) && (!has(self.tablespace) || self.tablespace == oldSelf.tablespace)",message="tablespace is fixed at creation by this provider and cannot be changed"
// +kubebuilder:validation:XValidation:rule="!has(self.icuLocale) || (has(self.localeProvider) && self.localeProvider == 'icu')",message="icuLocale needs localeProvider: icu"
// +kubebuilder:validation:XValidation:rule="!(has(self.owner) && has(self.ownerRef))",message="set owner or ownerRef, not both"
// +kubebuilder:validation:XValidation:rule="!has(self.name) || !self.name.startsWith('provider_postgresql_creating_')",message="name: the prefix provider_postgresql_creating_ is the provider's own: a database is created under it, from its resource's UID, before it takes its name"
type PostgreSQLDatabaseParameters struct {
	// Name of the database in PostgreSQL. Defaults to metadata.name, which
	// must then be a valid identifier. It cannot change once set.
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9_]{0,62}$`
	// +optional
	Name *string `json:"name,omitempty"`

	// Owner is the role that owns the database (OWNER). Defaults to the
	// Instance's admin role. Can change later (ALTER DATABASE … OWNER TO).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Owner *string `json:"owner,omitempty"`

	// OwnerRef names a PostgreSQLRole in this namespace whose role owns the
	// database; the database waits until that role exists.
	// +optional
	OwnerRef *LocalReference `json:"ownerRef,omitempty"`

	// Template to copy (TEMPLATE). Set at creation only. Absent, the
	// database is copied from template0, not from the server's default
	// template1: PostgreSQL copies a template only while no other session
	// is connected to it, and every login may connect to template1 unless
	// PUBLIC's CONNECT on it is revoked, so one idle session there would
	// stop the copy. Name template1 (or a template the Instance's
	// policy.allowTemplates lists) to copy what a platform added to it.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Template *string `json:"template,omitempty"`

	// Encoding of the database, such as UTF8 (ENCODING). Set at creation
	// only.
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_]{1,32}$`
	// +optional
	Encoding *string `json:"encoding,omitempty"`

	// LCCollate is the collation order (LC_COLLATE). Set at creation only.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	LCCollate *string `json:"lcCollate,omitempty"`

	// LCCtype is the character classification (LC_CTYPE). Set at creation
	// only.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	LCCtype *string `json:"lcCtype,omitempty"`

	// LocaleProvider of the default collation: libc or icu
	// (LOCALE_PROVIDER, PostgreSQL 15+). Set at creation only.
	// +optional
	LocaleProvider *LocaleProvider `json:"localeProvider,omitempty"`

	// ICULocale is the ICU locale, with localeProvider icu (ICU_LOCALE,
	// PostgreSQL 15+). Set at creation only.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	ICULocale *string `json:"icuLocale,omitempty"`

	// Strategy of copying the template: wal_log or file_copy (STRATEGY,
	// PostgreSQL 15+). Applies at creation only.
	// +optional
	Strategy *CreateStrategy `json:"strategy,omitempty"`

	// Tablespace of the database (TABLESPACE). Set at creation only.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Tablespace *string `json:"tablespace,omitempty"`

	// ConnectionLimit caps concurrent sessions; -1 is no limit.
	// +kubebuilder:default=-1
	// +kubebuilder:validation:Minimum=-1
	// +optional
	ConnectionLimit *int32 `json:"connectionLimit,omitempty"`

	// AllowConnections lets sessions connect (ALLOW_CONNECTIONS).
	// +kubebuilder:default=true
	// +optional
	AllowConnections *bool `json:"allowConnections,omitempty"`

	// IsTemplate lets users with CREATEDB clone the database (IS_TEMPLATE).
	// +kubebuilder:default=false
	// +optional
	IsTemplate *bool `json:"isTemplate,omitempty"`

	// Comment on the database (COMMENT ON DATABASE). The provider appends
	// its ownership marker to it.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Comment *string `json:"comment,omitempty"`

	// RevokePublicPrivileges keeps PUBLIC (every role) from holding CONNECT
	// or TEMPORARY on the database, which PostgreSQL grants it by default:
	// only the owner, its members and roles given access (PostgreSQLGrant)
	// can connect. A grant to PUBLIC made by hand is revoked at the next
	// poll.
	// +optional
	RevokePublicPrivileges bool `json:"revokePublicPrivileges,omitempty"`

	// Extensions ensured present in the database: created, updated to the
	// version asked for, moved to the schema asked for. An extension removed
	// from this list is not dropped.
	// +listType=map
	// +listMapKey=name
	// +optional
	Extensions []Extension `json:"extensions,omitempty"`

	// TerminateConnectionsOnDelete, when the Delete management policy drops
	// the database, terminates open sessions (DROP DATABASE … WITH (FORCE)).
	// Otherwise the drop waits, and the condition says how many sessions
	// block it.
	// +optional
	TerminateConnectionsOnDelete bool `json:"terminateConnectionsOnDelete,omitempty"`
}

// LocalReference names an object in the same namespace.
type LocalReference struct {
	// Name of the object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// A PostgreSQLDatabaseSpec defines the desired state of a PostgreSQLDatabase.
type PostgreSQLDatabaseSpec struct {
	// ManagementPolicies say what the provider may do. The default leaves
	// out Delete: deleting the PostgreSQLDatabase (or its CRD) keeps the
	// database and its data. Dropping is an explicit choice: add Delete (or
	// use ["*"]). Use ["Observe"] to import an existing database read-only.
	// +kubebuilder:default={"Observe","Create","Update","LateInitialize"}
	// +optional
	ManagementPolicies xpv2.ManagementPolicies `json:"managementPolicies,omitempty"`

	// InstanceRef names the PostgreSQLInstance the database lives on. It
	// cannot change.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="instanceRef cannot be changed: a database cannot move between servers"
	InstanceRef InstanceReference `json:"instanceRef"`

	// ForProvider holds the database's settings in PostgreSQL.
	// +kubebuilder:default={}
	// +optional
	ForProvider PostgreSQLDatabaseParameters `json:"forProvider"`

	// Binding is the platform admin's say over handing the database to a
	// tenant (a PostgreSQLTenant, through its PostgreSQLBinding). A
	// database is bound to at most one tenant at a time; docs/binding.md
	// tells the whole protocol.
	// +optional
	Binding DatabaseBindingPolicy `json:"binding,omitempty"`
}

// A DatabaseBindingPolicy says to which tenant a database may be bound.
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.provisionedFor) || (has(self.provisionedFor) && self.provisionedFor == oldSelf.provisionedFor)",message="spec.binding.provisionedFor is set by the provider when it provisions the database and cannot change"
type DatabaseBindingPolicy struct {
	// ProvisionedFor is set by the provider on a database it provisioned
	// for a tenant's PostgreSQLBinding: the database is reserved for that
	// binding (its UID) until it is first bound. Cannot change.
	// +optional
	ProvisionedFor *BindingReference `json:"provisionedFor,omitempty"`

	// Offered makes the database available to one tenant of this
	// namespace that asks for it by name (PostgreSQLTenant
	// spec.databaseRef). Set it on a database an admin registered; the
	// database is offered only once it exists, is managed (not
	// Observe-only), carries this resource's ownership marker and is owned
	// by a role without SUPERUSER, CREATEROLE, BYPASSRLS or REPLICATION.
	// +optional
	Offered bool `json:"offered,omitempty"`

	// Reopen re-opens a Released database: set it to the UID in
	// status.binding.boundTo.uid to acknowledge that the released tenant's
	// data may now go to another tenant. The database then becomes
	// Available again if offered. A released database never becomes
	// available by itself.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Reopen string `json:"reopen,omitempty"`
}

// A BindingReference names a PostgreSQLBinding by name and UID: a new
// binding that reuses the name is another binding.
type BindingReference struct {
	// Name of the PostgreSQLBinding, in the database's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// UID of the PostgreSQLBinding.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	UID string `json:"uid"`
	// Tenant is the PostgreSQLTenant the binding served.
	// +optional
	Tenant string `json:"tenant,omitempty"`
}

// DatabaseOrigin is where a database came from, for tenants.
// +kubebuilder:validation:Enum=Provisioned;Imported
type DatabaseOrigin string

// Database origins.
const (
	// OriginProvisioned: created by the provider for a tenant's binding.
	OriginProvisioned DatabaseOrigin = "Provisioned"
	// OriginImported: registered by an admin.
	OriginImported DatabaseOrigin = "Imported"
)

// DatabasePhase is where a database stands in the binding protocol.
// +kubebuilder:validation:Enum=Provisioning;Available;Bound;Released;Unavailable
type DatabasePhase string

// Database phases.
const (
	// PhaseProvisioning: the database does not exist yet or has not been
	// observed.
	PhaseProvisioning DatabasePhase = "Provisioning"
	// PhaseAvailable: it may be bound (to the binding it was provisioned
	// for, or to a tenant that asks for it when offered).
	PhaseAvailable DatabasePhase = "Available"
	// PhaseBound: bound to the binding in boundTo.
	PhaseBound DatabasePhase = "Bound"
	// PhaseReleased: the binding in boundTo is gone. The data stays and
	// goes to nobody until an admin re-opens the database (spec.binding.reopen).
	PhaseReleased DatabasePhase = "Released"
	// PhaseUnavailable: it cannot be bound; reason says why.
	PhaseUnavailable DatabasePhase = "Unavailable"
)

// DatabaseBindingStatus is the database's side of the binding protocol,
// written only by the provider, with optimistic concurrency.
type DatabaseBindingStatus struct {
	// Origin is Provisioned (created for a tenant) or Imported (registered
	// by an admin).
	// +optional
	Origin DatabaseOrigin `json:"origin,omitempty"`
	// Phase: Provisioning, Available, Bound, Released or Unavailable;
	// empty for a database that is not offered and that no binding of its
	// namespace names, which no tenant gets.
	// +optional
	Phase DatabasePhase `json:"phase,omitempty"`
	// Reason says why the database is Unavailable: ObserveOnly, Conflict,
	// NotOffered or PrivilegedOwner.
	// +optional
	Reason xpv2.ConditionReason `json:"reason,omitempty"`
	// Message explains the phase.
	// +optional
	Message string `json:"message,omitempty"`
	// BoundTo is the binding the database is (Bound) or was (Released)
	// bound to.
	// +optional
	BoundTo *BindingReference `json:"boundTo,omitempty"`
}

// Equal reports whether two bindings say the same.
func (s DatabaseBindingStatus) Equal(o DatabaseBindingStatus) bool {
	refEq := (s.BoundTo == nil) == (o.BoundTo == nil) && (s.BoundTo == nil || *s.BoundTo == *o.BoundTo)
	return refEq && s.Origin == o.Origin && s.Phase == o.Phase && s.Reason == o.Reason && s.Message == o.Message
}

// FinalizerBinding holds a Bound database's deletion until its tenant is
// gone (the database is Released): a tenant's data is never deleted, nor
// its Kubernetes record lost, under the tenant's feet. The binder adds and
// removes it.
const FinalizerBinding = Group + "/binding"

// AnnotationBindingRecord is the binding record a database keeps in its
// metadata, beside status.binding, so that it survives what drops status:
// a backup restored, an export applied again. The binder writes it when a
// database is Bound or Released, as the binding a PersistentVolume keeps
// in spec.claimRef; it is read only by a database with no status.binding
// at all (docs/operations.md).
const AnnotationBindingRecord = Group + "/binding"

// AnnotationProvisionedFor is set by the provider on the owner role it
// provisions with a tenant's database: the UID of the binding the
// database was provisioned for (spec.binding.provisionedFor.uid). It is
// part of what the role's ownership marker is sealed for, as the database
// is sealed for it.
const AnnotationProvisionedFor = Group + "/provisioned-for"

// A BindingRecord is the value of AnnotationBindingRecord, as JSON.
type BindingRecord struct {
	// Phase is Bound or Released.
	Phase DatabasePhase `json:"phase"`
	// BindingReference is the binding it was bound to.
	BindingReference `json:",inline"`
}

// ObservedExtension is an extension installed in the database.
type ObservedExtension struct {
	// Name of the extension.
	Name string `json:"name"`
	// Version installed (pg_extension.extversion).
	Version string `json:"version,omitempty"`
	// Schema holding the extension's objects.
	Schema string `json:"schema,omitempty"`
}

// PostgreSQLDatabaseObservation is the database as last observed.
type PostgreSQLDatabaseObservation struct {
	// Name of the database in PostgreSQL.
	// +optional
	Name string `json:"name,omitempty"`
	// InstanceUID is the UID of the PostgreSQLInstance the database was bound
	// to on first connect.
	// +optional
	InstanceUID string `json:"instanceUID,omitempty"`
	// SystemIdentifier of the server the database was bound to.
	// +optional
	SystemIdentifier string `json:"systemIdentifier,omitempty"`
	// Owner, as observed.
	// +optional
	Owner string `json:"owner,omitempty"`
	// Encoding of the database, as observed.
	// +optional
	Encoding string `json:"encoding,omitempty"`
	// LCCollate of the database, as observed.
	// +optional
	LCCollate string `json:"lcCollate,omitempty"`
	// LCCtype of the database, as observed.
	// +optional
	LCCtype string `json:"lcCtype,omitempty"`
	// Extensions that the spec lists, as installed.
	// +optional
	Extensions []ObservedExtension `json:"extensions,omitempty"`
	// OwnerAttributes are the owner's attributes among SUPERUSER,
	// CREATEROLE, BYPASSRLS and REPLICATION: a database whose owner has any
	// is never bound to a tenant.
	// +optional
	OwnerAttributes []string `json:"ownerAttributes,omitempty"`
	// RestoredFrom is the UID of the resource this one succeeded: the
	// database's ownership marker named it, sealed for this resource's
	// kind, namespace, name and origin, and no resource of that UID
	// existed any more (the resource was brought back from a backup, or
	// its manifest applied again). Without its binding record, such a
	// database goes to no tenant until an admin sets spec.binding.reopen
	// to this UID.
	// +optional
	RestoredFrom string `json:"restoredFrom,omitempty"`
	// DriftStatus reports changes made to the database on the server,
	// not through this resource (lastDrift).
	DriftStatus `json:",inline"`
	// PlanStatus shows the statements the next step would send
	// (plan).
	PlanStatus `json:",inline"`
}

// A PostgreSQLDatabaseStatus represents the observed state of a
// PostgreSQLDatabase.
type PostgreSQLDatabaseStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	// AtProvider is the database as last observed.
	// +optional
	AtProvider PostgreSQLDatabaseObservation `json:"atProvider,omitempty"`
	// Binding is the database's place in the binding protocol.
	// +optional
	Binding DatabaseBindingStatus `json:"binding,omitempty"`
}

// A PostgreSQLDatabase is a database on a PostgreSQL server. Its data is
// retained when the resource is deleted unless the Delete management policy
// is chosen.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,postgresql},shortName=pgdatabase
// +kubebuilder:validation:XValidation:rule="has(self.spec.forProvider.name) || self.metadata.name.matches('^[a-z][a-z0-9_]{0,62}$')",message="metadata.name is not a valid PostgreSQL identifier (^[a-z][a-z0-9_]{0,62}$): set spec.forProvider.name"
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="INSTANCE",type="string",JSONPath=".spec.instanceRef.name"
// +kubebuilder:printcolumn:name="EXTERNAL-NAME",type="string",JSONPath=".metadata.annotations.crossplane\\.io/external-name"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.status) || !has(oldSelf.status.binding) || !has(oldSelf.status.binding.phase) || oldSelf.status.binding.phase != 'Bound' || (has(self.spec.managementPolicies) == has(oldSelf.spec.managementPolicies) && (!has(self.spec.managementPolicies) || self.spec.managementPolicies == oldSelf.spec.managementPolicies))",message="spec.managementPolicies (the reclaim policy) is frozen while the database is Bound to a tenant; an admin may change it once the database is Released"
// +kubebuilder:printcolumn:name="PHASE",type="string",JSONPath=".status.binding.phase"
// +kubebuilder:printcolumn:name="TENANT",type="string",JSONPath=".status.binding.boundTo.tenant"
// +kubebuilder:printcolumn:name="OWNER",type="string",JSONPath=".status.atProvider.owner",priority=1
// +kubebuilder:printcolumn:name="ORIGIN",type="string",JSONPath=".status.binding.origin",priority=1
// +kubebuilder:printcolumn:name="PENDING",type="string",JSONPath=".status.atProvider.plan.summary"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +mrgen:managed
type PostgreSQLDatabase struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PostgreSQLDatabaseSpec   `json:"spec"`
	Status PostgreSQLDatabaseStatus `json:"status,omitempty"`
}

// PostgreSQLDatabaseList contains a list of PostgreSQLDatabase.
// +kubebuilder:object:root=true
type PostgreSQLDatabaseList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PostgreSQLDatabase `json:"items"`
}

// DatabaseName is the database's name in PostgreSQL: spec.forProvider.name,
// else metadata.name.
func (d *PostgreSQLDatabase) DatabaseName() string {
	if d.Spec.ForProvider.Name != nil {
		return *d.Spec.ForProvider.Name
	}
	return d.GetName()
}

// Reasons of a database's Ready condition beyond the common ones.
const (
	// ReasonExtensionUnavailable says that an extension the spec asks for is not
	// available on the server.
	ReasonExtensionUnavailable xpv2.ConditionReason = "ExtensionUnavailable"

	// ReasonExtensionUnsafe says that an extension the spec asks for is not
	// installed because its script would run with the admin's superuser power
	// in a schema where others may create objects.
	ReasonExtensionUnsafe xpv2.ConditionReason = "ExtensionUnsafe"
)
