// Package defaultprivileges manages PostgreSQLDefaultPrivileges: ALTER
// DEFAULT PRIVILEGES FOR ROLE an owner IN SCHEMA, granting a role what the
// owner creates later.
package defaultprivileges

import (
	"context"
	"fmt"
	"strings"

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
	"github.com/ayatori/provider-postgresql/internal/controller/drift"
	"github.com/ayatori/provider-postgresql/internal/controller/management"
	"github.com/ayatori/provider-postgresql/internal/controller/oninstance"
	"github.com/ayatori/provider-postgresql/internal/controller/pending"
	"github.com/ayatori/provider-postgresql/internal/controller/privilege"
	"github.com/ayatori/provider-postgresql/internal/controller/reconciler"
	"github.com/ayatori/provider-postgresql/internal/controller/reference"
)

// Setup adds the PostgreSQLDefaultPrivileges controller to mgr.
func Setup(mgr ctrl.Manager, c config.Config) error {
	kube := mgr.GetClient()
	drifts := drift.Recorder{Kind: v1alpha1.PostgreSQLDefaultPrivilegesKind, Events: event.NewAPIRecorder(mgr.GetEventRecorderFor(managed.ControllerName(v1alpha1.PostgreSQLDefaultPrivilegesGroupKind)))} //nolint:staticcheck // crossplane-runtime's recorder takes record.EventRecorder.
	drifts.Declare("privileges")
	return oninstance.Setup(mgr, c, oninstance.Kind[*v1alpha1.PostgreSQLDefaultPrivileges]{
		GroupVersionKind: v1alpha1.PostgreSQLDefaultPrivilegesGroupVersionKind,
		New:              func() *v1alpha1.PostgreSQLDefaultPrivileges { return &v1alpha1.PostgreSQLDefaultPrivileges{} },
		NewList:          func() resource.ManagedList { return &v1alpha1.PostgreSQLDefaultPrivilegesList{} },
		External: func(conn *oninstance.Connection) managed.TypedExternalClient[*v1alpha1.PostgreSQLDefaultPrivileges] {
			return &external{kube: kube, conn: conn, drift: drifts}
		},
		Options: []managed.ReconcilerOption{
			// Default privileges have no name of their own in PostgreSQL.
			managed.WithInitializers(),
			managed.WithReferenceResolver(managed.ReferenceResolverFn(reference.SelectorResolver(kube, func(d *v1alpha1.PostgreSQLDefaultPrivileges) (string, string, *v1alpha1.RoleSelector, **v1alpha1.LocalReference) {
				return d.GetNamespace(), d.Spec.InstanceRef.Name, d.Spec.ForProvider.RoleSelector, &d.Spec.ForProvider.RoleRef
			}))),
		},
		Refs:   references,
		WakeOn: []client.Object{&v1alpha1.PostgreSQLRole{}, &v1alpha1.PostgreSQLDatabase{}, &v1alpha1.PostgreSQLSchema{}},
	})
}

// references are what a PostgreSQLDefaultPrivileges refers to.
func references(o client.Object) []reference.Ref {
	d, ok := o.(*v1alpha1.PostgreSQLDefaultPrivileges)
	if !ok {
		return nil
	}
	p := d.Spec.ForProvider
	return reference.Collect(
		reference.RefTo(v1alpha1.PostgreSQLRoleKind, p.RoleRef), reference.NamedAs(v1alpha1.PostgreSQLRoleKind, p.Role),
		reference.RefTo(v1alpha1.PostgreSQLRoleKind, p.OwnerRef), reference.NamedAs(v1alpha1.PostgreSQLRoleKind, p.Owner),
		reference.RefTo(v1alpha1.PostgreSQLDatabaseKind, p.DatabaseRef), reference.NamedAs(v1alpha1.PostgreSQLDatabaseKind, p.Database),
		reference.RefTo(v1alpha1.PostgreSQLSchemaKind, p.SchemaRef), reference.NamedAs(v1alpha1.PostgreSQLSchemaKind, p.Schema),
	)
}

