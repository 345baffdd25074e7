package reconciler

import (
	"context"
	"testing"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

func TestOwnChanges(t *testing.T) {
	ready := func() *v1alpha1.PostgreSQLSchema {
		s := &v1alpha1.PostgreSQLSchema{ObjectMeta: metav1.ObjectMeta{
			Name: "s", Namespace: "team-a", Generation: 1, ResourceVersion: "10",
			Labels: map[string]string{"team": "a"}, Annotations: map[string]string{meta.AnnotationKeyExternalName: "app"},
		}}
		s.Spec.ForProvider.Owner = ptr.To("app")
		return s
	}
	// change returns a copy of ready() changed by f, at the next
	// resourceVersion, as the API server would store it.
	change := func(f func(*v1alpha1.PostgreSQLSchema)) *v1alpha1.PostgreSQLSchema {
		s := ready()
		s.ResourceVersion = "11"
		f(s)
		return s
	}
	// also lets through what the kind's controller must see in its status
	// (the database's binding, in the real use).
	also := predicate.Funcs{UpdateFunc: func(e ctrlevent.UpdateEvent) bool {
		s, ok := e.ObjectNew.(*v1alpha1.PostgreSQLSchema)
		return ok && s.Status.AtProvider.Database == "recorded-by-another"
	}}
	cases := map[string]struct {
		now  *v1alpha1.PostgreSQLSchema
		also bool
		want bool
	}{
		"ItsOwnConditionIsIgnored": {
			now: change(func(s *v1alpha1.PostgreSQLSchema) { s.SetConditions(xpv2.Available()) }),
		},
		"ItsOwnObservationIsIgnored": {
			now: change(func(s *v1alpha1.PostgreSQLSchema) { s.Status.AtProvider.Database = "app" }),
		},
		"TheCreatePendingAnnotationIsIgnored": {
			// crossplane-runtime requeues after writing it itself.
			now: change(func(s *v1alpha1.PostgreSQLSchema) { meta.SetExternalCreatePending(s, metav1.Now().Time) }),
		},
		"ASpecChangeWakes": {
			now:  change(func(s *v1alpha1.PostgreSQLSchema) { s.Generation = 2; s.Spec.ForProvider.Owner = ptr.To("other") }),
			want: true,
		},
		"ADeletionWakes": {
			// The API server bumps the generation when it sets the
			// deletion timestamp of an object with finalizers.
			now: change(func(s *v1alpha1.PostgreSQLSchema) {
				s.Generation = 2
				s.DeletionTimestamp = &metav1.Time{Time: metav1.Now().Time}
			}),
			want: true,
		},
		"AFinalizerWakes": {
			// crossplane-runtime adds its finalizer after the first
			// Observe, and the Update's reply resets what it observed.
			now: change(func(s *v1alpha1.PostgreSQLSchema) {
				s.Finalizers = append(s.Finalizers, "finalizer.managedresource.crossplane.io")
			}),
			want: true,
		},
		"TheCreatePendingWriteIsIgnored": {
			// A new object's finalizer and external name go with the
			// create-pending annotation (Finalizer); the reconcile that
			// wrote it creates and observes in the same worker.
			now: change(func(s *v1alpha1.PostgreSQLSchema) {
				s.Finalizers = append(s.Finalizers, "finalizer.managedresource.crossplane.io")
				s.Annotations[meta.AnnotationKeyExternalName] = "renamed"
				meta.SetExternalCreatePending(s, metav1.Now().Time)
			}),
		},
		"ASpecChangeWithCreatePendingWakes": {
			now: change(func(s *v1alpha1.PostgreSQLSchema) {
				s.Generation = 2
				meta.SetExternalCreatePending(s, metav1.Now().Time)
			}),
			want: true,
		},
		"AStatusWriteDuringDeletionWakes": {
			// A held deletion's own write, when a conflict needs its event.
			now: change(func(s *v1alpha1.PostgreSQLSchema) {
				s.DeletionTimestamp = &metav1.Time{Time: metav1.Now().Time}
				s.SetConditions(xpv2.Deleting())
			}),
			want: true,
		},
		"ALabelWakes": {
			now:  change(func(s *v1alpha1.PostgreSQLSchema) { s.Labels["crossplane.io/in-use"] = "true" }),
			want: true,
		},
		"APauseWakes": {
			now:  change(func(s *v1alpha1.PostgreSQLSchema) { s.Annotations[meta.AnnotationKeyReconciliationPaused] = "true" }),
			want: true,
		},
		"TheCreateSucceededAnnotationIsIgnored": {
			// Woken by it, the observation read the object before the
			// status write that follows it, and its own write conflicted;
			// the observation now runs in the create's own reconcile.
			now: change(func(s *v1alpha1.PostgreSQLSchema) { meta.SetExternalCreateSucceeded(s, metav1.Now().Time) }),
		},
		"TheCreateFailedAnnotationIsIgnored": {
			// A failed create is retried with back-off.
			now: change(func(s *v1alpha1.PostgreSQLSchema) { meta.SetExternalCreateFailed(s, metav1.Now().Time) }),
		},
		"ACreateRecordedInStatusIsIgnored": {
			// The observation after a create runs in the create's own
			// reconcile. Anyone with access to the status could otherwise
			// write this after each observation and keep the controller
			// observing.
			now: change(func(s *v1alpha1.PostgreSQLSchema) { s.SetConditions(xpv2.Creating(), xpv2.ReconcileSuccess()) }),
		},
		"AFailedCreateRecordedInStatusIsIgnored": {
			now: change(func(s *v1alpha1.PostgreSQLSchema) {
				s.SetConditions(xpv2.Creating(), xpv2.ReconcileError(context.Canceled))
			}),
		},
		"AResyncPasses": {
			now:  ready(),
			want: true,
		},
		"AStatusTheKindAsksForPasses": {
			now:  change(func(s *v1alpha1.PostgreSQLSchema) { s.Status.AtProvider.Database = "recorded-by-another" }),
			also: true,
			want: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := ownChanges()
			if tc.also {
				p = ownChanges(also)
			}
			got := p.Update(ctrlevent.UpdateEvent{ObjectOld: ready(), ObjectNew: tc.now})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Update(...): -want, +got:\n%s", diff)
			}
		})
	}
	// Creations and deletions always pass: a new object, and the informer's
	// last word on one gone.
	p := ownChanges()
	if !p.Create(ctrlevent.CreateEvent{Object: ready()}) || !p.Delete(ctrlevent.DeleteEvent{Object: ready()}) {
		t.Error("a create or delete event was filtered out")
	}
}
