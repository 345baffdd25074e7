// Package grant manages PostgreSQLGrants: privileges a role holds on
// existing objects, and role memberships (package defaultprivileges does
// the privileges on objects created later). Each resource owns the privileges
// it lists: it is Ready when they are held, whatever else the role holds,
// and revokes only what it granted.
package grant

import (
	"context"
	"fmt"
	"slices"
	"strconv"
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
	"github.com/ayatori/provider-postgresql/internal/controller/drift"
	"github.com/ayatori/provider-postgresql/internal/controller/management"
	"github.com/ayatori/provider-postgresql/internal/controller/oninstance"
	"github.com/ayatori/provider-postgresql/internal/controller/pending"
	"github.com/ayatori/provider-postgresql/internal/controller/privilege"
	"github.com/ayatori/provider-postgresql/internal/controller/reconciler"
	"github.com/ayatori/provider-postgresql/internal/controller/reference"
)

// Setup adds the PostgreSQLGrant controller to mgr.
func Setup(mgr ctrl.Manager, c config.Config) error {
	kube := mgr.GetClient()
	drifts := drift.Recorder{Kind: v1alpha1.PostgreSQLGrantKind, Events: event.NewAPIRecorder(mgr.GetEventRecorderFor(managed.ControllerName(v1alpha1.PostgreSQLGrantGroupKind)))} //nolint:staticcheck // crossplane-runtime's recorder takes record.EventRecorder.
	drifts.Declare("privileges", "member", "withAdminOption")
	return oninstance.Setup(mgr, c, oninstance.Kind[*v1alpha1.PostgreSQLGrant]{
		GroupVersionKind: v1alpha1.PostgreSQLGrantGroupVersionKind,
		New:              func() *v1alpha1.PostgreSQLGrant { return &v1alpha1.PostgreSQLGrant{} },
		NewList:          func() resource.ManagedList { return &v1alpha1.PostgreSQLGrantList{} },
		External: func(conn *oninstance.Connection) managed.TypedExternalClient[*v1alpha1.PostgreSQLGrant] {
			return &external{kube: kube, conn: conn, drift: drifts}
		},
		Options: []managed.ReconcilerOption{
			// A grant has no name of its own in PostgreSQL.
			managed.WithInitializers(),
			managed.WithReferenceResolver(managed.ReferenceResolverFn(reference.SelectorResolver(kube, func(g *v1alpha1.PostgreSQLGrant) (string, string, *v1alpha1.RoleSelector, **v1alpha1.LocalReference) {
				return g.GetNamespace(), g.Spec.InstanceRef.Name, g.Spec.ForProvider.RoleSelector, &g.Spec.ForProvider.RoleRef
			}))),
		},
		Refs:   references,
		WakeOn: []client.Object{&v1alpha1.PostgreSQLRole{}, &v1alpha1.PostgreSQLDatabase{}, &v1alpha1.PostgreSQLSchema{}},
	})
}

// references are what a PostgreSQLGrant refers to.
func references(o client.Object) []reference.Ref {
	g, ok := o.(*v1alpha1.PostgreSQLGrant)
	if !ok {
		return nil
	}
	p := g.Spec.ForProvider
	return reference.Collect(
		reference.RefTo(v1alpha1.PostgreSQLRoleKind, p.RoleRef), reference.NamedAs(v1alpha1.PostgreSQLRoleKind, p.Role),
		reference.RefTo(v1alpha1.PostgreSQLRoleKind, p.MemberOfRef), reference.NamedAs(v1alpha1.PostgreSQLRoleKind, p.MemberOf),
		reference.RefTo(v1alpha1.PostgreSQLDatabaseKind, p.DatabaseRef), reference.NamedAs(v1alpha1.PostgreSQLDatabaseKind, p.Database),
		reference.RefTo(v1alpha1.PostgreSQLSchemaKind, p.SchemaRef), reference.NamedAs(v1alpha1.PostgreSQLSchemaKind, p.Schema),
	)
}

