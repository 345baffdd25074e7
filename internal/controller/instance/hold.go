package instance

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

// deletionHold keeps an Instance while anything refers to it, whatever
// its management policies and whether or not it ever connected.
//
// crossplane-runtime adds its finalizer only after a successful
// observation, so an Instance whose server was never reached had none and
// went at once; and with no Delete in managementPolicies it removes the
// finalizer without observing, so the reference check in Observe never
// ran. Here the finalizer goes on at first sight (an initializer, which
// runs before connecting), and every removal, on either path, first
// checks the references again: a failed look-up keeps it too.
type deletionHold struct {
	resource.Finalizer
	kube client.Reader
}

func newDeletionHold(kube client.Client) deletionHold {
	return deletionHold{Finalizer: resource.NewAPIFinalizer(kube, managed.FinalizerName), kube: kube}
}

// Initialize adds the finalizer to an Instance that has none yet: an
// Instance is protected from the moment the provider first sees it, not
// from its first successful connection.
func (h deletionHold) Initialize(ctx context.Context, mg resource.Managed) error {
	if meta.WasDeleted(mg) {
		return nil
	}
	return errors.Wrap(h.AddFinalizer(ctx, mg), "cannot add the Instance's finalizer")
}

// RemoveFinalizer lets the Instance go only once nothing refers to it.
func (h deletionHold) RemoveFinalizer(ctx context.Context, obj resource.Object) error {
	in, ok := obj.(*v1alpha1.PostgreSQLInstance)
	if !ok {
		return errors.New("not a PostgreSQLInstance")
	}
	in.Status.Phase = v1alpha1.InstancePhaseDeleting
	users, err := References(ctx, h.kube, in)
	if err != nil {
		err = errors.Wrap(err, errHeldUnknown)
		in.SetConditions(xpv2.Deleting().WithMessage(err.Error()))
		return err
	}
	if len(users) > 0 {
		msg := heldMessage(users)
		in.SetConditions(xpv2.Deleting().WithMessage(msg))
		return errors.New(msg)
	}
	return h.Finalizer.RemoveFinalizer(ctx, obj)
}
