package sample

// +mrgen:managed
// +mrgen:delivers-own-secret
type Thing struct {
	Spec   ThingSpec
	Status ThingStatus
}

type ThingSpec struct {
	ManagementPolicies []string
}

type ThingStatus struct {
	ManagedResourceStatus
}
