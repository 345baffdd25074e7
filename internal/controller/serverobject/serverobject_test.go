package serverobject

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/conflict"
	"github.com/ayatori/provider-postgresql/internal/controller/oninstance"
)

// object is what the fake kind reads.
type object struct{ owner string }

// fake is a Kind whose catalog answers and checks are scripted.
type fake struct {
	observed Observed[object]
	err      error
	refuse   error
	checked  *bool
	recorded *bool
	// markedBy is the resource Foreign says the marker names.
	markedBy conflict.Owner
}

func (fake) Noun() string                            { return "role" }
func (fake) Name(mg *v1alpha1.PostgreSQLRole) string { return mg.RoleName() }
func (f fake) Observe(context.Context, *v1alpha1.PostgreSQLRole) (Observed[object], error) {
	return f.observed, f.err
}

func (fake) Binding(mg *v1alpha1.PostgreSQLRole) (*string, *string) {
	return &mg.Status.AtProvider.InstanceUID, &mg.Status.AtProvider.SystemIdentifier
}

func (f fake) CheckCreate(context.Context, *v1alpha1.PostgreSQLRole) error {
	*f.checked = true
	return f.refuse
}
func (f fake) Foreign(context.Context, *v1alpha1.PostgreSQLRole, *object, string) (conflict.Object, error) {
	return conflict.Object{Noun: "role", Name: "someone else's role", Kind: "PostgreSQLRole", MarkedBy: f.markedBy}, nil
}
func (f fake) Record(*v1alpha1.PostgreSQLRole, *object) { *f.recorded = true }

// planner is the fake kind with a plan: create and update statements as
// scripted.
type planner struct {
	fake
	create, update, drop []string
}

func (p planner) DeleteStatements(context.Context, *v1alpha1.PostgreSQLRole, *object) ([]string, error) {
	return p.drop, nil
}

func (planner) Plan(mg *v1alpha1.PostgreSQLRole) **v1alpha1.Plan { return &mg.Status.AtProvider.Plan }
func (p planner) CreateStatements(context.Context, *v1alpha1.PostgreSQLRole) ([]string, error) {
	return p.create, nil
}
func (p planner) UpdateStatements(context.Context, *v1alpha1.PostgreSQLRole, *object) ([]string, error) {
	return p.update, nil
}

