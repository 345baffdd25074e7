// Package schema manages PostgreSQLSchemas: schemas inside a database,
// their owner and whether PUBLIC may use them. Schemas and their objects
// are retained unless the Delete management policy asks for a drop.
package schema

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/controller/boundary"
	"github.com/ayatori/provider-postgresql/internal/controller/config"
	"github.com/ayatori/provider-postgresql/internal/controller/conflict"
	"github.com/ayatori/provider-postgresql/internal/controller/drift"
	"github.com/ayatori/provider-postgresql/internal/controller/locked"
	"github.com/ayatori/provider-postgresql/internal/controller/management"
	"github.com/ayatori/provider-postgresql/internal/controller/oninstance"
	"github.com/ayatori/provider-postgresql/internal/controller/pending"
	"github.com/ayatori/provider-postgresql/internal/controller/reconciler"
	"github.com/ayatori/provider-postgresql/internal/controller/reference"
	"github.com/ayatori/provider-postgresql/internal/controller/serverobject"
)

const (
	errObserve = "cannot observe the schema"
	errCreate  = "cannot create the schema"
	errUpdate  = "cannot update the schema"
	errDelete  = "cannot drop the schema"
)

// Setup adds the PostgreSQLSchema controller to mgr.
func Setup(mgr ctrl.Manager, c config.Config) error {
	kube := mgr.GetClient()
	// Whose a schema's ownership marker says it is (Foreign).
	if err := boundary.IndexUID(mgr.GetCache(), &v1alpha1.PostgreSQLSchema{}); err != nil {
		return err
	}
	whose := boundary.Whose(kube, v1alpha1.PostgreSQLSchemaKind, func() client.ObjectList { return &v1alpha1.PostgreSQLSchemaList{} })
	drifts := drift.Recorder{Kind: v1alpha1.PostgreSQLSchemaKind, Events: event.NewAPIRecorder(mgr.GetEventRecorderFor(managed.ControllerName(v1alpha1.PostgreSQLSchemaGroupKind)))} //nolint:staticcheck // crossplane-runtime's recorder takes record.EventRecorder.
	drifts.Declare(slices.Sorted(maps.Keys(kind{}.DriftFields(nil, &postgres.ObservedSchema{})))...)
	return oninstance.Setup(mgr, c, oninstance.Kind[*v1alpha1.PostgreSQLSchema]{
		GroupVersionKind: v1alpha1.PostgreSQLSchemaGroupVersionKind,
		New:              func() *v1alpha1.PostgreSQLSchema { return &v1alpha1.PostgreSQLSchema{} },
		NewList:          func() resource.ManagedList { return &v1alpha1.PostgreSQLSchemaList{} },
		External: func(conn *oninstance.Connection) managed.TypedExternalClient[*v1alpha1.PostgreSQLSchema] {
			return &external{kube: kube, conn: conn, whose: whose, drift: drifts}
		},
		Options: []managed.ReconcilerOption{managed.WithInitializers(oninstance.ExternalNameInitializer(kube, (*v1alpha1.PostgreSQLSchema).SchemaName))},
		Refs:    references,
		WakeOn:  []client.Object{&v1alpha1.PostgreSQLDatabase{}, &v1alpha1.PostgreSQLRole{}},
	})
}

// references are what a PostgreSQLSchema refers to.
func references(o client.Object) []reference.Ref {
	s, ok := o.(*v1alpha1.PostgreSQLSchema)
	if !ok {
		return nil
	}
	p := s.Spec.ForProvider
	return reference.Collect(
		reference.RefTo(v1alpha1.PostgreSQLDatabaseKind, p.DatabaseRef), reference.NamedAs(v1alpha1.PostgreSQLDatabaseKind, p.Database),
		reference.RefTo(v1alpha1.PostgreSQLRoleKind, p.OwnerRef), reference.NamedAs(v1alpha1.PostgreSQLRoleKind, p.Owner),
	)
}

type external struct {
	kube client.Client
	conn *oninstance.Connection
	// whose tells whose another resource's ownership marker is (Foreign).
	whose boundary.Lookup
	// seen is the session into the schema's database this reconcile's
	// Observe entered: Create, Update and Delete run there.
	seen reconciler.Seen[observation]
	// drift reports changes made to the schema on the server.
	drift drift.Recorder
}