// external observes once per reconcile and keeps what it found for
// Create, Update and Delete, which run right after in the same reconcile.
type external struct {
	kube client.Client
	conn *oninstance.Connection
	// drift reports changes made to the grant on the server.
	drift drift.Recorder
	// seen is what this reconcile's Observe found, nil until it has run:
	// Create, Update and Delete act on it and on nothing else kept
	// between calls. crossplane-runtime uses an external client for one
	// reconcile only.
	seen reconciler.Seen[grantObservation]
}

// A grantObservation is what Observe found and decided, for the Create,
// Update or Delete of the same reconcile.
type grantObservation struct {
	// status is status.atProvider as Observe left it. The managed
	// reconciler may refresh the resource from the API server between
	// Observe and Create (to record that a create is pending), which
	// resets the status to the stored one: Create, Update and Delete start
	// from this copy instead.
	status v1alpha1.PostgreSQLGrantObservation
	// pool is where the grant's statements run: the target database's.
	pool postgres.DB
	// For privileges:
	target  postgres.GrantTarget
	want    postgres.PrivilegeWant
	objects []postgres.ObservedObject // The objects the spec names.
	removed []postgres.ObservedObject // Objects unlisted since granted.
	plan    postgres.PrivilegePlan
	grant   *postgres.ObservedGrant
	// For memberships:
	membership *postgres.ObservedMembership
	stmts      []string
}

var objectKinds = map[v1alpha1.GrantObjectType]postgres.ObjectKind{
	v1alpha1.GrantObjectDatabase:   postgres.KindDatabase,
	v1alpha1.GrantObjectSchema:     postgres.KindSchema,
	v1alpha1.GrantObjectTable:      postgres.KindTable,
	v1alpha1.GrantObjectSequence:   postgres.KindSequence,
	v1alpha1.GrantObjectFunction:   postgres.KindFunction,
	v1alpha1.GrantObjectTablespace: postgres.KindTablespace,
}

// names resolves the grantee and the target into status.atProvider: from
// the spec while the grant lives, from what was recorded once it is being
// deleted (a referenced resource may be gone by then). It reports false
// when a deleted grant never recorded them: nothing was granted.
func (e *external) names(ctx context.Context, mg *v1alpha1.PostgreSQLGrant) (bool, error) {
	ap := &mg.Status.AtProvider
	if meta.WasDeleted(mg) {
		return ap.Role != "", nil
	}
	p := mg.Spec.ForProvider
	r := reference.Resolver{Kube: e.kube, Namespace: mg.GetNamespace(), Instance: mg.Spec.InstanceRef.Name}
	if p.Role == nil && p.RoleRef == nil {
		return false, errors.New(privilege.ErrNoRoleSelected)
	}
	if p.ObjectType != v1alpha1.GrantObjectMembership && p.ObjectType != v1alpha1.GrantObjectTablespace {
		if err := r.AwaitTarget(ctx, p.DatabaseRef, p.SchemaRef); err != nil {
			return false, err
		}
	}
	role, err := r.Role(ctx, "spec.forProvider.roleRef", p.Role, p.RoleRef)
	if err != nil {
		return false, err
	}
	var db, schema, group, tablespace string
	switch p.ObjectType {
	case v1alpha1.GrantObjectMembership:
		if group, err = r.Role(ctx, "spec.forProvider.memberOfRef", p.MemberOf, p.MemberOfRef); err != nil {
			return false, err
		}
	case v1alpha1.GrantObjectTablespace:
		if p.Tablespace == nil {
			return false, errors.New("spec.forProvider.tablespace is required for objectType Tablespace")
		}
		tablespace = *p.Tablespace
	default:
		if db, err = r.Database(ctx, "spec.forProvider.databaseRef", p.Database, p.DatabaseRef); err != nil {
			return false, err
		}
		if schema, err = r.Schema(ctx, "spec.forProvider.schemaRef", db, p.Schema, p.SchemaRef); err != nil {
			return false, err
		}
	}
	ap.Role, ap.Database, ap.Schema, ap.MemberOf, ap.Tablespace = role, db, schema, group, tablespace
	return true, nil
}

