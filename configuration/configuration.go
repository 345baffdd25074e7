// Package configuration holds the PostgreSQLTenant Configuration package:
// its XRD, Composition and package metadata, embedded so that tests and
// make dev use exactly the files that ship.
package configuration

import "embed"

// Files are the YAML files of the Configuration package.
//
//go:embed *.yaml
var Files embed.FS
