// Command function-tenant is the composition function of the
// PostgreSQLTenant claim: it composes a tenant's database, owner role,
// login role and credentials Secret (see internal/tenant).
package main

import (
	"os"

	"github.com/alecthomas/kingpin/v2"

	"github.com/crossplane/function-sdk-go"

	"github.com/ayatori/provider-postgresql/internal/tenant"
	"github.com/ayatori/provider-postgresql/internal/version"
)

func main() {
	app := kingpin.New("function-tenant", "Composition function of the PostgreSQLTenant claim (provider-postgresql).").DefaultEnvars()
	app.Version(version.Version)
	var (
		debug   = app.Flag("debug", "Log at debug level.").Short('d').Bool()
		address = app.Flag("address", "Address to serve gRPC on.").Default(":9443").String()
		certs   = app.Flag("tls-certs-dir", "Folder holding tls.crt, tls.key and ca.crt for mTLS with Crossplane. Crossplane sets it when it runs the function.").
			Envar("TLS_SERVER_CERTS_DIR").String()
		insecure = app.Flag("insecure", "Serve without mTLS, for local development and composition render only.").Bool()
	)
	kingpin.MustParse(app.Parse(os.Args[1:]))

	log, err := function.NewLogger(*debug)
	kingpin.FatalIfError(err, "Cannot create a logger")
	log.Info("Starting", "version", version.Version, "address", *address, "insecure", *insecure)
	kingpin.FatalIfError(function.Serve(&tenant.Function{},
		function.Listen("tcp", *address),
		function.MTLSCertificates(*certs),
		function.Insecure(*insecure)), "Cannot serve")
}