func (e *external) Observe(ctx context.Context, mg *v1alpha1.PostgreSQLGrant) (managed.ExternalObservation, error) {
	e.seen.Forget()
	ok, err := e.names(ctx, mg)
	if err != nil || !ok {
		return managed.ExternalObservation{}, err
	}
	o := &grantObservation{}
	observe := e.observePrivileges
	if mg.Spec.ForProvider.ObjectType == v1alpha1.GrantObjectMembership {
		observe = e.observeMembership
	}
	obs, err := observe(ctx, mg, o)
	o.status = *mg.Status.AtProvider.DeepCopy()
	e.seen.Keep(o)
	return obs, err
}

// observation is what this reconcile's Observe found, with the status it
// left restored on mg.
func (e *external) observation(mg *v1alpha1.PostgreSQLGrant) (*grantObservation, error) {
	o, err := e.seen.Get()
	if err != nil {
		return nil, err
	}
	mg.Status.AtProvider = *o.status.DeepCopy()
	return o, nil
}

// prepare sets the target and the pool the grant's statements run on.
func (e *external) prepare(ctx context.Context, mg *v1alpha1.PostgreSQLGrant, o *grantObservation) error {
	p, ap := mg.Spec.ForProvider, &mg.Status.AtProvider
	o.target = postgres.GrantTarget{
		Kind: objectKinds[p.ObjectType], Database: ap.Database, Schema: ap.Schema, Tablespace: ap.Tablespace,
		AllInSchema: p.AllInSchema != nil && *p.AllInSchema,
		// Objects removed from the spec are observed too, to revoke there.
		Objects: union(p.Objects, ap.AppliedObjects),
	}
	// Database privileges can be granted from any database; the others
	// only from the target's own. Either way the namespace must be one
	// that may use the database before anything of it is read.
	if o.target.Kind == postgres.KindTablespace {
		// Any database serves; only a tablespace the Instance offers is
		// read (a grant being deleted revokes what it granted wherever).
		o.pool = e.conn.Pool
		if r := boundary.PolicyOf(e.conn.Instance).Tablespace("spec.forProvider.tablespace", ap.Tablespace); r != nil && !meta.WasDeleted(mg) {
			return boundary.Refuse(mg, r)
		}
		return nil
	}
	db := boundary.Named{Field: boundary.Field("database", p.Database != nil), Name: ap.Database}
	if o.target.Kind == postgres.KindDatabase {
		o.pool = e.conn.Pool
		return e.conn.MayUse(ctx, mg, db)
	}
	var err error
	o.pool, err = e.conn.Enter(ctx, mg, db)
	return err
}

// missingParent names what a grant waits for when the observation found
// no grantee or no database/schema, "" when both exist.
func (o *grantObservation) missingParent(ap v1alpha1.PostgreSQLGrantObservation, got *postgres.ObservedGrant) string {
	switch {
	case !got.RoleExists:
		return fmt.Sprintf("role %q", ap.Role)
	case got.ParentExists:
		return ""
	case o.target.Kind == postgres.KindDatabase:
		return fmt.Sprintf("database %q", ap.Database)
	case o.target.Kind == postgres.KindTablespace:
		return fmt.Sprintf("tablespace %q", ap.Tablespace)
	default:
		return fmt.Sprintf("schema %q in database %q", ap.Schema, ap.Database)
	}
}

// split sorts the observed objects into those the spec names (all of them
// for a database, a schema or everything in a schema) and those unlisted
// since the grant granted on them.
func (o *grantObservation) split(listed []string, objects []postgres.ObservedObject) {
	o.objects, o.removed = nil, nil
	single := o.target.Kind == postgres.KindDatabase || o.target.Kind == postgres.KindSchema || o.target.Kind == postgres.KindTablespace
	for _, obj := range objects {
		if o.target.AllInSchema || single || slices.Contains(listed, obj.Name) {
			o.objects = append(o.objects, obj)
		} else {
			o.removed = append(o.removed, obj)
		}
	}
}

