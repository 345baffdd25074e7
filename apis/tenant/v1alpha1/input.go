package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	database "github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

// Group and version of the function's input.
const (
	Group   = "tenant.fn.database.ayatori.ddupan.top"
	Version = "v1alpha1"
	Kind    = "Input"
)

// GroupVersionKind of the function's input.
var GroupVersionKind = schema.GroupVersionKind{Group: Group, Version: Version, Kind: Kind}

// Input is what a Composition's step gives function-postgresql-tenant:
// the platform's choices for every tenant the Composition serves. It is
// never created in a cluster; its CRD lets `crossplane resource validate`
// check it.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=crossplane
// +kubebuilder:storageversion
type Input struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// DeleteData is the reclaim policy of each database this Composition
	// provisions, fixed when it is made. A claim's deletion never drops
	// data: it drops the login role and leaves the database Released. With
	// deleteData false (the default), deleting the released database's
	// PostgreSQLDatabase keeps it and its owner role on the server; true
	// drops both (a Lock on the database refuses it).
	// +optional
	DeleteData bool `json:"deleteData,omitempty"`

	// CredentialRotation is every login role's spec.passwordRotation: when
	// and how tenants' credentials are replaced. Unset, they are replaced
	// in place, and only when a tenant sets spec.rotateCredentials.
	// +optional
	CredentialRotation *database.PasswordRotation `json:"credentialRotation,omitempty"`

	// Delivery is how credentials reach the claim's namespace. Unset, they
	// follow the claim's Instance: through its spec.credentialVault where
	// it names one (OpenBao), else in a Secret the provider writes.
	// Secret or OpenBao choose one whatever the Instance names.
	// +kubebuilder:validation:Enum=Secret;OpenBao
	// +optional
	Delivery Delivery `json:"delivery,omitempty"`

	// OpenBao is the store the OpenBao delivery reads through.
	// +optional
	OpenBao *OpenBao `json:"openBao,omitempty"`
}

// Delivery is how a tenant's credentials reach its namespace.
type Delivery string

// OpenBao is the platform's store for the OpenBao delivery.
type OpenBao struct {
	// SecretStoreRef names the External Secrets Operator store every
	// claim's ExternalSecret reads through: a SecretStore of that name in
	// the claim's namespace (default postgresql), which the platform sets
	// up per namespace with a vault policy that reads that namespace's
	// paths only.
	// +optional
	SecretStoreRef StoreRef `json:"secretStoreRef,omitempty"`

	// RefreshInterval is how often the ExternalSecret reads the path: how
	// soon a rotation reaches the Secret (a Go duration). Default 1m.
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +optional
	RefreshInterval string `json:"refreshInterval,omitempty"`

	// SecretGracePeriod is how long a claim whose credentials came in a
	// Secret the provider wrote keeps that delivery beside the vault's
	// once its Instance names a credentialVault, before the ExternalSecret
	// takes the Secret over (never before the ExternalSecret has synced).
	// A Go duration; default 24h.
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=32
	// +optional
	SecretGracePeriod string `json:"secretGracePeriod,omitempty"`
}

// StoreRef names an External Secrets Operator store.
type StoreRef struct {
	// Name of the SecretStore in each claim's namespace. Default
	// postgresql.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Name string `json:"name,omitempty"`

	// Kind is SecretStore, the only kind taken: a ClusterSecretStore's
	// vault role would read every namespace's credentials.
	// +kubebuilder:validation:Enum=SecretStore
	// +optional
	Kind string `json:"kind,omitempty"`
}