func TestObserve(t *testing.T) {
	const uid, instanceUID, server = "role-uid", "instance-uid", "7000"
	errCatalog := errors.New("catalog unreachable")
	errRefused := errors.New("refused by the boundary")
	exists := func(marker string) Observed[object] {
		return Observed[object]{Object: &object{owner: "x"}, Marker: marker, System: server}
	}
	absent := Observed[object]{System: server}
	successor := func(marker string) Observed[object] {
		o := exists(marker)
		o.Successor = true
		return o
	}

	type want struct {
		Got        bool
		Obs        managed.ExternalObservation
		Done       bool
		Err        string
		ErrIs      error
		Reason     xpv2.ConditionReason
		Checked    bool
		Recorded   bool
		BoundTo    string
		BoundToSys string
		// Plan is the plan's summary, Pending the UpToDate condition's
		// reason.
		Plan    string
		Pending xpv2.ConditionReason
	}
	withPlan := func(create, update []string) func(f fake) Kind[*v1alpha1.PostgreSQLRole, object] {
		return func(f fake) Kind[*v1alpha1.PostgreSQLRole, object] {
			return planner{fake: f, create: create, update: update}
		}
	}
	cases := map[string]struct {
		reason string
		kind   func(f fake) Kind[*v1alpha1.PostgreSQLRole, object]
		f      fake
		mg     func(*v1alpha1.PostgreSQLRole)
		in     func(*v1alpha1.PostgreSQLInstance)
		want   want
	}{
		"ExternalNameChanged": {
			reason: "An external name other than the managed name is a Conflict, before anything is read.",
			f:      fake{observed: exists(uid)},
			mg:     func(r *v1alpha1.PostgreSQLRole) { meta.SetExternalName(r, "other") },
			want:   want{Done: true, ErrIs: oninstance.ErrConflict, Reason: v1alpha1.ReasonConflict},
		},
		"CatalogError": {
			reason: "A failed read decides nothing but the error.",
			f:      fake{err: errCatalog},
			want:   want{Done: true, Err: errCatalog.Error()},
		},
		"GoneWhileDeleting": {
			reason: "What held the object is gone and the resource is being deleted: nothing to drop.",
			f:      fake{err: ErrGone},
			mg:     deleting,
			want:   want{Done: true},
		},
		"GoneButNotDeleting": {
			reason: "ErrGone only ends a deletion; otherwise it is an error.",
			f:      fake{err: ErrGone},
			want:   want{Done: true, Err: ErrGone.Error()},
		},
		"AnotherServer": {
			reason: "A resource bound to one server never acts on another one.",
			f:      fake{observed: exists(uid)},
			mg: func(r *v1alpha1.PostgreSQLRole) {
				r.Status.AtProvider.InstanceUID, r.Status.AtProvider.SystemIdentifier = instanceUID, "6000"
			},
			want: want{Done: true, ErrIs: oninstance.ErrConflict, Reason: v1alpha1.ReasonConflict, BoundTo: instanceUID, BoundToSys: "6000"},
		},
		"AbsentMayBeCreated": {
			reason: "An absent object is checked, then left to Create; the resource binds first.",
			f:      fake{observed: absent},
			want:   want{Done: true, Checked: true, BoundTo: instanceUID, BoundToSys: server},
		},
		"AbsentRefused": {
			reason: "The kind's check refuses the create.",
			f:      fake{observed: absent, refuse: errRefused},
			want:   want{Done: true, Err: errRefused.Error(), Checked: true, BoundTo: instanceUID, BoundToSys: server},
		},
		"AbsentOnAnInstanceBeingDeleted": {
			reason: "Nothing new is made on an Instance being deleted; the kind is not even asked.",
			f:      fake{observed: absent},
			in:     func(in *v1alpha1.PostgreSQLInstance) { in.SetDeletionTimestamp(ptr.To(metav1.Now())) },
			want:   want{Done: true, Err: "is being deleted", BoundTo: instanceUID, BoundToSys: server},
		},
		"AbsentWhileDeleting": {
			reason: "An absent object of a resource being deleted is gone.",
			f:      fake{observed: absent},
			mg:     deleting,
			want:   want{Done: true, BoundTo: instanceUID, BoundToSys: server},
		},
		"SomeoneElses": {
			reason: "An object without this resource's marker is a Conflict, and nothing is recorded.",
			f:      fake{observed: exists("other-uid")},
			want:   want{Done: true, ErrIs: oninstance.ErrConflict, Reason: v1alpha1.ReasonConflict, BoundTo: instanceUID, BoundToSys: server},
		},
		"Restored": {
			reason: "An object whose marker names a UID no resource has any more, sealed for this resource's identity, is this resource's: it was brought back from a backup, and the update that follows re-marks it.",
			f:      fake{observed: successor("old-uid")},
			want:   want{Got: true, Recorded: true, BoundTo: instanceUID, BoundToSys: server},
		},
		"RestoredButTheOldOneLives": {
			reason: "A sealed marker whose resource still exists is that resource's, not a copy's: Conflict.",
			f:      fake{observed: successor("old-uid"), markedBy: conflict.Owner{Kind: "PostgreSQLRole", Namespace: "default", Name: "original"}},
			want:   want{Done: true, ErrIs: oninstance.ErrConflict, Reason: v1alpha1.ReasonConflict, BoundTo: instanceUID, BoundToSys: server},
		},
		"MarkerRemoved": {
			reason: "An unmarked object of a resource whose create succeeded is a Conflict that says its marker is gone.",
			f:      fake{observed: exists("")},
			mg: func(r *v1alpha1.PostgreSQLRole) {
				meta.SetExternalCreateSucceeded(r, time.Date(2026, 12, 5, 7, 0, 0, 0, time.UTC))
			},
			want: want{Done: true, Err: "ownership marker is gone: this PostgreSQLRole records that it created a role of this name at 2026-12-05T07:00:00Z",
				ErrIs: oninstance.ErrConflict, Reason: v1alpha1.ReasonConflict, BoundTo: instanceUID, BoundToSys: server},
		},
		"MarkerRemovedAfterTheProvidersCreate": {
			reason: "The provider's own creates leave a create-pending record and no create-succeeded one: that record is the create's.",
			f:      fake{observed: exists("")},
			mg: func(r *v1alpha1.PostgreSQLRole) {
				meta.SetExternalCreatePending(r, time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC))
			},
			want: want{Done: true, Err: "ownership marker is gone: this PostgreSQLRole records that it created a role of this name at 2026-12-06T08:00:00Z",
				ErrIs: oninstance.ErrConflict, Reason: v1alpha1.ReasonConflict, BoundTo: instanceUID, BoundToSys: server},
		},
		"UnmarkedAfterAFailedCreate": {
			reason: "A create that failed records none: the unmarked object is someone else's.",
			f:      fake{observed: exists("")},
			mg: func(r *v1alpha1.PostgreSQLRole) {
				meta.SetExternalCreatePending(r, time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC))
				meta.SetExternalCreateFailed(r, time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC))
			},
			want: want{Done: true, Err: "exists but was not created by this PostgreSQLRole",
				ErrIs: oninstance.ErrConflict, Reason: v1alpha1.ReasonConflict, BoundTo: instanceUID, BoundToSys: server},
		},
		"SomeoneElsesReleased": {
			reason: "Deleting a resource that never owned the object lets go without touching it.",
			f:      fake{observed: exists("")},
			mg:     deleting,
			want:   want{Done: true, BoundTo: instanceUID, BoundToSys: server},
		},
		"OwnedWhileDeleting": {
			reason: "An owned object of a resource being deleted exists, so Delete runs.",
			f:      fake{observed: exists(uid)},
			mg:     deleting,
			want:   want{Done: true, Obs: managed.ExternalObservation{ResourceExists: true}, Recorded: true, BoundTo: instanceUID, BoundToSys: server},
		},
		"Import": {
			reason: "An observe-only import is recorded and never changed, and says so.",
			f:      fake{observed: exists("")},
			mg:     observeOnly,
			want: want{Done: true, Obs: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				Reason: v1alpha1.ReasonObserveOnly, Recorded: true, BoundTo: instanceUID, BoundToSys: server},
		},
		"ImportOfAnotherNamespaces": {
			reason: "An observe-only import of an object another namespace's resource made is a Conflict, and nothing of it is recorded.",
			f:      fake{observed: exists("other-uid"), markedBy: conflict.Owner{Kind: "PostgreSQLRole", Namespace: "victims", Name: "app"}},
			mg:     observeOnly,
			want: want{Done: true, Err: "managed from another namespace", ErrIs: oninstance.ErrConflict, Reason: v1alpha1.ReasonConflict,
				BoundTo: instanceUID, BoundToSys: server},
		},
		"ImportOfThisNamespacesOther": {
			reason: "An observe-only import of an object another resource of the same namespace made is an import.",
			f:      fake{observed: exists("other-uid"), markedBy: conflict.Owner{Kind: "PostgreSQLRole", Namespace: "shop", Name: "app-owner"}},
			mg:     observeOnly,
			want: want{Done: true, Obs: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				Reason: v1alpha1.ReasonObserveOnly, Recorded: true, BoundTo: instanceUID, BoundToSys: server},
		},
		"ImportOfAGoneResources": {
			reason: "An observe-only import of an object whose resource is gone (retained) is an import: no namespace manages it now.",
			f:      fake{observed: exists("gone-uid")},
			mg:     observeOnly,
			want: want{Done: true, Obs: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				Reason: v1alpha1.ReasonObserveOnly, Recorded: true, BoundTo: instanceUID, BoundToSys: server},
		},
		"AbsentPlansTheCreate": {
			reason: "The plan of an absent object is its create, after the kind's checks.",
			f:      fake{observed: absent},
			kind:   withPlan([]string{"CREATE ROLE app", "COMMENT ON ROLE app IS 'x'"}, nil),
			want: want{Done: true, Checked: true, BoundTo: instanceUID, BoundToSys: server,
				Plan: "Create: 2 statements", Pending: v1alpha1.ReasonChangesPending},
		},
		"AbsentRefusedPlansNothing": {
			reason: "A create the kind refuses has no plan: nothing would be sent.",
			f:      fake{observed: absent, refuse: errRefused},
			kind:   withPlan([]string{"CREATE ROLE app"}, nil),
			want:   want{Done: true, Err: errRefused.Error(), Checked: true, BoundTo: instanceUID, BoundToSys: server},
		},
		"ImportWithChangesPending": {
			reason: "The dry run: an import that differs from the spec is not up to date, and its plan is what widening the policies would send.",
			f:      fake{observed: exists("")},
			kind:   withPlan(nil, []string{"ALTER ROLE app CONNECTION LIMIT 5"}),
			mg:     observeOnly,
			want: want{Done: true, Obs: managed.ExternalObservation{ResourceExists: true},
				Reason: v1alpha1.ReasonObserveOnly, Recorded: true, BoundTo: instanceUID, BoundToSys: server,
				Plan: "Update: 1 statement", Pending: v1alpha1.ReasonChangesPending},
		},
		"ImportAsTheSpecAsks": {
			reason: "An import the spec matches has nothing pending.",
			f:      fake{observed: exists("")},
			kind:   withPlan(nil, nil),
			mg:     observeOnly,
			want: want{Done: true, Obs: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				Reason: v1alpha1.ReasonObserveOnly, Recorded: true, BoundTo: instanceUID, BoundToSys: server, Pending: v1alpha1.ReasonNoChangesPending},
		},
		"OwnedWhileDeletingPlansTheDrop": {
			reason: "Deleting with the Delete policy shows the drop while it is retried.",
			f:      fake{observed: exists(uid)},
			kind: func(f fake) Kind[*v1alpha1.PostgreSQLRole, object] {
				return planner{fake: f, drop: []string{"DROP ROLE app"}}
			},
			mg: deleting,
			want: want{Done: true, Obs: managed.ExternalObservation{ResourceExists: true}, Recorded: true, BoundTo: instanceUID, BoundToSys: server,
				Plan: "Delete: 1 statement", Pending: v1alpha1.ReasonChangesPending},
		},
		"OwnedWhileDeletingWithoutTheDeletePolicy": {
			reason: "Without the Delete policy, deleting the resource leaves the object: nothing is planned.",
			f:      fake{observed: exists(uid)},
			kind: func(f fake) Kind[*v1alpha1.PostgreSQLRole, object] {
				return planner{fake: f, drop: []string{"DROP ROLE app"}}
			},
			mg: func(r *v1alpha1.PostgreSQLRole) {
				deleting(r)
				r.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve, xpv2.ManagementActionCreate, xpv2.ManagementActionUpdate}
			},
			want: want{Done: true, Obs: managed.ExternalObservation{ResourceExists: true}, Recorded: true, BoundTo: instanceUID, BoundToSys: server},
		},
		"Owned": {
			reason: "An owned object is recorded and handed back for the kind to compare.",
			f:      fake{observed: exists(uid)},
			want:   want{Got: true, Recorded: true, BoundTo: instanceUID, BoundToSys: server},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var checked, recorded bool
			f := tc.f
			f.checked, f.recorded = &checked, &recorded
			var k Kind[*v1alpha1.PostgreSQLRole, object] = f
			if tc.kind != nil {
				k = tc.kind(f)
			}
			mg := &v1alpha1.PostgreSQLRole{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "shop", UID: uid}}
			mg.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
			if tc.mg != nil {
				tc.mg(mg)
			}
			in := &v1alpha1.PostgreSQLInstance{ObjectMeta: metav1.ObjectMeta{Name: "main", UID: instanceUID}}
			if tc.in != nil {
				tc.in(in)
			}
			got, obs, done, err := Observe(context.Background(), k, in, mg)
			w := want{
				Got: got != nil, Obs: obs, Done: done, Reason: mg.GetCondition(xpv2.TypeReady).Reason,
				Checked: checked, Recorded: recorded,
				BoundTo: mg.Status.AtProvider.InstanceUID, BoundToSys: mg.Status.AtProvider.SystemIdentifier,
				Pending: mg.GetCondition(v1alpha1.TypeUpToDate).Reason,
			}
			if p := mg.Status.AtProvider.Plan; p != nil {
				w.Plan = p.Summary
			}
			if err != nil {
				w.Err, w.ErrIs = tc.want.Err, tc.want.ErrIs
				if tc.want.ErrIs != nil && !errors.Is(err, tc.want.ErrIs) {
					t.Errorf("%s\nerror %v is not %v", tc.reason, err, tc.want.ErrIs)
				}
				if tc.want.Err != "" && !strings.Contains(err.Error(), tc.want.Err) {
					t.Errorf("%s\nerror %q does not say %q", tc.reason, err, tc.want.Err)
				}
				if tc.want.Err == "" && tc.want.ErrIs == nil {
					t.Errorf("%s\nunexpected error %v", tc.reason, err)
				}
			}
			if diff := cmp.Diff(tc.want, w, cmp.Comparer(func(a, b error) bool { return errors.Is(a, b) && errors.Is(b, a) })); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func deleting(r *v1alpha1.PostgreSQLRole) { r.SetDeletionTimestamp(ptr.To(metav1.Now())) }

func observeOnly(r *v1alpha1.PostgreSQLRole) {
	r.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
}