// checkBoundary refuses, before anything is sent, what would cross the
// Instance's privilege boundary: creating a schema (db non-empty) in a
// database not managed from the resource's namespace, and handing it to an
// owner the namespace may not use (another namespace's role, a predefined
// or privileged one) when the owner is about to be set or changed.
func (e *external) checkBoundary(ctx context.Context, mg *v1alpha1.PostgreSQLSchema, db, owner, current string) error {
	p := mg.Spec.ForProvider
	var database boundary.Named
	if db != "" {
		database = boundary.Named{Field: boundary.Field("database", p.Database != nil), Name: db}
	}
	var roles []boundary.Named
	if owner != "" && owner != current {
		roles = append(roles, boundary.Named{Field: boundary.Field("owner", p.Owner != nil), Name: owner})
	}
	if db == "" && len(roles) == 0 {
		return nil
	}
	c := boundary.Checker{Kube: e.kube, Instance: e.conn.Instance, Q: e.conn.Pool}
	return c.Check(ctx, mg, database, roles...)
}

// mark is the ownership marker mg writes on its schema, in the database
// Observe found it in.
func (e *external) mark(mg *v1alpha1.PostgreSQLSchema) postgres.Mark {
	return e.conn.Mark(mg, oninstance.Sealed{Kind: v1alpha1.PostgreSQLSchemaKind, Database: mg.Status.AtProvider.Database, Object: mg.SchemaName()})
}

func (e *external) resolver(mg *v1alpha1.PostgreSQLSchema) reference.Resolver {
	return reference.Resolver{Kube: e.kube, Namespace: mg.GetNamespace(), Instance: mg.Spec.InstanceRef.Name}
}

// database returns the schema's database: the one recorded at first
// observation (the CRD freezes it), else the one the spec designates.
func (e *external) database(ctx context.Context, mg *v1alpha1.PostgreSQLSchema) (string, error) {
	if db := mg.Status.AtProvider.Database; db != "" {
		return db, nil
	}
	if meta.WasDeleted(mg) {
		return "", nil
	}
	p := mg.Spec.ForProvider
	return e.resolver(mg).Database(ctx, "spec.forProvider.databaseRef", p.Database, p.DatabaseRef)
}

func (e *external) Observe(ctx context.Context, mg *v1alpha1.PostgreSQLSchema) (managed.ExternalObservation, error) {
	got, obs, done, err := serverobject.Observe[*v1alpha1.PostgreSQLSchema, postgres.ObservedSchema](ctx, kind{e}, e.conn.Instance, mg)
	if done {
		return obs, err
	}
	want, err := e.desired(ctx, mg)
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	upToDate, err := serverobject.Planned[*v1alpha1.PostgreSQLSchema, postgres.ObservedSchema](ctx, kind{e}, mg, got)
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	if !upToDate {
		if err := e.checkBoundary(ctx, mg, "", want.Owner, got.Owner); err != nil {
			return managed.ExternalObservation{}, err
		}
	}
	mg.SetConditions(xpv2.Available())
	serverobject.Drifted[*v1alpha1.PostgreSQLSchema, postgres.ObservedSchema](kind{e}, mg, got, upToDate)
	return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: upToDate}, nil
}

func (kind) Plan(mg *v1alpha1.PostgreSQLSchema) **v1alpha1.Plan { return &mg.Status.AtProvider.Plan }

// DeleteStatements are the drop: CASCADE when the spec asks for it,
// RESTRICT otherwise.
func (kind) DeleteStatements(_ context.Context, mg *v1alpha1.PostgreSQLSchema, _ *postgres.ObservedSchema) ([]string, error) {
	return []string{postgres.DropSchemaStatement(mg.SchemaName(), mg.Spec.ForProvider.CascadeOnDelete)}, nil
}

func (k kind) CreateStatements(ctx context.Context, mg *v1alpha1.PostgreSQLSchema) ([]string, error) {
	want, err := k.e.desired(ctx, mg)
	if err != nil {
		return nil, err
	}
	return postgres.CreateSchemaStatements(mg.SchemaName(), want, k.e.mark(mg)), nil
}

