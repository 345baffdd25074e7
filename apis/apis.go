// Package apis holds the API types of provider-postgresql and registers them
// with a runtime.Scheme.
package apis

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

// AddToScheme adds every API group of this provider to a scheme.
func AddToScheme(s *runtime.Scheme) error {
	return v1alpha1.AddToScheme(s)
}
