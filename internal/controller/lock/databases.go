package lock

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/activation"
)

// LockedDatabases returns, for each database on the Instance with UID
// instanceUID whose PostgreSQLDatabase carries Locks, the names of those
// Locks. Options that destroy data inside a database (a role's
// ownedObjectsOnDelete Drop, a schema's cascadeOnDelete) are refused where
// a Lock protects the database: a Lock guards the data, not only the
// object.
func LockedDatabases(ctx context.Context, kube client.Reader, instanceUID string) (map[string][]string, error) {
	l := &v1alpha1.PostgreSQLDatabaseList{}
	// Without the kind (not activated, under Crossplane's safe-start) no
	// PostgreSQLDatabase exists, so none is locked.
	if err := activation.List(ctx, kube, l, client.UnsafeDisableDeepCopy); err != nil {
		return nil, errors.Wrap(err, "cannot list the PostgreSQLDatabases to tell which are locked")
	}
	out := map[string][]string{}
	for _, d := range l.Items {
		ap := d.Status.AtProvider
		if ap.InstanceUID != instanceUID || ap.Name == "" {
			continue
		}
		if names := Names(d.GetAnnotations()[v1alpha1.AnnotationLocked]); len(names) > 0 {
			out[ap.Name] = append(out[ap.Name], names...)
		}
	}
	return out, nil
}