type external struct {
	kube client.Client
	conn *oninstance.Connection
	// drift reports changes made on the server.
	drift drift.Recorder
	// seen is what this reconcile's Observe found, nil until it has run:
	// Create, Update and Delete act on it and on nothing else kept
	// between calls (see the grant package).
	seen reconciler.Seen[observation]
}

// An observation is what Observe found and decided, for the Create,
// Update or Delete of the same reconcile.
type observation struct {
	// status is status.atProvider as Observe left it: see the grant
	// package: what Update may revoke is what Observe saw applied.
	status v1alpha1.PostgreSQLDefaultPrivilegesObservation
	pool   postgres.DB
	target postgres.DefaultPrivilegesTarget
	want   postgres.PrivilegeWant
	held   postgres.Held
	plan   postgres.PrivilegePlan
}

var defaultKinds = map[v1alpha1.DefaultPrivilegesObjectType]postgres.ObjectKind{
	v1alpha1.DefaultPrivilegesTables:    postgres.KindTable,
	v1alpha1.DefaultPrivilegesSequences: postgres.KindSequence,
	v1alpha1.DefaultPrivilegesFunctions: postgres.KindFunction,
	v1alpha1.DefaultPrivilegesTypes:     postgres.KindType,
	v1alpha1.DefaultPrivilegesSchemas:   postgres.KindSchema,
}

// names resolves the grantee, owner, database and schema into
// status.atProvider, as the grant controller does for grants.
func (e *external) names(ctx context.Context, mg *v1alpha1.PostgreSQLDefaultPrivileges) (bool, error) {
	ap := &mg.Status.AtProvider
	if meta.WasDeleted(mg) {
		return ap.Role != "", nil
	}
	p := mg.Spec.ForProvider
	r := reference.Resolver{Kube: e.kube, Namespace: mg.GetNamespace(), Instance: mg.Spec.InstanceRef.Name}
	if p.Role == nil && p.RoleRef == nil {
		return false, errors.New(privilege.ErrNoRoleSelected)
	}
	if err := r.AwaitTarget(ctx, p.DatabaseRef, p.SchemaRef); err != nil {
		return false, err
	}
	role, err := r.Role(ctx, "spec.forProvider.roleRef", p.Role, p.RoleRef)
	if err != nil {
		return false, err
	}
	owner, err := r.Role(ctx, "spec.forProvider.ownerRef", p.Owner, p.OwnerRef)
	if err != nil {
		return false, err
	}
	db, err := r.Database(ctx, "spec.forProvider.databaseRef", p.Database, p.DatabaseRef)
	if err != nil {
		return false, err
	}
	schema, err := r.Schema(ctx, "spec.forProvider.schemaRef", db, p.Schema, p.SchemaRef)
	if err != nil {
		return false, err
	}
	ap.Role, ap.Owner, ap.Database, ap.Schema = role, owner, db, schema
	return true, nil
}

func (e *external) Observe(ctx context.Context, mg *v1alpha1.PostgreSQLDefaultPrivileges) (managed.ExternalObservation, error) {
	e.seen.Forget()
	ok, err := e.names(ctx, mg)
	if err != nil || !ok {
		return managed.ExternalObservation{}, err
	}
	o := &observation{}
	obs, err := e.observe(ctx, mg, o)
	o.status = *mg.Status.AtProvider.DeepCopy()
	e.seen.Keep(o)
	return obs, err
}

// observation is what this reconcile's Observe found, with the status it
// left restored on mg.
func (e *external) observation(mg *v1alpha1.PostgreSQLDefaultPrivileges) (*observation, error) {
	o, err := e.seen.Get()
	if err != nil {
		return nil, err
	}
	mg.Status.AtProvider = *o.status.DeepCopy()
	return o, nil
}

