// Package cluster holds the manifests a cluster admin applies beside the
// provider package (a provider package can carry neither an admission
// policy nor extra RBAC). They are embedded so that the provider can
// install its admission policies itself (--install-lock-policy,
// --install-tenant-policy, --install-in-use-policy) and tests apply
// exactly what ships.
package cluster

import (
	"embed"
	"regexp"
	"strings"
)

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

// Files of the RBAC that a provider package cannot carry: Crossplane v2's
// package format has no permission requests, and its RBAC manager grants
// a provider its own kinds, Secrets, ConfigMaps, events and leases only.
const (
	RBACFile              = "rbac.yaml"
	RBACInstallPolicyFile = "rbac-install-lock-policy.yaml"
)

// Source is where the released manifests are published, by tag.
const Source = "https://raw.githubusercontent.com/ayatori/provider-postgresql"

// GrantCommand is the one command that grants a provider of version what
// Locks (and the rest of cluster/rbac.yaml) need, from the manifests of
// that version: a release tag's, or main's for a development build. It
// binds the ServiceAccount crossplane-system/provider-postgresql, which
// a DeploymentRuntimeConfig pins (docs/install.md, step 1).
func GrantCommand(version string) string {
	ref := version
	if !releaseTag.MatchString(version) || strings.HasPrefix(version, "v0.0.0") {
		ref = "main"
	}
	return "kubectl apply -f " + Source + "/" + ref + "/cluster/" + RBACFile + " -f " + Source + "/" + ref + "/cluster/" + RBACInstallPolicyFile
}

// releaseTag matches vMAJOR.MINOR.PATCH with an optional pre-release (not
// a commit's describe, v0.1.0-3-gabcdef).
var releaseTag = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?$`)
