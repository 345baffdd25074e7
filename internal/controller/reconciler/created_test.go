package reconciler

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/poll"
	"github.com/ayatori/provider-postgresql/internal/fixture/tier"
)

// TestObservationFollowsACreate: a reconcile whose create left its status
// to the observation (deferCreating) is followed at once, in the same
// call, by one more reconcile, whose result is the one returned; that
// one may not leave a create's status again. Anything else runs once.
func TestObservationFollowsACreate(t *testing.T) {
	creating := &v1alpha1.PostgreSQLRole{}
	creating.SetConditions(xpv2.Creating(), xpv2.ReconcileSuccess())
	failed := &v1alpha1.PostgreSQLRole{}
	failed.SetConditions(xpv2.Creating(), xpv2.ReconcileError(errors.New("refused")))
	polled := reconcile.Result{RequeueAfter: time.Minute}
	boom := errors.New("boom")

	// A pass: whether it creates, the status it would then write, and what
	// it returns.
	type pass struct {
		creates bool
		status  *v1alpha1.PostgreSQLRole
		res     reconcile.Result
		err     error
	}
	cases := map[string]struct {
		passes  []pass
		calls   int
		want    reconcile.Result
		wantErr error
	}{
		"ACreateIsObservedAtOnce": {
			passes: []pass{{creates: true, status: creating, res: requeue}, {res: polled}},
			calls:  2, want: reconcile.Result{RequeueAfter: time.Minute, Priority: ptr.To(poll.Priority)},
		},
		"AnObservationThatCreatesAgainWritesItsStatus": {
			passes: []pass{{creates: true, status: creating, res: requeue}, {creates: true, status: creating, res: requeue}},
			calls:  2, want: requeue,
		},
		"AFailedCreateIsLeftToTheBackOff": {
			passes: []pass{{creates: false, status: failed, res: requeue}},
			calls:  1, want: requeue,
		},
		"NoCreateRunsOnce": {
			passes: []pass{{res: polled}},
			calls:  1, want: reconcile.Result{RequeueAfter: time.Minute, Priority: ptr.To(poll.Priority)},
		},
		"AnErrorAfterTheCreateIsReturned": {
			passes: []pass{{creates: true, status: creating, res: requeue, err: boom}},
			calls:  1, want: requeue, wantErr: boom,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			calls := 0
			var deferred []bool
			r := requeues{waits: Waits{Unwatched: time.Minute, Watched: 10 * time.Minute}, r: reconcile.Func(func(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
				p := tc.passes[calls]
				calls++
				if p.creates {
					Created(ctx)
				}
				if p.status != nil {
					deferred = append(deferred, deferCreating(ctx, p.status))
				}
				return p.res, p.err
			})}
			got, err := r.Reconcile(context.Background(), reconcile.Request{})
			if calls != tc.calls {
				t.Errorf("reconciled %d times, want %d (status writes deferred: %v)", calls, tc.calls, deferred)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("error: got %v, want %v", err, tc.wantErr)
			}
		})
	}
}

// countedClients starts an API server and returns the manager's client
// over its cache, whose requests counter counts, and a client without
// cache: what is stored is read through api, since the manager's cache may
// not yet have seen an object that was only created.
func countedClients(ctx context.Context, t *testing.T) (kube, api client.Client, counter *countingTransport) {
	t.Helper()
	counter = &countingTransport{}
	kube, cp, s := cachedClient(ctx, t, counter.wrap, nil)
	return kube, apiClient(t, cp, s), counter
}

