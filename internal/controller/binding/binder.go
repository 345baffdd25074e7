package binding

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/activation"
	"github.com/ayatori/provider-postgresql/internal/controller/config"
	"github.com/ayatori/provider-postgresql/internal/controller/management"
)

// A candidate is a PostgreSQLBinding that asks for a database.
type candidate struct {
	Name, UID, Tenant string
	Created           time.Time
	Deleting          bool
}

// A bindingView is everything that decides a database's binding.
type bindingView struct {
	Policy v1alpha1.DatabaseBindingPolicy
	// Current is the binding recorded in status ("" UID for none), or, on
	// a database with no status.binding at all, the Released binding of
	// its record (AnnotationBindingRecord).
	Current *v1alpha1.BindingReference
	// Restored is, on a database with no status.binding at all, the Bound
	// binding of its record: the database was brought back from a backup
	// and goes back to the binding of that name, and no other.
	Restored *v1alpha1.BindingReference
	// RestoredFrom is the UID of the resource the database succeeded
	// (status.atProvider.restoredFrom), "" when it did not.
	RestoredFrom string
	// Namespace and Name are the PostgreSQLDatabase's, for messages.
	Namespace, Name string
	// Exists: the database exists and is this resource's to manage (its
	// Ready condition is Available).
	Exists bool
	// Blocked says why the database cannot be bound now ("" when it can),
	// with Message saying more.
	Blocked xpv2.ConditionReason
	Message string
	// Deleting: the PostgreSQLDatabase is being deleted.
	Deleting bool
	// Candidates are the bindings of the namespace that name the database.
	Candidates []candidate
}

// restoring reports whether the database was brought back from a backup
// and no decision since settled whose it is: its record says it was
// Bound, or it has no record and no admin has re-opened it.
func (v bindingView) restoring() bool {
	return v.Restored != nil || v.Current == nil && v.RestoredFrom != "" && v.Policy.Reopen != v.RestoredFrom
}

// named is the live candidate called name, nil for none.
func (v bindingView) named(name string) *candidate {
	for i := range v.Candidates {
		if c := &v.Candidates[i]; c.Name == name && !c.Deleting {
			return c
		}
	}
	return nil
}

func (v bindingView) alive(uid string) *candidate {
	for i := range v.Candidates {
		if c := &v.Candidates[i]; c.UID == uid && !c.Deleting {
			return c
		}
	}
	return nil
}

// decide is the binding protocol's one decision, a pure function of what a
// database and the bindings asking for it show: which binding the database
// is bound to, if any, and its phase. It never binds a second binding while
// one is recorded, never lets a released database go to anyone before an
// admin re-opens it, and binds only a database that exists, is managed and
// is not held for any other reason.
func decide(v bindingView) v1alpha1.DatabaseBindingStatus {
	st := v1alpha1.DatabaseBindingStatus{Origin: v1alpha1.OriginImported}
	if v.Policy.ProvisionedFor != nil {
		st.Origin = v1alpha1.OriginProvisioned
	}
	bound := func(ref *v1alpha1.BindingReference) v1alpha1.DatabaseBindingStatus {
		st.Phase, st.BoundTo = v1alpha1.PhaseBound, ref
		st.Message = fmt.Sprintf("bound to PostgreSQLTenant %s (PostgreSQLBinding %s, UID %s)", ref.Tenant, ref.Name, ref.UID)
		return st
	}
	if cur := v.Current; cur != nil {
		if v.alive(cur.UID) != nil {
			st := bound(cur)
			if v.Blocked == v1alpha1.ReasonPrivilegedOwner {
				// The data stays the tenant's, but its access goes: its
				// login is a member of the owner, and with it of what
				// the owner was given since.
				st.Reason = v1alpha1.ReasonPrivilegedOwner
				st.Message += "; nothing is delivered while " + v.Message
			}
			return st
		}
		if v.Policy.Reopen != cur.UID {
			st.Phase, st.BoundTo = v1alpha1.PhaseReleased, cur
			st.Message = fmt.Sprintf("released by PostgreSQLTenant %s (PostgreSQLBinding %s, UID %s): the data is kept and goes to no other tenant. "+
				"An admin re-opens the database by setting spec.binding.reopen to %s (with spec.binding.offered: true), or deletes it", cur.Tenant, cur.Name, cur.UID, cur.UID)
			return st
		}
		// Re-opened by an admin: decided afresh below.
	}
	switch {
	case v.Blocked != "":
		st.Phase, st.Reason, st.Message = v1alpha1.PhaseUnavailable, v.Blocked, v.Message
		return st
	case v.Deleting:
		st.Phase, st.Reason, st.Message = v1alpha1.PhaseUnavailable, "Deleting", "the PostgreSQLDatabase is being deleted"
		return st
	case v.restoring():
		return restored(v, st, bound)
	case !v.Policy.Offered && v.Policy.ProvisionedFor == nil:
		// Neither offered nor provisioned for a tenant: no tenant gets it,
		// whether it exists yet or not. Said at once, it is one record
		// (and one event) for every database a platform team registers,
		// where Provisioning first was two.
		return notOffered(st)
	case !v.Exists:
		st.Phase, st.Message = v1alpha1.PhaseProvisioning, "waiting for the database to exist and be observed"
		return st
	}
	// A provisioned database is reserved for the binding it was
	// provisioned for while that binding lives. One that went before it
	// was ever bound received no tenant's data: only an admin's offer
	// makes the database available then.
	if pf := v.Policy.ProvisionedFor; pf != nil {
		if c := v.alive(pf.UID); c != nil {
			return bound(&v1alpha1.BindingReference{Name: pf.Name, UID: pf.UID, Tenant: c.Tenant})
		}
	}
	if !v.Policy.Offered {
		return notOffered(st)
	}
	var eligible []candidate
	for _, c := range v.Candidates {
		if !c.Deleting {
			eligible = append(eligible, c)
		}
	}
	if len(eligible) == 0 {
		st.Phase, st.Message = v1alpha1.PhaseAvailable, "offered to one tenant of this namespace"
		return st
	}
	// The oldest request wins; the UID breaks ties, so every reconcile
	// picks the same one.
	slices.SortFunc(eligible, func(a, b candidate) int {
		return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.UID, b.UID))
	})
	w := eligible[0]
	return bound(&v1alpha1.BindingReference{Name: w.Name, UID: w.UID, Tenant: w.Tenant})
}