func (e *external) observePrivileges(ctx context.Context, mg *v1alpha1.PostgreSQLGrant, o *grantObservation) (managed.ExternalObservation, error) {
	p, ap := mg.Spec.ForProvider, &mg.Status.AtProvider
	if err := checkSystemSchema(mg); err != nil {
		return managed.ExternalObservation{}, err
	}
	var got *postgres.ObservedGrant
	var system string
	err := e.prepare(ctx, mg, o)
	if err == nil {
		got, system, err = postgres.ObserveGrant(ctx, o.pool, ap.Role, o.target)
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
	if what := o.missingParent(*ap, got); what != "" {
		return privilege.Absent(ctx, mg, e.conn, what)
	}
	privileges, unsupported := postgres.ExpandPrivileges(o.target.Kind, got.ServerVersion, privilege.Strings(p.Privileges))
	if len(unsupported) > 0 && !meta.WasDeleted(mg) {
		return managed.ExternalObservation{}, privilege.Unsupported(mg, got.ServerVersion, unsupported, "a "+strings.ToLower(string(p.ObjectType)))
	}
	o.split(p.Objects, got.Objects)
	o.grant = got
	o.want = postgres.PrivilegeWant{
		Privileges: privileges, GrantOption: p.WithGrantOption != nil && *p.WithGrantOption,
		Applied: ap.AppliedPrivileges, AppliedGrantOption: ap.AppliedGrantOption,
	}
	held := heldOf(o.objects)
	ap.Privileges = postgres.HeldByAll(privileges, o.want.GrantOption, held)
	mg.Status.ObservedGeneration = mg.GetGeneration()

	if meta.WasDeleted(mg) {
		stmts := o.deleteStatements(ap)
		if management.Deletes(mg) {
			pending.Set(mg, &ap.Plan, v1alpha1.PlanDelete, stmts)
		}
		return managed.ExternalObservation{ResourceExists: len(stmts) > 0}, nil
	}
	if missing := intersect(got.Missing, p.Objects); len(missing) > 0 {
		msg := fmt.Sprintf("waiting for %s %s to exist in schema %q of database %q", strings.ToLower(string(p.ObjectType)), strings.Join(missing, ", "), ap.Schema, ap.Database)
		mg.SetConditions(v1alpha1.NotReady(v1alpha1.ReasonNotHeld, msg))
		return managed.ExternalObservation{}, errors.New(msg)
	}
	found := drift.Fields{"privileges": strings.Join(ap.Privileges, ",")}
	if management.ObserveOnly(mg) {
		mg.SetConditions(v1alpha1.ObserveOnly(fmt.Sprintf("the privileges of role %q (held: %s)", ap.Role, privilege.OrNone(ap.Privileges))))
		e.drifted(mg, found, true)
		// The dry run: what widening the policies would grant.
		o.plan = postgres.PlanPrivileges(o.want, held)
		stmts := o.statements(ap.Role, ap.AppliedPrivileges)
		pending.Set(mg, &ap.Plan, v1alpha1.PlanUpdate, stmts)
		return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: len(stmts) == 0}, nil
	}
	obs := e.plan(mg, o, held, len(privileges))
	action := v1alpha1.PlanUpdate
	if !obs.ResourceExists {
		action = v1alpha1.PlanCreate
	}
	pending.Set(mg, &ap.Plan, action, o.statements(ap.Role, ap.AppliedPrivileges))
	e.drifted(mg, found, obs.ResourceUpToDate)
	return e.guard(ctx, mg, obs)
}