func (k kind) UpdateStatements(ctx context.Context, mg *v1alpha1.PostgreSQLSchema, got *postgres.ObservedSchema) ([]string, error) {
	want, err := k.e.desired(ctx, mg)
	if err != nil {
		return nil, err
	}
	g := *got
	if management.ObserveOnly(mg) {
		// An import's plan is what its spec would change: the marker is
		// the admin's to write, by the hand-over its Conflict names.
		g.MarkerOwner, g.MarkerSeal = string(mg.GetUID()), k.e.mark(mg).Seal
	}
	return postgres.UpdateSchemaStatements(mg.SchemaName(), want, g, k.e.mark(mg)), nil
}

func (k kind) Drift(mg *v1alpha1.PostgreSQLSchema) (*v1alpha1.DriftStatus, drift.Recorder) {
	return &mg.Status.AtProvider.DriftStatus, k.e.drift
}

// DriftFields are the schema's owner, comment and what PUBLIC holds on it.
func (kind) DriftFields(_ *v1alpha1.PostgreSQLSchema, got *postgres.ObservedSchema) drift.Fields {
	return drift.Fields{"owner": got.Owner, "comment": got.Comment, "publicPrivileges": strings.Join(got.PublicPrivileges, ",")}
}

// An observation is what Observe leaves for the Create, Update or Delete
// of the same reconcile: the session into the schema's database, its turn
// there taken (oninstance.Connection.Enter).
type observation struct {
	pool postgres.DB
}

// pool is the session into the schema's database Observe entered.
func (e *external) pool() (postgres.DB, error) {
	o, err := e.seen.Get()
	if err != nil {
		return nil, err
	}
	return o.pool, nil
}

// kind adapts schemas to the contract of server objects.
type kind struct{ e *external }

func (kind) Noun() string                              { return "schema" }
func (kind) Name(mg *v1alpha1.PostgreSQLSchema) string { return mg.SchemaName() }

// Observe finds the schema's database (recorded at first observation),
// connects to it and reads the schema there.
func (k kind) Observe(ctx context.Context, mg *v1alpha1.PostgreSQLSchema) (serverobject.Observed[postgres.ObservedSchema], error) {
	var none serverobject.Observed[postgres.ObservedSchema]
	k.e.seen.Forget()
	db, err := k.e.database(ctx, mg)
	if err != nil {
		return none, err
	}
	if db == "" {
		// Deleted before it ever found its database: nothing to drop.
		return none, serverobject.ErrGone
	}
	// A schema being deleted in a database its namespace may no longer
	// use (its PostgreSQLDatabase gone, the database retained) lets go
	// without touching it: what is there is no longer the namespace's.
	p := mg.Spec.ForProvider
	pool, err := k.e.conn.Enter(ctx, mg, boundary.Named{Field: boundary.Field("database", p.Database != nil), Name: db})
	var got *postgres.ObservedSchema
	var system string
	if err == nil {
		k.e.seen.Keep(&observation{pool: pool})
		got, system, err = postgres.ObserveSchema(ctx, pool, mg.SchemaName())
	}
	if postgres.IsCode(err, postgres.CodeInvalidCatalogName) || boundary.IsRefusal(err) && meta.WasDeleted(mg) {
		if meta.WasDeleted(mg) {
			return none, serverobject.ErrGone
		}
		return none, reference.Wait(ctx, errors.Errorf("waiting for database %q to exist on PostgreSQLInstance %q", db, k.e.conn.Instance.GetName()))
	}
	if err != nil {
		return none, errors.Wrap(err, errObserve)
	}
	mg.Status.AtProvider.Database = db
	o := serverobject.Observed[postgres.ObservedSchema]{Object: got, System: system}
	if got != nil {
		o.Marker = got.MarkerOwner
		o.Successor = k.e.conn.Succeeds(mg, oninstance.Sealed{Kind: v1alpha1.PostgreSQLSchemaKind, Database: db, Object: mg.SchemaName()}, postgres.Mark{UID: got.MarkerOwner, Seal: got.MarkerSeal})
	}
	return o, nil
}

