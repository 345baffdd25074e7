// Package binding is the binding protocol between a tenant's request for
// a database (a PostgreSQLBinding) and the PostgreSQLDatabases of its
// namespace, in two controllers:
//
//   - the binder (binder.go) is the one writer of a database's binding
//     (status.binding and the binding finalizer): which binding, if any, a
//     database is bound to, decided from the database and the bindings
//     alone, never from the server;
//   - the binding controller (this file) provisions a database when the
//     binding asks for one (a PostgreSQLDatabase reserved for it and its
//     NOLOGIN owner role, neither owned by the tenant, so both outlive it)
//     and mirrors the binder's decision into the binding's status.
//
// The database controller only reads the decision: a Bound database's
// deletion is held until the binder releases it.
package binding

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/config"
	"github.com/ayatori/provider-postgresql/internal/controller/oninstance"
)

// maxIdentifier is PostgreSQL's identifier length.
const maxIdentifier = 63

// ownerSuffix names a provisioned database's owner role after it.
const ownerSuffix = "_owner"

// errGetDatabase: the binding controller and the binder read the database
// a binding names.
const errGetDatabase = "cannot get the PostgreSQLDatabase"

// OwnerRoleName is the owner role of a provisioned database db: db_owner,
// shortened to fit an identifier.
func OwnerRoleName(db string) string {
	if len(db) > maxIdentifier-len(ownerSuffix) {
		db = db[:maxIdentifier-len(ownerSuffix)]
	}
	return db + ownerSuffix
}

// ownerRoleObject is the name of the PostgreSQLRole that owns the
// provisioned PostgreSQLDatabase named db.
func ownerRoleObject(db string) string {
	return db + "-owner"
}

// Setup adds the PostgreSQLBinding controller to mgr.
func Setup(mgr ctrl.Manager, c config.Config) error {
	name := "binding/" + strings.ToLower(v1alpha1.PostgreSQLBindingKind)
	r := &reconciler{kube: mgr.GetClient(), record: event.NewAPIRecorder(mgr.GetEventRecorderFor(name))} //nolint:staticcheck // crossplane-runtime's recorder takes record.EventRecorder.
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		WithOptions(c.ForControllerRuntime()).
		For(&v1alpha1.PostgreSQLBinding{}).
		Watches(&v1alpha1.PostgreSQLDatabase{}, handler.EnqueueRequestsFromMapFunc(r.bindingsOf)).
		// A provisioned owner role's plan shows in the binding's.
		Watches(&v1alpha1.PostgreSQLRole{}, handler.EnqueueRequestsFromMapFunc(r.bindingsOfOwnerRole)).
		// A binding waiting for its Instance provisions as soon as it
		// exists; a bound one shows whether the Instance names a
		// credentialVault.
		Watches(&v1alpha1.PostgreSQLInstance{}, handler.EnqueueRequestsFromMapFunc(r.bindingsOn), builder.WithPredicates(oninstance.InstanceChanges())).
		Complete(errors.WithSilentRequeueOnConflict(r))
}

type reconciler struct {
	kube   client.Client
	record event.Recorder
}

// bindingsOf maps a database to the bindings of its namespace that name it.
func (r *reconciler) bindingsOf(ctx context.Context, o client.Object) []reconcile.Request {
	return r.bindingsNaming(ctx, o.GetNamespace(), o.GetName())
}

// bindingsOfOwnerRole maps a role owned by a database (a provisioned
// database's owner role) to the bindings that name that database.
func (r *reconciler) bindingsOfOwnerRole(ctx context.Context, o client.Object) []reconcile.Request {
	var out []reconcile.Request
	for _, ref := range o.GetOwnerReferences() {
		if ref.Kind == v1alpha1.PostgreSQLDatabaseKind && ref.APIVersion == v1alpha1.SchemeGroupVersion.String() {
			out = append(out, r.bindingsNaming(ctx, o.GetNamespace(), ref.Name)...)
		}
	}
	return out
}

