// Package activation lets every controller run while only some of the
// provider's kinds are served. The provider declares Crossplane's
// safe-start capability: an admin activates its kinds one by one with
// ManagedResourceActivationPolicies, and a kind that is not active has no
// CRD. A controller therefore starts once the kinds it cannot work without
// are served, adds its watches of the other kinds when their CRDs appear,
// and reads a kind that is not served as one that has no objects.
package activation

import (
	"context"
	"time"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
)

// A Watch is a watch of a kind the controller can run without: it only
// makes the controller react sooner to that kind's objects.
type Watch struct {
	// Object is an empty object of the watched kind.
	Object client.Object
	// Handler maps an event to the requests it makes.
	Handler handler.EventHandler
	// Predicates filter the events.
	Predicates []predicate.Predicate
	// Metadata watches (and caches) the kind's metadata only.
	Metadata bool
}

// Complete builds b's controller around r, then adds each watch: at once
// without a gate (the CRDs are installed before the manager starts), else
// when the gate sees the watched kind's CRD served, which may be long after
// the controller started, or never.
func Complete(mgr ctrl.Manager, gate controller.Gate, log logging.Logger, b *builder.Builder, r reconcile.Reconciler, watches ...Watch) error {
	c, err := b.Build(r)
	if err != nil {
		return err
	}
	for _, w := range watches {
		gvk, err := apiutil.GVKForObject(w.Object, mgr.GetScheme())
		if err != nil {
			return errors.Wrap(err, "cannot tell the kind to watch")
		}
		obj := w.Object
		if w.Metadata {
			m := &metav1.PartialObjectMetadata{}
			m.SetGroupVersionKind(gvk)
			obj = m
		}
		src := source.Kind(mgr.GetCache(), obj, w.Handler, w.Predicates...)
		if gate == nil {
			if err := c.Watch(src); err != nil {
				return errors.Wrapf(err, "cannot watch %ss", gvk.Kind)
			}
			continue
		}
		gate.Register(func() {
			// The controller runs on without the watch: it only wakes the
			// controller sooner than its next poll. Discovery may serve
			// the kind a moment after its CRD is established.
			if err := WaitMapped(context.Background(), mgr.GetRESTMapper(), time.Minute, gvk); err != nil {
				log.Info("A kind that became served is not in discovery; its changes are seen at the next poll", "kind", gvk.Kind)
				return
			}
			if err := c.Watch(src); err != nil {
				log.Info("Cannot watch a kind that became served; its changes are seen at the next poll", "kind", gvk.Kind, "error", err)
				return
			}
			log.Debug("Watching a kind that became served", "kind", gvk.Kind)
		}, gvk)
	}
	return nil
}

// WaitMapped waits up to timeout until mapper maps every kind of gvks.
// The CRD gate calls back when a CRD is established, but discovery (and so
// the manager's REST mapper) may serve the kind a moment later; a cache
// index or watch of the kind set up in between fails with "no matches for
// kind".
func WaitMapped(ctx context.Context, mapper meta.RESTMapper, timeout time.Duration, gvks ...schema.GroupVersionKind) error {
	var missing schema.GroupVersionKind
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		for _, gvk := range gvks {
			if _, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
				missing = gvk
				return false, nil
			}
		}
		return true, nil
	})
	return errors.Wrapf(err, "kind %s is not in discovery", missing.Kind)
}

// List lists like kube.List, and leaves l empty where its kind is not
// served: a kind that is not active has no objects.
func List(ctx context.Context, kube client.Reader, l client.ObjectList, opts ...client.ListOption) error {
	err := kube.List(ctx, l, opts...)
	if NotServed(err) {
		return nil
	}
	return err
}

// NotServed reports whether err says that the kind asked about is not
// served: never installed, not activated, or removed (a cached mapping
// then answers NotFound).
func NotServed(err error) bool {
	return meta.IsNoMatchError(err) || kerrors.IsNotFound(err) && isListOrMapping(err)
}

// isListOrMapping tells a NotFound about a whole kind from one about a
// single object, which has a name.
func isListOrMapping(err error) bool {
	var s kerrors.APIStatus
	if !errors.As(err, &s) {
		return false
	}
	d := s.Status().Details
	return d == nil || d.Name == ""
}

// NotActive is the error a reference to a kind that is not served makes:
// what says which field.
func NotActive(what, kind string) error {
	return errors.Errorf("%s refers to a %s, but that kind is not active on this cluster: "+
		"add it to a ManagedResourceActivationPolicy (see docs/install.md)", what, kind)
}
