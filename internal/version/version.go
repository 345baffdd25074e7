// Package version holds the provider's version, set at build time with
// -ldflags "-X github.com/ayatori/provider-postgresql/internal/version.Version=v0.1.0".
package version

// Version of the provider binary.
var Version = "v0.0.0-dev"