// deleteStatements are what Delete sends: the revocation of what the
// grant gave (ap's applied privileges, membership or admin option) and
// the grantee still holds.
func (o *grantObservation) deleteStatements(ap *v1alpha1.PostgreSQLGrantObservation) []string {
	if o.membership != nil {
		switch {
		case ap.AppliedMembership:
			return []string{postgres.RevokeMembershipStatement(ap.Role, ap.MemberOf)}
		case ap.AppliedGrantOption && o.membership.Admin:
			return []string{"REVOKE ADMIN OPTION FOR " + postgres.QuoteIdentifier(ap.MemberOf) + " FROM " + postgres.QuoteIdentifier(ap.Role)}
		}
		return nil
	}
	all := append(slices.Clone(o.objects), o.removed...)
	if revoke := privilege.Revocable(ap.AppliedPrivileges, heldOf(all)); len(revoke) > 0 {
		return []string{postgres.RevokeStatement(ap.Role, o.target, refsOf(all), revoke, false)}
	}
	return nil
}

// statements are what Update sends for the privileges o found: grants
// and revocations on the listed objects, then the revocation of what the
// grant gave (applied) on objects no longer listed.
func (o *grantObservation) statements(role string, applied []string) []string {
	stmts := postgres.PlanStatements(role, o.target, o.objects, o.plan, o.want.GrantOption)
	if revoke := privilege.Revocable(applied, heldOf(o.removed)); len(revoke) > 0 {
		stmts = append(stmts, postgres.RevokeStatement(role, postgres.GrantTarget{Kind: o.target.Kind, Schema: o.target.Schema}, refsOf(o.removed), revoke, false))
	}
	return stmts
}

// plan decides what a managed grant needs, from what it holds (held) of
// its wanted privileges (of which there are wanted): the plan, the Ready
// condition and whether anything is to be done.
func (e *external) plan(mg *v1alpha1.PostgreSQLGrant, o *grantObservation, held []postgres.Held, wanted int) managed.ExternalObservation {
	ap := &mg.Status.AtProvider
	o.plan = postgres.PlanPrivileges(o.want, held)
	removedHeld := len(privilege.Revocable(ap.AppliedPrivileges, heldOf(o.removed))) > 0
	// A grant on everything in an empty schema holds: there is nothing
	// to grant on until a first object appears.
	empty := len(o.objects) == 0 && o.target.AllInSchema
	if empty || len(o.objects) > 0 && len(ap.Privileges) == wanted {
		mg.SetConditions(xpv2.Available())
	} else {
		mg.SetConditions(v1alpha1.NotReady(v1alpha1.ReasonNotHeld, fmt.Sprintf("role %q lacks %s of the listed privileges; granting", ap.Role, privilege.OrNone(o.plan.Grant))))
	}
	exists := empty || len(ap.AppliedPrivileges) > 0 || len(ap.Privileges) > 0
	return managed.ExternalObservation{ResourceExists: exists, ResourceUpToDate: o.plan.Empty() && !removedHeld}
}

// guard lets a grant that would change something act only in a database
// managed from its own namespace (or one the Instance's policy allows),
// checked against the database's ownership marker now.
func (e *external) guard(ctx context.Context, mg *v1alpha1.PostgreSQLGrant, o managed.ExternalObservation) (managed.ExternalObservation, error) {
	if o.ResourceUpToDate || meta.WasDeleted(mg) {
		return o, nil
	}
	db := boundary.Named{Field: boundary.Field("database", mg.Spec.ForProvider.Database != nil), Name: mg.Status.AtProvider.Database}
	if err := privilege.Checker(e.kube, e.conn).Check(ctx, mg, db); err != nil {
		return managed.ExternalObservation{}, err
	}
	return o, nil
}

// checkSystemSchema refuses a grant on the system catalogs (deleting one
// revokes what it granted, wherever that was).
func checkSystemSchema(mg *v1alpha1.PostgreSQLGrant) error {
	if meta.WasDeleted(mg) {
		return nil
	}
	if r := boundary.SystemSchema(boundary.Field("schema", mg.Spec.ForProvider.Schema != nil), mg.Status.AtProvider.Schema); r != nil {
		return boundary.Refuse(mg, r)
	}
	return nil
}

