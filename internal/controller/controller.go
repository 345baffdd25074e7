// Package controller wires every controller of the provider into a manager.
package controller

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/activation"
	"github.com/ayatori/provider-postgresql/internal/controller/binding"
	"github.com/ayatori/provider-postgresql/internal/controller/config"
	"github.com/ayatori/provider-postgresql/internal/controller/database"
	"github.com/ayatori/provider-postgresql/internal/controller/defaultprivileges"
	"github.com/ayatori/provider-postgresql/internal/controller/drift"
	"github.com/ayatori/provider-postgresql/internal/controller/grant"
	"github.com/ayatori/provider-postgresql/internal/controller/instance"
	"github.com/ayatori/provider-postgresql/internal/controller/lock"
	"github.com/ayatori/provider-postgresql/internal/controller/pending"
	"github.com/ayatori/provider-postgresql/internal/controller/role"
	pgschema "github.com/ayatori/provider-postgresql/internal/controller/schema"
	"github.com/ayatori/provider-postgresql/internal/controller/secretmemo"
)

// A controller reconciles one kind (v1alpha1.Kinds declares them). It
// waits for the CRDs of its own kind, of the Instance when its kind lives
// on one, and of what else it cannot work without (also). Under
// Crossplane's safe-start an admin activates kinds one by one, so a
// controller waits for nothing else: it watches other kinds once they are
// served (see package activation) and reads a kind that is not as one
// without objects.
type controller struct {
	kind  string
	name  string
	also  []string
	setup func(ctrl.Manager, config.Config) error
}

// controllers lists every controller of the provider: each kind's, and the
// binder. A PostgreSQLBinding provisions a PostgreSQLDatabase and its
// owner PostgreSQLRole. docs/install.md lists these as the activation
// groups.
var controllers = []controller{
	{kind: v1alpha1.PostgreSQLInstanceKind, setup: instance.Setup},
	{kind: v1alpha1.PostgreSQLDatabaseKind, setup: database.Setup},
	// The binder decides every database's binding; it needs no server.
	{kind: v1alpha1.PostgreSQLDatabaseKind, name: "PostgreSQLDatabase binder", setup: binding.SetupBinder},
	{kind: v1alpha1.PostgreSQLBindingKind, also: []string{v1alpha1.PostgreSQLDatabaseKind, v1alpha1.PostgreSQLRoleKind}, setup: binding.Setup},
	{kind: v1alpha1.PostgreSQLRoleKind, setup: role.Setup},
	{kind: v1alpha1.PostgreSQLSchemaKind, setup: pgschema.Setup},
	{kind: v1alpha1.PostgreSQLGrantKind, setup: grant.Setup},
	{kind: v1alpha1.PostgreSQLDefaultPrivilegesKind, setup: defaultprivileges.Setup},
	{kind: v1alpha1.LockKind, setup: lock.Setup},
	{kind: v1alpha1.ClusterLockKind, setup: lock.SetupClusterLock},
}

// String names the controller in errors.
func (c controller) String() string {
	if c.name != "" {
		return c.name
	}
	return c.kind
}

// gvks are the kinds whose CRDs must be served before c can start.
func (c controller) gvks() []schema.GroupVersionKind {
	out := []schema.GroupVersionKind{v1alpha1.SchemeGroupVersion.WithKind(c.kind)}
	for _, k := range v1alpha1.Kinds {
		if k.Kind == c.kind && k.OnInstance {
			out = append(out, v1alpha1.PostgreSQLInstanceGroupVersionKind)
		}
	}
	for _, k := range c.also {
		out = append(out, v1alpha1.SchemeGroupVersion.WithKind(k))
	}
	return out
}

// Setup starts every controller now. It suits tests, where the CRDs are
// installed before the manager starts.
func Setup(mgr ctrl.Manager, c config.Config) error {
	c, err := withInstanceSecrets(mgr, c)
	if err != nil {
		return err
	}
	for _, k := range controllers {
		if err := k.setup(mgr, c); err != nil {
			return errors.Wrapf(err, "cannot set up the %s controller", k)
		}
	}
	return nil
}

// discoveryLag bounds how long a controller waits for its established kinds
// to be in discovery before it gives up and fails the provider.
const discoveryLag = 5 * time.Minute

// SetupGated registers every controller with c.Gate, which starts each one
// once the CRDs it watches are established. A CRD installed after the
// provider starts (or missing altogether) therefore never crashes it: the
// controller waits. A controller that then fails to start calls fail, since
// the provider cannot do its job without it. ctx ends the wait of a
// controller whose kinds are established but not yet in discovery.
func SetupGated(ctx context.Context, mgr ctrl.Manager, c config.Config, fail func(error)) error {
	if c.Gate == nil {
		return errors.New("gated setup needs a gate")
	}
	c, err := withInstanceSecrets(mgr, c)
	if err != nil {
		return err
	}
	for _, k := range controllers {
		c.Gate.Register(func() {
			// Setup indexes the cache by the kind's fields, which needs the
			// kind in discovery, a moment behind its CRD's Established.
			if err := activation.WaitMapped(ctx, mgr.GetRESTMapper(), discoveryLag, k.gvks()...); err != nil {
				fail(errors.Wrapf(err, "cannot set up the %s controller", k))
				return
			}
			if err := k.setup(mgr, c); err != nil {
				fail(errors.Wrapf(err, "cannot set up the %s controller", k))
			}
		}, k.gvks()...)
	}
	return nil
}

// withInstanceSecrets returns c with the reader of the Instances' admin
// credentials and CA bundles that every controller shares.
func withInstanceSecrets(mgr ctrl.Manager, c config.Config) (config.Config, error) {
	if c.InstanceSecrets != nil {
		return c, nil
	}
	r, err := secretmemo.InstanceSecrets(mgr, c.Namespace)
	c.InstanceSecrets = r
	return c, err
}

// Collectors are the metrics the kinds export beyond crossplane-runtime's
// and the pools': the age of each managed credential, and the changes
// made on the server outside the provider.
func Collectors(kube client.Reader) []prometheus.Collector {
	plans := pending.Metrics{Kube: kube, Lists: map[string]func() resource.ManagedList{}}
	for _, k := range v1alpha1.KindsWhere(func(k v1alpha1.KindInfo) bool { return k.Planned }) {
		plans.Lists[k.Kind] = func() resource.ManagedList {
			return k.NewList().(resource.ManagedList) //nolint:forcetypeassert // A planned kind is managed: TestEveryKindIsEverywhere.
		}
	}
	return []prometheus.Collector{role.CredentialMetrics{Roles: kube}, drift.Detected, plans}
}

// ManagedKinds are the names of the managed kinds the provider polls.
func ManagedKinds() []string {
	var out []string
	for _, k := range v1alpha1.KindsWhere(func(k v1alpha1.KindInfo) bool { return k.Managed }) {
		out = append(out, k.Kind)
	}
	return out
}
