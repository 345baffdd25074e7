package v1alpha1

import (
	"strconv"
	"strings"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SSLMode says how the provider protects its connection to a server. The
// names and meanings follow libpq's sslmode.
// +kubebuilder:validation:Enum=disable;require;verify-ca;verify-full
type SSLMode string

// SSL modes.
const (
	// SSLModeDisable sends everything, credentials included, in clear text.
	SSLModeDisable SSLMode = "disable"
	// SSLModeRequire encrypts but does not authenticate the server.
	SSLModeRequire SSLMode = "require"
	// SSLModeVerifyCA checks that the server certificate chains to the CA.
	SSLModeVerifyCA SSLMode = "verify-ca"
	// SSLModeVerifyFull also checks the certificate's names against host
	// (DNS SAN) and hostaddr (IP SAN).
	SSLModeVerifyFull SSLMode = "verify-full"
)

// TypeServerVerified is an Instance's condition saying whether the provider
// verifies the server's identity before it sends the admin password: True
// only with sslMode verify-full. False is a warning, not an error: the
// Instance still works, on the operator's own choice of a weaker sslMode.
const TypeServerVerified xpv2.ConditionType = "ServerVerified"

// Reasons of the ServerVerified condition.
const (
	// ReasonVerifiedFull: the certificate chains to a trusted CA and names
	// the host and hostaddr.
	ReasonVerifiedFull xpv2.ConditionReason = "VerifiedFull"
	// ReasonNamesNotVerified: verify-ca; any certificate from the CA passes.
	ReasonNamesNotVerified xpv2.ConditionReason = "NamesNotVerified"
	// ReasonNotVerified: require; anyone on the path can pose as the
	// server and receive the password.
	ReasonNotVerified xpv2.ConditionReason = "NotVerified"
	// ReasonClearText: disable; the password and all data cross the
	// network unencrypted.
	ReasonClearText xpv2.ConditionReason = "ClearText"
)

// Reasons of an Instance's Ready condition beyond Crossplane's own.
const (
	// ReasonUnreachable: the server could not be reached or refused the
	// login; the message says why (TLS failure, refused connection, ...).
	ReasonUnreachable xpv2.ConditionReason = "Unreachable"
	// ReasonInsufficientPrivileges: the admin role cannot create databases
	// and roles.
	ReasonInsufficientPrivileges xpv2.ConditionReason = "InsufficientPrivileges"
	// ReasonCredentialsUnavailable: the admin Secret or CA bundle cannot be
	// read.
	ReasonCredentialsUnavailable xpv2.ConditionReason = "CredentialsUnavailable"
)

// InstancePhase is a display summary of an Instance. It never proves
// ownership or write access: read the Ready condition for that.
// +kubebuilder:validation:Enum=Pending;Validating;Ready;Deleting
type InstancePhase string

// Instance phases.
const (
	InstancePhasePending    InstancePhase = "Pending"
	InstancePhaseValidating InstancePhase = "Validating"
	InstancePhaseReady      InstancePhase = "Ready"
	InstancePhaseDeleting   InstancePhase = "Deleting"
)

// Endpoint says where a PostgreSQL server is and how to reach it.
type Endpoint struct {
	// Host is the DNS name of the server. It is what the server certificate
	// is verified against: one of its DNS SANs must match it. It is not
	// resolved; hostaddr is the address dialled.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Host string `json:"host"`

	// Hostaddr is the single IPv4 or IPv6 address the provider dials. With
	// sslMode verify-full the server certificate must also carry it as an IP
	// SAN.
	// +kubebuilder:validation:MaxLength=45
	// +kubebuilder:validation:XValidation:rule="isIP(self)",message="hostaddr must be a single IPv4 or IPv6 address, such as 10.0.0.5 or fd00::5"
	Hostaddr string `json:"hostaddr"`

	// Port is the TCP port of the server.
	// +kubebuilder:default=5432
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	Port int32 `json:"port,omitempty"`

	// Database is the maintenance database the admin connection opens, the
	// one from which databases and roles are created.
	// +kubebuilder:default=postgres
	// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9_]{0,62}$`
	// +optional
	Database string `json:"database,omitempty"`

	// SSLMode says how the connection is protected, with libpq's meanings:
	// disable (clear text, credentials included), require (encrypted, server
	// not authenticated), verify-ca (certificate chains to the CA),
	// verify-full (also host in a DNS SAN and hostaddr in an IP SAN).
	// +kubebuilder:default=verify-full
	// +optional
	SSLMode SSLMode `json:"sslMode,omitempty"`

	// AllowPasswordMethods lists the weak password methods the server may
	// ask the provider for: MD5 (a replayable hash of the password) and
	// Password (the password itself, in clear text inside the connection).
	// Absent, a server asking for either is refused before the password is
	// sent, and the Instance says so: only SCRAM-SHA-256 (or methods that
	// take no password) is used. Allowing them is the operator's own
	// choice; it applies to the admin login and to the provider's checks
	// of managed roles' passwords.
	// +listType=set
	// +kubebuilder:validation:MaxItems=2
	// +optional
	AllowPasswordMethods []PasswordMethod `json:"allowPasswordMethods,omitempty"`
}

// PasswordMethod is a weak password authentication method a server may ask
// for.
// +kubebuilder:validation:Enum=MD5;Password
type PasswordMethod string

// Weak password methods.
const (
	PasswordMethodMD5      PasswordMethod = "MD5"
	PasswordMethodPassword PasswordMethod = "Password"
)

// LabelAdminCredential marks a Secret of the provider's namespace that may
// serve as an Instance's admin credential. Only Secrets carrying it with
// the value "true" are read: other Secrets of that namespace (other
// providers' credentials live there) can never be sent to a server by
// whoever may create an Instance.
const LabelAdminCredential = "database.ayatori.ddupan.top/admin-credential"

// AdminCredentialReference names the Secret, in the provider's own namespace,
// that holds the admin login. The provider only reads it.
type AdminCredentialReference struct {
	// Name of the Secret in the provider's namespace. There is deliberately
	// no namespace field: admin credentials never live in application
	// namespaces. The Secret must opt in with the label
	// database.ayatori.ddupan.top/admin-credential: "true"; any other
	// Secret is refused and nothing is sent to the server.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// UsernameKey is the key of the Secret that holds the admin role name.
	// +kubebuilder:default=username
	// +optional
	UsernameKey string `json:"usernameKey,omitempty"`

	// PasswordKey is the key of the Secret that holds the admin password.
	// +kubebuilder:default=password
	// +optional
	PasswordKey string `json:"passwordKey,omitempty"`
}

// LabelClientCertificateAuthority marks a Secret of the provider's
// namespace that may serve as an Instance's client certificate authority.
// Only Secrets carrying it with the value "true" are read, for the reason
// LabelAdminCredential gives: whoever may create an Instance can never
// have the provider sign with a key that was not offered for it.
const LabelClientCertificateAuthority = "database.ayatori.ddupan.top/client-certificate-authority"

// ClientCertificateAuthorityReference names the Secret, in the provider's
// own namespace, holding the CA that signs client certificates: its
// certificate and private key in PEM, under tls.crt and tls.key (a
// kubernetes.io/tls Secret, such as cert-manager writes for a CA
// Certificate). The provider only reads it.
type ClientCertificateAuthorityReference struct {
	// Name of the Secret in the provider's namespace. The Secret must opt
	// in with the label
	// database.ayatori.ddupan.top/client-certificate-authority: "true";
	// any other Secret is refused and nothing is signed.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// CABundleKind is the kind of object a CA bundle is read from.
// +kubebuilder:validation:Enum=Secret;ConfigMap
type CABundleKind string

// CA bundle kinds.
const (
	CABundleKindSecret    CABundleKind = "Secret"
	CABundleKindConfigMap CABundleKind = "ConfigMap"
)

// CABundleReference names a key of a Secret or ConfigMap in the provider's
// namespace that holds PEM-encoded CA certificates.
type CABundleReference struct {
	// Kind of the object holding the bundle.
	// +kubebuilder:default=Secret
	// +optional
	Kind CABundleKind `json:"kind,omitempty"`

	// Name of the Secret or ConfigMap in the provider's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Key holding the PEM bundle.
	// +kubebuilder:default="ca.crt"
	// +optional
	Key string `json:"key,omitempty"`
}

// AdminTokenSource is where the admin's password comes from when it is a
// short-lived token rather than a stored password: a cloud's IAM login
// token (RDS, Cloud SQL, Azure Database) or a credential the platform's
// own agent keeps current. The token is asked for at each new server
// connection and renewed before it expires; sessions already logged in
// stay so. It is never logged, never in status, events or change logs.
// +kubebuilder:validation:XValidation:rule="has(self.exec) != has(self.file)",message="adminTokenSource needs exactly one of exec and file"
type AdminTokenSource struct {
	// Username is the admin role the token logs in as.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Username string `json:"username"`

	// Exec runs a command shipped in the provider's image, the way a
	// kubeconfig exec plugin runs: the first line of its standard output
	// is the token, and an optional second line the moment it expires
	// (RFC 3339). The provider must be started with the command among its
	// --admin-token-command flags: an Instance names nothing else.
	// +optional
	Exec *TokenExec `json:"exec,omitempty"`

	// File is a file in the provider's pod that holds the token, kept
	// current by the platform (a projected volume, a Vault agent, a CSI
	// driver); it is read again when it changes. Its directory must be
	// among the provider's --admin-token-dir flags.
	// +optional
	File *TokenFile `json:"file,omitempty"`
}

// TokenExec is a command that prints a token.
type TokenExec struct {
	// Command is the command's absolute path. It is run directly, not by
	// a shell.
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:Pattern=`^/`
	Command string `json:"command"`

	// Args are the command's arguments.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Args []string `json:"args,omitempty"`

	// Env is the command's environment, besides PATH and HOME (nothing
	// else of the provider's own is passed on).
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	// +optional
	Env []TokenEnvVar `json:"env,omitempty"`

	// EnvFromSecretRef names a Secret in the provider's namespace whose
	// keys become environment variables of the command (values an
	// Instance must not show, such as a client secret). Like an admin
	// credential Secret it must opt in with the label
	// database.ayatori.ddupan.top/admin-credential: "true". Env wins
	// over it for a name in both.
	// +optional
	EnvFromSecretRef *TokenEnvSecretReference `json:"envFromSecretRef,omitempty"`

	// Lifetime is how long a token is used when the command prints no
	// expiry; it is renewed a minute (or a quarter of it) before. Set
	// it below the token's real lifetime.
	// +kubebuilder:default="5m"
	// +optional
	Lifetime *metav1.Duration `json:"lifetime,omitempty"`
}

// TokenEnvVar is one environment variable of a token command.
type TokenEnvVar struct {
	// Name of the variable.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	Name string `json:"name"`

	// Value of the variable.
	// +kubebuilder:validation:MaxLength=4096
	Value string `json:"value"`
}

// TokenEnvSecretReference names a Secret in the provider's namespace.
type TokenEnvSecretReference struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// TokenFile is a file that holds a token.
type TokenFile struct {
	// Path is the file's absolute path in the provider's pod.
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:Pattern=`^/`
	Path string `json:"path"`
}

// A PostgreSQLInstanceSpec registers one PostgreSQL server.
// +kubebuilder:validation:XValidation:rule="!has(self.caBundleRef) || self.endpoint.sslMode != 'disable'",message="caBundleRef has no effect with endpoint.sslMode disable; remove it or choose require, verify-ca or verify-full"
// +kubebuilder:validation:XValidation:rule="has(self.adminCredentialRef) != has(self.adminTokenSource)",message="set exactly one of adminCredentialRef (a stored password) and adminTokenSource (a short-lived token)"
type PostgreSQLInstanceSpec struct {
	// ManagementPolicies says which actions the provider may take. An
	// Instance only registers a server: nothing is created on it, and
	// deleting the Instance never touches the server (it is refused while
	// anything refers to the Instance).
	// +kubebuilder:default={"*"}
	// +optional
	ManagementPolicies xpv2.ManagementPolicies `json:"managementPolicies,omitempty"`

	// Endpoint says where the server is and how the connection is protected.
	Endpoint Endpoint `json:"endpoint"`

	// AdminCredentialRef names the Secret holding the admin login. A change
	// of the username or password in it is validated again promptly.
	// Exactly one of adminCredentialRef and adminTokenSource is set.
	// +optional
	AdminCredentialRef *AdminCredentialReference `json:"adminCredentialRef,omitempty"`

	// AdminTokenSource logs the admin in with a short-lived token (a
	// cloud's IAM login token, or a credential an agent keeps current)
	// instead of a stored password.
	// +optional
	AdminTokenSource *AdminTokenSource `json:"adminTokenSource,omitempty"`

	// CABundleRef names PEM CA certificates to trust for this server instead
	// of the system pool, for verify-ca and verify-full (and require, which
	// then behaves as verify-ca, as in libpq).
	// +optional
	CABundleRef *CABundleReference `json:"caBundleRef,omitempty"`

	// ClientCertificateAuthorityRef offers client-certificate logins on
	// this server: it names the CA, a Secret of the provider's namespace,
	// that signs the certificate of every role asking for
	// forProvider.authentication Certificate. The server must trust that
	// CA (ssl_ca_file) and its pg_hba.conf must ask those roles for a
	// certificate (a hostssl line with method cert): docs/credentials.md
	// shows both. Absent, no role of this Instance may log in with a
	// certificate.
	// +optional
	ClientCertificateAuthorityRef *ClientCertificateAuthorityReference `json:"clientCertificateAuthorityRef,omitempty"`

	// NamespaceSelector limits which namespaces may use this Instance for
	// new work. A resource in a namespace it does not select gets a Synced
	// condition saying so and no SQL runs. It never holds up a deletion:
	// after a namespace's label is removed (or the Instance recreated with
	// a narrower selector), deleting its resources still drops what they
	// made, so the namespace can always be emptied and deleted; only new
	// work there is refused. Absent means every namespace.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// Policy is what namespaced resources on this Instance may ask of the
	// server, beyond what is always allowed. Safe by default: no role gets
	// CREATEROLE, REPLICATION or BYPASSRLS, no role becomes a member of a
	// predefined pg_* role or of a role with SUPERUSER, CREATEROLE,
	// BYPASSRLS or REPLICATION (nor is handed what a role owns), no
	// database copies a template other than template0 and template1, roles
	// set only settings any user may set (pg_settings.context user), and
	// nothing is granted on the system catalogs. Each is checked against
	// the server's catalog before any statement is sent; a refusal is a
	// Ready condition (reason PolicyRefused) naming the field and the rule.
	// +optional
	Policy InstancePolicy `json:"policy,omitempty"`

	// SharedDatabases is what the provider does to the databases every
	// login may connect to on a stock PostgreSQL: template1 and the
	// maintenance database (spec.endpoint.database).
	// +optional
	SharedDatabases SharedDatabases `json:"sharedDatabases,omitempty"`

	// CredentialVault is the OpenBao (or Vault) KV v2 engine that roles on
	// this Instance may deliver their credentials to instead of a Secret
	// (spec.writeConnectionDetailsToVault of a PostgreSQLRole). Set by the
	// platform team; nothing a tenant can set.
	// +optional
	CredentialVault *CredentialVault `json:"credentialVault,omitempty"`
}

// SharedDatabases is what the provider does to the databases PUBLIC may
// connect to.
type SharedDatabases struct {
	// RevokePublicConnect revokes CONNECT on template1 and on the
	// maintenance database from PUBLIC, and grants it to the admin role
	// first, so that a login the provider creates can connect to its own
	// databases only. Off by default because it changes server-wide state
	// that other clients may rely on (a monitoring agent or an application
	// that connects to the maintenance database); the provider works
	// without it, since nothing it needs there is something a login can
	// hold (docs/security.md, "The shared server"). Turning it off again
	// leaves the grants as they are. Needs an admin that owns those
	// databases or is a superuser; otherwise the Instance's
	// SharedDatabasesRestricted condition says so and names the statements
	// for a database administrator.
	// +optional
	RevokePublicConnect bool `json:"revokePublicConnect,omitempty"`
}

// TypeSharedDatabasesRestricted is an Instance's condition saying whether
// PUBLIC's CONNECT on template1 and the maintenance database is revoked as
// spec.sharedDatabases.revokePublicConnect asks.
const TypeSharedDatabasesRestricted xpv2.ConditionType = "SharedDatabasesRestricted"

// Reasons of the SharedDatabasesRestricted condition.
const (
	// ReasonPublicConnectRevoked: PUBLIC holds no CONNECT on either.
	ReasonPublicConnectRevoked xpv2.ConditionReason = "PublicConnectRevoked"
	// ReasonPublicConnectKept: revokePublicConnect is off; every login may
	// connect to them.
	ReasonPublicConnectKept xpv2.ConditionReason = "PublicConnectKept"
	// ReasonCannotRevoke: the admin may not change those databases'
	// privileges; the message names the statements to run.
	ReasonCannotRevoke xpv2.ConditionReason = "CannotRevoke"
)

// TypeAdminSlotsReserved is an Instance's condition saying whether the
// server keeps connection slots that only the admin (among the logins the
// provider creates) may take once every other slot is in use.
const TypeAdminSlotsReserved xpv2.ConditionType = "AdminSlotsReserved"

// Reasons of the AdminSlotsReserved condition.
const (
	// ReasonSuperuserReserved: the admin is a superuser and
	// superuser_reserved_connections is above zero.
	ReasonSuperuserReserved xpv2.ConditionReason = "SuperuserReserved"
	// ReasonReservedConnections: the admin is a member of
	// pg_use_reserved_connections and reserved_connections is above zero
	// (PostgreSQL 16+).
	ReasonReservedConnections xpv2.ConditionReason = "ReservedConnections"
	// ReasonNoReservedSlots: no slot is kept for the admin; the message
	// says what a platform can do.
	ReasonNoReservedSlots xpv2.ConditionReason = "NoReservedSlots"
)

// PolicyRoleAttribute is a role attribute an Instance's policy may allow.
// +kubebuilder:validation:Enum=CreateRole;Replication;BypassRLS
type PolicyRoleAttribute string

// Role attributes a policy may allow.
const (
	PolicyCreateRole  PolicyRoleAttribute = "CreateRole"
	PolicyReplication PolicyRoleAttribute = "Replication"
	PolicyBypassRLS   PolicyRoleAttribute = "BypassRLS"
)

// InstancePolicy widens, for every namespace that may use the Instance,
// what its resources may ask of the server.
// +kubebuilder:validation:XValidation:rule="!has(self.allowSetRoleOf) || self.allowSetRoleOf.all(r, has(self.allowMembershipOf) && r in self.allowMembershipOf)",message="every role of allowSetRoleOf must also be in allowMembershipOf: SET widens a membership the policy allows",fieldPath=".allowSetRoleOf"
// +kubebuilder:validation:XValidation:rule="!has(self.allowAdminOptionOf) || self.allowAdminOptionOf.all(r, has(self.allowMembershipOf) && r in self.allowMembershipOf)",message="every role of allowAdminOptionOf must also be in allowMembershipOf: ADMIN OPTION widens a membership the policy allows",fieldPath=".allowAdminOptionOf"
type InstancePolicy struct {
	// AllowRoleAttributes lists the attributes PostgreSQLRoles on this
	// Instance may set: CreateRole (on PostgreSQL 15 and older close to
	// superuser), Replication, BypassRLS. SUPERUSER is never set by the
	// provider.
	// +listType=set
	// +kubebuilder:validation:MaxItems=3
	// +optional
	AllowRoleAttributes []PolicyRoleAttribute `json:"allowRoleAttributes,omitempty"`

	// AllowTemplates lists databases, besides template0 and template1, that
	// PostgreSQLDatabases on this Instance may copy (TEMPLATE). Copying a
	// database copies all its data.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:Pattern=`^[a-z_][a-z0-9_]{0,62}$`
	// +optional
	AllowTemplates []string `json:"allowTemplates,omitempty"`

	// AllowSettings lists configuration parameters, beyond those any user
	// may set (pg_settings.context user), that PostgreSQLRoles on this
	// Instance may set for their sessions (ALTER ROLE … SET).
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:Pattern=`^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$`
	// +optional
	AllowSettings []string `json:"allowSettings,omitempty"`

	// AllowMembershipOf lists roles of which roles in any namespace on this
	// Instance may become members (memberOf, a Membership PostgreSQLGrant)
	// or be handed owned objects (reassignOwnedTo), although they are
	// predefined (pg_*), have SUPERUSER, CREATEROLE, BYPASSRLS or
	// REPLICATION, or are not managed from that namespace; for example
	// pg_read_all_data for a reporting namespace, or a shared read-only
	// role.
	//
	// What such a membership carries is the role's privileges (INHERIT),
	// for every namespace, the role's own included. On PostgreSQL 16 and
	// newer it does not let the member act as the role (SET ROLE: create
	// objects the role owns, hand objects to it) unless allowSetRoleOf
	// names the role too, nor hand the role on (ADMIN OPTION) unless
	// allowAdminOptionOf does: the provider grants a new membership WITH
	// SET FALSE and refuses set: true and withAdminOption: true. A
	// membership that exists keeps its options. PostgreSQL 15 and older
	// cannot withhold SET ROLE from a member: there, listing a role here
	// lets its members act as it.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +optional
	AllowMembershipOf []string `json:"allowMembershipOf,omitempty"`

	// AllowSetRoleOf lists roles of allowMembershipOf whose members may
	// also act as them (the SET option of a membership, SET ROLE, on
	// PostgreSQL 16 and newer): create objects that role owns, and hand
	// objects to it. A member can then, for example, leave a function
	// owned by a shared role for others who trust that role to run. Only
	// roles allowMembershipOf lists may be named.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +optional
	AllowSetRoleOf []string `json:"allowSetRoleOf,omitempty"`

	// AllowAdminOptionOf lists roles of allowMembershipOf whose membership
	// a role of any namespace may hold WITH ADMIN OPTION (a Membership
	// PostgreSQLGrant's withAdminOption): its login may then grant the
	// role to any role of the server, outside every namespace's boundary.
	// Only roles allowMembershipOf lists may be named.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +optional
	AllowAdminOptionOf []string `json:"allowAdminOptionOf,omitempty"`

	// DefaultConnectionLimit is the CONNECTION LIMIT of a role on this
	// Instance whose spec.forProvider.connectionLimit is absent; -1 is no
	// limit. Absent, a quarter of the server's max_connections
	// (status.connections.max), at least 1: a login without a limit of its
	// own may take every connection slot a shared server has, and with a
	// managed-service admin, which has no superuser-reserved slots, leave
	// the provider unable to work for any other namespace. A change applies
	// to the roles that name no limit at their next poll.
	// +kubebuilder:validation:Minimum=-1
	// +optional
	DefaultConnectionLimit *int32 `json:"defaultConnectionLimit,omitempty"`

	// MaxConnectionLimit is the largest CONNECTION LIMIT a role on this
	// Instance may ask for (spec.forProvider.connectionLimit); asking for
	// more, or for -1 (no limit), is refused with reason PolicyRefused and
	// nothing is sent. Absent, any limit may be asked for.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxConnectionLimit *int32 `json:"maxConnectionLimit,omitempty"`

	// AllowDatabases lists databases in which resources of any namespace on
	// this Instance may act (PostgreSQLGrants, PostgreSQLSchemas,
	// PostgreSQLDefaultPrivileges) although no PostgreSQLDatabase of that
	// namespace manages them, such as a shared database.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:Pattern=`^[a-z_][a-z0-9_]{0,62}$`
	// +optional
	AllowDatabases []string `json:"allowDatabases,omitempty"`

	// AllowTablespaces lists the tablespaces this Instance offers:
	// PostgreSQLGrants of objectType Tablespace may grant CREATE on them to
	// roles of any namespace. A grant on any other tablespace is refused
	// with reason PolicyRefused: a tablespace is a place on the server's
	// disks the platform sized and pays for.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:Pattern=`^[a-z_][a-z0-9_]{0,62}$`
	// +optional
	AllowTablespaces []string `json:"allowTablespaces,omitempty"`
}

// AdminPrivileges is what the admin role may do on the server.
type AdminPrivileges struct {
	// Superuser is true when the admin role is a superuser.
	Superuser bool `json:"superuser"`
	// CreateDB is true when the admin role may create databases.
	CreateDB bool `json:"createDB"`
	// CreateRole is true when the admin role may create roles.
	CreateRole bool `json:"createRole"`
	// Sufficient is true when the admin role can do everything the provider
	// needs: superuser, or CREATEDB together with CREATEROLE.
	Sufficient bool `json:"sufficient"`
}

// AvailableExtension is an extension the server can install.
type AvailableExtension struct {
	// Name of the extension.
	Name string `json:"name"`
	// DefaultVersion is the version CREATE EXTENSION installs by default.
	// +optional
	DefaultVersion string `json:"defaultVersion,omitempty"`
}

// InstanceConnections is how a server's connection slots are shared.
type InstanceConnections struct {
	// Max is the server's max_connections.
	Max int32 `json:"max"`
	// ReservedForAdmin is how many slots the admin may take after every
	// other login's are in use: superuser_reserved_connections for a
	// superuser admin, reserved_connections (PostgreSQL 16+) for a member
	// of pg_use_reserved_connections, else 0.
	ReservedForAdmin int32 `json:"reservedForAdmin"`
	// DefaultRoleConnectionLimit is the CONNECTION LIMIT a role on this
	// Instance gets when its spec names none (spec.policy.defaultConnectionLimit,
	// else a quarter of max).
	DefaultRoleConnectionLimit int32 `json:"defaultRoleConnectionLimit"`
}

// A PostgreSQLInstanceStatus is what the provider observed of the server.
type PostgreSQLInstanceStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`

	// Phase is a display summary: Pending (registered, not yet checked),
	// Validating (checked, not usable: the Ready condition says why),
	// Ready, or Deleting.
	// +optional
	// +kubebuilder:default=Pending
	Phase InstancePhase `json:"phase,omitempty"`

	// PostgreSQLVersion is the server's version, as server_version reports it.
	// +optional
	PostgreSQLVersion string `json:"postgresqlVersion,omitempty"`

	// SystemIdentifier is the server's system identifier (pg_control_system).
	// A different identifier at the same endpoint means a different server.
	// +optional
	SystemIdentifier string `json:"systemIdentifier,omitempty"`

	// AdminPrivileges says what the admin role may do.
	// +optional
	AdminPrivileges *AdminPrivileges `json:"adminPrivileges,omitempty"`

	// Connections says how the server's connection slots are shared.
	// +optional
	Connections *InstanceConnections `json:"connections,omitempty"`

	// UsedBy is how many resources refer to the Instance (databases,
	// roles, schemas, grants, default privileges, bindings, tenants'
	// composites), as the provider last counted them: at each look at
	// the Instance, whenever one of them goes, and seconds after a new one
	// comes. The in-use admission
	// policy refuses deleting the Instance while it is above zero.
	// +optional
	UsedBy int32 `json:"usedBy,omitempty"`

	// AvailableExtensions lists the extensions the server can install.
	// +optional
	// +listType=map
	// +listMapKey=name
	AvailableExtensions []AvailableExtension `json:"availableExtensions,omitempty"`
}

// A PostgreSQLInstance registers a PostgreSQL server that databases and roles
// are provisioned on. It is cluster-scoped; its admin credentials live in the
// provider's namespace.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories={crossplane,managed,postgresql},shortName=pginstance
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="PHASE",type="string",JSONPath=".status.phase"
// +kubebuilder:printcolumn:name="VERSION",type="string",JSONPath=".status.postgresqlVersion"
// +kubebuilder:printcolumn:name="HOST",type="string",JSONPath=".spec.endpoint.host"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +mrgen:managed
type PostgreSQLInstance struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec PostgreSQLInstanceSpec `json:"spec"`
	// Status is what the provider observed of the server. A new Instance
	// reads as phase Pending before the provider has looked at it.
	// +kubebuilder:default={}
	Status PostgreSQLInstanceStatus `json:"status,omitempty"`
}

// PostgreSQLInstanceList contains a list of PostgreSQLInstance.
// +kubebuilder:object:root=true
type PostgreSQLInstanceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PostgreSQLInstance `json:"items"`
}

// DefaultConnectionLimit is the CONNECTION LIMIT of a role on in whose spec
// names none: spec.policy.defaultConnectionLimit, else a quarter of the
// server's max_connections (at least 1), else, before the server was
// observed, -1; never more than spec.policy.maxConnectionLimit.
func (in *PostgreSQLInstance) DefaultConnectionLimit() int32 {
	limit := int32(-1)
	switch p, c := in.Spec.Policy, in.Status.Connections; {
	case p.DefaultConnectionLimit != nil:
		limit = *p.DefaultConnectionLimit
	case c != nil && c.Max > 0:
		limit = max(1, c.Max/4)
	}
	if m := in.Spec.Policy.MaxConnectionLimit; m != nil && (limit == -1 || limit > *m) {
		limit = *m
	}
	return limit
}

// ServerVersionNum is the server's version as server_version_num counts
// it (16.4 is 160004), read from status.postgresqlVersion; 0 before the
// server was observed or when the version is not one PostgreSQL 10 or
// newer reports. A development version (17beta1) counts as its first
// release.
func (in *PostgreSQLInstance) ServerVersionNum() int {
	v := in.Status.PostgreSQLVersion
	major, n := leadingNumber(v)
	if n == 0 || major < 10 {
		return 0
	}
	minor := 0
	if rest := v[n:]; strings.HasPrefix(rest, ".") {
		minor, _ = leadingNumber(rest[1:])
	}
	return major*10000 + minor
}

// leadingNumber returns the number s starts with and how many bytes it
// took (0 for none).
func leadingNumber(s string) (int, int) {
	n := 0
	for n < len(s) && n < 6 && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	v, _ := strconv.Atoi(s[:n])
	return v, n
}
