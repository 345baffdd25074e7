package role

import "context"

// SetStepHook makes h run after each step of an Alternating rotation (nil
// removes it): tests stop a rotation there as a crash would.
func SetStepHook(h func(ctx context.Context, step string) error) {
	if h == nil {
		stepHook.Store(nil)
		return
	}
	stepHook.Store(&h)
}

// IndexPasswordSecrets adds to indexer the index RolesUsingSecret reads.
var IndexPasswordSecrets = indexPasswordSecrets

// RolesUsingSecret is the map func of the controller's Secret watch.
var RolesUsingSecret = rolesUsingSecret