// bindingsNaming lists the bindings of namespace ns that name database db.
func (r *reconciler) bindingsNaming(ctx context.Context, ns, db string) []reconcile.Request {
	l := &v1alpha1.PostgreSQLBindingList{}
	if err := r.kube.List(ctx, l, client.InNamespace(ns)); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, b := range l.Items {
		if b.Spec.DatabaseRef.Name == db {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&b)})
		}
	}
	return out
}

// bindingsOn maps an Instance to the bindings that provision on it or
// are bound to a database on it.
func (r *reconciler) bindingsOn(ctx context.Context, o client.Object) []reconcile.Request {
	l := &v1alpha1.PostgreSQLBindingList{}
	if err := r.kube.List(ctx, l, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, b := range l.Items {
		p, d := b.Spec.Provision, b.Status.Database
		if p != nil && p.InstanceRef.Name == o.GetName() || d != nil && d.Instance == o.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&b)})
		}
	}
	return out
}

func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	b := &v1alpha1.PostgreSQLBinding{}
	if err := r.kube.Get(ctx, req.NamespacedName, b); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(errors.Wrap(err, "cannot get the PostgreSQLBinding"))
	}
	if meta.WasDeleted(b) {
		// Nothing to clean up here: the database sees its binding go and
		// is Released.
		return reconcile.Result{}, nil
	}
	db := &v1alpha1.PostgreSQLDatabase{}
	err := r.kube.Get(ctx, client.ObjectKey{Namespace: b.GetNamespace(), Name: b.Spec.DatabaseRef.Name}, db)
	if kerrors.IsNotFound(err) {
		db = nil
	} else if err != nil {
		return reconcile.Result{}, errors.Wrap(err, errGetDatabase)
	}
	if err := r.refer(ctx, b, standsFor(b, db)); err != nil {
		return reconcile.Result{}, err
	}
	switch {
	case db == nil && b.Spec.Provision != nil:
		return reconcile.Result{}, r.provision(ctx, b)
	case db == nil:
		return reconcile.Result{}, r.report(ctx, b, v1alpha1.NotReady(v1alpha1.ReasonDatabaseNotFound,
			fmt.Sprintf("PostgreSQLDatabase %s/%s does not exist: an admin registers it", b.GetNamespace(), b.Spec.DatabaseRef.Name)), nil, nil)
	}
	var plan *v1alpha1.ProvisioningPlan
	if provisionedFor(db, b) {
		owner, refused, err := r.ensureOwnerRole(ctx, b, db)
		if err != nil {
			return reconcile.Result{}, err
		}
		if refused != nil {
			return reconcile.Result{}, r.report(ctx, b, *refused, nil, nil)
		}
		// Before it is Bound too: a database whose creation waits for a
		// misspelt extension is never Bound until the name goes.
		if err := r.syncExtensions(ctx, b, db); err != nil {
			return reconcile.Result{}, err
		}
		// The owner role's statements go first: the database is created
		// owned by it.
		var role *v1alpha1.ProvisioningStep
		if owner != nil {
			role = v1alpha1.StepOf(owner, v1alpha1.PostgreSQLRoleKind)
		}
		plan = v1alpha1.ProvisioningPlanOf(role, v1alpha1.StepOf(db, v1alpha1.PostgreSQLDatabaseKind))
	}
	c, delivered := state(b, db)
	if delivered != nil {
		// Where the tenant's credentials go follows the Instance: through
		// its credentialVault when it names one.
		in := &v1alpha1.PostgreSQLInstance{}
		if err := r.kube.Get(ctx, client.ObjectKey{Name: delivered.Instance}, in); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, errors.Wrapf(err, "cannot get PostgreSQLInstance %q", delivered.Instance)
		}
		delivered.CredentialVault = in.Spec.CredentialVault != nil
	}
	return reconcile.Result{}, r.report(ctx, b, c, delivered, plan)
}

