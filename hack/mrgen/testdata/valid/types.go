package sample

// +mrgen:managed
type Widget struct {
	Spec   WidgetSpec
	Status WidgetStatus
}

type WidgetSpec struct {
	ManagementPolicies               []string
	WriteConnectionSecretToReference *string
}

type WidgetStatus struct {
	ManagedResourceStatus
}

type WidgetList struct {
	Items []Widget
}

// Gadget publishes nothing and has no list.
// +mrgen:managed
type Gadget struct {
	Spec   GadgetSpec
	Status GadgetStatus
}

type GadgetSpec struct {
	ManagementPolicies []string
}

type GadgetStatus struct {
	ManagedResourceStatus
}

// NotManaged is not marked.
type NotManaged struct {
	Spec WidgetSpec
}

type ManagedResourceStatus struct{}

// Gizmo writes its connection Secret itself.
// +mrgen:managed
// +mrgen:delivers-own-secret
type Gizmo struct {
	Spec   GizmoSpec
	Status GizmoStatus
}

type GizmoSpec struct {
	ManagementPolicies               []string
	WriteConnectionSecretToReference *string
}

type GizmoStatus struct {
	ManagedResourceStatus
}