func (kind) Binding(mg *v1alpha1.PostgreSQLSchema) (*string, *string) {
	return &mg.Status.AtProvider.InstanceUID, &mg.Status.AtProvider.SystemIdentifier
}

// CheckCreate refuses a schema in a database, or for an owner, that the
// namespace may not use.
func (k kind) CheckCreate(ctx context.Context, mg *v1alpha1.PostgreSQLSchema) error {
	want, err := k.e.desired(ctx, mg)
	if err != nil {
		return err
	}
	return k.e.checkBoundary(ctx, mg, mg.Status.AtProvider.Database, want.Owner, "")
}

func (k kind) Foreign(ctx context.Context, mg *v1alpha1.PostgreSQLSchema, _ *postgres.ObservedSchema, marker string) (conflict.Object, error) {
	name, db := mg.SchemaName(), mg.Status.AtProvider.Database
	whose, err := k.e.whose(ctx, marker)
	return conflict.Object{
		Noun: "schema", Name: name, In: fmt.Sprintf("in database %q on PostgreSQLInstance %q", db, k.e.conn.Instance.GetName()), Kind: v1alpha1.PostgreSQLSchemaKind,
		MarkedBy: whose, Check: "psql -d " + db + " -c '\\dn+ " + name + "'",
		// The marker goes with the comment the spec asks for, so that the
		// statement leaves the resource nothing to send (the server's own
		// comment is not copied into a message).
		Adopt: "COMMENT ON SCHEMA " + postgres.QuoteIdentifier(name) + " IS " + postgres.QuoteLiteralOneLine(postgres.WithMarker(ptr.Deref(mg.Spec.ForProvider.Comment, ""), k.e.mark(mg))),
	}, err
}

func (kind) Record(mg *v1alpha1.PostgreSQLSchema, got *postgres.ObservedSchema) {
	ap := &mg.Status.AtProvider
	ap.Name, ap.Owner, ap.PublicPrivileges = mg.SchemaName(), got.Owner, got.PublicPrivileges
	mg.Status.ObservedGeneration = mg.GetGeneration()
}

// Describe names the schema with its database in messages.
func (kind) Describe(mg *v1alpha1.PostgreSQLSchema, _ bool) string {
	return fmt.Sprintf("schema %q in database %q", mg.SchemaName(), mg.Status.AtProvider.Database)
}

func (e *external) Create(ctx context.Context, mg *v1alpha1.PostgreSQLSchema) (managed.ExternalCreation, error) {
	want, err := e.desired(ctx, mg)
	if err != nil {
		return managed.ExternalCreation{}, err
	}
	// Again: the owner role may not have existed when Observe checked.
	if err := e.checkBoundary(ctx, mg, "", want.Owner, ""); err != nil {
		return managed.ExternalCreation{}, err
	}
	pool, err := e.pool()
	if err != nil {
		return managed.ExternalCreation{}, err
	}
	// The database Observe recorded is gone from the status by now: the
	// update before a create (crossplane-runtime's create-pending
	// annotation) brings back the stored status. The marker's seal names
	// the database, so without it the next observation found the marker
	// wrong and wrote the comment again: an update of every new schema.
	db, err := e.database(ctx, mg)
	if err != nil {
		return managed.ExternalCreation{}, err
	}
	mg.Status.AtProvider.Database = db
	// A non-superuser admin must be able to SET ROLE to the owner to give
	// it the schema, and hold its privileges to comment on it then.
	err = postgres.ActingAs(ctx, pool, []postgres.RoleNeed{{Role: want.Owner, Set: true, Inherit: true}}, func() error {
		return postgres.Exec(ctx, pool, postgres.CreateSchemaStatements(mg.SchemaName(), want, e.mark(mg)))
	})
	if err != nil {
		return managed.ExternalCreation{}, errors.Wrap(err, errCreate)
	}
	pending.Sent(mg, &mg.Status.AtProvider.Plan)
	return managed.ExternalCreation{}, nil
}