func (e *external) Create(ctx context.Context, mg *v1alpha1.PostgreSQLGrant) (managed.ExternalCreation, error) {
	_, err := e.Update(ctx, mg)
	return managed.ExternalCreation{}, err
}

func (e *external) Update(ctx context.Context, mg *v1alpha1.PostgreSQLGrant) (managed.ExternalUpdate, error) {
	o, err := e.observation(mg)
	if err != nil {
		return managed.ExternalUpdate{}, err
	}
	if mg.Spec.ForProvider.ObjectType == v1alpha1.GrantObjectMembership {
		return managed.ExternalUpdate{}, e.updateMembership(ctx, mg, o)
	}
	ap := &mg.Status.AtProvider
	stmts := o.statements(ap.Role, ap.AppliedPrivileges)
	// Record what is about to be granted before granting it, so that a
	// crash in between never leaves a privilege this grant gave that it
	// does not know to revoke.
	ap.AppliedPrivileges, ap.AppliedGrantOption = o.want.Intent(o.plan)
	ap.AppliedObjects = union(ap.AppliedObjects, mg.Spec.ForProvider.Objects)
	if err := e.kube.Status().Update(ctx, mg); err != nil {
		return managed.ExternalUpdate{}, errors.Wrap(err, privilege.ErrIntent)
	}
	if err := e.asOwners(ctx, o, stmts); err != nil {
		return managed.ExternalUpdate{}, errors.Wrap(err, privilege.ErrApply)
	}
	ap.AppliedPrivileges, ap.AppliedGrantOption = o.want.After(o.plan)
	ap.AppliedObjects = slices.Sorted(slices.Values(mg.Spec.ForProvider.Objects))
	ap.Privileges = o.want.Privileges
	mg.SetConditions(xpv2.Available())
	pending.Sent(mg, &ap.Plan)
	return managed.ExternalUpdate{}, nil
}

func (e *external) Delete(ctx context.Context, mg *v1alpha1.PostgreSQLGrant) (managed.ExternalDelete, error) {
	mg.SetConditions(xpv2.Deleting())
	o, err := e.observation(mg)
	if err != nil {
		return managed.ExternalDelete{}, err
	}
	ap := &mg.Status.AtProvider
	stmts := o.deleteStatements(ap)
	if mg.Spec.ForProvider.ObjectType != v1alpha1.GrantObjectMembership {
		if err := e.asOwners(ctx, o, stmts); err != nil {
			return managed.ExternalDelete{}, errors.Wrap(err, privilege.ErrRevoke)
		}
		stmts = nil
	}
	if err := privilege.ExecAll(ctx, o.pool, stmts); err != nil {
		return managed.ExternalDelete{}, errors.Wrap(err, privilege.ErrRevoke)
	}
	ap.AppliedPrivileges, ap.AppliedGrantOption, ap.AppliedMembership = nil, false, false
	return managed.ExternalDelete{}, nil
}

func (e *external) Disconnect(context.Context) error { return nil }

// asOwners runs privilege statements with the privileges of the objects'
// owners and of their schema's, which GRANT and REVOKE ask of a
// non-superuser admin (see postgres.ActingAs): held for the statements
// alone.
func (e *external) asOwners(ctx context.Context, o *grantObservation, stmts []string) error {
	if len(stmts) == 0 {
		return nil
	}
	var needs []postgres.RoleNeed
	if o.grant != nil {
		needs = o.grant.Owners(append(slices.Clone(o.objects), o.removed...))
	}
	return postgres.ActingAs(ctx, o.pool, needs, func() error { return privilege.ExecAll(ctx, o.pool, stmts) })
}