func (e *external) observe(ctx context.Context, mg *v1alpha1.PostgreSQLDefaultPrivileges, o *observation) (managed.ExternalObservation, error) {
	var err error
	p, ap := mg.Spec.ForProvider, &mg.Status.AtProvider
	o.target = postgres.DefaultPrivilegesTarget{Owner: ap.Owner, Schema: ap.Schema, Kind: defaultKinds[p.ObjectType]}
	var got *postgres.ObservedDefaultPrivileges
	var system string
	o.pool, err = e.conn.Enter(ctx, mg, boundary.Named{Field: boundary.Field("database", p.Database != nil), Name: ap.Database})
	if err == nil {
		got, system, err = postgres.ObserveDefaultPrivileges(ctx, o.pool, ap.Role, o.target)
	}
	if privilege.Unreachable(mg, err) {
		return privilege.Absent(ctx, mg, e.conn, fmt.Sprintf("database %q", ap.Database))
	}
	if err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, privilege.ErrObserve)
	}
	if err := oninstance.Bind(mg, e.conn.Instance, system, &ap.InstanceUID, &ap.SystemIdentifier); err != nil {
		return managed.ExternalObservation{}, err
	}
	switch {
	case !got.RoleExists:
		return privilege.Absent(ctx, mg, e.conn, fmt.Sprintf("role %q", ap.Role))
	case !got.OwnerExists:
		return privilege.Absent(ctx, mg, e.conn, fmt.Sprintf("role %q", ap.Owner))
	case !got.SchemaExists:
		return privilege.Absent(ctx, mg, e.conn, fmt.Sprintf("schema %q in database %q", ap.Schema, ap.Database))
	}
	privileges, unsupported := postgres.ExpandPrivileges(o.target.Kind, got.ServerVersion, privilege.Strings(p.Privileges))
	if len(unsupported) > 0 && !meta.WasDeleted(mg) {
		return managed.ExternalObservation{}, privilege.Unsupported(mg, got.ServerVersion, unsupported, strings.ToLower(string(p.ObjectType)))
	}
	o.held = got.Held
	o.want = postgres.PrivilegeWant{Privileges: privileges, GrantOption: p.WithGrantOption, Applied: ap.AppliedPrivileges, AppliedGrantOption: ap.AppliedGrantOption}
	ap.Privileges = postgres.HeldByAll(privileges, p.WithGrantOption, []postgres.Held{got.Held})
	mg.Status.ObservedGeneration = mg.GetGeneration()
	if meta.WasDeleted(mg) {
		stmts := o.deleteStatements(ap)
		if management.Deletes(mg) {
			pending.Set(mg, &ap.Plan, v1alpha1.PlanDelete, stmts)
		}
		return managed.ExternalObservation{ResourceExists: len(stmts) > 0}, nil
	}
	found := drift.Observation{Found: drift.Fields{"privileges": strings.Join(ap.Privileges, ",")}, ObserveOnly: management.ObserveOnly(mg)}
	o.plan = postgres.PlanPrivileges(o.want, []postgres.Held{got.Held})
	action := v1alpha1.PlanUpdate
	if len(ap.AppliedPrivileges) == 0 && len(ap.Privileges) == 0 {
		action = v1alpha1.PlanCreate
	}
	pending.Set(mg, &ap.Plan, action, o.statements(ap.Role))
	if management.ObserveOnly(mg) {
		e.drift.Observe(mg, &mg.Status.AtProvider.DriftStatus, found)
		mg.SetConditions(v1alpha1.ObserveOnly(fmt.Sprintf("the default privileges of role %q on %s of %q (held: %s)", ap.Role, strings.ToLower(string(p.ObjectType)), ap.Owner, privilege.OrNone(ap.Privileges))))
		return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: o.plan.Empty()}, nil
	}
	if len(ap.Privileges) == len(privileges) {
		mg.SetConditions(xpv2.Available())
	} else {
		mg.SetConditions(v1alpha1.NotReady(v1alpha1.ReasonNotHeld, fmt.Sprintf("the default privileges of role %q on %s created by %q lack %s; granting", ap.Role, strings.ToLower(string(p.ObjectType)), ap.Owner, privilege.OrNone(o.plan.Grant))))
	}
	if !o.plan.Empty() {
		// Only in a database of its namespace, and only for the future
		// objects of a role it may use: default privileges FOR ROLE another
		// tenant's (or a superuser's) role would hand out what it creates.
		db := boundary.Named{Field: boundary.Field("database", p.Database != nil), Name: ap.Database}
		owner := boundary.Named{Field: boundary.Field("owner", p.Owner != nil), Name: ap.Owner}
		if err := privilege.Checker(e.kube, e.conn).Check(ctx, mg, db, owner); err != nil {
			return managed.ExternalObservation{}, err
		}
	}
	found.InSync = o.plan.Empty()
	e.drift.Observe(mg, &mg.Status.AtProvider.DriftStatus, found)
	return managed.ExternalObservation{ResourceExists: len(ap.AppliedPrivileges) > 0 || len(ap.Privileges) > 0, ResourceUpToDate: o.plan.Empty()}, nil
}