func (e *external) Update(ctx context.Context, mg *v1alpha1.PostgreSQLSchema) (managed.ExternalUpdate, error) {
	name := mg.SchemaName()
	pool, err := e.pool()
	if err != nil {
		return managed.ExternalUpdate{}, err
	}
	got, _, err := postgres.ObserveSchema(ctx, pool, name)
	if err != nil || got == nil {
		return managed.ExternalUpdate{}, errors.Wrap(errors.Join(err, errors.New("the schema disappeared")), errObserve)
	}
	want, err := e.desired(ctx, mg)
	if err != nil {
		return managed.ExternalUpdate{}, err
	}
	stmts := postgres.UpdateSchemaStatements(name, want, *got, e.mark(mg))
	if len(stmts) == 0 {
		pending.Sent(mg, &mg.Status.AtProvider.Plan)
		return managed.ExternalUpdate{}, nil
	}
	// Only the owner alters a schema; giving it away needs SET ROLE to the
	// new owner.
	needs := []postgres.RoleNeed{{Role: got.Owner, Inherit: true}}
	if want.Owner != "" && want.Owner != got.Owner {
		needs = append(needs, postgres.RoleNeed{Role: want.Owner, Set: true, Inherit: true})
	}
	if err := postgres.ActingAs(ctx, pool, needs, func() error { return postgres.Exec(ctx, pool, stmts) }); err != nil {
		return managed.ExternalUpdate{}, errors.Wrap(err, errUpdate)
	}
	pending.Sent(mg, &mg.Status.AtProvider.Plan)
	return managed.ExternalUpdate{}, nil
}

func (e *external) Delete(ctx context.Context, mg *v1alpha1.PostgreSQLSchema) (managed.ExternalDelete, error) {
	mg.SetConditions(xpv2.Deleting())
	name := mg.SchemaName()
	if mg.Spec.ForProvider.CascadeOnDelete {
		protected, err := locked.Databases(ctx, e.kube, mg.Status.AtProvider.InstanceUID)
		if err != nil {
			return managed.ExternalDelete{}, err
		}
		if names := protected[mg.Status.AtProvider.Database]; len(names) > 0 {
			return managed.ExternalDelete{}, errors.Errorf("cascadeOnDelete would drop every object in schema %q of database %q, which Lock(s) [%s] protect: nothing was dropped. "+
				"Delete the Lock(s), or set spec.forProvider.cascadeOnDelete to false (the schema is then dropped only when empty)", name, mg.Status.AtProvider.Database, locked.Format(names))
		}
	}
	pool, err := e.pool()
	if err != nil {
		return managed.ExternalDelete{}, err
	}
	// Only its owner drops a schema.
	err = postgres.ActingAs(ctx, pool, []postgres.RoleNeed{{Role: mg.Status.AtProvider.Owner, Inherit: true}}, func() error {
		stmts, err := kind{e}.DeleteStatements(ctx, mg, nil)
		if err != nil {
			return err
		}
		return postgres.Exec(ctx, pool, stmts)
	})
	if postgres.IsCode(err, postgres.CodeDependentObjectsStillExist) {
		return managed.ExternalDelete{}, errors.Wrapf(err, "schema %q is not dropped while it holds objects (DROP SCHEMA … RESTRICT); the drop is retried with back-off. "+
			"Drop or move them, or set spec.forProvider.cascadeOnDelete: true to drop them with the schema", name)
	}
	return managed.ExternalDelete{}, errors.Wrap(err, errDelete)
}

func (e *external) Disconnect(context.Context) error { return nil }

// desired returns the settings the spec asks for.
func (e *external) desired(ctx context.Context, mg *v1alpha1.PostgreSQLSchema) (postgres.SchemaSettings, error) {
	p := mg.Spec.ForProvider
	owner, err := e.resolver(mg).Role(ctx, "spec.forProvider.ownerRef", p.Owner, p.OwnerRef)
	if err != nil {
		return postgres.SchemaSettings{}, err
	}
	s := postgres.SchemaSettings{Owner: owner, RevokePublic: p.RevokePublicPrivileges}
	if p.Comment != nil {
		s.Comment = *p.Comment
	}
	return s, nil
}
