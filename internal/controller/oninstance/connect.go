// Package oninstance is the contract every kind that lives on a
// PostgreSQLInstance shares: resolving the Instance a resource names (and
// refusing one it may not use), reaching its server as the admin through
// the shared pools, binding the resource to that server on first sight,
// and what an observed object's ownership marker means. The Instance
// controller is one user of it, like the five kinds.
package oninstance

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/admintoken"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/controller/boundary"
	"github.com/ayatori/provider-postgresql/internal/controller/config"
	"github.com/ayatori/provider-postgresql/internal/controller/reconciler"
	"github.com/ayatori/provider-postgresql/internal/seal"
)

const errPool = "cannot get a connection pool"

// A Connection is what the external client of a resource living on an
// Instance needs: the Instance, how to reach its server as its admin, and
// the shared pool for its maintenance database.
type Connection struct {
	Instance *v1alpha1.PostgreSQLInstance
	Target   postgres.Target
	Pool     postgres.DB
	pools    *postgres.Registry
	// kube reads what a namespace manages (boundary.NamespaceOf).
	kube client.Reader
	// entered are the databases this reconcile was admitted to
	// (postgres.Registry.Enter), let go by Release.
	entered map[string]func()
	// open, when set, stands in for the registry (NewConnection).
	open func(name string) postgres.DB
	// seal signs the markers written through this Connection.
	seal *seal.Key
}

// A Sealed object is what a resource's marker is sealed for (seal.Identity).
type Sealed struct {
	// Kind is the resource's kind.
	Kind string
	// Database holds Object, "" for an object of the whole server.
	Database, Object string
	// Origin is the UID of the binding the resource was provisioned for,
	// "" for none.
	Origin string
}

// Mark is the ownership marker mg writes on o.
func (c *Connection) Mark(mg metav1.Object, o Sealed) postgres.Mark {
	uid := string(mg.GetUID())
	return postgres.Mark{UID: uid, Seal: c.seal.Of(o.identity(mg), uid)}
}

// Succeeds reports whether m, a marker naming another UID than mg's, was
// written for a resource of mg's kind, namespace, name and origin managing
// the same object: mg is that resource brought back (from a backup, or its
// manifest applied again) under a new UID. Only the provider's key makes
// such a seal, so no resource elsewhere passes for it.
func (c *Connection) Succeeds(mg metav1.Object, o Sealed, m postgres.Mark) bool {
	return m.UID != "" && m.UID != string(mg.GetUID()) && c.seal.Verify(m.Seal, o.identity(mg), m.UID)
}

func (o Sealed) identity(mg metav1.Object) seal.Identity {
	return seal.Identity{Kind: o.Kind, Namespace: mg.GetNamespace(), Name: mg.GetName(), Database: o.Database, Object: o.Object, Origin: o.Origin}
}

// NewConnection returns a Connection to in that reaches its maintenance
// database through admin and any database through open, with no pool
// registry (and so no admission bound): what a controller's table tests
// give its external client in place of a server.
func NewConnection(in *v1alpha1.PostgreSQLInstance, admin postgres.DB, open func(database string) postgres.DB) *Connection {
	return &Connection{Instance: in, Pool: admin, open: open}
}

// MayUse refuses, before the provider reads or changes anything in
// database db for mg, a database mg's namespace may not use: one no
// PostgreSQLDatabase of the namespace manages, unless the Instance's
// policy allows it (boundary.Policy.Database). The refusal is set on mg's
// Ready condition and returned. Read-only imports are no exception: what
// the provider reads in a database ends up in the status, events and plan
// of the resource that asked, in its namespace.
//
// A database that does not exist is refused as absent (a server error of
// SQLSTATE 3D000, which the kinds already wait on): no session enters it,
// so one created a moment later by someone else is looked at afresh.
func (c *Connection) MayUse(ctx context.Context, mg boundary.Resource, db boundary.Named) error {
	p := boundary.PolicyOf(c.Instance)
	if slices.Contains(p.AllowDatabases, db.Name) {
		return nil
	}
	marker, exists, err := c.databaseMarker(ctx, db.Name)
	if err != nil {
		return errors.Wrapf(err, "cannot read the ownership marker of database %q", db.Name)
	}
	if !exists {
		return &postgres.Error{Code: postgres.CodeInvalidCatalogName, Message: fmt.Sprintf("database %q does not exist", db.Name)}
	}
	ns := boundary.Namespace{Name: mg.GetNamespace(), Databases: func(context.Context, string) (bool, error) { return false, nil }}
	if c.kube != nil {
		ns = boundary.NamespaceOf(c.kube, mg.GetNamespace())
	}
	r, err := p.Database(ctx, knownMarker{marker}, ns, db.Field, db.Name)
	return boundary.Result(mg, r, err)
}

