// Package configuration holds the PostgreSQLTenant Configuration package:
// its XRD, Composition and package metadata, embedded so that tests and
// make dev use exactly the files that ship.
package configuration

import (
	"embed"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/ayatori/provider-postgresql/internal/manifest"
)

// Files are the YAML files of the Configuration package.
//
//go:embed *.yaml
var Files embed.FS

// Objects returns the XRDs and the Compositions, the objects a cluster
// gets when the Configuration is installed: the PostgreSQLTenant claim's,
// and the namespaced Tenant's (generated from them).
func Objects() ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, f := range []string{"definition.yaml", "composition.yaml", "tenant-definition.yaml", "tenant-composition.yaml"} {
		b, err := Files.ReadFile(f)
		if err != nil {
			return nil, err
		}
		objs, err := manifest.Decode(b)
		if err != nil {
			return nil, errors.Errorf("%s: %w", f, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}

// XRDName is the name of the tenant XRD.
const XRDName = "xpostgresqltenants.database.ayatori.ddupan.top"

// TenantXRDName is the name of the namespaced Tenant's XRD.
const TenantXRDName = "tenants.database.ayatori.ddupan.top"

// The functions the Composition's pipeline calls, by the names Crossplane
// gives them when it installs them as dependencies of the Configuration:
// the package's repository as a DNS label (ghcr.io/ayatori/x is
// ayatori-x). Installed under other names, the pipeline finds no function.
const (
	FunctionTenant    = "ayatori-function-postgresql-tenant"
	FunctionAutoReady = "crossplane-contrib-function-auto-ready"
)