// standsFor is what b stands for, as Crossplane's tools follow it: db
// once it is bound to b or provisioned for it, and db's owner role when db
// names a PostgreSQLRole as its owner. A database bound to another
// binding is not b's to show.
func standsFor(b *v1alpha1.PostgreSQLBinding, db *v1alpha1.PostgreSQLDatabase) []v1alpha1.ResourceRef {
	if db == nil {
		return nil
	}
	st := db.Status.Binding
	bound := st.Phase == v1alpha1.PhaseBound && st.BoundTo != nil && st.BoundTo.UID == string(b.GetUID())
	if !bound && !provisionedFor(db, b) {
		return nil
	}
	api := v1alpha1.SchemeGroupVersion.String()
	refs := []v1alpha1.ResourceRef{{APIVersion: api, Kind: v1alpha1.PostgreSQLDatabaseKind, Name: db.GetName()}}
	if o := db.Spec.ForProvider.OwnerRef; o != nil {
		refs = append(refs, v1alpha1.ResourceRef{APIVersion: api, Kind: v1alpha1.PostgreSQLRoleKind, Name: o.Name})
	}
	return refs
}

// refer records refs on b's spec.crossplane.resourceRefs when they
// changed. It is one write when a database is bound or provisioned and
// one when it goes: the binding's generation moves with it, and the
// status written next in the same pass observes the new one.
func (r *reconciler) refer(ctx context.Context, b *v1alpha1.PostgreSQLBinding, refs []v1alpha1.ResourceRef) error {
	var had []v1alpha1.ResourceRef
	if b.Spec.Crossplane != nil {
		had = b.Spec.Crossplane.ResourceRefs
	}
	if slices.Equal(had, refs) {
		return nil
	}
	patch := client.MergeFrom(b.DeepCopy())
	if refs == nil {
		b.Spec.Crossplane = nil
	} else {
		b.Spec.Crossplane = &v1alpha1.BindingCrossplane{ResourceRefs: refs}
	}
	return errors.Wrap(client.IgnoreNotFound(r.kube.Patch(ctx, b, patch)), "cannot record what the PostgreSQLBinding stands for (spec.crossplane.resourceRefs)")
}

// provisionedFor reports whether db was provisioned for b: for b's UID,
// or, for a database brought back from a backup and bound again to the
// binding of the name it was provisioned for (whose UID changed with the
// restore), for b's name.
func provisionedFor(db *v1alpha1.PostgreSQLDatabase, b *v1alpha1.PostgreSQLBinding) bool {
	pf := db.Spec.Binding.ProvisionedFor
	if b.Spec.Provision == nil || pf == nil {
		return false
	}
	if pf.UID == string(b.GetUID()) {
		return true
	}
	if pf.Name != b.GetName() {
		return false
	}
	st := db.Status.Binding
	if st.BoundTo != nil {
		return st.Phase == v1alpha1.PhaseBound && st.BoundTo.UID == string(b.GetUID())
	}
	// Restored and not bound again yet: its owner role is made again
	// first, for the database to be observed as its own and then bound.
	r, ok := recordOf(db)
	return ok && r.Phase == v1alpha1.PhaseBound && r.Name == b.GetName() && undecided(db)
}

