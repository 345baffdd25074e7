// Package manager builds what the provider process and the in-process
// test harness build their controller-runtime managers from: the scheme,
// the cache (Secrets and ConfigMaps as metadata only, no managed fields),
// the client and the feature flags, so that what tests run is what ships.
package manager

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crconfig "sigs.k8s.io/controller-runtime/pkg/config"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/feature"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/customresourcesgate"

	"github.com/ayatori/provider-postgresql/apis"
	"github.com/ayatori/provider-postgresql/internal/controller/eventsink"
	"github.com/ayatori/provider-postgresql/internal/controller/reconciler"
)

// The provider process (cmd/provider) and the in-process test harness
// (internal/fixture/providertest) build their managers from the functions
// below, so that what tests run is what ships.

// Scheme is what a provider process reads and writes: Kubernetes' built-in
// kinds, CustomResourceDefinitions (the CRD gate watches them) and the
// provider's API.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, errors.Wrap(err, "cannot add Kubernetes APIs to the scheme")
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return nil, errors.Wrap(err, "cannot add the CustomResourceDefinition API to the scheme")
	}
	return s, errors.Wrap(apis.AddToScheme(s), "cannot add the provider's APIs to the scheme")
}

// Options are the manager options every provider process shares:
// the scheme, a cache holding the uncached kinds as metadata only (plus
// byObject), a client that reads those kinds from the API server and
// notes its conflicts (NewClient), and an event broadcaster that sends
// several events at a time and counts what it drops (eventsink), which the
// caller shuts down once the manager has stopped
// (EventBroadcaster.Shutdown: controller-runtime stops only its own).
// Callers add what differs between them: metrics, probes, leader election.
func Options(s *runtime.Scheme, byObject map[client.Object]cache.ByObject) ctrl.Options {
	return ctrl.Options{
		Scheme:           s,
		EventBroadcaster: eventsink.New(ctrl.Log.WithName("events")), //nolint:staticcheck // The one option a manager takes an event broadcaster from; the caller stops it.
		// managedFields are often a third of an object and the provider
		// never reads them (it updates, it does not apply): not caching
		// them keeps memory down at thousands of objects. An update
		// that omits them leaves them as they are on the server.
		Cache:     cache.Options{ByObject: MetadataCache(byObject), DefaultTransform: cache.TransformStripManagedFields()},
		Client:    ClientOptions(),
		NewClient: reconciler.NewClient,
		// The provider's controllers bring their own queue
		// (Config.ForControllerRuntime: queue.Fair). A controller set up
		// without it (crossplane-runtime's CRD gate) gets client-go's
		// plain work queue instead of controller-runtime's priority
		// queue, which can deadlock at shutdown.
		Controller: crconfig.Controller{UsePriorityQueue: ptr.To(false)},
	}
}

// CRDGateCache is how the manager's cache holds CRDs for the CRD gate,
// which only needs their names and conditions: dropping their schemas
// keeps memory flat in clusters with many CRDs.
func CRDGateCache() map[client.Object]cache.ByObject {
	return map[client.Object]cache.ByObject{
		&apiextensionsv1.CustomResourceDefinition{}: {Transform: customresourcesgate.TransformStripCRDSchema},
	}
}

// Features are the feature flags the controllers run with. Every kind
// declares its own managementPolicies default (retaining kinds leave out
// Delete), so the policies are always honoured.
func Features() *feature.Flags {
	f := &feature.Flags{}
	f.Enable(feature.EnableBetaManagementPolicies)
	return f
}