// TestCreateStatusIsNotSent: through the manager's client, the status
// write that records a create of the reconcile (Created) is not sent to
// the API server and leaves the object as it was; the same status
// written without a create noted, or a failed create's, is sent.
func TestCreateStatusIsNotSent(t *testing.T) {
	tier.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kube, api, counter := countedClients(ctx, t)
	role := &v1alpha1.PostgreSQLRole{ObjectMeta: metav1.ObjectMeta{Name: "created", Namespace: testNamespace(ctx, t)}, Spec: v1alpha1.PostgreSQLRoleSpec{InstanceRef: v1alpha1.InstanceReference{Name: "main"}}}
	if err := kube.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	write := func(ctx context.Context, conditions ...xpv2.Condition) (sent int64, version string) {
		t.Helper()
		r := role.DeepCopy()
		r.SetConditions(conditions...)
		counter.statusUpdates.Store(0)
		if err := kube.Status().Update(ctx, r); err != nil {
			t.Fatal(err)
		}
		return counter.statusUpdates.Load(), r.ResourceVersion
	}

	// Inside a reconcile that created: not sent.
	noted, note := withCreateNote(ctx)
	Created(noted)
	if sent, version := write(noted, xpv2.Creating(), xpv2.ReconcileSuccess()); sent != 0 || version != role.ResourceVersion {
		t.Errorf("a create's status: %d writes sent, version %s -> %s; want none and unchanged", sent, role.ResourceVersion, version)
	}
	if !note.observeNow() {
		t.Error("the create's status was not left to the observation")
	}

	// A failed create's status is sent, even in a reconcile that created.
	if sent, _ := write(noted, xpv2.Creating(), xpv2.ReconcileError(errors.New("refused"))); sent != 1 {
		t.Errorf("a failed create's status: %d writes sent, want 1", sent)
	}

	// No create noted: sent. role is reread from the API server (the
	// cache may lag), so the write is not a conflict.
	if err := api.Get(ctx, client.ObjectKeyFromObject(role), role); err != nil {
		t.Fatal(err)
	}
	if sent, _ := write(ctx, xpv2.Creating(), xpv2.ReconcileSuccess()); sent != 1 {
		t.Errorf("Creating written outside a create: %d writes sent, want 1", sent)
	}
}

// TestFinalizerGoesWithCreatePending: through the manager's client, a
// new object whose observation found nothing, about to be created
// (Missing), gets crossplane-runtime's finalizer in memory only, and the
// create-pending write that follows stores it with the external name; in
// every other case the finalizer is written at once, as
// crossplane-runtime's own finalizer does.
func TestFinalizerGoesWithCreatePending(t *testing.T) {
	tier.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kube, api, counter := countedClients(ctx, t)
	observeOnly := xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
	cases := map[string]struct {
		// note: the reconcile has a create note; missing: its observation
		// found nothing (Missing).
		note, missing bool
		policies      xpv2.ManagementPolicies
		// written: the finalizer is written by AddFinalizer itself.
		written bool
	}{
		"AMissingObjectAboutToBeCreated": {note: true, missing: true, written: false},
		"AnObjectThatExists":             {note: true, written: true},
		"AMissingObjectThatIsNotCreated": {note: true, missing: true, policies: observeOnly, written: true},
		"TheObservationAfterACreate":     {missing: true, written: true},
	}
	i := 0
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			i++
			role := &v1alpha1.PostgreSQLRole{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fin%d", i), Namespace: testNamespace(ctx, t)}, Spec: v1alpha1.PostgreSQLRoleSpec{InstanceRef: v1alpha1.InstanceReference{Name: "main"}}}
			if tc.policies != nil {
				role.SetManagementPolicies(tc.policies)
			}
			if err := kube.Create(ctx, role); err != nil {
				t.Fatal(err)
			}
			rctx := ctx
			if tc.note {
				rctx, _ = withCreateNote(ctx)
			}
			if tc.missing {
				Missing(rctx, role)
			}
			meta.SetExternalName(role, role.GetName())
			counter.updates.Store(0)
			if err := Finalizer(kube).AddFinalizer(rctx, role); err != nil {
				t.Fatal(err)
			}
			if !meta.FinalizerExists(role, managed.FinalizerName) {
				t.Fatal("the finalizer is not on the object in memory")
			}
			stored := func() *v1alpha1.PostgreSQLRole {
				t.Helper()
				r := &v1alpha1.PostgreSQLRole{}
				if err := api.Get(ctx, client.ObjectKeyFromObject(role), r); err != nil {
					t.Fatal(err)
				}
				return r
			}
			if sent := counter.updates.Load(); sent != map[bool]int64{true: 1, false: 0}[tc.written] {
				t.Errorf("AddFinalizer sent %d writes, want written=%t", sent, tc.written)
			}
			if got := meta.FinalizerExists(stored(), managed.FinalizerName); got != tc.written {
				t.Errorf("finalizer stored after AddFinalizer: %t, want %t", got, tc.written)
			}
			if tc.written {
				return
			}
			// crossplane-runtime's create-pending write, which must
			// succeed before it creates: it stores the finalizer and the
			// external name.
			meta.SetExternalCreatePending(role, time.Now())
			if err := kube.Update(rctx, role); err != nil {
				t.Fatal(err)
			}
			s := stored()
			if !meta.FinalizerExists(s, managed.FinalizerName) || meta.GetExternalName(s) != role.GetName() {
				t.Errorf("after the create-pending write: finalizers %v, external name %q; want %s and %q", s.GetFinalizers(), meta.GetExternalName(s), managed.FinalizerName, role.GetName())
			}
		})
	}
}