// restored decides a database brought back from a backup. One saved
// without its binding record goes to nobody until an admin says. One that
// was Bound when it was saved: its binding went with the backup and came back under
// a new UID, so it is known by its name, in the database's own namespace,
// as a PersistentVolume restored with its claimRef goes back to the claim
// of that name. Nothing else binds it: not an older request, not an
// offer. It is bound once it exists and is this resource's again (its
// ownership settled by the marker's seal, docs/operations.md).
func restored(v bindingView, st v1alpha1.DatabaseBindingStatus, bound func(*v1alpha1.BindingReference) v1alpha1.DatabaseBindingStatus) v1alpha1.DatabaseBindingStatus {
	r := v.Restored
	if r == nil {
		// Restored without its record: whether, and to whom, it was
		// bound is not known, and an offer alone would give it to
		// whichever request is oldest.
		st.Phase, st.Reason = v1alpha1.PhaseUnavailable, v1alpha1.ReasonRestored
		st.Message = fmt.Sprintf("restored from a backup without its binding record (the %s annotation): whether, and to which tenant, it was bound is not known, so it goes to no tenant. "+
			"An admin who has established whose data it holds writes the record the backup lacked, naming that tenant's PostgreSQLBinding: "+
			`kubectl annotate postgresqldatabase -n %s %s %s='{"phase":"Bound","name":"<binding>"}'; `+
			"or sets spec.binding.reopen to %s (with spec.binding.offered: true), and the next request of this namespace binds it", v1alpha1.AnnotationBindingRecord, v.Namespace, v.Name, v1alpha1.AnnotationBindingRecord, v.RestoredFrom)
		return st
	}
	c := v.named(r.Name)
	if c != nil && v.Exists {
		return bound(&v1alpha1.BindingReference{Name: c.Name, UID: c.UID, Tenant: c.Tenant})
	}
	st.Phase, st.Reason = v1alpha1.PhaseUnavailable, v1alpha1.ReasonRestored
	who := "PostgreSQLBinding " + r.Name
	if r.Tenant != "" {
		who = fmt.Sprintf("PostgreSQLTenant %s (PostgreSQLBinding %s)", r.Tenant, r.Name)
	}
	st.Message = fmt.Sprintf("restored from a backup: it was bound to %s and goes back to the PostgreSQLBinding of that name in this namespace, and to no other tenant; ", who)
	if c == nil {
		st.Message += "that binding does not exist yet (restore the tenant's claim)"
	} else {
		st.Message += "waiting for the database to be observed as this resource's"
	}
	return st
}

