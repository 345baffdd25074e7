package v1alpha1

// LabelVaultCredential opts a Secret in the provider's namespace in as a
// token for an Instance's credentialVault: the provider reads no Secret as
// a vault token unless it carries this label with the value "true", so
// that naming a Secret in an Instance cannot make the provider use (and
// send to a server of someone's choosing) a token meant for something
// else.
const LabelVaultCredential = Group + "/vault-credential"

// CredentialVault is an OpenBao (or Vault) KV version 2 engine that the
// provider delivers login credentials to, instead of a Kubernetes Secret:
// a PostgreSQLRole on this Instance with spec.writeConnectionDetailsToVault
// writes its connection details to the path
// <pathPrefix>/<instance>/<namespace>/<name>, a new version whenever any
// of them changes, for an ExternalSecret in its namespace to project. The
// provider speaks only the KV v2 and auth APIs OpenBao and Vault share.
// +kubebuilder:validation:XValidation:rule="has(self.auth.kubernetes) != has(self.auth.tokenSecretRef)",message="auth: set exactly one of kubernetes and tokenSecretRef"
type CredentialVault struct {
	// Address is the server's base URL, https only:
	// https://openbao.openbao.svc:8200.
	// +kubebuilder:validation:Pattern=`^https://[^/?#@\s]+(/[^?#@\s]*)?$`
	// +kubebuilder:validation:MaxLength=512
	Address string `json:"address"`

	// CABundleRef names PEM CA certificates, in the provider's namespace,
	// that the server's certificate must chain to. Absent: the system
	// roots.
	// +optional
	CABundleRef *CABundleReference `json:"caBundleRef,omitempty"`

	// Namespace is the namespace the KV engine and the auth method live
	// in, on a server with namespaces (OpenBao 2.3 and later, Vault
	// Enterprise), such as team-a or team-a/prod: every request but the
	// health check carries it (X-Vault-Namespace), the login included,
	// and the URL in a role's status names it. Absent: the root
	// namespace. The SecretStores that read the paths name the same
	// namespace (spec.provider.vault.namespace).
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)*$`
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Mount is the mount path of the KV version 2 engine.
	// +kubebuilder:default=secret
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)*$`
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Mount string `json:"mount,omitempty"`

	// PathPrefix is the first part of every path the provider writes:
	// <pathPrefix>/<instance>/<namespace>/<name>. A vault policy that lets
	// the provider write below it, and each namespace's store read only
	// below <pathPrefix>/<instance>/<namespace>/, keeps tenants apart
	// (docs/credentials.md).
	// +kubebuilder:default=postgresql
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)*$`
	// +kubebuilder:validation:MaxLength=128
	// +optional
	PathPrefix string `json:"pathPrefix,omitempty"`

	// Auth says how the provider logs in.
	Auth CredentialVaultAuth `json:"auth"`

	// DeletionPolicy is what becomes of a role's path once the role is
	// gone (its login dropped): Delete destroys it, metadata and every
	// version, so no credential of a dropped login stays readable; Retain
	// keeps it, for the platform's own audit or retention rules.
	// +kubebuilder:validation:Enum=Delete;Retain
	// +kubebuilder:default=Delete
	// +optional
	DeletionPolicy VaultDeletionPolicy `json:"deletionPolicy,omitempty"`
}

// VaultDeletionPolicy is what becomes of a role's vault path once the role
// is gone.
type VaultDeletionPolicy string

// Vault deletion policies.
const (
	VaultPathDelete VaultDeletionPolicy = "Delete"
	VaultPathRetain VaultDeletionPolicy = "Retain"
)

// CredentialVaultAuth is how the provider logs in to the vault: one of
// kubernetes and tokenSecretRef.
type CredentialVaultAuth struct {
	// Kubernetes logs in through the Kubernetes auth method with the
	// provider's ServiceAccount token.
	// +optional
	Kubernetes *VaultKubernetesAuth `json:"kubernetes,omitempty"`

	// TokenSecretRef names a Secret in the provider's namespace holding a
	// token, labelled database.ayatori.ddupan.top/vault-credential: "true".
	// +optional
	TokenSecretRef *VaultTokenReference `json:"tokenSecretRef,omitempty"`
}

// VaultKubernetesAuth is a role of the vault's Kubernetes auth method.
type VaultKubernetesAuth struct {
	// Role is the auth method's role the provider logs in as.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Role string `json:"role"`

	// MountPath is the auth method's mount path.
	// +kubebuilder:default=kubernetes
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)*$`
	// +kubebuilder:validation:MaxLength=128
	// +optional
	MountPath string `json:"mountPath,omitempty"`

	// Audience is the audience of the ServiceAccount tokens the provider
	// presents: it asks the API server for a token of its ServiceAccount
	// for this audience, valid for ten minutes (TokenRequest), never
	// sending its own pod token, which the API server would accept from
	// whoever received it. Set the auth method role's audience to the
	// same value. Absent: the address.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Audience string `json:"audience,omitempty"`
}

// VaultTokenReference names the key of a Secret, in the provider's
// namespace, that holds a vault token.
type VaultTokenReference struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Key holding the token.
	// +kubebuilder:default=token
	// +optional
	Key string `json:"key,omitempty"`
}

// VaultPath names a role's credential in its Instance's credentialVault.
type VaultPath struct {
	// Name is the last part of the path
	// <pathPrefix>/<instance>/<namespace>/<name>; the namespace is the
	// role's own, so a role can only write its own namespace's paths. For
	// a tenant, the claim's name.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}
