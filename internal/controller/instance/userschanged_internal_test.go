package instance

import (
	"context"
	"testing"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

func TestUsersChanged(t *testing.T) {
	user := func(instance, uid string) *v1alpha1.PostgreSQLRole {
		r := &v1alpha1.PostgreSQLRole{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "team-a"}}
		r.Spec.InstanceRef.Name = instance
		r.Status.AtProvider.InstanceUID = uid
		return r
	}
	ready := func() *v1alpha1.PostgreSQLRole {
		r := user("main", "uid-main")
		r.SetConditions(xpv2.Available())
		return r
	}
	cases := map[string]struct {
		was, now *v1alpha1.PostgreSQLRole
		want     bool
	}{
		"ItsStatusIsNothingToTheInstance": {was: user("main", "uid-main"), now: ready()},
		// On its way to Ready every user records the Instance's UID: that
		// makes it a user, it never ends a held deletion.
		"ItsFirstRecordOfTheInstanceIsNothingEither": {was: user("main", ""), now: user("main", "uid-main")},
		"ItNamesAnotherInstance":                     {was: user("main", "uid-main"), now: user("other", "uid-main"), want: true},
		"ItRecordsAnotherServer":                     {was: user("main", "uid-main"), now: user("main", "uid-new"), want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := usersChanged().Update(ctrlevent.UpdateEvent{ObjectOld: tc.was, ObjectNew: tc.now})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Update(...): -want, +got:\n%s", diff)
			}
		})
	}
	p := usersChanged()
	if !p.Delete(ctrlevent.DeleteEvent{Object: ready()}) {
		t.Error("a user gone did not wake the Instance: its held deletion would wait for the back-off")
	}
	if !p.Create(ctrlevent.CreateEvent{Object: ready()}) {
		t.Error("a new user did not wake the Instance: status.usedBy, which the in-use policy reads, would wait for the next poll")
	}
}

// afterQueue records when each request was asked for.
type afterQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	after map[string]time.Duration
}

func (q *afterQueue) AddAfter(r reconcile.Request, d time.Duration) { q.after[r.Name] = d }

func TestUsersHandler(t *testing.T) {
	user := func(instance string) *v1alpha1.PostgreSQLRole {
		r := &v1alpha1.PostgreSQLRole{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "team-a"}}
		r.Spec.InstanceRef.Name = instance
		return r
	}
	ctx := context.Background()
	h := usersHandler()
	cases := map[string]struct {
		send func(q *afterQueue)
		want map[string]time.Duration
	}{
		// A burst of thousands of new users costs a recount every
		// recountAfter, not one each.
		"ANewUserIsCountedALittleLater": {
			send: func(q *afterQueue) { h.Create(ctx, ctrlevent.CreateEvent{Object: user("main")}, q) },
			want: map[string]time.Duration{"main": recountAfter},
		},
		"AUserGoneWakesItAtOnce": {
			send: func(q *afterQueue) { h.Delete(ctx, ctrlevent.DeleteEvent{Object: user("main")}, q) },
			want: map[string]time.Duration{"main": 0},
		},
		"AUserMovedWakesBoth": {
			send: func(q *afterQueue) {
				h.Update(ctx, ctrlevent.UpdateEvent{ObjectOld: user("main"), ObjectNew: user("other")}, q)
			},
			want: map[string]time.Duration{"main": 0, "other": 0},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			q := &afterQueue{after: map[string]time.Duration{}}
			tc.send(q)
			if diff := cmp.Diff(tc.want, q.after); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}