// checkGroupNotOthers refuses, before a membership is observed, a group
// role another namespace manages: whose members it has is that
// namespace's to read, whatever this grant's policies. A grant being
// deleted lets go of what it granted.
func (e *external) checkGroupNotOthers(ctx context.Context, mg *v1alpha1.PostgreSQLGrant) error {
	if meta.WasDeleted(mg) {
		return nil
	}
	group := boundary.Named{Field: boundary.Field("memberOf", mg.Spec.ForProvider.MemberOf != nil), Name: mg.Status.AtProvider.MemberOf}
	return privilege.Checker(e.kube, e.conn).CheckNotOthers(ctx, mg, group)
}

func (e *external) observeMembership(ctx context.Context, mg *v1alpha1.PostgreSQLGrant, o *grantObservation) (managed.ExternalObservation, error) {
	ap := &mg.Status.AtProvider
	o.pool = e.conn.Pool
	if err := e.checkGroupNotOthers(ctx, mg); err != nil {
		return managed.ExternalObservation{}, err
	}
	got, system, err := postgres.ObserveMembership(ctx, o.pool, ap.Role, ap.MemberOf)
	if err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, privilege.ErrObserve)
	}
	if err := oninstance.Bind(mg, e.conn.Instance, system, &ap.InstanceUID, &ap.SystemIdentifier); err != nil {
		return managed.ExternalObservation{}, err
	}
	o.membership = got
	if !got.RoleExists {
		return privilege.Absent(ctx, mg, e.conn, fmt.Sprintf("role %q", ap.Role))
	}
	if !got.GroupExists {
		return privilege.Absent(ctx, mg, e.conn, fmt.Sprintf("role %q", ap.MemberOf))
	}
	mg.Status.ObservedGeneration = mg.GetGeneration()
	if meta.WasDeleted(mg) {
		if management.Deletes(mg) {
			pending.Set(mg, &ap.Plan, v1alpha1.PlanDelete, o.deleteStatements(ap))
		}
		return managed.ExternalObservation{ResourceExists: got.Member && (ap.AppliedMembership || ap.AppliedGrantOption && got.Admin)}, nil
	}
	found := drift.Fields{"member": strconv.FormatBool(got.Member), "withAdminOption": strconv.FormatBool(got.Admin)}
	want := e.wantMembership(mg, got)
	o.stmts, err = postgres.MembershipStatements(ap.Role, ap.MemberOf, want, got.Membership, ap.AppliedGrantOption, got.ServerVersion)
	if err != nil {
		// Observed read-only, the membership is still reported.
		mg.SetConditions(v1alpha1.NotReady(v1alpha1.ReasonUnsupported, err.Error()))
		if !management.ObserveOnly(mg) {
			return managed.ExternalObservation{}, err
		}
	}
	action := v1alpha1.PlanUpdate
	if !got.Member {
		action = v1alpha1.PlanCreate
	}
	if err == nil {
		pending.Set(mg, &ap.Plan, action, o.stmts)
	}
	if management.ObserveOnly(mg) {
		mg.SetConditions(v1alpha1.ObserveOnly(fmt.Sprintf("the membership of role %q in %q (member: %t)", ap.Role, ap.MemberOf, got.Member)))
		e.drifted(mg, found, true)
		return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: len(o.stmts) == 0}, nil
	}
	if len(o.stmts) > 0 {
		// Checked before any grant, against the catalog as it is now.
		if err := e.checkMembership(ctx, mg, want); err != nil {
			return managed.ExternalObservation{}, err
		}
	}
	if len(o.stmts) == 0 {
		mg.SetConditions(xpv2.Available())
	} else {
		mg.SetConditions(v1alpha1.NotReady(v1alpha1.ReasonNotHeld, fmt.Sprintf("the membership of role %q in %q differs from the spec; granting", ap.Role, ap.MemberOf)))
	}
	e.drifted(mg, found, len(o.stmts) == 0)
	return managed.ExternalObservation{ResourceExists: got.Member, ResourceUpToDate: len(o.stmts) == 0}, nil
}