// Enter is MayUse, then Database.
func (c *Connection) Enter(ctx context.Context, mg boundary.Resource, db boundary.Named) (postgres.DB, error) {
	if err := c.MayUse(ctx, mg, db); err != nil {
		return nil, err
	}
	return c.Database(ctx, db.Name)
}

// databaseMarker reads a database's marker, through the registry's short
// memory when there is one: every object of a database asks at once.
func (c *Connection) databaseMarker(ctx context.Context, name string) (string, bool, error) {
	if c.pools == nil {
		return postgres.ObserveDatabaseMarker(ctx, c.Pool, name)
	}
	return c.pools.DatabaseMarker(ctx, c.Target, c.Pool, name)
}

// knownMarker is a boundary.Catalog that knows one existing database's
// marker, read already.
type knownMarker struct{ marker string }

func (k knownMarker) DatabaseMarker(context.Context, string) (string, bool, error) {
	return k.marker, true, nil
}

func (knownMarker) Roles(context.Context, []string) (map[string]boundary.RoleFacts, error) {
	return nil, errors.New("no role is known here")
}

func (knownMarker) SettingContexts(context.Context, []string) (map[string]string, error) {
	return nil, errors.New("no setting is known here")
}

// Database returns the shared pool for another database of the same
// server, as the same admin, once the reconcile is admitted to work in it
// (postgres.Registry.Enter): one database holds a bounded share of the
// controllers' workers, whatever its owner does in it. The turn lasts
// until Release, at the end of the reconcile. It checks nothing of the
// namespace's: Enter does; only a kind that has checked by other means
// (a database entering itself, its marker just read) calls it directly.
func (c *Connection) Database(ctx context.Context, name string) (postgres.DB, error) {
	if c.open != nil {
		return c.open(name), nil
	}
	t := c.Target.In(name)
	if _, ok := c.entered[name]; !ok {
		leave, err := c.pools.Enter(ctx, t)
		if err != nil {
			return nil, err
		}
		if c.entered == nil {
			c.entered = map[string]func(){}
		}
		c.entered[name] = leave
	}
	p, err := c.pools.Pool(ctx, t)
	return p, errors.Wrap(err, errPool)
}

// LockRoleNames takes the provider's locks on role names on the Instance's
// server (postgres.Registry.LockRoleNames) and returns the function that
// lets them go. A Connection without a registry (NewConnection) has no
// other reconcile to order against.
func (c *Connection) LockRoleNames(ctx context.Context, names []string) (func(), error) {
	if c.pools == nil {
		return func() {}, nil
	}
	return c.pools.LockRoleNames(ctx, c.Target, names)
}

// Release ends the reconcile's turns in the databases it entered.
func (c *Connection) Release() {
	for name, leave := range c.entered {
		leave()
		delete(c.entered, name)
	}
}

// A Connector resolves the Instance of a namespaced resource and borrows a
// pool for it.
type Connector struct {
	Kube client.Client
	// Fresh reads from the API server, not the cache: before anything is
	// created, the boundaries (the Instance's namespaceSelector, its
	// deletion) are checked against what is true at that moment, not
	// against a cache that may not yet have seen the platform withdraw a
	// namespace or delete the Instance. Kube when nil.
	Fresh client.Reader
	// Namespace is the provider's, where admin Secrets live.
	Namespace string
	// Secrets reads them (secretmemo.InstanceSecrets); Kube when nil.
	Secrets client.Reader
	// Tokens are the admin token sources (config.Config.AdminTokens).
	Tokens *admintoken.Sources
	Pools  *postgres.Registry
	// Seal signs the markers of the Connections made (config.Config.Seal).
	Seal *seal.Key
}

// NewConnector returns the Connector of a kind living on an Instance.
func NewConnector(mgr ctrl.Manager, c config.Config) Connector {
	return Connector{Kube: mgr.GetClient(), Fresh: mgr.GetAPIReader(), Namespace: c.Namespace, Secrets: c.InstanceSecrets, Tokens: c.AdminTokens, Pools: c.Pools, Seal: c.Seal}
}

