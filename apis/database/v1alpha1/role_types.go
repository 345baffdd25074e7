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

	// ConnectionLimit caps the role's concurrent sessions (CONNECTION
	// LIMIT); -1 is no limit. Absent, the Instance's
	// spec.policy.defaultConnectionLimit, else a quarter of the server's
	// max_connections (status.connections.defaultRoleConnectionLimit of
	// the Instance). The Instance's spec.policy.maxConnectionLimit, when
	// set, refuses more (and -1).
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

	// Authentication is how a login role proves who it is: Password (the
	// default: a password, generated or from passwordSecretRef) or
	// Certificate (a TLS client certificate the provider issues from the
	// Instance's spec.clientCertificateAuthorityRef, whose common name is
	// the role's name; the role has no password, so no password of it can
	// leak). Certificate needs login, a connection Secret or vault path to
	// deliver to, and none of passwordSecretRef, validUntil (which only
	// passwords obey) and passwordRotation: the certificate is renewed before it expires (spec.clientCertificate).
	// Changing Certificate to Password gives the role a generated password;
	// a certificate already delivered works until it expires.
	// +kubebuilder:validation:Enum=Password;Certificate
	// +optional
	Authentication RoleAuthentication `json:"authentication,omitempty"`
}

// RoleAuthentication is how a login role logs in.
type RoleAuthentication string

// Authentication methods of a role.
const (
	AuthenticationPassword    RoleAuthentication = "Password"
	AuthenticationCertificate RoleAuthentication = "Certificate"
)

// DefaultCertificateMountPath is where a client mounts a role's connection
// Secret, unless spec.clientCertificate.mountPath says otherwise.
const DefaultCertificateMountPath = "/etc/postgresql-credentials"