// wantMembership is the membership mg asks for, given the one observed. A
// role the policy shares with every namespace is joined for its
// privileges, not its name to act under: a new membership that leaves SET
// to the server is granted without it where the server can withhold it
// (boundary.Policy.WithholdsSet). One that exists keeps its options: an
// adopted server's plans stay empty, and SET on it was someone's choice.
func (e *external) wantMembership(mg *v1alpha1.PostgreSQLGrant, got *postgres.ObservedMembership) postgres.Membership {
	p := mg.Spec.ForProvider
	want := postgres.Membership{Member: true, Admin: p.WithAdminOption != nil && *p.WithAdminOption, Inherit: p.Inherit, Set: p.Set}
	if want.Set == nil && !got.Member && boundary.PolicyOf(e.conn.Instance).WithholdsSet(mg.Status.AtProvider.MemberOf, got.ServerVersion) {
		want.Set = ptr.To(false)
	}
	return want
}

// checkMembership refuses the membership want of mg across the boundary:
// options the policy does not allow with the group, then the group itself.
func (e *external) checkMembership(ctx context.Context, mg *v1alpha1.PostgreSQLGrant, want postgres.Membership) error {
	p, ap := mg.Spec.ForProvider, mg.Status.AtProvider
	if r := boundary.PolicyOf(e.conn.Instance).MembershipOptions(ap.MemberOf, p.Set, "spec.forProvider.set", want.Admin, "spec.forProvider.withAdminOption"); r != nil {
		return boundary.Refuse(mg, r)
	}
	group := boundary.Named{Field: boundary.Field("memberOf", p.MemberOf != nil), Name: ap.MemberOf}
	return privilege.Checker(e.kube, e.conn).Check(ctx, mg, boundary.Named{}, group)
}

// drifted tells the drift recorder what an observation found.
func (e *external) drifted(mg *v1alpha1.PostgreSQLGrant, found drift.Fields, inSync bool) {
	e.drift.Observe(mg, &mg.Status.AtProvider.DriftStatus, drift.Observation{Found: found, InSync: inSync, ObserveOnly: management.ObserveOnly(mg)})
}

func (e *external) updateMembership(ctx context.Context, mg *v1alpha1.PostgreSQLGrant, o *grantObservation) error {
	ap, p := &mg.Status.AtProvider, mg.Spec.ForProvider
	admin := p.WithAdminOption != nil && *p.WithAdminOption
	ap.AppliedMembership = ap.AppliedMembership || !o.membership.Member
	ap.AppliedGrantOption = ap.AppliedGrantOption || admin && !o.membership.Admin
	if err := e.kube.Status().Update(ctx, mg); err != nil {
		return errors.Wrap(err, privilege.ErrIntent)
	}
	if len(o.stmts) > 0 {
		// The boundary's check again, read in the transaction that
		// grants, under the provider's lock of the group's name: the role
		// it found is the role granted (postgres.ExecGuarded).
		group := boundary.Named{Field: boundary.Field("memberOf", p.MemberOf != nil), Name: ap.MemberOf}
		unlock, err := e.conn.LockRoleNames(ctx, []string{ap.MemberOf})
		if err != nil {
			return errors.Wrap(err, privilege.ErrApply)
		}
		err = postgres.ExecGuarded(ctx, o.pool, func(q postgres.TxQuerier) error {
			c := privilege.Checker(e.kube, e.conn)
			c.Q = q
			return c.Check(ctx, mg, boundary.Named{}, group)
		}, o.stmts)
		unlock()
		if err != nil {
			return errors.Wrap(err, privilege.ErrApply)
		}
	}
	ap.AppliedGrantOption = ap.AppliedGrantOption && admin
	mg.SetConditions(xpv2.Available())
	pending.Sent(mg, &ap.Plan)
	return nil
}

func heldOf(objs []postgres.ObservedObject) []postgres.Held {
	out := make([]postgres.Held, len(objs))
	for i, o := range objs {
		out[i] = o.Held
	}
	return out
}

func refsOf(objs []postgres.ObservedObject) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.Ref
	}
	return out
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

func intersect(a, b []string) []string {
	var out []string
	for _, s := range a {
		if slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}