// state is what b's status says about db: its Ready condition, and what it
// delivers once Bound.
func state(b *v1alpha1.PostgreSQLBinding, db *v1alpha1.PostgreSQLDatabase) (xpv2.Condition, *v1alpha1.BoundDatabase) {
	st := db.Status.Binding
	what := fmt.Sprintf("PostgreSQLDatabase %s/%s", db.GetNamespace(), db.GetName())
	if p := b.Spec.Provision; p != nil && !provisionedFor(db, b) {
		if name := db.DatabaseName(); db.Spec.InstanceRef.Name != p.InstanceRef.Name || name != p.Database {
			return v1alpha1.NotReady(v1alpha1.ReasonMismatch, fmt.Sprintf("%s exists and is database %q on PostgreSQLInstance %q, not database %q on %q as asked; it was not provisioned for this tenant",
				what, name, db.Spec.InstanceRef.Name, p.Database, p.InstanceRef.Name)), nil
		}
	}
	switch {
	case st.Phase == v1alpha1.PhaseBound && st.BoundTo != nil && st.BoundTo.UID == string(b.GetUID()) && st.Reason == v1alpha1.ReasonPrivilegedOwner:
		// Bound, but its owner gained powers after binding: the login,
		// a member of the owner, is taken away until they go.
		return v1alpha1.NotReady(v1alpha1.ReasonPrivilegedOwner, what+" is bound to this tenant but not delivered: "+st.Message), nil
	case st.Phase == v1alpha1.PhaseBound && st.BoundTo != nil && st.BoundTo.UID == string(b.GetUID()):
		d := &v1alpha1.BoundDatabase{
			Name: db.GetName(), UID: string(db.GetUID()), Instance: db.Spec.InstanceRef.Name,
			Database: db.Status.AtProvider.Name, Owner: db.Status.AtProvider.Owner, Extensions: installed(db),
		}
		return xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now(), Reason: v1alpha1.ReasonBound,
			Message: fmt.Sprintf("%s (database %q on PostgreSQLInstance %q) is bound to this tenant", what, d.Database, d.Instance)}, d
	case st.Phase == v1alpha1.PhaseBound && st.BoundTo != nil:
		return v1alpha1.NotReady(v1alpha1.ReasonBoundToAnotherTenant, fmt.Sprintf("%s is bound to another tenant, PostgreSQLTenant %s; a database is delivered to one tenant only", what, st.BoundTo.Tenant)), nil
	case st.Phase == v1alpha1.PhaseReleased:
		return v1alpha1.NotReady(v1alpha1.ReasonReleased, fmt.Sprintf("%s was released by PostgreSQLTenant %s and keeps its data for nobody until an admin re-opens it (spec.binding.reopen)", what, tenantOf(st.BoundTo))), nil
	case st.Phase == v1alpha1.PhaseUnavailable:
		return v1alpha1.NotReady(cmpReason(st.Reason), what+" cannot be delivered: "+st.Message), nil
	default:
		msg := what + " is not bound yet"
		if st.Message != "" {
			msg += ": " + st.Message
		}
		if c := db.GetCondition(xpv2.TypeReady); c.Message != "" && c.Status != corev1.ConditionTrue {
			msg += " (database: " + c.Message + ")"
		}
		return v1alpha1.NotReady(v1alpha1.ReasonProvisioning, msg), nil
	}
}

func tenantOf(r *v1alpha1.BindingReference) string {
	if r == nil {
		return "(unknown)"
	}
	return r.Tenant
}

func cmpReason(r xpv2.ConditionReason) xpv2.ConditionReason {
	if r == "" {
		return "Unavailable"
	}
	return r
}

// report writes b's status when it changed, with an event when it becomes
// or stops being Bound. plan is what its provisioned resources have
// pending.
func (r *reconciler) report(ctx context.Context, b *v1alpha1.PostgreSQLBinding, c xpv2.Condition, d *v1alpha1.BoundDatabase, plan *v1alpha1.ProvisioningPlan) error {
	phase := v1alpha1.BindingPending
	if d != nil {
		phase = v1alpha1.BindingBound
	}
	old := b.GetCondition(xpv2.TypeReady)
	same := b.Status.Phase == phase && old.Equal(c) && b.Status.ObservedGeneration == b.GetGeneration() &&
		equality.Semantic.DeepEqual(b.Status.Database, d) && equality.Semantic.DeepEqual(b.Status.Plan, plan)
	if same {
		return nil
	}
	wasBound := b.Status.Phase == v1alpha1.BindingBound
	b.Status.Phase, b.Status.Database, b.Status.Plan, b.Status.ObservedGeneration = phase, d, plan, b.GetGeneration()
	b.SetConditions(c)
	if err := r.kube.Status().Update(ctx, b); kerrors.IsNotFound(err) {
		// A binding deleted meanwhile (its tenant went) has no status to
		// keep, nor anyone to tell: not an error to log and retry.
		return nil
	} else if err != nil {
		return errors.Wrap(err, "cannot update the PostgreSQLBinding's status")
	}
	switch {
	case d != nil && !wasBound:
		r.record.Event(b, event.Normal("Bound", c.Message))
	case d == nil && wasBound:
		r.record.Event(b, event.Warning(event.Reason(c.Reason), errors.New(c.Message)))
	}
	return nil
}

