// Package database manages PostgreSQLDatabases: databases on a PostgreSQL
// server, their owner, settings and extensions. Data is retained unless the
// Delete management policy asks for a drop.
package database

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

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
	"github.com/ayatori/provider-postgresql/internal/controller/management"
	"github.com/ayatori/provider-postgresql/internal/controller/oninstance"
	"github.com/ayatori/provider-postgresql/internal/controller/pending"
	"github.com/ayatori/provider-postgresql/internal/controller/reconciler"
	"github.com/ayatori/provider-postgresql/internal/controller/reference"
	"github.com/ayatori/provider-postgresql/internal/controller/serverobject"
)

const (
	errObserve    = "cannot observe the database"
	errCreate     = "cannot create the database"
	errUpdate     = "cannot update the database"
	errDelete     = "cannot drop the database"
	errExtensions = "cannot ensure the database's extensions"
)

// createTimeout bounds CREATE DATABASE and its marker together.
const createTimeout = 2 * time.Minute

// Setup adds the PostgreSQLDatabase controller to mgr.
func Setup(mgr ctrl.Manager, c config.Config) error {
	kube := mgr.GetClient()
	// The privilege boundary looks databases' markers up by UID.
	if err := boundary.IndexUID(mgr.GetCache(), &v1alpha1.PostgreSQLDatabase{}); err != nil {
		return err
	}
	whose := boundary.Whose(kube, v1alpha1.PostgreSQLDatabaseKind, func() client.ObjectList { return &v1alpha1.PostgreSQLDatabaseList{} })
	drifts := drift.Recorder{Kind: v1alpha1.PostgreSQLDatabaseKind, Events: event.NewAPIRecorder(mgr.GetEventRecorderFor(managed.ControllerName(v1alpha1.PostgreSQLDatabaseGroupKind)))} //nolint:staticcheck // crossplane-runtime's recorder takes record.EventRecorder.
	drifts.Declare(slices.Sorted(maps.Keys(kind{}.DriftFields(nil, &postgres.ObservedDatabase{})))...)
	return oninstance.Setup(mgr, c, oninstance.Kind[*v1alpha1.PostgreSQLDatabase]{
		GroupVersionKind: v1alpha1.PostgreSQLDatabaseGroupVersionKind,
		New:              func() *v1alpha1.PostgreSQLDatabase { return &v1alpha1.PostgreSQLDatabase{} },
		NewList:          func() resource.ManagedList { return &v1alpha1.PostgreSQLDatabaseList{} },
		External: func(conn *oninstance.Connection) managed.TypedExternalClient[*v1alpha1.PostgreSQLDatabase] {
			return &external{kube: kube, pools: c.Pools, conn: conn, whose: whose, drift: drifts}
		},
		Options: []managed.ReconcilerOption{managed.WithInitializers(oninstance.ExternalNameInitializer(kube, (*v1alpha1.PostgreSQLDatabase).DatabaseName))},
		// A database waiting for its owner role goes on as soon as the
		// role exists.
		Refs:   references,
		WakeOn: []client.Object{&v1alpha1.PostgreSQLRole{}},
		// A Bound database's deletion goes on once the binder releases it.
		Also: []predicate.Predicate{bindingRecorded()},
	})
}

// bindingRecorded lets through an update of a database whose binding (the
// binder's part of its status) changed, to the managed controller, which
// otherwise ignores status updates (reconciler.OwnChanges): a Bound database's
// deletion, held in Observe, goes on as soon as the binder records that
// its tenant is gone.
func bindingRecorded() predicate.Funcs {
	return reconciler.UpdatesWhere(func(was, now client.Object) bool {
		w, okWas := was.(*v1alpha1.PostgreSQLDatabase)
		n, okNow := now.(*v1alpha1.PostgreSQLDatabase)
		return okWas && okNow && !w.Status.Binding.Equal(n.Status.Binding)
	})
}

// references are what a PostgreSQLDatabase refers to.
func references(o client.Object) []reference.Ref {
	d, ok := o.(*v1alpha1.PostgreSQLDatabase)
	if !ok {
		return nil
	}
	p := d.Spec.ForProvider
	return reference.Collect(reference.RefTo(v1alpha1.PostgreSQLRoleKind, p.OwnerRef), reference.NamedAs(v1alpha1.PostgreSQLRoleKind, p.Owner))
}