// ClientCertificate says how long a role's client certificates are valid,
// when the next one is issued, and where clients find its files.
// +kubebuilder:validation:XValidation:rule="!has(self.duration) || duration(self.duration) >= duration('1m')",message="duration must be at least 1m"
// +kubebuilder:validation:XValidation:rule="!has(self.renewBefore) || duration(self.renewBefore) < duration(has(self.duration) ? self.duration : '2160h')",message="renewBefore must be shorter than duration (default 2160h): the new certificate is issued that long before the current one expires"
// +kubebuilder:validation:XValidation:rule="!has(self.renewBefore) || duration(self.renewBefore) >= duration('10s')",message="renewBefore must be at least 10s: clients need time to read the new certificate"
type ClientCertificate struct {
	// Duration is how long each certificate is valid (a Go duration; at
	// least 1m). Defaults to 2160h (90 days).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`

	// RenewBefore is how long before a certificate expires the next one is
	// issued and delivered: the grace during which clients still holding
	// the previous one go on logging in while they read the new one.
	// Defaults to a third of duration.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +optional
	RenewBefore *metav1.Duration `json:"renewBefore,omitempty"`

	// MountPath is the folder where clients mount the connection Secret
	// (or the vault's copy of it): the uri's sslcert and sslkey, and the
	// jdbc-url's, name files there. libpq refuses a key file readable by
	// others: mount the Secret with defaultMode 0600 (0640 with a group
	// the client runs as). Defaults to /etc/postgresql-credentials.
	// +kubebuilder:validation:Pattern=`^/[^?&#%]*$`
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	MountPath string `json:"mountPath,omitempty"`
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

// RotationMode says how a login role's generated password is replaced.
// +kubebuilder:validation:Enum=InPlace;Alternating
type RotationMode string

// Rotation modes.
const (
	// RotationInPlace gives the role itself a new password: the connection
	// Secret is written first, then the server changes, and a client still
	// holding the old password fails its next login until it reads the
	// Secret again.
	RotationInPlace RotationMode = "InPlace"
	// RotationAlternating keeps the role as the holder of privileges and
	// ownership (NOLOGIN) and hands out one of two login roles,
	// <name>_a and <name>_b, members of it whose sessions act as it. A
	// rotation gives the idle one a new password, switches the Secret to
	// it, and lets the previous one log in for gracePeriod more.
	RotationAlternating RotationMode = "Alternating"
)

// PasswordRotation says when and how a login role's generated password is
// replaced. A rotation is also asked for, at any time, by setting the
// database.ayatori.ddupan.top/rotate-password annotation to a new value.
// +kubebuilder:validation:XValidation:rule="!(has(self.maxAge) && has(self.schedule))",message="set one of maxAge and schedule, not both"
// +kubebuilder:validation:XValidation:rule="!has(self.maxAge) || duration(self.maxAge) >= duration('10s')",message="maxAge must be at least 10s"
// +kubebuilder:validation:XValidation:rule="!has(self.maxAge) || !has(self.gracePeriod) || duration(self.gracePeriod) < duration(self.maxAge)",message="gracePeriod must be shorter than maxAge: the previous login must be retired before the next rotation reuses it"
// +kubebuilder:validation:XValidation:rule="!has(self.endSessionsAfter) || duration(self.endSessionsAfter) >= duration(has(self.gracePeriod) ? self.gracePeriod : '1h')",message="endSessionsAfter must not be shorter than gracePeriod (default 1h)"
// +kubebuilder:validation:XValidation:rule="self.mode == 'Alternating' || (!has(self.gracePeriod) && !has(self.endSessionsAfter))",message="gracePeriod and endSessionsAfter need mode Alternating: an InPlace rotation leaves no previous login"
type PasswordRotation struct {
	// Mode is InPlace (the role's own password changes) or Alternating
	// (two login roles take turns, with no moment where the Secret's
	// credential does not work). Changing InPlace to Alternating hands
	// the role's login to <name>_a, with the role's own login kept for
	// gracePeriod; Alternating cannot be turned back.
	// +kubebuilder:default=InPlace
	// +optional
	Mode RotationMode `json:"mode,omitempty"`

	// MaxAge rotates the password once it is this old (a Go duration such
	// as 720h; at least 10s).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +optional
	MaxAge *metav1.Duration `json:"maxAge,omitempty"`

	// Schedule rotates the password at the times of a cron expression
	// (five fields, or @daily, @weekly, @monthly; in UTC), such as
	// "0 3 * * 1" for Mondays at 03:00.
	// +kubebuilder:validation:Pattern=`^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|\S+( +\S+){4})$`
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Schedule string `json:"schedule,omitempty"`

	// GracePeriod (Alternating) is how long the previous login still
	// accepts new logins after the Secret switched away from it: longer
	// than it takes every client to read the Secret again (a mounted
	// Secret refreshes within about a minute; environment variables need
	// a rollout). Then it is set NOLOGIN; its running sessions go on.
	// Defaults to 1h.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +optional
	GracePeriod *metav1.Duration `json:"gracePeriod,omitempty"`

	// EndSessionsAfter (Alternating), when set, ends the sessions the
	// previous login still has this long after the Secret switched
	// (pg_terminate_backend). Unset, they run until their clients close
	// them; status shows how many there are.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +optional
	EndSessionsAfter *metav1.Duration `json:"endSessionsAfter,omitempty"`
}

// A PostgreSQLRoleSpec defines the desired state of a PostgreSQLRole.
// +kubebuilder:validation:XValidation:rule="!has(self.ownedObjectsOnDelete) || self.ownedObjectsOnDelete != 'Reassign' || has(self.reassignOwnedTo)",message="ownedObjectsOnDelete Reassign needs reassignOwnedTo"
// +kubebuilder:validation:XValidation:rule="has(self.forProvider.name) == has(oldSelf.forProvider.name) && (!has(self.forProvider.name) || self.forProvider.name == oldSelf.forProvider.name)",message="forProvider.name cannot be changed: create a new PostgreSQLRole instead"
// +kubebuilder:validation:XValidation:rule="!has(self.passwordRotation) || self.passwordRotation.mode != 'Alternating' || (has(self.forProvider.login) && self.forProvider.login && (has(self.writeConnectionSecretToRef) || has(self.writeConnectionDetailsToVault)) && !has(self.forProvider.passwordSecretRef))",message="passwordRotation mode Alternating needs forProvider.login true and writeConnectionSecretToRef or writeConnectionDetailsToVault, without forProvider.passwordSecretRef: the provider generates the logins' passwords"
// +kubebuilder:validation:XValidation:rule="has(oldSelf.writeConnectionDetailsToVault) ? has(self.writeConnectionDetailsToVault) && self.writeConnectionDetailsToVault == oldSelf.writeConnectionDetailsToVault : !has(self.writeConnectionDetailsToVault) || has(oldSelf.writeConnectionSecretToRef)",message="writeConnectionDetailsToVault cannot be changed or removed after creation, and is added later only to a role that writes a connection Secret (a move to the vault, both delivering meanwhile): clients read the credentials where they were delivered"
// +kubebuilder:validation:XValidation:rule="!has(self.passwordRotation) || (!has(self.passwordRotation.maxAge) && !has(self.passwordRotation.schedule)) || !has(self.forProvider.passwordSecretRef)",message="passwordRotation maxAge and schedule rotate generated passwords: remove them, or forProvider.passwordSecretRef"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.passwordRotation) || oldSelf.passwordRotation.mode != 'Alternating' || (has(self.passwordRotation) && self.passwordRotation.mode == 'Alternating')",message="passwordRotation mode Alternating cannot be turned back to InPlace: clients may hold the login roles' credentials"
// +kubebuilder:validation:XValidation:rule="!has(self.passwordRotation) || self.passwordRotation.mode != 'Alternating' || !has(self.forProvider.name) || size(self.forProvider.name) <= 61",message="passwordRotation mode Alternating needs a role name of at most 61 characters: the login roles are <name>_a and <name>_b"
// +kubebuilder:validation:XValidation:rule="!has(self.forProvider.authentication) || self.forProvider.authentication != 'Certificate' || (has(self.forProvider.login) && self.forProvider.login && (has(self.writeConnectionSecretToRef) || has(self.writeConnectionDetailsToVault)) && !has(self.forProvider.passwordSecretRef) && !has(self.forProvider.validUntil) && !has(self.passwordRotation))",message="forProvider.authentication Certificate needs forProvider.login true and writeConnectionSecretToRef or writeConnectionDetailsToVault, without forProvider.passwordSecretRef, forProvider.validUntil or passwordRotation: the role has no password, and its certificate expires and is renewed as clientCertificate says"
// +kubebuilder:validation:XValidation:rule="!has(self.clientCertificate) || (has(self.forProvider.authentication) && self.forProvider.authentication == 'Certificate')",message="clientCertificate needs forProvider.authentication Certificate"
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
	// Observe-only import publishes nothing. Removed or renamed, the role
	// stops writing the Secret and lets go of it: the Secret keeps its data
	// and still goes with the role, but another controller (an
	// ExternalSecret projecting the same credential) may take it over.
	// +optional
	WriteConnectionSecretToReference *xpv2.LocalSecretReference `json:"writeConnectionSecretToRef,omitempty"`

	// WriteConnectionDetailsToVault delivers the same keys, instead of a
	// Secret, to the path <pathPrefix>/<instance>/<namespace>/<name> of
	// the Instance's spec.credentialVault (an OpenBao or Vault KV v2
	// engine), a new version whenever one of them changes, and destroys
	// the path when the role is dropped. The namespace in the path is this
	// resource's own. Set once: at creation, or added to a role that
	// writes a connection Secret, which then delivers to both, the vault
	// first, until writeConnectionSecretToRef is removed (a move to the
	// vault without a failed login). It never changes or goes.
	// +optional
	WriteConnectionDetailsToVault *VaultPath `json:"writeConnectionDetailsToVault,omitempty"`

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
	// ownedObjectsOnDelete Reassign. A PostgreSQLRole of this namespace
	// that manages that role is not deleted before this one is gone (its
	// Synced condition says "deletion held"), whatever order the two are
	// deleted in.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +optional
	ReassignOwnedTo string `json:"reassignOwnedTo,omitempty"`

	// ConnectionDatabase is the database the connection Secret's database,
	// uri and jdbc-url name. Defaults to the Instance's maintenance database.
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9_]{0,62}$`
	// +optional
	ConnectionDatabase string `json:"connectionDatabase,omitempty"`

	// PasswordRotation replaces a login role's generated password on a
	// schedule, in place or with two alternating logins. Without it the
	// password changes only when the rotate-password annotation does.
	// +optional
	PasswordRotation *PasswordRotation `json:"passwordRotation,omitempty"`

	// ClientCertificate, for a role with forProvider.authentication
	// Certificate, sets its certificates' lifetime, renewal and the
	// folder clients mount them in. Defaults apply when it is absent.
	// +optional
	ClientCertificate *ClientCertificate `json:"clientCertificate,omitempty"`
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
	// Credential is the login the connection Secret holds, and with
	// Alternating rotation the previous one.
	// +optional
	Credential *CredentialObservation `json:"credential,omitempty"`
	// Vault is where spec.writeConnectionDetailsToVault delivers the
	// credentials: no authentication material, only the location.
	// +optional
	Vault *VaultDelivery `json:"vault,omitempty"`
	// ConnectionSecret is the Secret this role writes its connection
	// details to and controls. Once spec.writeConnectionSecretToRef no
	// longer names it, the role lets go of it (it stays the Secret's
	// owner, no longer its controller) and clears this field.
	// +optional
	ConnectionSecret string `json:"connectionSecret,omitempty"`
	// DriftStatus reports changes made to the role on the server, not
	// through this resource (lastDrift).
	DriftStatus `json:",inline"`
	// PlanStatus shows the statements the next step would send
	// (plan).
	PlanStatus `json:",inline"`
}

// VaultDelivery is the KV v2 location a role's credentials are delivered
// to.
type VaultDelivery struct {
	// Path is the path within the KV v2 engine (what an ExternalSecret's
	// dataFrom.extract.key names, with a store whose path is the mount).
	Path string `json:"path"`
	// URL is the API URL of the credential's data, without any token:
	// reading it takes a token the vault's policy allows.
	URL string `json:"url"`
	// Since is when the path first held this role's credentials: the
	// start of a move from a connection Secret to the vault.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
}

// PreviousLoginState is where the login the Secret held before the last
// rotation stands.
type PreviousLoginState string

// States of the previous login.
const (
	// PreviousLoginGrace: it still accepts new logins, until
	// previousLoginUntil.
	PreviousLoginGrace PreviousLoginState = "Grace"
	// PreviousLoginRetired: it takes no new logins (NOLOGIN); its running
	// sessions, previousSessions, go on.
	PreviousLoginRetired PreviousLoginState = "Retired"
)

// CredentialObservation is the login the connection Secret holds and,
// with Alternating rotation, the one it held before.
type CredentialObservation struct {
	// ActiveLogin is the role the connection Secret's username names.
	// +optional
	ActiveLogin string `json:"activeLogin,omitempty"`
	// ActiveSince is when its password was set (or first seen, for a
	// password older than this field).
	// +optional
	ActiveSince *metav1.Time `json:"activeSince,omitempty"`
	// NextRotation is when the schedule or maxAge rotates it next. A
	// rotation falling within the previous login's grace period waits
	// for its end.
	// +optional
	NextRotation *metav1.Time `json:"nextRotation,omitempty"`
	// PreviousLogin is the login the Secret held before the last
	// Alternating rotation.
	// +optional
	PreviousLogin string `json:"previousLogin,omitempty"`
	// PreviousLoginState is Grace or Retired.
	// +optional
	PreviousLoginState PreviousLoginState `json:"previousLoginState,omitempty"`
	// PreviousLoginUntil is when the previous login stops accepting new
	// logins (the end of the grace period).
	// +optional
	PreviousLoginUntil *metav1.Time `json:"previousLoginUntil,omitempty"`
	// PreviousSessionsEndAt is when the previous login's remaining
	// sessions are ended (with endSessionsAfter).
	// +optional
	PreviousSessionsEndAt *metav1.Time `json:"previousSessionsEndAt,omitempty"`
	// PreviousSessions is how many sessions the previous login had when
	// last observed.
	// +optional
	PreviousSessions int32 `json:"previousSessions,omitempty"`

	// Certificate is the client certificate delivered, for a role with
	// forProvider.authentication Certificate. Its key is only in the
	// connection Secret or vault path.
	// +optional
	Certificate *CertificateObservation `json:"certificate,omitempty"`
	// PasswordRemoved: the role's password was removed (PASSWORD NULL)
	// when it took Certificate authentication, so that no password of it
	// logs in.
	// +optional
	PasswordRemoved bool `json:"passwordRemoved,omitempty"`
}

// CertificateObservation describes the client certificate delivered.
type CertificateObservation struct {
	// SerialNumber of the certificate, in hexadecimal.
	SerialNumber string `json:"serialNumber"`
	// NotAfter is when the certificate expires: the server refuses it
	// from then on.
	NotAfter metav1.Time `json:"notAfter"`
	// RenewAt is when the next certificate is issued and delivered.
	RenewAt metav1.Time `json:"renewAt"`
	// Issuer is the subject of the CA that signed it.
	// +optional
	Issuer string `json:"issuer,omitempty"`
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
// +kubebuilder:validation:XValidation:rule="!has(self.spec.passwordRotation) || self.spec.passwordRotation.mode != 'Alternating' || has(self.spec.forProvider.name) || size(self.metadata.name) <= 61",message="passwordRotation mode Alternating needs a role name of at most 61 characters (the login roles are <name>_a and <name>_b): set a shorter spec.forProvider.name"
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="INSTANCE",type="string",JSONPath=".spec.instanceRef.name"
// +kubebuilder:printcolumn:name="EXTERNAL-NAME",type="string",JSONPath=".metadata.annotations.crossplane\\.io/external-name"
// +kubebuilder:printcolumn:name="LOGIN",type="boolean",JSONPath=".spec.forProvider.login",priority=1
// +kubebuilder:printcolumn:name="ACTIVE-LOGIN",type="string",JSONPath=".status.atProvider.credential.activeLogin",priority=1
// +kubebuilder:printcolumn:name="NEXT-ROTATION",type="date",JSONPath=".status.atProvider.credential.nextRotation",priority=1
// +kubebuilder:printcolumn:name="PENDING",type="string",JSONPath=".status.atProvider.plan.summary"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +mrgen:managed
// +mrgen:delivers-own-secret
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
