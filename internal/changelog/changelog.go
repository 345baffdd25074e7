// Package changelog connects the provider's managed reconcilers to
// Crossplane's change logs: with --enable-changelogs, every create, update
// and delete the provider makes on a PostgreSQL server is sent, as one
// entry, to the change log sidecar that a DeploymentRuntimeConfig runs
// beside the provider (docs/install.md).
//
// crossplane-runtime builds each entry (the operation, the resource's name,
// external name and a snapshot of the managed resource, the error if the
// change failed); this package only opens the connection to the sidecar.
// No entry can carry a password: managed resources never hold one (the
// Role's is in its connection Secret, which is not part of the resource),
// and errors never contain one.
package changelog

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/crossplane/crossplane-runtime/v2/apis/changelogs/proto/v1alpha1"
	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
)

// DefaultSocket is where Crossplane's change log sidecar listens, in the
// volume it shares with the provider: the path every provider that
// supports change logs uses by default.
const DefaultSocket = "/var/run/changelogs/changelogs.sock"

// Connection is an open connection to the change log sidecar.
type Connection struct {
	conn *grpc.ClientConn
	// Options are the controllers' change log options.
	Options *controller.ChangeLogOptions
}

// Dial prepares a connection to the sidecar listening on the Unix socket
// at path. Nothing is dialled yet: gRPC connects on the first entry and
// waits for the sidecar if it is not up (crossplane-runtime waits up to
// ten seconds per entry, then logs that it could not record it and goes
// on), so the provider may start before its sidecar. provider names the
// provider and its version in every entry.
func Dial(path, provider string) (*Connection, error) {
	if path == "" {
		return nil, errors.New("the change log socket path is empty")
	}
	// The socket is local to the pod: no TLS to speak of.
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, errors.Wrapf(err, "cannot prepare a connection to the change log socket %s", path)
	}
	logger := managed.NewGRPCChangeLogger(v1alpha1.NewChangeLogServiceClient(conn), managed.WithProviderVersion(provider))
	return &Connection{conn: conn, Options: &controller.ChangeLogOptions{ChangeLogger: logger}}, nil
}

// Close closes the connection.
func (c *Connection) Close() error {
	return errors.Wrap(c.conn.Close(), "cannot close the change log connection")
}