type external struct {
	kube  client.Client
	pools *postgres.Registry
	conn  *oninstance.Connection
	// whose tells whose another resource's ownership marker is (Foreign).
	whose boundary.Lookup
	// drift reports changes made to the database on the server.
	drift drift.Recorder
	// seen is what this reconcile's Observe decided before a create: the
	// owner it held to the boundary, which Create, following in the same
	// reconcile, need not ask the server about again.
	seen reconciler.Seen[observation]
}

// An observation is what Observe leaves for the Create of the same
// reconcile.
type observation struct {
	// ownerChecked is the owner held to the boundary.
	ownerChecked string
	// staged says whether the staging database of a create cut short
	// was there (nil: not read yet), as the plan of this Observe showed.
	staged *bool
}

func (e *external) Observe(ctx context.Context, mg *v1alpha1.PostgreSQLDatabase) (managed.ExternalObservation, error) {
	e.seen.Forget()
	got, obs, done, err := serverobject.Observe[*v1alpha1.PostgreSQLDatabase, postgres.ObservedDatabase](ctx, kind{e}, e.conn.Instance, mg)
	if b := mg.Status.Binding; meta.WasDeleted(mg) && b.Phase == v1alpha1.PhaseBound && b.BoundTo != nil {
		// The binder releases the database once its tenant is gone; until
		// then nothing is dropped under the tenant's feet. The observation
		// above planned what goes once it is released.
		return managed.ExternalObservation{}, errors.Errorf("deletion held: the database is bound to PostgreSQLTenant %s; it is deleted once that tenant is gone",
			b.BoundTo.Tenant)
	}
	if done {
		if err == nil && !obs.ResourceExists && meta.WasDeleted(mg) {
			// A create cut short may have left the staging database,
			// which nobody but this resource could have made or entered:
			// Delete drops it.
			staged, serr := postgres.ObserveStagingDatabase(ctx, e.conn.Pool, string(mg.GetUID()))
			return managed.ExternalObservation{ResourceExists: staged}, errors.Wrap(serr, errObserve)
		}
		return obs, err
	}
	owner, err := e.owner(ctx, mg)
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	if err := e.checkOwner(ctx, mg, owner, got.Owner); err != nil {
		return managed.ExternalObservation{}, err
	}
	upToDate, err := serverobject.Planned[*v1alpha1.PostgreSQLDatabase, postgres.ObservedDatabase](ctx, kind{e}, mg, got)
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	if !got.AdminCanConnect {
		// The update grants the admin CONNECT first; the extensions are
		// looked at from inside once it may enter.
		return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: false}, nil
	}
	mg.SetConditions(xpv2.Available())
	serverobject.Drifted[*v1alpha1.PostgreSQLDatabase, postgres.ObservedDatabase](kind{e}, mg, got, upToDate)
	return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: upToDate}, nil
}

func (k kind) Plan(mg *v1alpha1.PostgreSQLDatabase) **v1alpha1.Plan {
	return &mg.Status.AtProvider.Plan
}

// DeleteStatements are the drop, WITH (FORCE) when the spec asks to end
// the sessions.
func (kind) DeleteStatements(_ context.Context, mg *v1alpha1.PostgreSQLDatabase, _ *postgres.ObservedDatabase) ([]string, error) {
	return []string{postgres.DropDatabaseStatement(mg.DatabaseName(), mg.Spec.ForProvider.TerminateConnectionsOnDelete)}, nil
}

// CreateStatements are CREATE DATABASE and what follows it, then the
// extensions as they would be installed in a database that has none.
func (k kind) CreateStatements(ctx context.Context, mg *v1alpha1.PostgreSQLDatabase) ([]string, error) {
	owner, err := k.e.owner(ctx, mg)
	if err != nil {
		return nil, err
	}
	c, err := k.e.creation(ctx, mg, owner)
	if err != nil {
		return nil, err
	}
	return append(c.Statements(), postgres.ExtensionStatements(wantedExtensions(mg), nil, nil)...), nil
}

