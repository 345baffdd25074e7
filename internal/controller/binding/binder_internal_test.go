package binding

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	a := candidate{Name: "a", UID: "uid-a", Tenant: "shop/a", Created: t0}
	b := candidate{Name: "b", UID: "uid-b", Tenant: "shop/b", Created: t0.Add(time.Second)}
	refA := &v1alpha1.BindingReference{Name: "a", UID: "uid-a", Tenant: "shop/a"}
	refB := &v1alpha1.BindingReference{Name: "b", UID: "uid-b", Tenant: "shop/b"}
	offered := v1alpha1.DatabaseBindingPolicy{Offered: true}
	reserved := v1alpha1.DatabaseBindingPolicy{ProvisionedFor: refA}

	type want struct {
		Origin  v1alpha1.DatabaseOrigin
		Phase   v1alpha1.DatabasePhase
		Reason  string
		BoundTo *v1alpha1.BindingReference
	}
	cases := map[string]struct {
		reason string
		view   bindingView
		want   want
	}{
		"OfferedBindsTheOldestRequest": {
			reason: "Of several requests the oldest wins, whatever order they are listed in.",
			view:   bindingView{Policy: offered, Exists: true, Candidates: []candidate{b, a}},
			want:   want{Origin: v1alpha1.OriginImported, Phase: v1alpha1.PhaseBound, BoundTo: refA},
		},
		"TiesBrokenByUID": {
			reason: "Requests created in the same second are ordered by UID, so every reconcile picks the same one.",
			view:   bindingView{Policy: offered, Exists: true, Candidates: []candidate{{Name: "b", UID: "uid-b", Tenant: "shop/b", Created: t0}, a}},
			want:   want{Origin: v1alpha1.OriginImported, Phase: v1alpha1.PhaseBound, BoundTo: refA},
		},
		"BoundStaysBound": {
			reason: "A recorded binding is kept while its binding lives, even when an older request appears.",
			view:   bindingView{Policy: offered, Exists: true, Current: refB, Candidates: []candidate{a, b}},
			want:   want{Origin: v1alpha1.OriginImported, Phase: v1alpha1.PhaseBound, BoundTo: refB},
		},
		"OwnerPrivilegedAfterBinding": {
			reason: "An owner given SUPERUSER (or a pg_* role) after binding keeps the database bound to its tenant, and says that nothing is delivered.",
			view: bindingView{Policy: offered, Exists: true, Current: refA, Candidates: []candidate{a},
				Blocked: v1alpha1.ReasonPrivilegedOwner, Message: `its owner "o" has SUPERUSER`},
			want: want{Origin: v1alpha1.OriginImported, Phase: v1alpha1.PhaseBound, Reason: string(v1alpha1.ReasonPrivilegedOwner), BoundTo: refA},
		},
		"GoneBindingReleases": {
			reason: "When the bound binding goes, the database is Released and keeps its old identity; a waiting request gets nothing.",
			view:   bindingView{Policy: offered, Exists: true, Current: refA, Candidates: []candidate{b}},
			want:   want{Origin: v1alpha1.OriginImported, Phase: v1alpha1.PhaseReleased, BoundTo: refA},
		},
		"SameNameNewUIDIsAnotherBinding": {
			reason: "A new binding that reuses the old name does not inherit the binding.",
			view: bindingView{Policy: offered, Exists: true, Current: refA,
				Candidates: []candidate{{Name: "a", UID: "uid-a2", Tenant: "shop/a", Created: t0.Add(time.Hour)}}},
			want: want{Origin: v1alpha1.OriginImported, Phase: v1alpha1.PhaseReleased, BoundTo: refA},
		},
		"DeletingBindingReleases": {
			reason: "A binding being deleted no longer holds the database.",
			view:   bindingView{Policy: offered, Exists: true, Current: refA, Candidates: []candidate{{Name: "a", UID: "uid-a", Deleting: true}}},
			want:   want{Origin: v1alpha1.OriginImported, Phase: v1alpha1.PhaseReleased, BoundTo: refA},
		},
		"ReopenForAnotherUIDDoesNothing": {
			reason: "Re-opening acknowledges one release: a reopen naming another UID leaves the database Released.",
			view:   bindingView{Policy: v1alpha1.DatabaseBindingPolicy{Offered: true, Reopen: "uid-b"}, Exists: true, Current: refA, Candidates: []candidate{b}},
			want:   want{Origin: v1alpha1.OriginImported, Phase: v1alpha1.PhaseReleased, BoundTo: refA},
		},
		"ReopenedBindsTheNextRequest": {
			reason: "Once an admin re-opens the released database, the next request binds.",
			view:   bindingView{Policy: v1alpha1.DatabaseBindingPolicy{Offered: true, Reopen: "uid-a"}, Exists: true, Current: refA, Candidates: []candidate{b}},
			want:   want{Origin: v1alpha1.OriginImported, Phase: v1alpha1.PhaseBound, BoundTo: refB},
		},
		"ReopenedButNotOffered": {
			reason: "Re-opening without offering makes the database no one's.",
			view:   bindingView{Policy: v1alpha1.DatabaseBindingPolicy{Reopen: "uid-a"}, Exists: true, Current: refA, Candidates: []candidate{b}},
			want:   want{Origin: v1alpha1.OriginImported, Phase: v1alpha1.PhaseUnavailable, Reason: string(v1alpha1.ReasonNotOffered)},
		},
		"NotOfferedIsNeverBound": {
			reason: "An admin-registered database nobody offered is bound to nobody.",
			view:   bindingView{Exists: true, Candidates: []candidate{a}},
			want:   want{Origin: v1alpha1.OriginImported, Phase: v1alpha1.PhaseUnavailable, Reason: string(v1alpha1.ReasonNotOffered)},
		},
		"OfferedWithoutRequests": {
			reason: "An offered database no one asks for is Available.",
			view:   bindingView{Policy: offered, Exists: true},
			want:   want{Origin: v1alpha1.OriginImported, Phase: v1alpha1.PhaseAvailable},
		},
		"ObserveOnlyNeverBound": {
			reason: "An Observe-only import is never delivered, offered or not.",
			view:   bindingView{Policy: offered, Exists: true, Blocked: v1alpha1.ReasonObserveOnly, Message: "observe only", Candidates: []candidate{a}},
			want:   want{Origin: v1alpha1.OriginImported, Phase: v1alpha1.PhaseUnavailable, Reason: v1alpha1.ReasonObserveOnly},
		},
		"ConflictNeverBound": {
			reason: "A database in Conflict (unmarked, registered twice, another tenant's) is never delivered.",
			view:   bindingView{Policy: reserved, Exists: false, Blocked: v1alpha1.ReasonConflict, Message: "conflict", Candidates: []candidate{a}},
			want:   want{Origin: v1alpha1.OriginProvisioned, Phase: v1alpha1.PhaseUnavailable, Reason: v1alpha1.ReasonConflict},
		},
		"PrivilegedOwnerNeverBound": {
			reason: "A database owned by a SUPERUSER/CREATEROLE/BYPASSRLS/REPLICATION role is never delivered.",
			view:   bindingView{Policy: offered, Exists: true, Blocked: v1alpha1.ReasonPrivilegedOwner, Message: "owner is a superuser", Candidates: []candidate{a}},
			want:   want{Origin: v1alpha1.OriginImported, Phase: v1alpha1.PhaseUnavailable, Reason: string(v1alpha1.ReasonPrivilegedOwner)},
		},
		"NotOfferedBeforeItExists": {
			reason: "A database neither offered nor provisioned for a tenant is no one's from the start: it is not Provisioning for anyone.",
			view:   bindingView{Candidates: []candidate{a}},
			want:   want{Origin: v1alpha1.OriginImported, Phase: v1alpha1.PhaseUnavailable, Reason: string(v1alpha1.ReasonNotOffered)},
		},
		"NotYetExisting": {
			reason: "Nothing is bound before the database exists and is observed.",
			view:   bindingView{Policy: offered, Candidates: []candidate{a}},
			want:   want{Origin: v1alpha1.OriginImported, Phase: v1alpha1.PhaseProvisioning},
		},
		"DeletingIsNeverBound": {
			reason: "A database being deleted is not handed to a new tenant.",
			view:   bindingView{Policy: offered, Exists: true, Deleting: true, Candidates: []candidate{a}},
			want:   want{Origin: v1alpha1.OriginImported, Phase: v1alpha1.PhaseUnavailable, Reason: "Deleting"},
		},
		"BoundAndDeletingStaysBound": {
			reason: "A Bound database being deleted stays Bound (its deletion is held) while its tenant lives.",
			view:   bindingView{Policy: offered, Exists: true, Deleting: true, Current: refA, Candidates: []candidate{a}},
			want:   want{Origin: v1alpha1.OriginImported, Phase: v1alpha1.PhaseBound, BoundTo: refA},
		},
		"ReservedForItsBinding": {
			reason: "A provisioned database is bound to the binding it was provisioned for, not to an older request.",
			view: bindingView{Policy: v1alpha1.DatabaseBindingPolicy{ProvisionedFor: refB, Offered: true}, Exists: true,
				Candidates: []candidate{a, b}},
			want: want{Origin: v1alpha1.OriginProvisioned, Phase: v1alpha1.PhaseBound, BoundTo: refB},
		},
		"ReservedNotOfferedToOthers": {
			reason: "Another request for a provisioned database gets nothing while its binding has not bound it yet.",
			view:   bindingView{Policy: reserved, Exists: false, Candidates: []candidate{a, b}},
			want:   want{Origin: v1alpha1.OriginProvisioned, Phase: v1alpha1.PhaseProvisioning},
		},
		"ReservationEndsWithItsBinding": {
			reason: "A provisioned database whose binding went before it was bound is no one's unless offered.",
			view:   bindingView{Policy: reserved, Exists: true, Candidates: []candidate{b}},
			want:   want{Origin: v1alpha1.OriginProvisioned, Phase: v1alpha1.PhaseUnavailable, Reason: string(v1alpha1.ReasonNotOffered)},
		},
		"ProvisionedAndReleased": {
			reason: "A provisioned database released by its tenant is not bound by the next claim of the same name.",
			view: bindingView{Policy: reserved, Exists: true, Current: refA,
				Candidates: []candidate{{Name: "a", UID: "uid-a2", Tenant: "shop/a", Created: t0.Add(time.Hour)}}},
			want: want{Origin: v1alpha1.OriginProvisioned, Phase: v1alpha1.PhaseReleased, BoundTo: refA},
		},
		"RestoredGoesBackToTheBindingOfItsName": {
			reason: "A database restored Bound goes back to the binding of the name it was bound to (restored under a new UID), not to a stranger's older request, offered or not.",
			view: bindingView{Policy: v1alpha1.DatabaseBindingPolicy{ProvisionedFor: refA, Offered: true}, Exists: true, Restored: refA,
				Candidates: []candidate{{Name: "stranger", UID: "uid-s", Tenant: "shop/stranger", Created: t0.Add(-time.Hour)}, {Name: "a", UID: "uid-a2", Tenant: "shop/a", Created: t0.Add(time.Hour)}}},
			want: want{Origin: v1alpha1.OriginProvisioned, Phase: v1alpha1.PhaseBound, BoundTo: &v1alpha1.BindingReference{Name: "a", UID: "uid-a2", Tenant: "shop/a"}},
		},
		"RestoredWaitsForItsBinding": {
			reason: "A database restored Bound, whose binding is not back yet, waits for it and goes to nobody else meanwhile.",
			view: bindingView{Policy: offered, Exists: true, Restored: refA,
				Candidates: []candidate{{Name: "stranger", UID: "uid-s", Tenant: "shop/stranger", Created: t0.Add(-time.Hour)}}},
			want: want{Origin: v1alpha1.OriginImported, Phase: v1alpha1.PhaseUnavailable, Reason: string(v1alpha1.ReasonRestored)},
		},
		"RestoredWaitsUntilItIsItsOwn": {
			reason: "A database restored Bound is bound again only once it is observed as this resource's.",
			view:   bindingView{Policy: reserved, Restored: refA, Candidates: []candidate{{Name: "a", UID: "uid-a2", Tenant: "shop/a"}}},
			want:   want{Origin: v1alpha1.OriginProvisioned, Phase: v1alpha1.PhaseUnavailable, Reason: string(v1alpha1.ReasonRestored)},
		},
		"RestoredWithoutRecordGoesToNoOne": {
			reason: "A database that succeeded a gone resource but carries no binding record may have been anyone's: no request binds it, offered or not.",
			view:   bindingView{Policy: offered, Exists: true, RestoredFrom: "old-db", Candidates: []candidate{a}},
			want:   want{Origin: v1alpha1.OriginImported, Phase: v1alpha1.PhaseUnavailable, Reason: string(v1alpha1.ReasonRestored)},
		},
		"RestoredWithoutRecordReopened": {
			reason: "The admin's reopen naming the UID it succeeded hands it to the next request.",
			view:   bindingView{Policy: v1alpha1.DatabaseBindingPolicy{Offered: true, Reopen: "old-db"}, Exists: true, RestoredFrom: "old-db", Candidates: []candidate{a}},
			want:   want{Origin: v1alpha1.OriginImported, Phase: v1alpha1.PhaseBound, BoundTo: refA},
		},
		"RestoredInConflict": {
			reason: "A restored database whose ownership is not settled (no seal: an admin's hand-over) says Conflict, the message naming the step.",
			view: bindingView{Policy: reserved, Restored: refA, Blocked: v1alpha1.ReasonConflict, Message: "the database is in Conflict",
				Candidates: []candidate{{Name: "a", UID: "uid-a2", Tenant: "shop/a"}}},
			want: want{Origin: v1alpha1.OriginProvisioned, Phase: v1alpha1.PhaseUnavailable, Reason: string(v1alpha1.ReasonConflict)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := decide(tc.view)
			g := want{Origin: got.Origin, Phase: got.Phase, Reason: string(got.Reason), BoundTo: got.BoundTo}
			if diff := cmp.Diff(tc.want, g, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\ndecide(...): -want +got:\n%s", tc.reason, diff)
			}
			if got.Message == "" {
				t.Errorf("%s\nno message for phase %s", tc.reason, got.Phase)
			}
		})
	}
}

