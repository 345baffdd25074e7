package reconciler

import (
	"context"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
)

// criticalAnnotations are the annotations a managed reconciler must not
// lose after an external create: without them it cannot tell whether it
// created the external resource, or under which name.
var criticalAnnotations = []string{
	meta.AnnotationKeyExternalName,
	meta.AnnotationKeyExternalCreatePending,
	meta.AnnotationKeyExternalCreateSucceeded,
	meta.AnnotationKeyExternalCreateFailed,
}

// CriticalAnnotationUpdater returns the managed reconcilers' way of saving
// the critical annotations after an external create. It writes the object
// as crossplane-runtime's own updater does, but when that write conflicts
// it carries only the critical annotations over to the object as it now
// is.
//
// crossplane-runtime's updater carries every annotation of the copy the
// reconcile started from. Others write annotations too: the Lock
// controller adds and removes the lock annotation. A Lock released while
// its target's create was in flight would be put back on the target, which
// would then refuse every delete in the name of a Lock that no longer
// exists. reader should read from the API server: after a conflict the
// cache may still hold the version that conflicted.
func CriticalAnnotationUpdater(kube client.Client, reader client.Reader) managed.CriticalAnnotationUpdater {
	return managed.CriticalAnnotationUpdateFn(func(ctx context.Context, o client.Object) error {
		if succeededUnrecorded(ctx, o) {
			// created.go says why.
			return nil
		}
		keep := map[string]string{}
		for _, k := range criticalAnnotations {
			if v, ok := o.GetAnnotations()[k]; ok {
				keep[k] = v
			}
		}
		err := retry.OnError(retry.DefaultRetry, func(err error) bool {
			return !errors.Is(err, context.Canceled)
		}, func() error {
			err := kube.Update(ctx, o)
			if kerrors.IsConflict(err) {
				if gerr := reader.Get(ctx, client.ObjectKeyFromObject(o), o); gerr != nil {
					return gerr
				}
				meta.AddAnnotations(o, keep)
			}
			return err
		})
		return errors.Wrap(err, "cannot update the managed resource's critical annotations")
	})
}
