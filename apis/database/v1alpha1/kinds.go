package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// An Object is an object of one of the kinds of this group (the shape of
// controller-runtime's client.Object, which it satisfies).
// +kubebuilder:object:generate=false
type Object interface {
	metav1.Object
	runtime.Object
}

// An ObjectList is a list of one of the kinds of this group.
// +kubebuilder:object:generate=false
type ObjectList interface {
	metav1.ListInterface
	runtime.Object
}

// A KindInfo declares once what a kind of this group is and what the rest
// of the provider does with it. Every list of kinds the provider keeps is
// derived from Kinds: the types registered in the scheme, the kinds that
// hold an Instance against deletion, what Locks protect, the kinds whose
// plans are exported as metrics, the managed kinds that are polled.
// TestEveryKindIsEverywhere (internal/controller) walks the scheme and
// checks the rest against it: every kind is declared here with traits its
// type really has, has a CRD of its scope, a controller, a row in the kind
// docs, RBAC for the platform's admin, a place in the backup runbook and
// an example.
// +kubebuilder:object:generate=false
type KindInfo struct {
	// Kind is the kind's name.
	Kind string
	// Cluster is true for a cluster-scoped kind.
	Cluster bool
	// Managed is true for a Crossplane managed resource: polled, with
	// management policies and connection details.
	Managed bool
	// OnInstance is true for a kind that lives on a PostgreSQLInstance (an
	// InstanceUser): an Instance is not deleted while one refers to it.
	OnInstance bool
	// Lockable is true for a kind a Lock (a ClusterLock, for a
	// cluster-scoped kind) may protect from deletion.
	Lockable bool
	// Planned is true for a kind that shows in status.atProvider.plan what
	// its next step would send (a Planned).
	Planned bool
	// EntersDatabases is true for a kind whose statements run inside one
	// database of its Instance, not the Instance's own (a DatabaseUser):
	// the namespace boundary is checked before it enters one.
	EntersDatabases bool
	// Composed is true for a kind the tenant Composition writes for a
	// claim; its example is the claim's.
	Composed bool

	object Object
	list   ObjectList
}

// New returns a new, empty object of the kind.
func (k KindInfo) New() Object {
	return k.object.DeepCopyObject().(Object) //nolint:forcetypeassert // A deep copy has its original's type.
}

// NewList returns a new, empty list of the kind.
func (k KindInfo) NewList() ObjectList {
	return k.list.DeepCopyObject().(ObjectList) //nolint:forcetypeassert // A deep copy has its original's type.
}

// GroupVersionKind is the kind's GroupVersionKind.
func (k KindInfo) GroupVersionKind() schema.GroupVersionKind {
	return SchemeGroupVersion.WithKind(k.Kind)
}

// Kinds are the kinds of this group. Adding one here registers it; see
// docs/contributing.md, "Adding a kind", for what else it needs.
var Kinds = []KindInfo{
	{Kind: PostgreSQLInstanceKind, Cluster: true, Managed: true, Lockable: true, object: &PostgreSQLInstance{}, list: &PostgreSQLInstanceList{}},
	{Kind: PostgreSQLRoleKind, Managed: true, OnInstance: true, Lockable: true, Planned: true, object: &PostgreSQLRole{}, list: &PostgreSQLRoleList{}},
	{Kind: PostgreSQLDatabaseKind, Managed: true, OnInstance: true, Lockable: true, Planned: true, object: &PostgreSQLDatabase{}, list: &PostgreSQLDatabaseList{}},
	{Kind: PostgreSQLSchemaKind, Managed: true, OnInstance: true, Lockable: true, Planned: true, EntersDatabases: true, object: &PostgreSQLSchema{}, list: &PostgreSQLSchemaList{}},
	{Kind: PostgreSQLGrantKind, Managed: true, OnInstance: true, Lockable: true, Planned: true, EntersDatabases: true, object: &PostgreSQLGrant{}, list: &PostgreSQLGrantList{}},
	{
		Kind: PostgreSQLDefaultPrivilegesKind, Managed: true, OnInstance: true, Lockable: true, Planned: true, EntersDatabases: true,
		object: &PostgreSQLDefaultPrivileges{}, list: &PostgreSQLDefaultPrivilegesList{},
	},
	// A binding that provisions holds the Instance before its database
	// exists: a tenant's claim names the Instance from the start.
	{Kind: PostgreSQLBindingKind, OnInstance: true, Composed: true, object: &PostgreSQLBinding{}, list: &PostgreSQLBindingList{}},
	{Kind: LockKind, object: &Lock{}, list: &LockList{}},
	{Kind: ClusterLockKind, Cluster: true, object: &ClusterLock{}, list: &ClusterLockList{}},
}

// KindsWhere returns the kinds for which has is true, in the order of
// Kinds.
func KindsWhere(has func(KindInfo) bool) []KindInfo {
	var out []KindInfo
	for _, k := range Kinds {
		if has(k) {
			out = append(out, k)
		}
	}
	return out
}
