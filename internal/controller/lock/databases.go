package lock

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

// LockedDatabases returns, for each database on the Instance with UID
// instanceUID whose PostgreSQLDatabase carries Locks, the names of those
// Locks. Options that destroy data inside a database (a role's
// ownedObjectsOnDelete Drop, a schema's cascadeOnDelete) are refused where
// a Lock protects the database: a Lock guards the data, not only the
// object.
func LockedDatabases(ctx context.Context, kube client.Reader, instanceUID string) (map[string][]string, error) {
	l := &v1alpha1.PostgreSQLDatabaseList{}
	if err := kube.List(ctx, l); err != nil {
		// Without the kind (not activated, under Crossplane's safe-start)
		// no PostgreSQLDatabase exists, so none is locked.
		if meta.IsNoMatchError(err) {
			return map[string][]string{}, nil
		}
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
