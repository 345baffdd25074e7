package v1alpha1

import (
	"reflect"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// Package type metadata.
const (
	Group   = "database.ayatori.ddupan.top"
	Version = "v1alpha1"
)

var (
	// SchemeGroupVersion is the group version used to register these objects.
	SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: Version}

	// SchemeBuilder is used to add go types to the GroupVersionKind scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: SchemeGroupVersion}

	// AddToScheme adds the types of this group version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// PostgreSQLInstance type metadata.
var (
	PostgreSQLInstanceKind             = reflect.TypeOf(PostgreSQLInstance{}).Name()
	PostgreSQLInstanceGroupKind        = schema.GroupKind{Group: Group, Kind: PostgreSQLInstanceKind}.String()
	PostgreSQLInstanceKindAPIVersion   = PostgreSQLInstanceKind + "." + SchemeGroupVersion.String()
	PostgreSQLInstanceGroupVersionKind = SchemeGroupVersion.WithKind(PostgreSQLInstanceKind)
)

// PostgreSQLRole type metadata.
var (
	PostgreSQLRoleKind             = reflect.TypeOf(PostgreSQLRole{}).Name()
	PostgreSQLRoleGroupKind        = schema.GroupKind{Group: Group, Kind: PostgreSQLRoleKind}.String()
	PostgreSQLRoleKindAPIVersion   = PostgreSQLRoleKind + "." + SchemeGroupVersion.String()
	PostgreSQLRoleGroupVersionKind = SchemeGroupVersion.WithKind(PostgreSQLRoleKind)
)

// PostgreSQLDatabase type metadata.
var (
	PostgreSQLDatabaseKind             = reflect.TypeOf(PostgreSQLDatabase{}).Name()
	PostgreSQLDatabaseGroupKind        = schema.GroupKind{Group: Group, Kind: PostgreSQLDatabaseKind}.String()
	PostgreSQLDatabaseKindAPIVersion   = PostgreSQLDatabaseKind + "." + SchemeGroupVersion.String()
	PostgreSQLDatabaseGroupVersionKind = SchemeGroupVersion.WithKind(PostgreSQLDatabaseKind)
)

// PostgreSQLSchema type metadata.
var (
	PostgreSQLSchemaKind             = reflect.TypeOf(PostgreSQLSchema{}).Name()
	PostgreSQLSchemaGroupKind        = schema.GroupKind{Group: Group, Kind: PostgreSQLSchemaKind}.String()
	PostgreSQLSchemaKindAPIVersion   = PostgreSQLSchemaKind + "." + SchemeGroupVersion.String()
	PostgreSQLSchemaGroupVersionKind = SchemeGroupVersion.WithKind(PostgreSQLSchemaKind)
)

// PostgreSQLGrant type metadata.
var (
	PostgreSQLGrantKind             = reflect.TypeOf(PostgreSQLGrant{}).Name()
	PostgreSQLGrantGroupKind        = schema.GroupKind{Group: Group, Kind: PostgreSQLGrantKind}.String()
	PostgreSQLGrantKindAPIVersion   = PostgreSQLGrantKind + "." + SchemeGroupVersion.String()
	PostgreSQLGrantGroupVersionKind = SchemeGroupVersion.WithKind(PostgreSQLGrantKind)
)

// PostgreSQLDefaultPrivileges type metadata.
var (
	PostgreSQLDefaultPrivilegesKind             = reflect.TypeOf(PostgreSQLDefaultPrivileges{}).Name()
	PostgreSQLDefaultPrivilegesGroupKind        = schema.GroupKind{Group: Group, Kind: PostgreSQLDefaultPrivilegesKind}.String()
	PostgreSQLDefaultPrivilegesKindAPIVersion   = PostgreSQLDefaultPrivilegesKind + "." + SchemeGroupVersion.String()
	PostgreSQLDefaultPrivilegesGroupVersionKind = SchemeGroupVersion.WithKind(PostgreSQLDefaultPrivilegesKind)
)

// PostgreSQLBinding type metadata.
var (
	PostgreSQLBindingKind             = reflect.TypeOf(PostgreSQLBinding{}).Name()
	PostgreSQLBindingGroupKind        = schema.GroupKind{Group: Group, Kind: PostgreSQLBindingKind}.String()
	PostgreSQLBindingKindAPIVersion   = PostgreSQLBindingKind + "." + SchemeGroupVersion.String()
	PostgreSQLBindingGroupVersionKind = SchemeGroupVersion.WithKind(PostgreSQLBindingKind)
)

// Lock type metadata.
var (
	LockKind             = reflect.TypeOf(Lock{}).Name()
	LockGroupKind        = schema.GroupKind{Group: Group, Kind: LockKind}.String()
	LockKindAPIVersion   = LockKind + "." + SchemeGroupVersion.String()
	LockGroupVersionKind = SchemeGroupVersion.WithKind(LockKind)
)

// ClusterLock type metadata.
var (
	ClusterLockKind             = reflect.TypeOf(ClusterLock{}).Name()
	ClusterLockGroupKind        = schema.GroupKind{Group: Group, Kind: ClusterLockKind}.String()
	ClusterLockKindAPIVersion   = ClusterLockKind + "." + SchemeGroupVersion.String()
	ClusterLockGroupVersionKind = SchemeGroupVersion.WithKind(ClusterLockKind)
)

// AnnotationRotatePassword requests a new generated password for a login
// PostgreSQLRole: set it to any new value (a timestamp, say) to rotate.
const AnnotationRotatePassword = Group + "/rotate-password"

func init() {
	for _, k := range Kinds {
		SchemeBuilder.Register(k.object, k.list)
	}
}