func (e *external) Create(ctx context.Context, mg *v1alpha1.PostgreSQLDefaultPrivileges) (managed.ExternalCreation, error) {
	_, err := e.Update(ctx, mg)
	return managed.ExternalCreation{}, err
}

func (e *external) Update(ctx context.Context, mg *v1alpha1.PostgreSQLDefaultPrivileges) (managed.ExternalUpdate, error) {
	o, err := e.observation(mg)
	if err != nil {
		return managed.ExternalUpdate{}, err
	}
	ap := &mg.Status.AtProvider
	stmts := o.statements(ap.Role)
	// Recorded before granting: see the PostgreSQLGrant's Update.
	ap.AppliedPrivileges, ap.AppliedGrantOption = o.want.Intent(o.plan)
	if err := e.kube.Status().Update(ctx, mg); err != nil {
		return managed.ExternalUpdate{}, errors.Wrap(err, privilege.ErrIntent)
	}
	if err := e.asOwner(ctx, o, stmts); err != nil {
		return managed.ExternalUpdate{}, errors.Wrap(err, privilege.ErrApply)
	}
	ap.AppliedPrivileges, ap.AppliedGrantOption = o.want.After(o.plan)
	ap.Privileges = o.want.Privileges
	mg.SetConditions(xpv2.Available())
	pending.Sent(mg, &ap.Plan)
	return managed.ExternalUpdate{}, nil
}

// deleteStatements are what Delete sends: the revocation of the default
// privileges the resource gave (ap's applied ones) that are still held.
func (o *observation) deleteStatements(ap *v1alpha1.PostgreSQLDefaultPrivilegesObservation) []string {
	revoke := privilege.Revocable(ap.AppliedPrivileges, []postgres.Held{o.held})
	return postgres.DefaultPrivilegesStatements(ap.Role, o.target, postgres.PrivilegePlan{Revoke: revoke}, false)
}

// statements are what Update sends for the plan o holds.
func (o *observation) statements(role string) []string {
	return postgres.DefaultPrivilegesStatements(role, o.target, o.plan, o.want.GrantOption)
}

func (e *external) Delete(ctx context.Context, mg *v1alpha1.PostgreSQLDefaultPrivileges) (managed.ExternalDelete, error) {
	mg.SetConditions(xpv2.Deleting())
	o, err := e.observation(mg)
	if err != nil {
		return managed.ExternalDelete{}, err
	}
	ap := &mg.Status.AtProvider
	if err := e.asOwner(ctx, o, o.deleteStatements(ap)); err != nil {
		return managed.ExternalDelete{}, errors.Wrap(err, privilege.ErrRevoke)
	}
	ap.AppliedPrivileges, ap.AppliedGrantOption = nil, false
	return managed.ExternalDelete{}, nil
}

func (e *external) Disconnect(context.Context) error { return nil }

// asOwner runs ALTER DEFAULT PRIVILEGES FOR ROLE owner with the owner's
// privileges, which PostgreSQL asks of a non-superuser admin (membership
// up to 15): held for the statements alone (see postgres.ActingAs).
func (e *external) asOwner(ctx context.Context, o *observation, stmts []string) error {
	if len(stmts) == 0 {
		return nil
	}
	needs := []postgres.RoleNeed{{Role: o.target.Owner, Inherit: true}}
	return postgres.ActingAs(ctx, o.pool, needs, func() error { return privilege.ExecAll(ctx, o.pool, stmts) })
}