// TestRecord: the record a database keeps in its metadata follows Bound and
// Released, and is read back, on a database with no status.binding, as the
// decision it recorded.
func TestRecord(t *testing.T) {
	refA := &v1alpha1.BindingReference{Name: "a", UID: "uid-a", Tenant: "shop/a"}
	db := &v1alpha1.PostgreSQLDatabase{}
	db.SetName("orders")
	if setRecord(db, v1alpha1.DatabaseBindingStatus{Phase: v1alpha1.PhaseAvailable}) {
		t.Error("an Available database wrote a record")
	}
	if !setRecord(db, v1alpha1.DatabaseBindingStatus{Phase: v1alpha1.PhaseBound, BoundTo: refA}) {
		t.Fatal("a Bound database wrote no record")
	}
	if setRecord(db, v1alpha1.DatabaseBindingStatus{Phase: v1alpha1.PhaseBound, BoundTo: refA}) {
		t.Error("the same record was written twice")
	}
	if v := viewOf(db, nil); v.Restored == nil || *v.Restored != *refA || v.Current != nil {
		t.Errorf("a database restored Bound: view Restored %v, Current %v; want Restored %v", v.Restored, v.Current, refA)
	}
	if !setRecord(db, v1alpha1.DatabaseBindingStatus{Phase: v1alpha1.PhaseReleased, BoundTo: refA}) {
		t.Fatal("a Released database wrote no record")
	}
	if v := viewOf(db, nil); v.Current == nil || *v.Current != *refA || v.Restored != nil {
		t.Errorf("a database restored Released: view Current %v, Restored %v; want Current %v", v.Current, v.Restored, refA)
	}
	// A new tenant of the released binding's name gets nothing.
	v := viewOf(db, []v1alpha1.PostgreSQLBinding{binding("a", "uid-a2")})
	if len(v.Candidates) != 1 {
		t.Fatalf("the new binding is not a candidate: %v", v.Candidates)
	}
	got := decide(v)
	if got.Phase != v1alpha1.PhaseReleased {
		t.Errorf("a database restored Released, asked for by a new binding of the same name: phase %s, want Released", got.Phase)
	}
	// Once the database has decided anything, its status rules, not the
	// record.
	db.Status.Binding = v1alpha1.DatabaseBindingStatus{Phase: v1alpha1.PhaseAvailable}
	if v := viewOf(db, nil); v.Restored != nil || v.Current != nil {
		t.Errorf("a database with a status read its record: Restored %v, Current %v", v.Restored, v.Current)
	}
	for name, raw := range map[string]string{"NotJSON": "{", "NoName": `{"phase":"Bound","uid":"u"}`, "ReleasedWithoutUID": `{"phase":"Released","name":"a"}`, "OtherPhase": `{"phase":"Available","name":"a","uid":"u"}`} {
		db := &v1alpha1.PostgreSQLDatabase{}
		db.SetAnnotations(map[string]string{v1alpha1.AnnotationBindingRecord: raw})
		if v := viewOf(db, nil); v.Restored != nil || v.Current != nil {
			t.Errorf("%s: a record that says nothing was read as %v, %v", name, v.Restored, v.Current)
		}
	}
}