// provision creates the PostgreSQLDatabase b asks for, reserved for b,
// and then its owner role, in the same pass (the role refers to the
// database as its owner, so it goes when the database's record goes).
// Neither is owned by the tenant: both outlive it.
func (r *reconciler) provision(ctx context.Context, b *v1alpha1.PostgreSQLBinding) error {
	p := b.Spec.Provision
	name := b.Spec.DatabaseRef.Name
	// Nothing new is provisioned on an Instance that is missing or being
	// deleted: it would only hold the Instance's deletion.
	in := &v1alpha1.PostgreSQLInstance{}
	if err := r.kube.Get(ctx, client.ObjectKey{Name: p.InstanceRef.Name}, in); err != nil {
		if !kerrors.IsNotFound(err) {
			return errors.Wrapf(err, "cannot get PostgreSQLInstance %q", p.InstanceRef.Name)
		}
		return r.report(ctx, b, v1alpha1.NotReady(v1alpha1.ReasonProvisioning, fmt.Sprintf("PostgreSQLInstance %q does not exist; nothing is provisioned", p.InstanceRef.Name)), nil, nil)
	}
	if meta.WasDeleted(in) {
		return r.report(ctx, b, v1alpha1.NotReady(v1alpha1.ReasonProvisioning, fmt.Sprintf("PostgreSQLInstance %q is being deleted: nothing new is provisioned on it", in.GetName())), nil, nil)
	}
	db := &v1alpha1.PostgreSQLDatabase{
		ObjectMeta: metav1.ObjectMeta{Namespace: b.GetNamespace(), Name: name},
		Spec: v1alpha1.PostgreSQLDatabaseSpec{
			ManagementPolicies: p.ManagementPolicies,
			InstanceRef:        p.InstanceRef,
			ForProvider: v1alpha1.PostgreSQLDatabaseParameters{
				Name:     ptr.To(p.Database),
				OwnerRef: &v1alpha1.LocalReference{Name: ownerRoleObject(name)},
				// Only the tenant's roles connect, not every role on the
				// server.
				RevokePublicPrivileges: true,
				Extensions:             extensions(p.Extensions),
			},
			Binding: v1alpha1.DatabaseBindingPolicy{ProvisionedFor: &v1alpha1.BindingReference{
				Name: b.GetName(), UID: string(b.GetUID()), Tenant: b.GetNamespace() + "/" + b.Spec.Tenant,
			}},
		},
	}
	if err := r.kube.Create(ctx, db); err != nil {
		if kerrors.IsAlreadyExists(err) {
			// Another reconcile got there first; the next one reads it.
			return nil
		}
		return errors.Wrapf(err, "cannot provision PostgreSQLDatabase %s/%s", db.GetNamespace(), db.GetName())
	}
	r.record.Event(b, event.Normal("Provisioned", fmt.Sprintf("provisioned PostgreSQLDatabase %s (database %q on PostgreSQLInstance %q)", db.GetName(), p.Database, p.InstanceRef.Name)))
	// Its owner role in the same pass: the database's create waits for
	// the role, and the role controller starts on it now rather than after
	// the database's first status brings the binding round again.
	if _, refused, err := r.ensureOwnerRole(ctx, b, db); err != nil || refused != nil {
		if err != nil {
			return err
		}
		return r.report(ctx, b, *refused, nil, nil)
	}
	return r.report(ctx, b, v1alpha1.NotReady(v1alpha1.ReasonProvisioning, fmt.Sprintf("provisioning PostgreSQLDatabase %s/%s", db.GetNamespace(), db.GetName())), nil, nil)
}