// notOffered is st for a database no admin offered to tenants.
func notOffered(st v1alpha1.DatabaseBindingStatus) v1alpha1.DatabaseBindingStatus {
	st.Phase, st.Reason = v1alpha1.PhaseUnavailable, v1alpha1.ReasonNotOffered
	st.Message = "not offered to tenants: an admin offers it with spec.binding.offered: true"
	return st
}

// viewOf reads what decides db's binding from its status, as the managed
// reconciler last wrote it, and from the bindings that name it.
func viewOf(db *v1alpha1.PostgreSQLDatabase, bindings []v1alpha1.PostgreSQLBinding) bindingView {
	v := bindingView{Policy: db.Spec.Binding, Current: db.Status.Binding.BoundTo, Deleting: meta.WasDeleted(db), RestoredFrom: db.Status.AtProvider.RestoredFrom,
		Namespace: db.GetNamespace(), Name: db.GetName()}
	if v.Current != nil && db.Status.Binding.Phase != v1alpha1.PhaseBound && db.Status.Binding.Phase != v1alpha1.PhaseReleased {
		v.Current = nil
	}
	if undecided(db) {
		// Never decided on this object: what its record says, if it came
		// back from a backup.
		if r, ok := recordOf(db); ok {
			switch r.Phase {
			case v1alpha1.PhaseBound:
				v.Restored = &r.BindingReference
			case v1alpha1.PhaseReleased:
				v.Current = &r.BindingReference
			}
		}
	}
	ready := db.GetCondition(xpv2.TypeReady)
	switch {
	case ready.Reason == v1alpha1.ReasonConflict:
		v.Blocked, v.Message = v1alpha1.ReasonConflict, "the database is in Conflict and is never delivered: "+ready.Message
	case management.ObserveOnly(db) && db.Spec.Binding.ProvisionedFor != nil:
		v.Blocked, v.Message = v1alpha1.ReasonObserveOnly, "provisioned read-only (managementPolicies: [Observe]), a preview: the binding's status.plan shows what "+
			"widening the policies of the owner role and of the database would send; nothing is created until an admin widens them"
	case management.ObserveOnly(db):
		v.Blocked, v.Message = v1alpha1.ReasonObserveOnly, "observed read-only (managementPolicies: [Observe]): an import is never delivered as it stands; "+
			"an admin takes over its management (see docs/binding.md) before offering it"
	case len(db.Status.AtProvider.OwnerAttributes) > 0:
		v.Blocked = v1alpha1.ReasonPrivilegedOwner
		v.Message = fmt.Sprintf("its owner %q has %s: a tenant becomes a member of the owner role, so such a database is never delivered. Give it an owner without them (or take them from it)",
			db.Status.AtProvider.Owner, strings.Join(db.Status.AtProvider.OwnerAttributes, ", "))
	}
	v.Exists = ready.Status == corev1.ConditionTrue && ready.Reason == xpv2.ReasonAvailable && db.Status.AtProvider.Owner != ""
	for _, b := range bindings {
		if b.Spec.DatabaseRef.Name != db.GetName() {
			continue
		}
		v.Candidates = append(v.Candidates, candidate{
			Name: b.GetName(), UID: string(b.GetUID()), Tenant: db.GetNamespace() + "/" + b.Spec.Tenant,
			Created: b.GetCreationTimestamp().Time, Deleting: meta.WasDeleted(&b),
		})
	}
	return v
}

// A binder is the one writer of a database's binding (status.binding). It
// runs beside the database's managed reconciler, so that binding and
// release do not wait for the server, and so that a retained database's
// deletion, which the managed reconciler lets through without observing,
// is still held while the database is Bound. Every write carries the
// resourceVersion it read: two decisions can never both land.
type binder struct {
	kube   client.Client
	record event.Recorder
}