// Connect resolves ref for mg (bound to boundUID once it has connected) and
// returns a Connection. A replaced Instance sets mg's Ready condition to
// Conflict.
func (c Connector) Connect(ctx context.Context, mg resource.Managed, ref v1alpha1.InstanceReference, boundUID string) (*Connection, error) {
	in, err := Resolve(ctx, c.Kube, ref, boundUID, mg.GetNamespace(), !meta.WasDeleted(mg))
	if err != nil {
		if errors.Is(err, ErrConflict) {
			mg.SetConditions(v1alpha1.Conflict(err.Error()))
		}
		return nil, err
	}
	secrets := c.Secrets
	if secrets == nil {
		secrets = c.Kube
	}
	t, err := ConnectionTarget(ctx, secrets, c.Namespace, c.Tokens, in, in.Spec.Endpoint.Database)
	if err != nil {
		return nil, err
	}
	// The Instance's own database is every namespace's: its sessions are
	// shared out between them.
	pool, err := c.Pools.Shared(ctx, t, mg.GetNamespace())
	if err != nil {
		return nil, errors.Wrap(err, errPool)
	}
	return &Connection{Instance: in, Target: t, Pool: pool, pools: c.Pools, kube: c.Kube, seal: c.Seal}, nil
}

// ConnectorFor returns the connector of a kind living on an Instance: it
// resolves the Instance the resource refers to (the one it was bound to,
// once it has connected) and builds the kind's external client from the
// Connection.
func ConnectorFor[T interface {
	resource.Managed
	v1alpha1.InstanceUser
}](c Connector, build func(*Connection) managed.TypedExternalClient[T]) managed.TypedExternalConnector[T] {
	return managed.TypedExternalConnectorFn[T](func(ctx context.Context, mg T) (managed.TypedExternalClient[T], error) {
		name, uid := mg.InstanceBinding()
		conn, err := c.Connect(ctx, mg, v1alpha1.InstanceReference{Name: name}, uid)
		if err != nil {
			return nil, err
		}
		fresh := c.Fresh
		if fresh == nil {
			fresh = c.Kube
		}
		return createNoting[T]{build(conn), conn, fresh}, nil
	})
}

// createNoting notes, for the reconcile, an observation that found
// nothing (reconciler.Missing: the finalizer then goes with the create-pending
// annotation) and each successful Create (reconciler.Created: the status
// write recording it then waits for the observation that follows at once).
//
// It is also where every kind's new work is admitted: each Create first
// reads the Instance and the resource's namespace from the API server
// (AdmitCreate).
type createNoting[T resource.Managed] struct {
	managed.TypedExternalClient[T]
	conn  *Connection
	fresh client.Reader
}

// Disconnect ends the reconcile's turns in databases (Connection.Release):
// crossplane-runtime calls it once the reconcile is done with the client.
func (c createNoting[T]) Disconnect(ctx context.Context) error {
	c.conn.Release()
	return c.TypedExternalClient.Disconnect(ctx)
}

func (c createNoting[T]) Observe(ctx context.Context, mg T) (managed.ExternalObservation, error) {
	o, err := c.TypedExternalClient.Observe(ctx, mg)
	if err == nil && !o.ResourceExists {
		reconciler.Missing(ctx, mg)
	}
	return o, err
}

func (c createNoting[T]) Create(ctx context.Context, mg T) (managed.ExternalCreation, error) {
	if err := AdmitCreate(ctx, c.fresh, c.conn.Instance, mg.GetNamespace()); err != nil {
		return managed.ExternalCreation{}, err
	}
	created, err := c.TypedExternalClient.Create(ctx, mg)
	if err == nil {
		reconciler.Created(ctx)
	}
	return created, err
}

// ExternalNameInitializer records name(mg) as the external name of a
// resource that has none: the PostgreSQL name (spec.forProvider.name or a
// metadata.name the CRD validated), never crossplane-runtime's default of
// an unvalidated metadata.name.
//
// A new resource has no finalizer yet either, and crossplane-runtime
// writes it in this same reconcile, after a successful observation and
// before anything is created (with the create-pending annotation when a
// create follows, reconciler.Finalizer): the external name set here goes with
// that write rather than in one of its own. Every object of a wave was written
// once more for it, an API write, an etcd write and a watch event to every
// watcher each. A resource that has its finalizer already is written here.
func ExternalNameInitializer[T resource.Managed](kube client.Client, name func(T) string) managed.Initializer {
	return managed.InitializerFn(func(ctx context.Context, mg resource.Managed) error {
		t, ok := mg.(T)
		if !ok || meta.GetExternalName(mg) != "" {
			return nil
		}
		meta.SetExternalName(mg, name(t))
		if !meta.FinalizerExists(mg, managed.FinalizerName) {
			return nil
		}
		return errors.Wrap(kube.Update(ctx, mg), "cannot record the external name")
	})
}
