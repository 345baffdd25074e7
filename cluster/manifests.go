// Package cluster holds the manifests a cluster admin applies beside the
// provider package (a provider package can carry neither an admission
// policy nor extra RBAC). They are embedded so that the provider can
// install its admission policies itself (--install-lock-policy,
// --install-tenant-policy, --install-in-use-policy) and tests apply
// exactly what ships.
package cluster

import "embed"

// Manifests are the YAML files of this folder, and the OpenBao policies
// (HCL) a platform writes for the credentials' delivery.
//
//go:embed *.yaml *.hcl
var Manifests embed.FS

// Names of the Lock admission policy's objects.
const (
	LockPolicyName = "provider-postgresql-lock"
	LockPolicyFile = "lock-policy.yaml"
)

// Names of the tenant admission policy's objects: it checks claims that
// name an admin-registered database.
const (
	TenantPolicyName = "provider-postgresql-tenant"
	TenantPolicyFile = "tenant-policy.yaml"
)

// Names of the in-use admission policy's objects: it refuses deleting a
// Bound database or an Instance resources refer to.
const (
	InUsePolicyName = "provider-postgresql-in-use"
	InUsePolicyFile = "in-use-policy.yaml"
)

// OpenBao policy templates: <mount>, <prefix> and <namespace> are replaced
// before they are written (docs/credentials.md).
const (
	OpenBaoProviderPolicyFile  = "openbao-provider-policy.hcl"
	OpenBaoNamespacePolicyFile = "openbao-namespace-policy.hcl"
)