// ensureOwnerRole returns the owner role of db, provisioned for b, and
// creates it when it is missing (also after a crash between the two
// creates); a role just created is not returned (it has no status yet). A
// role of that name that is not db's is refused: the returned condition
// says so.
func (r *reconciler) ensureOwnerRole(ctx context.Context, b *v1alpha1.PostgreSQLBinding, db *v1alpha1.PostgreSQLDatabase) (*v1alpha1.PostgreSQLRole, *xpv2.Condition, error) {
	name := ownerRoleObject(db.GetName())
	got := &v1alpha1.PostgreSQLRole{}
	err := r.kube.Get(ctx, client.ObjectKey{Namespace: db.GetNamespace(), Name: name}, got)
	if err == nil {
		if restoredOwner(got, db) {
			// Brought back from a backup without its owner reference:
			// the database owns its record again.
			patch := client.MergeFromWithOptions(got.DeepCopy(), client.MergeFromWithOptimisticLock{})
			got.SetOwnerReferences(append(got.GetOwnerReferences(), ownerReference(db)))
			return nil, nil, errors.Wrap(r.kube.Patch(ctx, got, patch), "cannot give the restored owner role back to its database")
		}
		if !ownedBy(got, db) {
			c := v1alpha1.NotReady(v1alpha1.ReasonMismatch, fmt.Sprintf("PostgreSQLRole %s/%s exists and is not the owner role of PostgreSQLDatabase %s; nothing is changed. "+
				"An admin removes or renames it", db.GetNamespace(), name, db.GetName()))
			return nil, &c, nil
		}
		origin := got.GetAnnotations()[v1alpha1.AnnotationProvisionedFor]
		if c := got.Spec.ForProvider.Comment; c != nil && strings.HasPrefix(*c, ownerCommentPrefix) || origin == "" {
			// Roles provisioned before either change: one patch brings
			// them in line.
			patch := client.MergeFromWithOptions(got.DeepCopy(), client.MergeFromWithOptimisticLock{})
			if c := got.Spec.ForProvider.Comment; c != nil && strings.HasPrefix(*c, ownerCommentPrefix) {
				got.Spec.ForProvider.Comment = nil
			}
			meta.AddAnnotations(got, map[string]string{v1alpha1.AnnotationProvisionedFor: db.Spec.Binding.ProvisionedFor.UID})
			return nil, nil, errors.Wrap(r.kube.Patch(ctx, got, patch), "cannot bring the owner role in line (its comment, its origin)")
		}
		return got, nil, nil
	}
	if !kerrors.IsNotFound(err) {
		return nil, nil, errors.Wrap(err, "cannot get the owner role")
	}
	p := b.Spec.Provision
	role := &v1alpha1.PostgreSQLRole{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: db.GetNamespace(), Name: name,
			// The origin its marker is sealed for, the database's.
			Annotations:     map[string]string{v1alpha1.AnnotationProvisionedFor: db.Spec.Binding.ProvisionedFor.UID},
			OwnerReferences: []metav1.OwnerReference{ownerReference(db)},
		},
		Spec: v1alpha1.PostgreSQLRoleSpec{
			ManagementPolicies: p.ManagementPolicies,
			InstanceRef:        p.InstanceRef,
			ForProvider: v1alpha1.PostgreSQLRoleParameters{
				Name: ptr.To(OwnerRoleName(p.Database)), Login: ptr.To(false),
			},
		},
	}
	if err := r.kube.Create(ctx, role); err != nil && !kerrors.IsAlreadyExists(err) {
		return nil, nil, errors.Wrapf(err, "cannot provision the owner role %s/%s", role.GetNamespace(), role.GetName())
	}
	return nil, nil, nil
}