// creation is how mg's database is created from here, through its staging
// database (postgres.StagingDatabaseName): CREATE DATABASE is left out
// when a create cut short (a provider killed between CREATE DATABASE and
// the transaction that finishes it) left the staging database, which is
// then finished rather than reported as someone else's.
func (e *external) creation(ctx context.Context, mg *v1alpha1.PostgreSQLDatabase, owner string) (postgres.DatabaseCreate, error) {
	uid := string(mg.GetUID())
	// Read once per reconcile: the plan Observe shows is what Create sends.
	seen, _ := e.seen.Get()
	var staged bool
	if seen != nil && seen.staged != nil {
		staged = *seen.staged
	} else {
		var err error
		if staged, err = postgres.ObserveStagingDatabase(ctx, e.conn.Pool, uid); err != nil {
			return postgres.DatabaseCreate{}, errors.Wrap(err, errObserve)
		}
		if seen != nil {
			seen.staged = &staged
		}
	}
	o := createOptions(mg)
	// A non-superuser admin keeps CONNECT on a database closed to PUBLIC:
	// granted by the update that follows, the database was Ready a poll
	// later.
	p := e.conn.Instance.Status.AdminPrivileges
	o.KeepAdminConnect = p == nil || !p.Superuser
	return postgres.CreateDatabaseStatements(mg.DatabaseName(), postgres.StagingDatabaseName(uid), staged, desired(mg, owner), o, e.mark(mg)), nil
}

// UpdateStatements are the changes of the database's settings, then of
// its extensions (looked at from inside once the admin may connect, which
// the first statements grant it when it may not).
func (k kind) UpdateStatements(ctx context.Context, mg *v1alpha1.PostgreSQLDatabase, got *postgres.ObservedDatabase) ([]string, error) {
	owner, err := k.e.owner(ctx, mg)
	if err != nil {
		return nil, err
	}
	g := *got
	if management.ObserveOnly(mg) {
		// An import's plan is what its spec would change: the marker is
		// the admin's to write, by the hand-over its Conflict names.
		g.MarkerOwner, g.MarkerSeal = string(mg.GetUID()), k.e.mark(mg).Seal
	}
	stmts := postgres.UpdateDatabaseStatements(mg.DatabaseName(), desired(mg, owner), g, k.e.mark(mg))
	if !got.AdminCanConnect || got.MarkerOwner != string(mg.GetUID()) {
		// Only a database of this resource's own is entered: an import
		// may name any database, another tenant's among them, whose
		// extensions are not its to read. Its extensions are planned
		// once it is handed over.
		return stmts, nil
	}
	ext, _, err := k.e.extensionPlan(ctx, mg)
	return append(stmts, ext...), err
}

func (k kind) Drift(mg *v1alpha1.PostgreSQLDatabase) (*v1alpha1.DriftStatus, drift.Recorder) {
	return &mg.Status.AtProvider.DriftStatus, k.e.drift
}

// DriftFields are the database's alterable settings as the spec names
// them.
func (kind) DriftFields(_ *v1alpha1.PostgreSQLDatabase, got *postgres.ObservedDatabase) drift.Fields {
	return drift.Fields{
		"owner":            got.Owner,
		"connectionLimit":  strconv.Itoa(int(got.ConnectionLimit)),
		"allowConnections": strconv.FormatBool(got.AllowConnections),
		"isTemplate":       strconv.FormatBool(got.IsTemplate),
		"comment":          got.Comment,
	}
}

// mark is the ownership marker mg writes on its database.
func (e *external) mark(mg *v1alpha1.PostgreSQLDatabase) postgres.Mark {
	return e.conn.Mark(mg, sealed(mg))
}

// sealed is what mg's marker is sealed for: a provisioned database's
// origin is the binding it was provisioned for, so that a new tenant of a
// released one's name never takes its data.
func sealed(mg *v1alpha1.PostgreSQLDatabase) oninstance.Sealed {
	s := oninstance.Sealed{Kind: v1alpha1.PostgreSQLDatabaseKind, Object: mg.DatabaseName()}
	if pf := mg.Spec.Binding.ProvisionedFor; pf != nil {
		s.Origin = pf.UID
	}
	return s
}

// kind adapts databases to the contract of server objects.
type kind struct{ e *external }

