// Package configuration holds the PostgreSQLTenant Configuration package:
// its XRD, Composition and package metadata, embedded so that tests and
// make dev use exactly the files that ship.
package configuration

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// Files are the YAML files of the Configuration package.
//
//go:embed *.yaml
var Files embed.FS

// Objects returns the XRD and the Composition, the objects a cluster gets
// when the Configuration is installed.
func Objects() ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, f := range []string{"definition.yaml", "composition.yaml"} {
		b, err := Files.ReadFile(f)
		if err != nil {
			return nil, err
		}
		dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if len(u.Object) > 0 {
				out = append(out, u)
			}
		}
	}
	return out, nil
}

// XRDName is the name of the tenant XRD.
const XRDName = "xpostgresqltenants.database.ayatori.ddupan.top"

// The functions the Composition's pipeline calls, by the names Crossplane
// gives them when it installs them as dependencies of the Configuration:
// the package's repository as a DNS label (ghcr.io/ayatori/x is
// ayatori-x). Installed under other names, the pipeline finds no function.
const (
	FunctionTenant    = "ayatori-function-postgresql-tenant"
	FunctionAutoReady = "crossplane-contrib-function-auto-ready"
)