func binding(name, uid string) v1alpha1.PostgreSQLBinding {
	b := v1alpha1.PostgreSQLBinding{}
	b.SetName(name)
	b.SetUID(types.UID(uid))
	b.Spec.DatabaseRef.Name = "orders"
	return b
}

func TestDecisionChanged(t *testing.T) {
	ready := func(db *v1alpha1.PostgreSQLDatabase) {
		db.SetConditions(xpv2.Available(), xpv2.ReconcileSuccess())
		db.Status.AtProvider.Owner = "app"
	}
	base := func() *v1alpha1.PostgreSQLDatabase {
		db := &v1alpha1.PostgreSQLDatabase{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop", ResourceVersion: "1"}}
		db.SetManagementPolicies(xpv2.ManagementPolicies{xpv2.ManagementActionAll})
		return db
	}
	cases := map[string]struct {
		reason string
		from   func(*v1alpha1.PostgreSQLDatabase)
		change func(*v1alpha1.PostgreSQLDatabase)
		// resync: the update carries the same resourceVersion.
		resync bool
		want   bool
	}{
		"ObservedAttributes": {
			reason: "What the managed reconciler observes beyond the owner decides nothing.",
			from:   ready,
			change: func(db *v1alpha1.PostgreSQLDatabase) { db.Status.AtProvider.Encoding = "UTF8" },
		},
		"SyncedCondition": {
			reason: "A reconcile error of the managed reconciler decides nothing.",
			from:   ready,
			change: func(db *v1alpha1.PostgreSQLDatabase) { db.SetConditions(xpv2.ReconcileError(errors.New("boom"))) },
		},
		"OtherFinalizerAndAnnotation": {
			reason: "The managed reconciler's finalizer and annotations decide nothing.",
			change: func(db *v1alpha1.PostgreSQLDatabase) {
				db.SetFinalizers([]string{"finalizer.managedresource.crossplane.io"})
				db.SetAnnotations(map[string]string{"crossplane.io/external-name": "orders"})
			},
		},
		"Resync": {
			reason: "The informer's periodic resync, the same version again, is the safety net for a missed event.",
			from:   ready,
			change: func(*v1alpha1.PostgreSQLDatabase) {},
			resync: true,
			want:   true,
		},
		"BecomesAvailable": {
			reason: "A database that exists can be decided on.",
			change: ready,
			want:   true,
		},
		"Offered": {
			reason: "An admin's offer changes the decision.",
			from:   ready,
			change: func(db *v1alpha1.PostgreSQLDatabase) { db.Spec.Binding.Offered = true },
			want:   true,
		},
		"OwnerGainsAttributes": {
			reason: "A privileged owner blocks delivery.",
			from:   ready,
			change: func(db *v1alpha1.PostgreSQLDatabase) { db.Status.AtProvider.OwnerAttributes = []string{"SUPERUSER"} },
			want:   true,
		},
		"ObserveOnly": {
			reason: "An import observed read-only is never delivered.",
			from:   ready,
			change: func(db *v1alpha1.PostgreSQLDatabase) {
				db.SetManagementPolicies(xpv2.ManagementPolicies{xpv2.ManagementActionObserve})
			},
			want: true,
		},
		"Deleted": {
			reason: "A deletion releases or holds the database.",
			from:   ready,
			change: func(db *v1alpha1.PostgreSQLDatabase) { db.SetDeletionTimestamp(&metav1.Time{Time: time.Now()}) },
			want:   true,
		},
		"BinderFinalizer": {
			reason: "The binder adds its finalizer and returns: the update must bring it back to record the binding.",
			from:   ready,
			change: func(db *v1alpha1.PostgreSQLDatabase) { db.SetFinalizers([]string{v1alpha1.FinalizerBinding}) },
			want:   true,
		},
		"RecordedBinding": {
			reason: "A changed record (by whoever) is looked at again.",
			from:   ready,
			change: func(db *v1alpha1.PostgreSQLDatabase) { db.Status.Binding.Phase = v1alpha1.PhaseAvailable },
			want:   true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			was := base()
			if tc.from != nil {
				tc.from(was)
			}
			now := was.DeepCopy()
			tc.change(now)
			if !tc.resync {
				now.SetResourceVersion("2")
			}
			got := decisionChanged().Update(ctrlevent.UpdateEvent{ObjectOld: was, ObjectNew: now})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nlet through (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// events records what a binder announces.
type events struct{ got []string }

func (r *events) Event(_ runtime.Object, e event.Event) {
	r.got = append(r.got, string(e.Type)+" "+string(e.Reason))
}
func (r *events) WithAnnotations(...string) event.Recorder { return r }

// TestAnnounce: each change of phase is one event, a Warning only when a
// database is kept from tenants for a reason someone must act on. A
// database nobody offered is how every database an admin registers
// starts: no event; an offer withdrawn is a Normal one.
func TestAnnounce(t *testing.T) {
	phase := func(p v1alpha1.DatabasePhase, reason xpv2.ConditionReason) v1alpha1.DatabaseBindingStatus {
		return v1alpha1.DatabaseBindingStatus{Phase: p, Reason: reason}
	}
	cases := map[string]struct {
		was, now v1alpha1.DatabaseBindingStatus
		want     []string
	}{
		"NotOfferedFromTheStart": {now: phase(v1alpha1.PhaseUnavailable, v1alpha1.ReasonNotOffered)},
		"OfferWithdrawn":         {was: phase(v1alpha1.PhaseAvailable, ""), now: phase(v1alpha1.PhaseUnavailable, v1alpha1.ReasonNotOffered), want: []string{"Normal BindingUnavailable"}},
		"Conflict":               {now: phase(v1alpha1.PhaseUnavailable, v1alpha1.ReasonConflict), want: []string{"Warning BindingUnavailable"}},
		"PrivilegedOwner":        {was: phase(v1alpha1.PhaseAvailable, ""), now: phase(v1alpha1.PhaseUnavailable, v1alpha1.ReasonPrivilegedOwner), want: []string{"Warning BindingUnavailable"}},
		"Bound":                  {was: phase(v1alpha1.PhaseAvailable, ""), now: phase(v1alpha1.PhaseBound, ""), want: []string{"Normal BindingBound"}},
		"SamePhase":              {was: phase(v1alpha1.PhaseUnavailable, v1alpha1.ReasonNotOffered), now: phase(v1alpha1.PhaseUnavailable, v1alpha1.ReasonConflict)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := &events{}
			(&binder{record: r}).announce(&v1alpha1.PostgreSQLDatabase{}, tc.was, tc.now)
			if diff := cmp.Diff(tc.want, r.got); diff != "" {
				t.Errorf("events: -want +got:\n%s", diff)
			}
		})
	}
}

// TestUnasked: the binder records that a database is not offered only
// once that says more than the empty binding status: when a binding of
// its namespace names it, or something else was recorded before.
func TestUnasked(t *testing.T) {
	notOffered := v1alpha1.DatabaseBindingStatus{Phase: v1alpha1.PhaseUnavailable, Reason: v1alpha1.ReasonNotOffered}
	naming := func(name string) []v1alpha1.PostgreSQLBinding {
		b := v1alpha1.PostgreSQLBinding{}
		b.Spec.DatabaseRef.Name = name
		return []v1alpha1.PostgreSQLBinding{b}
	}
	cases := map[string]struct {
		was      v1alpha1.DatabaseBindingStatus
		bindings []v1alpha1.PostgreSQLBinding
		want     v1alpha1.DatabaseBindingStatus
		unasked  bool
	}{
		"ANewDatabaseNobodyAsksFor":   {want: notOffered, unasked: true},
		"ABindingOfAnotherDatabase":   {bindings: naming("other"), want: notOffered, unasked: true},
		"ABindingNamesIt":             {bindings: naming("orders"), want: notOffered},
		"AnOfferWithdrawn":            {was: v1alpha1.DatabaseBindingStatus{Phase: v1alpha1.PhaseAvailable}, want: notOffered},
		"AnythingElseIsRecorded":      {want: v1alpha1.DatabaseBindingStatus{Phase: v1alpha1.PhaseAvailable}},
		"UnavailableForAnotherReason": {want: v1alpha1.DatabaseBindingStatus{Phase: v1alpha1.PhaseUnavailable, Reason: v1alpha1.ReasonConflict}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			db := &v1alpha1.PostgreSQLDatabase{}
			db.SetName("orders")
			db.Status.Binding = tc.was
			if got := unasked(db, tc.bindings, tc.want); got != tc.unasked {
				t.Errorf("unasked: got %t, want %t", got, tc.unasked)
			}
		})
	}
}