func (kind) Noun() string                                { return "database" }
func (kind) Name(mg *v1alpha1.PostgreSQLDatabase) string { return mg.DatabaseName() }

func (k kind) Observe(ctx context.Context, mg *v1alpha1.PostgreSQLDatabase) (serverobject.Observed[postgres.ObservedDatabase], error) {
	got, system, err := postgres.ObserveDatabase(ctx, k.e.conn.Pool, mg.DatabaseName())
	if err != nil {
		return serverobject.Observed[postgres.ObservedDatabase]{}, errors.Wrap(err, errObserve)
	}
	o := serverobject.Observed[postgres.ObservedDatabase]{Object: got, System: system}
	if got != nil {
		o.Marker = got.MarkerOwner
		o.Successor = k.e.conn.Succeeds(mg, sealed(mg), postgres.Mark{UID: got.MarkerOwner, Seal: got.MarkerSeal})
	}
	return o, nil
}

// Restored records the resource mg succeeded: the binder gives such a
// database, without its binding record, to no tenant until an admin says.
// It is written at once, not with the reconcile's status: that write can
// lose a conflict (the binder writes the same status) after the update
// has rewritten the marker, and the next observation would find nothing
// to say the database came back from a backup.
func (k kind) Restored(ctx context.Context, mg *v1alpha1.PostgreSQLDatabase, from string) error {
	mg.Status.AtProvider.RestoredFrom = from
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"atProvider": map[string]any{"restoredFrom": from}}})
	if err != nil {
		return err
	}
	cp := mg.DeepCopy()
	if err := k.e.kube.Status().Patch(ctx, cp, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return errors.Wrap(err, "cannot record that the database was restored from a backup")
	}
	// The reconcile's own writes follow this one, not conflict with it.
	mg.SetResourceVersion(cp.GetResourceVersion())
	return nil
}

func (kind) Binding(mg *v1alpha1.PostgreSQLDatabase) (*string, *string) {
	return &mg.Status.AtProvider.InstanceUID, &mg.Status.AtProvider.SystemIdentifier
}

func (k kind) CheckCreate(ctx context.Context, mg *v1alpha1.PostgreSQLDatabase) error {
	return k.e.checkCreate(ctx, mg)
}

func (k kind) Foreign(ctx context.Context, mg *v1alpha1.PostgreSQLDatabase, _ *postgres.ObservedDatabase, marker string) (conflict.Object, error) {
	name := mg.DatabaseName()
	whose, err := k.e.whose(ctx, marker)
	return conflict.Object{
		Noun: "database", Name: name, In: fmt.Sprintf("on PostgreSQLInstance %q", k.e.conn.Instance.GetName()), Kind: v1alpha1.PostgreSQLDatabaseKind,
		MarkedBy: whose, Check: "psql -c '\\l+ " + name + "'",
		// The marker goes with the comment the spec asks for, so that the
		// statement leaves the resource nothing to send (the server's own
		// comment is not copied into a message).
		Adopt: "COMMENT ON DATABASE " + postgres.QuoteIdentifier(name) + " IS " + postgres.QuoteLiteralOneLine(postgres.WithMarker(ptr.Deref(mg.Spec.ForProvider.Comment, ""), k.e.mark(mg))),
	}, err
}

func (k kind) Record(mg *v1alpha1.PostgreSQLDatabase, got *postgres.ObservedDatabase) {
	ap := &mg.Status.AtProvider
	ap.Name = mg.DatabaseName()
	ap.Owner, ap.Encoding, ap.LCCollate, ap.LCCtype = got.Owner, got.Encoding, got.LCCollate, got.LCCtype
	// Memberships the Instance's policy allows (allowMembershipOf) are
	// the platform's choice, not a reason to withhold the database.
	allowed := boundary.PolicyOf(k.e.conn.Instance).AllowMembershipOf
	ap.OwnerAttributes = slices.DeleteFunc(slices.Clone(got.OwnerAttributes), func(a string) bool {
		r, ok := strings.CutPrefix(a, postgres.MemberOfPrefix)
		return ok && slices.Contains(allowed, r)
	})
	if len(ap.OwnerAttributes) == 0 {
		ap.OwnerAttributes = nil
	}
	mg.Status.ObservedGeneration = mg.GetGeneration()
}