func ownerReference(db *v1alpha1.PostgreSQLDatabase) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: v1alpha1.PostgreSQLDatabaseKind, Name: db.GetName(), UID: db.GetUID()}
}

// restoredOwner reports whether role is db's owner role brought back from
// a backup that dropped its owner reference: it names db's origin and no
// owner at all.
func restoredOwner(role *v1alpha1.PostgreSQLRole, db *v1alpha1.PostgreSQLDatabase) bool {
	pf := db.Spec.Binding.ProvisionedFor
	return len(role.GetOwnerReferences()) == 0 && pf != nil && role.GetAnnotations()[v1alpha1.AnnotationProvisionedFor] == pf.UID
}

// ownedBy reports whether role is the owner role provisioned with db: the
// database owns its record.
func ownedBy(role *v1alpha1.PostgreSQLRole, db *v1alpha1.PostgreSQLDatabase) bool {
	return slices.ContainsFunc(role.GetOwnerReferences(), func(o metav1.OwnerReference) bool { return o.UID == db.GetUID() })
}

// syncExtensions brings the extensions of a binding's provisioned
// database in line with what the binding asks for: it adds those missing,
// and removes those the binding no longer lists that the database never
// installed (a misspelt name the server cannot install). An installed
// extension stays listed whatever the binding says, and none is ever
// uninstalled: the binding's own validation refuses removing one the
// database reported installed, and this covers one installed since.
func (r *reconciler) syncExtensions(ctx context.Context, b *v1alpha1.PostgreSQLBinding, db *v1alpha1.PostgreSQLDatabase) error {
	want, done := b.Spec.Provision.Extensions, installed(db)
	kept := slices.DeleteFunc(slices.Clone(db.Spec.ForProvider.Extensions), func(x v1alpha1.Extension) bool {
		return !slices.Contains(want, x.Name) && !slices.Contains(done, x.Name)
	})
	for _, n := range want {
		if !slices.ContainsFunc(kept, func(x v1alpha1.Extension) bool { return x.Name == n }) {
			kept = append(kept, v1alpha1.Extension{Name: n})
		}
	}
	named := db.Spec.ForProvider.Comment != nil && strings.HasPrefix(*db.Spec.ForProvider.Comment, tenantCommentPrefix)
	if !named && slices.EqualFunc(kept, db.Spec.ForProvider.Extensions, func(a, b v1alpha1.Extension) bool { return a.Name == b.Name }) {
		return nil
	}
	patch := client.MergeFromWithOptions(db.DeepCopy(), client.MergeFromWithOptimisticLock{})
	db.Spec.ForProvider.Extensions = kept
	if named {
		db.Spec.ForProvider.Comment = nil
	}
	return errors.Wrap(r.kube.Patch(ctx, db, patch), "cannot bring the provisioned database in line with its binding")
}

// tenantCommentPrefix and ownerCommentPrefix began the comments earlier
// versions gave a provisioned database ("database of PostgreSQLTenant
// <namespace>/<claim>") and its owner role ("owner of the tenant database
// <name> (PostgreSQLTenant <namespace>/<claim>)"), which every login on
// the server reads (\l+, \du+). They are taken off: a tenant learns
// nothing of another from the shared catalogs.
const (
	tenantCommentPrefix = "database of PostgreSQLTenant "
	ownerCommentPrefix  = "owner of the tenant database "
)

// installed names the extensions db reports installed, of those it lists.
func installed(db *v1alpha1.PostgreSQLDatabase) []string {
	var out []string
	for _, x := range db.Status.AtProvider.Extensions {
		out = append(out, x.Name)
	}
	return out
}

func extensions(names []string) []v1alpha1.Extension {
	var out []v1alpha1.Extension
	for _, n := range names {
		out = append(out, v1alpha1.Extension{Name: n})
	}
	return out
}