// SetupBinder adds the binder to mgr: the one writer of every
// PostgreSQLDatabase's binding.
func SetupBinder(mgr ctrl.Manager, c config.Config) error {
	name := "binding/" + strings.ToLower(v1alpha1.PostgreSQLDatabaseKind)
	b := &binder{kube: mgr.GetClient(), record: event.NewAPIRecorder(mgr.GetEventRecorderFor(name))} //nolint:staticcheck // crossplane-runtime's recorder takes record.EventRecorder.
	bld := ctrl.NewControllerManagedBy(mgr).
		Named(name).
		WithOptions(c.ForControllerRuntime()).
		For(&v1alpha1.PostgreSQLDatabase{}, builder.WithPredicates(decisionChanged()))
	// Without the PostgreSQLBinding kind active nothing binds a database.
	return activation.Complete(mgr, c.Gate, c.Logger.WithValues("controller", name), bld, errors.WithSilentRequeueOnConflict(b), activation.Watch{
		Object: &v1alpha1.PostgreSQLBinding{},
		Handler: handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			b, ok := o.(*v1alpha1.PostgreSQLBinding)
			if !ok {
				return nil
			}
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: b.GetNamespace(), Name: b.Spec.DatabaseRef.Name}}}
		}),
	})
}

// decisionChanged lets through an update of a database only when
// something the binder decides on, or records, changed. The managed
// reconciler writes a database's status several times on its way to Ready
// (conditions, observed attributes, its own bookkeeping); each of those
// was a binder reconcile, and a token of the provider's reconcile rate,
// about 13 per database per wave.
func decisionChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e ctrlevent.UpdateEvent) bool {
		was, okWas := e.ObjectOld.(*v1alpha1.PostgreSQLDatabase)
		now, okNow := e.ObjectNew.(*v1alpha1.PostgreSQLDatabase)
		// A resync (same resourceVersion) passes: it is the safety net
		// for an event missed, once per --sync.
		if !okWas || !okNow || was.GetResourceVersion() == now.GetResourceVersion() {
			return true
		}
		return !reflect.DeepEqual(decisionInputs(was), decisionInputs(now))
	}}
}

// binderInputs is what the binder reads of a database: the view its
// decision is made from (bindings aside, which it watches separately),
// what it recorded, and whether its finalizer is on.
type binderInputs struct {
	View      bindingView
	Recorded  v1alpha1.DatabaseBindingStatus
	Finalizer bool
}

func decisionInputs(db *v1alpha1.PostgreSQLDatabase) binderInputs {
	return binderInputs{View: viewOf(db, nil), Recorded: db.Status.Binding, Finalizer: controllerutil.ContainsFinalizer(db, v1alpha1.FinalizerBinding)}
}

func (b *binder) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	db := &v1alpha1.PostgreSQLDatabase{}
	if err := b.kube.Get(ctx, req.NamespacedName, db); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(errors.Wrap(err, errGetDatabase))
	}
	l := &v1alpha1.PostgreSQLBindingList{}
	if err := activation.List(ctx, b.kube, l, client.InNamespace(db.GetNamespace())); err != nil {
		return reconcile.Result{}, errors.Wrap(err, "cannot list the PostgreSQLBindings of the namespace")
	}
	want := decide(viewOf(db, l.Items))
	bound := want.Phase == v1alpha1.PhaseBound
	// The record follows status.binding in the same metadata writes as
	// the finalizer, so that it costs no write of its own.
	record := setRecord(db, want)

	// The finalizer goes on before the binding is recorded, and comes off
	// only once it is not Bound: there is no moment when a Bound database
	// can be deleted.
	if bound && (!controllerutil.ContainsFinalizer(db, v1alpha1.FinalizerBinding) || record) {
		controllerutil.AddFinalizer(db, v1alpha1.FinalizerBinding)
		if err := b.kube.Update(ctx, db); err != nil {
			return reconcile.Result{}, errors.Wrap(client.IgnoreNotFound(err), "cannot add the binding finalizer")
		}
		// Written: the binding is recorded next, from the version just
		// written (a change of the record alone wakes no reconcile).
	}
	if bound && meta.WasDeleted(db) {
		want.Message = fmt.Sprintf("deletion held: the database is bound to PostgreSQLTenant %s; it is deleted (following its management policies) once that tenant is gone", want.BoundTo.Tenant)
	}
	// A release's record (Released) goes before its phase, as a binding's
	// does: a backup taken between the two writes holds the record of
	// the phase the database shows, never a Released database recorded
	// as Bound, which its restore would keep for the tenant that left.
	if !bound && (controllerutil.ContainsFinalizer(db, v1alpha1.FinalizerBinding) || record) {
		controllerutil.RemoveFinalizer(db, v1alpha1.FinalizerBinding)
		if err := b.kube.Update(ctx, db); err != nil && !kerrors.IsNotFound(err) {
			return reconcile.Result{}, errors.Wrap(err, "cannot remove the binding finalizer")
		}
	}
	if was := db.Status.Binding; !was.Equal(want) && !unasked(db, l.Items, want) {
		db.Status.Binding = want
		// Gone meanwhile (its last finalizer removed): nothing to record.
		if err := client.IgnoreNotFound(b.kube.Status().Update(ctx, db)); err != nil {
			return reconcile.Result{}, errors.Wrap(err, "cannot record the binding")
		}
		b.announce(db, was, want)
	}
	return reconcile.Result{}, nil
}