// checkCreate refuses to create the database where it must not be: with
// extensions the server lacks, or across the Instance's privilege
// boundary. It runs in Observe (serverobject.Observe, which also refuses an
// Instance being deleted), before anything is created, rather than in
// Create, where the reconciler would replace the condition with Creating.
func (e *external) checkCreate(ctx context.Context, mg *v1alpha1.PostgreSQLDatabase) error {
	if err := e.checkExtensionsAvailable(mg); err != nil {
		return err
	}
	if t := mg.Spec.ForProvider.Template; t != nil {
		if r := boundary.PolicyOf(e.conn.Instance).Template("spec.forProvider.template", *t); r != nil {
			return boundary.Refuse(mg, r)
		}
	}
	// An ownerRef whose role is not there yet is waited for here, before
	// the create: from Create, crossplane-runtime would mark the create
	// pending and then failed, two writes of the object for every wait,
	// which in a wave of thousands of databases created with their owners
	// was three and a half writes per database.
	owner, err := e.owner(ctx, mg)
	if err != nil {
		return err
	}
	// An owner given by name may be a role created in the same apply: the
	// database waits for it rather than fail CREATE DATABASE, which cost
	// two writes of the object (create pending, then failed) and a retry
	// with back-off each time; a PostgreSQLRole of that name wakes it
	// when it has created its role (references). The boundary is checked
	// after, against the role as it exists: checked while it was missing
	// (no one's, so allowed), a role another namespace created meanwhile
	// would be given the database.
	if owner != "" && mg.Spec.ForProvider.Owner != nil {
		ok, err := postgres.RoleExists(ctx, e.conn.Pool, owner)
		if err != nil {
			return errors.Wrap(err, errObserve)
		}
		if !ok {
			return reference.Wait(ctx, errors.Errorf("spec.forProvider.owner: waiting for role %q to exist on PostgreSQLInstance %q; the database is created once it does", owner, e.conn.Instance.GetName()))
		}
	}
	if err := e.checkOwner(ctx, mg, owner, ""); err != nil {
		return err
	}
	e.seen.Keep(&observation{ownerChecked: owner})
	return nil
}

// checkOwner refuses giving the database to an owner the namespace may not
// use (another namespace's role, a predefined or privileged one; see
// boundary.Memberships), when the owner is about to change.
func (e *external) checkOwner(ctx context.Context, mg *v1alpha1.PostgreSQLDatabase, owner, current string) error {
	if owner == "" || owner == current {
		return nil
	}
	c := boundary.Checker{Kube: e.kube, Instance: e.conn.Instance, Q: e.conn.Pool}
	return c.Check(ctx, mg, boundary.Named{}, boundary.Named{Field: boundary.Field("owner", mg.Spec.ForProvider.Owner != nil), Name: owner})
}

