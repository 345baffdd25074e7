package sample

// +mrgen:managed
type Broken struct {
	Spec   BrokenSpec
	Status BrokenStatus
}

type BrokenSpec struct{}

type BrokenStatus struct {
	ManagedResourceStatus
}

type ManagedResourceStatus struct{}
