package instance

import (
	"context"
	"errors"
	"testing"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
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

// instances is a cache holding the named Instances.
type instances map[string]*v1alpha1.PostgreSQLInstance

func (c instances) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	in, ok := c[key.Name]
	if !ok {
		return kerrors.NewNotFound(v1alpha1.PostgreSQLInstanceGroupVersionKind.GroupVersion().WithResource("postgresqlinstances").GroupResource(), key.Name)
	}
	in.DeepCopyInto(obj.(*v1alpha1.PostgreSQLInstance)) //nolint:forcetypeassert // Only Instances are read.
	return nil
}

func (c instances) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not listed")
}

func TestUsersHandler(t *testing.T) {
	user := func(instance string) *v1alpha1.PostgreSQLRole {
		r := &v1alpha1.PostgreSQLRole{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "team-a"}}
		r.Spec.InstanceRef.Name = instance
		return r
	}
	counting := func(name string, users int32, deleting bool) *v1alpha1.PostgreSQLInstance {
		in := &v1alpha1.PostgreSQLInstance{ObjectMeta: metav1.ObjectMeta{Name: name}}
		in.Status.UsedBy = users
		if deleting {
			in.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
		}
		return in
	}
	ctx := context.Background()
	cases := map[string]struct {
		cache instances
		send  func(h handler.EventHandler, q *afterQueue)
		want  map[string]time.Duration
	}{
		// The first user protects the Instance from deletion: counted a
		// little later, so that a burst costs one recount, not one each.
		"TheFirstUserIsCountedALittleLater": {
			cache: instances{"main": counting("main", 0, false)},
			send: func(h handler.EventHandler, q *afterQueue) {
				h.Create(ctx, ctrlevent.CreateEvent{Object: user("main")}, q)
			},
			want: map[string]time.Duration{"main": recountAfter},
		},
		// A recount lists every user: with 10,000 counted, one every 10 s.
		"ANewUserOfAManyUsedInstanceWaitsInProportion": {
			cache: instances{"main": counting("main", 10000, false)},
			send: func(h handler.EventHandler, q *afterQueue) {
				h.Create(ctx, ctrlevent.CreateEvent{Object: user("main")}, q)
			},
			want: map[string]time.Duration{"main": 10 * time.Second},
		},
		"AUserGoneFromAFewIsCountedAtOnce": {
			cache: instances{"main": counting("main", 3, false)},
			send: func(h handler.EventHandler, q *afterQueue) {
				h.Delete(ctx, ctrlevent.DeleteEvent{Object: user("main")}, q)
			},
			want: map[string]time.Duration{"main": 3 * time.Millisecond},
		},
		"AUserGoneFromManyWaitsInProportion": {
			cache: instances{"main": counting("main", 5000, false)},
			send: func(h handler.EventHandler, q *afterQueue) {
				h.Delete(ctx, ctrlevent.DeleteEvent{Object: user("main")}, q)
			},
			want: map[string]time.Duration{"main": 5 * time.Second},
		},
		// Its held deletion goes on as soon as the last user goes.
		"AUserGoneWakesAnInstanceBeingDeletedAtOnce": {
			cache: instances{"main": counting("main", 5000, true)},
			send: func(h handler.EventHandler, q *afterQueue) {
				h.Delete(ctx, ctrlevent.DeleteEvent{Object: user("main")}, q)
			},
			want: map[string]time.Duration{"main": 0},
		},
		"AnInstanceNotInTheCacheIsWokenAtOnce": {
			cache: instances{},
			send: func(h handler.EventHandler, q *afterQueue) {
				h.Create(ctx, ctrlevent.CreateEvent{Object: user("main")}, q)
			},
			want: map[string]time.Duration{"main": 0},
		},
		"AUserMovedWakesBoth": {
			cache: instances{"main": counting("main", 1, false), "other": counting("other", 0, false)},
			send: func(h handler.EventHandler, q *afterQueue) {
				h.Update(ctx, ctrlevent.UpdateEvent{ObjectOld: user("main"), ObjectNew: user("other")}, q)
			},
			want: map[string]time.Duration{"main": time.Millisecond, "other": recountAfter},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			q := &afterQueue{after: map[string]time.Duration{}}
			tc.send(usersHandler(tc.cache), q)
			if diff := cmp.Diff(tc.want, q.after); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}