func (e *external) Create(ctx context.Context, mg *v1alpha1.PostgreSQLDatabase) (managed.ExternalCreation, error) {
	owner, err := e.owner(ctx, mg)
	if err != nil {
		return managed.ExternalCreation{}, err
	}
	if o, err := e.seen.Get(); err != nil || owner != o.ownerChecked {
		if err := e.checkOwner(ctx, mg, owner, ""); err != nil {
			return managed.ExternalCreation{}, err
		}
	}
	if err := e.checkExtensionsAvailable(mg); err != nil {
		return managed.ExternalCreation{}, err
	}
	// CREATE DATABASE cannot share a transaction with anything, and a
	// cancelled statement may still complete on the server. So the create
	// runs detached from this reconcile's cancellation (a provider shutting
	// down lets it finish), bounded by createTimeout; a hard kill at any
	// point leaves nothing, the staging database (finished by the next
	// create), or the database complete (see creation).
	c, err := e.creation(ctx, mg, owner)
	if err != nil {
		return managed.ExternalCreation{}, err
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
	defer cancel()
	// The owner is given the database, in which the admin then installs
	// extensions as its owner would.
	err = e.actingAs(cctx, []postgres.RoleNeed{{Role: owner, Set: true, Inherit: true}}, func() error {
		if err := postgres.CreateDatabase(cctx, e.conn.Pool, string(mg.GetUID()), c); err != nil {
			return errors.Wrap(templateInUse(err, createOptions(mg).Template), errCreate)
		}
		return errors.Wrap(e.applyExtensions(ctx, mg), errExtensions)
	})
	if err == nil {
		pending.Sent(mg, &mg.Status.AtProvider.Plan)
	}
	return managed.ExternalCreation{}, err
}

// templateInUse explains a CREATE DATABASE refused because another session
// is connected to its template: PostgreSQL copies a template only while
// nobody else is in it.
func templateInUse(err error, template string) error {
	if !postgres.IsCode(err, postgres.CodeObjectInUse) {
		return err
	}
	return errors.Wrapf(err, "another session is connected to template %q, which PostgreSQL copies only while nobody else is in it; "+
		"any login may connect to a template whose CONNECT PUBLIC holds (template1's does unless revoked: spec.sharedDatabases.revokePublicConnect of the PostgreSQLInstance). "+
		"Leave spec.forProvider.template unset to copy %s, which accepts no connections", template, postgres.DefaultTemplate)
}

func (e *external) Update(ctx context.Context, mg *v1alpha1.PostgreSQLDatabase) (managed.ExternalUpdate, error) {
	name := mg.DatabaseName()
	got, _, err := postgres.ObserveDatabase(ctx, e.conn.Pool, name)
	if err != nil || got == nil {
		return managed.ExternalUpdate{}, errors.Wrap(errors.Join(err, errors.New("the database disappeared")), errObserve)
	}
	owner, err := e.owner(ctx, mg)
	if err != nil {
		return managed.ExternalUpdate{}, err
	}
	// Every change acts as the database's owner; a new owner is given the
	// database first, and the rest then acts as it.
	needs := []postgres.RoleNeed{{Role: got.Owner, Inherit: true}}
	if owner != "" && owner != got.Owner {
		needs = append(needs, postgres.RoleNeed{Role: owner, Set: true, Inherit: true})
	}
	err = e.actingAs(ctx, needs, func() error {
		if stmts := postgres.UpdateDatabaseStatements(name, desired(mg, owner), *got, e.mark(mg)); len(stmts) > 0 {
			if err := postgres.Exec(ctx, e.conn.Pool, stmts); err != nil {
				return errors.Wrap(err, errUpdate)
			}
		}
		return errors.Wrap(e.applyExtensions(ctx, mg), errExtensions)
	})
	if err == nil {
		pending.Sent(mg, &mg.Status.AtProvider.Plan)
	}
	return managed.ExternalUpdate{}, err
}

func (e *external) Delete(ctx context.Context, mg *v1alpha1.PostgreSQLDatabase) (managed.ExternalDelete, error) {
	mg.SetConditions(xpv2.Deleting())
	name := mg.DatabaseName()
	// The provider's own sessions on the database would block the drop.
	// (Without a registry, in table tests, there are none.)
	if e.pools != nil {
		if err := e.pools.CloseDatabase(ctx, e.conn.Target.InstanceUID, name); err != nil {
			return managed.ExternalDelete{}, err
		}
	}
	force := mg.Spec.ForProvider.TerminateConnectionsOnDelete
	got, _, err := postgres.ObserveDatabase(ctx, e.conn.Pool, name)
	if err != nil {
		return managed.ExternalDelete{}, errors.Wrap(err, errObserve)
	}
	if got == nil {
		return managed.ExternalDelete{}, errors.Wrap(postgres.DropStagingDatabase(ctx, e.conn.Pool, string(mg.GetUID())), errDelete)
	}
	sessions, sessionRoles, err := postgres.DatabaseSessions(ctx, e.conn.Pool, name)
	if err != nil {
		return managed.ExternalDelete{}, err
	}
	if !force && sessions > 0 {
		return managed.ExternalDelete{}, errors.Errorf("database %q is not dropped while %d session(s) are connected to it; the drop is retried with back-off. "+
			"Disconnect them, or set spec.forProvider.terminateConnectionsOnDelete: true to terminate them", name, sessions)
	}
	// Only its owner drops a database, and WITH (FORCE) ends only sessions
	// of roles whose privileges the admin holds (unless it may signal any).
	needs := []postgres.RoleNeed{{Role: got.Owner, Inherit: true}}
	if force {
		for _, r := range sessionRoles {
			needs = append(needs, postgres.RoleNeed{Role: r, Inherit: true})
		}
	}
	err = e.actingAs(ctx, needs, func() error {
		stmts, err := kind{e}.DeleteStatements(ctx, mg, got)
		if err != nil {
			return err
		}
		return postgres.ExecEach(ctx, e.conn.Pool, stmts)
	})
	if err != nil {
		if postgres.IsCode(err, postgres.CodeObjectInUse) {
			return managed.ExternalDelete{}, errors.Wrapf(err, "database %q is in use; the drop is retried with back-off. "+
				"Disconnect its sessions, or set spec.forProvider.terminateConnectionsOnDelete: true", name)
		}
		return managed.ExternalDelete{}, errors.Wrap(err, errDelete)
	}
	return managed.ExternalDelete{}, nil
}

func (e *external) Disconnect(context.Context) error { return nil }

// actingAs runs fn with the memberships a non-superuser admin needs for
// it (see postgres.ActingAs).
func (e *external) actingAs(ctx context.Context, needs []postgres.RoleNeed, fn func() error) error {
	return postgres.ActingAs(ctx, e.conn.Pool, needs, fn)
}

// owner returns the owner the spec asks for: owner, the role of ownerRef,
// or "" for "leave it to the server".
func (e *external) owner(ctx context.Context, mg *v1alpha1.PostgreSQLDatabase) (string, error) {
	r := reference.Resolver{Kube: e.kube, Namespace: mg.GetNamespace(), Instance: mg.Spec.InstanceRef.Name, Previewing: management.ObserveOnly(mg)}
	return r.Role(ctx, "spec.forProvider.ownerRef", mg.Spec.ForProvider.Owner, mg.Spec.ForProvider.OwnerRef)
}

// extensions reads the spec's extensions in the database, records them as
// observed, and returns those still pending. It connects to the database
// itself.
func (e *external) extensions(ctx context.Context, mg *v1alpha1.PostgreSQLDatabase) ([]postgres.ExtensionSpec, map[string]postgres.InstalledExtension, error) {
	want := wantedExtensions(mg)
	if len(want) == 0 {
		mg.Status.AtProvider.Extensions = nil
		return nil, nil, nil
	}
	if err := e.checkExtensionsAvailable(mg); err != nil {
		return nil, nil, err
	}
	p, err := e.databasePool(ctx, mg)
	if err != nil {
		return nil, nil, err
	}
	names := make([]string, len(want))
	for i, w := range want {
		names[i] = w.Name
	}
	got, err := postgres.ObserveExtensions(ctx, p, names)
	if err != nil {
		return nil, nil, err
	}
	mg.Status.AtProvider.Extensions = nil
	for _, n := range names {
		if g, ok := got[n]; ok {
			mg.Status.AtProvider.Extensions = append(mg.Status.AtProvider.Extensions, v1alpha1.ObservedExtension{Name: g.Name, Version: g.Version, Schema: g.Schema})
		}
	}
	return postgres.PendingExtensions(want, got), got, nil
}

// extensionPlan returns the statements that install, update and move the
// extensions extensions() found pending, and why running them would be
// unsafe ("" when it would not: no script of theirs would run with the
// admin's power where others may place objects).
func (e *external) extensionPlan(ctx context.Context, mg *v1alpha1.PostgreSQLDatabase) (stmts []string, unsafe string, err error) {
	todo, got, err := e.extensions(ctx, mg)
	if err != nil || len(todo) == 0 {
		return nil, "", err
	}
	p, err := e.databasePool(ctx, mg)
	if err != nil {
		return nil, "", err
	}
	facts, err := postgres.ObserveExtensionFacts(ctx, p, todo, got)
	if err != nil {
		return nil, "", err
	}
	return postgres.ExtensionStatements(todo, got, facts), postgres.UnsafeExtensions(todo, got, facts), nil
}

// applyExtensions runs the extension plan, once the server has said that
// it is safe.
func (e *external) applyExtensions(ctx context.Context, mg *v1alpha1.PostgreSQLDatabase) error {
	stmts, unsafe, err := e.extensionPlan(ctx, mg)
	if err != nil || len(stmts) == 0 {
		return err
	}
	if unsafe != "" {
		mg.SetConditions(v1alpha1.NotReady(v1alpha1.ReasonExtensionUnsafe, fmt.Sprintf("database %q: %s", mg.DatabaseName(), unsafe)))
		return errors.New(unsafe)
	}
	p, err := e.databasePool(ctx, mg)
	if err != nil {
		return err
	}
	return postgres.Exec(ctx, p, stmts)
}

func (e *external) databasePool(ctx context.Context, mg *v1alpha1.PostgreSQLDatabase) (postgres.DB, error) {
	return e.conn.Database(ctx, mg.DatabaseName())
}

// checkExtensionsAvailable refuses extensions the server cannot install,
// naming them and the closest available names.
func (e *external) checkExtensionsAvailable(mg *v1alpha1.PostgreSQLDatabase) error {
	avail := make([]string, 0, len(e.conn.Instance.Status.AvailableExtensions))
	for _, x := range e.conn.Instance.Status.AvailableExtensions {
		avail = append(avail, x.Name)
	}
	if len(avail) == 0 {
		// The Instance has not listed them yet; the server decides.
		return nil
	}
	var missing []string
	for _, w := range mg.Spec.ForProvider.Extensions {
		if slices.Contains(avail, w.Name) {
			continue
		}
		m := fmt.Sprintf("%q", w.Name)
		if near := postgres.NearMatches(w.Name, avail); len(near) > 0 {
			m += " (did you mean " + strings.Join(near, ", ") + "?)"
		}
		missing = append(missing, m)
	}
	if len(missing) == 0 {
		return nil
	}
	msg := fmt.Sprintf("PostgreSQLInstance %q cannot install extension(s) %s: they are not in its status.availableExtensions; install them on the server or fix the names",
		e.conn.Instance.GetName(), strings.Join(missing, ", "))
	mg.SetConditions(v1alpha1.NotReady(v1alpha1.ReasonExtensionUnavailable, msg))
	return errors.New(msg)
}

func wantedExtensions(mg *v1alpha1.PostgreSQLDatabase) []postgres.ExtensionSpec {
	var out []postgres.ExtensionSpec
	for _, x := range mg.Spec.ForProvider.Extensions {
		s := postgres.ExtensionSpec{Name: x.Name}
		if x.Version != nil {
			s.Version = *x.Version
		}
		if x.Schema != nil {
			s.Schema = *x.Schema
		}
		out = append(out, s)
	}
	return out
}

// desired returns the settings the spec asks for, with the defaults of
// CREATE DATABASE where it is silent.
func desired(mg *v1alpha1.PostgreSQLDatabase, owner string) postgres.DatabaseSettings {
	p := mg.Spec.ForProvider
	s := postgres.DatabaseSettings{Owner: owner, ConnectionLimit: -1, AllowConnections: true}
	if p.ConnectionLimit != nil {
		s.ConnectionLimit = *p.ConnectionLimit
	}
	if p.AllowConnections != nil {
		s.AllowConnections = *p.AllowConnections
	}
	if p.IsTemplate != nil {
		s.IsTemplate = *p.IsTemplate
	}
	if p.Comment != nil {
		s.Comment = *p.Comment
	}
	s.RevokePublic = p.RevokePublicPrivileges
	return s
}

func createOptions(mg *v1alpha1.PostgreSQLDatabase) postgres.DatabaseCreateOptions {
	p := mg.Spec.ForProvider
	str := func(v *string) string {
		if v == nil {
			return ""
		}
		return *v
	}
	o := postgres.DatabaseCreateOptions{
		Template: cmp.Or(str(p.Template), postgres.DefaultTemplate), Encoding: str(p.Encoding), LCCollate: str(p.LCCollate), LCCtype: str(p.LCCtype),
		ICULocale: str(p.ICULocale), Tablespace: str(p.Tablespace),
	}
	if p.LocaleProvider != nil {
		o.LocaleProvider = string(*p.LocaleProvider)
	}
	if p.Strategy != nil {
		o.Strategy = string(*p.Strategy)
	}
	return o
}