// unasked reports whether want, about to be recorded on db, is only that
// no tenant gets a database that no tenant has asked for: not offered,
// never recorded otherwise, and named by no binding of its namespace.
// That is how every database an admin registers starts, and the empty
// binding status says it as well, without a status write per database
// (one of four API writes on a new database's way to Ready,
// docs/performance.md). Once a binding names it, the phase is recorded.
func unasked(db *v1alpha1.PostgreSQLDatabase, bindings []v1alpha1.PostgreSQLBinding, want v1alpha1.DatabaseBindingStatus) bool {
	if db.Status.Binding.Phase != "" || want.Phase != v1alpha1.PhaseUnavailable || want.Reason != v1alpha1.ReasonNotOffered {
		return false
	}
	for _, b := range bindings {
		if b.Spec.DatabaseRef.Name == db.GetName() {
			return false
		}
	}
	return true
}

// announce emits an event for each change of phase.
func (b *binder) announce(db *v1alpha1.PostgreSQLDatabase, was, now v1alpha1.DatabaseBindingStatus) {
	if was.Phase == now.Phase {
		return
	}
	// Not offered is how every database an admin registers starts: that
	// is no news, and a Warning on each would teach people to ignore
	// Warnings. Withdrawing an offer is news, but no fault.
	notOffered := now.Phase == v1alpha1.PhaseUnavailable && now.Reason == v1alpha1.ReasonNotOffered
	if notOffered && was.Phase == "" {
		return
	}
	if now.Phase == v1alpha1.PhaseUnavailable && !notOffered {
		b.record.Event(db, event.Warning(event.Reason("Binding"+string(now.Phase)), errors.New(now.Message)))
		return
	}
	b.record.Event(db, event.Normal(event.Reason("Binding"+string(now.Phase)), now.Message))
}

// recordOf reads db's binding record (AnnotationBindingRecord); false when
// it has none, or one it cannot read, which is then no evidence of
// anything.
func recordOf(db *v1alpha1.PostgreSQLDatabase) (v1alpha1.BindingRecord, bool) {
	var r v1alpha1.BindingRecord
	raw, ok := db.GetAnnotations()[v1alpha1.AnnotationBindingRecord]
	if !ok || json.Unmarshal([]byte(raw), &r) != nil || r.Name == "" {
		return v1alpha1.BindingRecord{}, false
	}
	// A Bound record is followed by name, the UID having changed with the
	// restore; a Released one is acknowledged by its UID (reopen).
	return r, r.Phase == v1alpha1.PhaseBound || r.Phase == v1alpha1.PhaseReleased && r.UID != ""
}

// undecided reports whether the binder has decided nothing about db but
// that it was restored: its record, if any, stands for status.binding.
func undecided(db *v1alpha1.PostgreSQLDatabase) bool {
	st := db.Status.Binding
	return st.Phase == "" || st.Phase == v1alpha1.PhaseUnavailable && st.Reason == v1alpha1.ReasonRestored
}

// setRecord brings db's binding record in line with st, and reports
// whether it changed. Only Bound and Released carry a binding; any other
// phase leaves the record as it is (a re-opened database's record still
// names the binding it released, which its spec.binding.reopen
// acknowledges).
func setRecord(db *v1alpha1.PostgreSQLDatabase, st v1alpha1.DatabaseBindingStatus) bool {
	if st.BoundTo == nil || (st.Phase != v1alpha1.PhaseBound && st.Phase != v1alpha1.PhaseReleased) {
		return false
	}
	raw, err := json.Marshal(v1alpha1.BindingRecord{Phase: st.Phase, BindingReference: *st.BoundTo})
	if err != nil || db.GetAnnotations()[v1alpha1.AnnotationBindingRecord] == string(raw) {
		return false
	}
	meta.AddAnnotations(db, map[string]string{v1alpha1.AnnotationBindingRecord: string(raw)})
	return true
}
