package oninstance

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/activation"
	"github.com/ayatori/provider-postgresql/internal/controller/config"
	"github.com/ayatori/provider-postgresql/internal/controller/reconciler"
	"github.com/ayatori/provider-postgresql/internal/controller/reference"
)

// A Kind is what Setup needs to know of a managed kind that lives on an
// Instance: what sets one kind apart from another. Everything else (the
// shared reconciler options, the connector, the event filter, waking
// what waits for a reference, starting once the kind is served) is the
// same for every kind, and Setup does it.
type Kind[T interface {
	resource.Managed
	v1alpha1.InstanceUser
}] struct {
	// GroupVersionKind names the kind.
	GroupVersionKind schema.GroupVersionKind
	// New returns an empty object of the kind, NewList an empty list.
	New     func() T
	NewList func() resource.ManagedList
	// External builds the kind's external client for one reconcile.
	External func(*Connection) managed.TypedExternalClient[T]
	// Options are the kind's own reconciler options (initializers,
	// reference resolvers), applied after the shared ones.
	Options []managed.ReconcilerOption
	// Refs returns what a resource of the kind refers to; a resource
	// waiting for one of them is woken when an object of a WakeOn kind
	// shows what it waits for.
	Refs   func(client.Object) []reference.Ref
	WakeOn []client.Object
	// Also lets through updates of the kind that its own changes do not
	// cover (reconciler.OwnChanges): what another controller records in
	// its status and this one acts on.
	Also []predicate.Predicate
	// Client, when set, is the client the managed reconciler reads and
	// writes through instead of the manager's (a login role's connection
	// Secrets go through a memo).
	Client client.Client
	// Watch adds the kind's own watches of kinds that are always served
	// (Secrets, its own kind), at once.
	Watch func(*builder.Builder) *builder.Builder
}

// clientOf is a manager whose client is c.
type clientOf struct {
	ctrl.Manager
	c client.Client
}

func (m clientOf) GetClient() client.Client { return m.c }

// Setup adds the controller of k to mgr.
func Setup[T interface {
	resource.Managed
	v1alpha1.InstanceUser
}](mgr ctrl.Manager, c config.Config, k Kind[T]) error {
	name := managed.ControllerName(k.GroupVersionKind.GroupKind().String())
	o, err := config.ManagedReconcilerOptions(mgr, c, name, k.NewList())
	if err != nil {
		return err
	}
	o = append(o, managed.WithTypedExternalConnector(ConnectorFor(NewConnector(mgr, c), k.External)))
	o = append(o, k.Options...)
	rm := mgr
	if k.Client != nil {
		rm = clientOf{Manager: mgr, c: k.Client}
	}
	r := managed.NewReconciler(rm, resource.ManagedKind(k.GroupVersionKind), o...)
	b := ctrl.NewControllerManagedBy(mgr).
		Named(name).
		WithOptions(c.ForManaged()).
		For(k.New(), reconciler.OwnChanges(k.Also...))
	if k.Watch != nil {
		b = k.Watch(b)
	}
	var watches []activation.Watch
	if k.Refs != nil {
		// What waits for a referenced resource goes on as soon as it
		// exists.
		var err error
		watches, err = reference.WakeWaiting(mgr.GetCache(), mgr.GetClient(), reference.Referrer{
			Object: k.New(), List: func() client.ObjectList { return k.NewList() }, Refs: k.Refs,
		}, k.WakeOn...)
		if err != nil {
			return err
		}
	}
	return activation.Complete(mgr, c.Gate, c.Logger.WithValues("controller", name), b, config.Reconciler(c, r), watches...)
}
