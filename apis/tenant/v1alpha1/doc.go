// Package v1alpha1 holds the input of the tenant composition function
// (function-postgresql-tenant): what a platform team sets in a
// Composition's pipeline step. Its CRD ships in the function's package so
// that `crossplane resource validate` checks a Composition's input; the
// function itself reads the input from the request, never from the API
// server.
//
// +kubebuilder:object:generate=true
// +groupName=tenant.fn.database.ayatori.ddupan.top
// +versionName=v1alpha1
package v1alpha1
