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

// A kind is a controller and the kinds whose CRDs must be served before it
// can start: its own and those it cannot work without. Under Crossplane's
// safe-start an admin activates kinds one by one, so a controller waits for
// nothing else: it watches other kinds once they are served (see package
// activation) and reads a kind that is not as one without objects.
type kind struct {
	name  string
	gvks  []schema.GroupVersionKind
	setup func(ctrl.Manager, config.Config) error
}

// kinds lists every controller of the provider. Every managed kind needs
// PostgreSQLInstance, the server it lives on; a PostgreSQLBinding
// provisions a PostgreSQLDatabase and its owner PostgreSQLRole. docs/install.md
// lists these as the activation groups.
var kinds = []kind{
	{name: "PostgreSQLInstance", gvks: []schema.GroupVersionKind{v1alpha1.PostgreSQLInstanceGroupVersionKind}, setup: instance.Setup},
	{name: "PostgreSQLDatabase", gvks: []schema.GroupVersionKind{v1alpha1.PostgreSQLDatabaseGroupVersionKind, v1alpha1.PostgreSQLInstanceGroupVersionKind}, setup: database.Setup},
	// The binder decides every database's binding; it needs no server.
	{name: "PostgreSQLDatabase binder", gvks: []schema.GroupVersionKind{v1alpha1.PostgreSQLDatabaseGroupVersionKind}, setup: binding.SetupBinder},
	{name: "PostgreSQLBinding", gvks: []schema.GroupVersionKind{
		v1alpha1.PostgreSQLBindingGroupVersionKind, v1alpha1.PostgreSQLDatabaseGroupVersionKind, v1alpha1.PostgreSQLRoleGroupVersionKind,
		v1alpha1.PostgreSQLInstanceGroupVersionKind,
	}, setup: binding.Setup},
	{name: "PostgreSQLRole", gvks: []schema.GroupVersionKind{v1alpha1.PostgreSQLRoleGroupVersionKind, v1alpha1.PostgreSQLInstanceGroupVersionKind}, setup: role.Setup},
	{name: "PostgreSQLSchema", gvks: []schema.GroupVersionKind{v1alpha1.PostgreSQLSchemaGroupVersionKind, v1alpha1.PostgreSQLInstanceGroupVersionKind}, setup: pgschema.Setup},
	{name: "PostgreSQLGrant", gvks: []schema.GroupVersionKind{v1alpha1.PostgreSQLGrantGroupVersionKind, v1alpha1.PostgreSQLInstanceGroupVersionKind}, setup: grant.SetupGrant},
	{name: "PostgreSQLDefaultPrivileges", gvks: []schema.GroupVersionKind{
		v1alpha1.PostgreSQLDefaultPrivilegesGroupVersionKind, v1alpha1.PostgreSQLInstanceGroupVersionKind,
	}, setup: defaultprivileges.Setup},
	{name: "Lock", gvks: []schema.GroupVersionKind{v1alpha1.LockGroupVersionKind}, setup: lock.SetupLock},
	{name: "ClusterLock", gvks: []schema.GroupVersionKind{v1alpha1.ClusterLockGroupVersionKind}, setup: lock.SetupClusterLock},
}

// Setup starts every controller now. It suits tests, where the CRDs are
// installed before the manager starts.
func Setup(mgr ctrl.Manager, c config.Config) error {
	c, err := withInstanceSecrets(mgr, c)
	if err != nil {
		return err
	}
	for _, k := range kinds {
		if err := k.setup(mgr, c); err != nil {
			return errors.Wrapf(err, "cannot set up the %s controller", k.name)
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
	for _, k := range kinds {
		c.Gate.Register(func() {
			// Setup indexes the cache by the kind's fields, which needs the
			// kind in discovery, a moment behind its CRD's Established.
			if err := activation.WaitMapped(ctx, mgr.GetRESTMapper(), discoveryLag, k.gvks...); err != nil {
				fail(errors.Wrapf(err, "cannot set up the %s controller", k.name))
				return
			}
			if err := k.setup(mgr, c); err != nil {
				fail(errors.Wrapf(err, "cannot set up the %s controller", k.name))
			}
		}, k.gvks...)
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
	plans := pending.Metrics{Kube: kube, Lists: map[string]func() resource.ManagedList{
		v1alpha1.PostgreSQLRoleKind:              func() resource.ManagedList { return &v1alpha1.PostgreSQLRoleList{} },
		v1alpha1.PostgreSQLDatabaseKind:          func() resource.ManagedList { return &v1alpha1.PostgreSQLDatabaseList{} },
		v1alpha1.PostgreSQLSchemaKind:            func() resource.ManagedList { return &v1alpha1.PostgreSQLSchemaList{} },
		v1alpha1.PostgreSQLGrantKind:             func() resource.ManagedList { return &v1alpha1.PostgreSQLGrantList{} },
		v1alpha1.PostgreSQLDefaultPrivilegesKind: func() resource.ManagedList { return &v1alpha1.PostgreSQLDefaultPrivilegesList{} },
	}}
	return []prometheus.Collector{role.CredentialMetrics{Roles: kube}, drift.Detected, plans}
}

// ManagedKinds are the names of the managed kinds the provider polls.
func ManagedKinds() []string {
	return []string{
		v1alpha1.PostgreSQLInstanceKind, v1alpha1.PostgreSQLRoleKind, v1alpha1.PostgreSQLDatabaseKind, v1alpha1.PostgreSQLSchemaKind,
		v1alpha1.PostgreSQLGrantKind, v1alpha1.PostgreSQLDefaultPrivilegesKind,
	}
}
