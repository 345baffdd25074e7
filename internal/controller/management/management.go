// Package management answers what a resource's management policies let
// the provider do with what it manages.
package management

import (
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
)

// Deletes reports whether mg's management policies let the provider
// delete what it manages: "*" or Delete.
func Deletes(mg resource.Managed) bool {
	return allows(mg, xpv2.ManagementActionDelete)
}

// Creates reports whether mg's management policies let the provider
// create what it manages: "*" or Create.
func Creates(mg resource.Managed) bool {
	return allows(mg, xpv2.ManagementActionCreate)
}

// allows reports whether mg's management policies hold "*" or action.
func allows(mg resource.Managed, action xpv2.ManagementAction) bool {
	for _, p := range mg.GetManagementPolicies() {
		if p == xpv2.ManagementActionAll || p == action {
			return true
		}
	}
	return false
}

// ObserveOnly reports whether mg's management policies let the provider
// only read (an import): neither "*", Create nor Update.
func ObserveOnly(mg resource.Managed) bool {
	for _, p := range mg.GetManagementPolicies() {
		if p == xpv2.ManagementActionAll || p == xpv2.ManagementActionCreate || p == xpv2.ManagementActionUpdate {
			return false
		}
	}
	return true
}