// TestCreateSucceededIsNotSent: through the manager's client, the
// create-succeeded annotation crossplane-runtime writes after a create is
// not sent when the create-pending write of the same reconcile stored
// the external name (created.go); the object stays as that write stored it,
// in memory too. Whenever more than that annotation would change, or the
// reconcile did not write create-pending itself, the write is sent. A
// write by someone else in between changes nothing: the stored object has
// the external name, and the annotation is not needed (created.go).
func TestCreateSucceededIsNotSent(t *testing.T) {
	tier.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kube, api, counter := countedClients(ctx, t)
	cases := map[string]struct {
		// note: the reconcile has a create note and found nothing to
		// observe (Missing); between: someone writes the object between
		// the create-pending write and the create's record.
		note, between bool
		// renamed: the create set another external name; failed: the
		// create failed.
		renamed, failed bool
		sent            bool
	}{
		"ACreateOfTheReconcile":        {note: true, sent: false},
		"NoCreatePendingWriteNoted":    {sent: true},
		"WrittenByAnotherInBetween":    {note: true, between: true, sent: false},
		"TheCreateSetAnExternalName":   {note: true, renamed: true, sent: true},
		"AFailedCreateIsStillRecorded": {note: true, failed: true, sent: true},
	}
	i := 0
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			i++
			role := &v1alpha1.PostgreSQLRole{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("succ%d", i), Namespace: testNamespace(ctx, t)}, Spec: v1alpha1.PostgreSQLRoleSpec{InstanceRef: v1alpha1.InstanceReference{Name: "main"}}}
			if err := kube.Create(ctx, role); err != nil {
				t.Fatal(err)
			}
			rctx := ctx
			if tc.note {
				rctx, _ = withCreateNote(ctx)
				Missing(rctx, role)
			}
			// crossplane-runtime's create-pending write, then the create.
			meta.SetExternalName(role, role.GetName())
			meta.SetExternalCreatePending(role, time.Now())
			if err := kube.Update(rctx, role); err != nil {
				t.Fatal(err)
			}
			if tc.between {
				other := role.DeepCopy()
				meta.AddAnnotations(other, map[string]string{"team": "shop"})
				if err := api.Update(ctx, other); err != nil {
					t.Fatal(err)
				}
			}
			if tc.renamed {
				meta.SetExternalName(role, "renamed")
			}
			if tc.failed {
				meta.SetExternalCreateFailed(role, time.Now())
			} else {
				meta.SetExternalCreateSucceeded(role, time.Now())
			}
			counter.updates.Store(0)
			if err := CriticalAnnotationUpdater(kube, api).UpdateCriticalAnnotations(rctx, role); err != nil {
				t.Fatal(err)
			}
			if got := counter.updates.Load() > 0; got != tc.sent {
				t.Errorf("the create's record sent: %t, want %t", got, tc.sent)
			}
			stored := &v1alpha1.PostgreSQLRole{}
			if err := api.Get(ctx, client.ObjectKeyFromObject(role), stored); err != nil {
				t.Fatal(err)
			}
			records := func(o client.Object) []bool {
				a := o.GetAnnotations()
				_, p := a[meta.AnnotationKeyExternalCreatePending]
				_, s := a[meta.AnnotationKeyExternalCreateSucceeded]
				_, f := a[meta.AnnotationKeyExternalCreateFailed]
				return []bool{p, s, f}
			}
			want := []bool{true, tc.sent && !tc.failed, tc.failed}
			if diff := cmp.Diff(want, records(stored)); diff != "" {
				t.Errorf("stored pending, succeeded, failed (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want, records(role)); diff != "" {
				t.Errorf("in memory pending, succeeded, failed (-want +got):\n%s", diff)
			}
		})
	}
}
