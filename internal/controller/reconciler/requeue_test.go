package reconciler

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ayatori/provider-postgresql/internal/controller/poll"
)

// requeue is what crossplane-runtime returns on an error: a rate-limited
// requeue.
var requeue = reconcile.Result{Requeue: true} //nolint:staticcheck // crossplane-runtime still returns Requeue.

// conflict is the API server's answer to a write of an outdated version.
var conflict = kerrors.NewConflict(schema.GroupResource{Resource: "postgresqlroles"}, "r", errors.New("the object has been modified"))

func TestAdjust(t *testing.T) {
	boom := errors.New("boom")
	cases := map[string]struct {
		res     reconcile.Result
		err     error
		noted   outcome
		want    reconcile.Result
		wantErr error
	}{
		"WaitingIsRequeuedOnceWithoutBackOff": {
			res: requeue, noted: outcome{waiting: true},
			want: reconcile.Result{RequeueAfter: time.Minute, Priority: ptr.To(poll.Priority)},
		},
		"WaitingForAWatchedResourceLooksAgainOnlyLate": {
			res: requeue, noted: outcome{waiting: true, woken: true},
			want: reconcile.Result{RequeueAfter: 10 * time.Minute, Priority: ptr.To(poll.Priority)},
		},
		"AnErrorIsLeftToTheBackOff": {
			res:  requeue,
			want: requeue,
		},
		"AFailedStatusWriteKeepsItsError": {
			res: requeue, err: boom, noted: outcome{waiting: true},
			want: requeue, wantErr: boom,
		},
		// crossplane-runtime swallows most conflicts: Requeue and no error.
		"ASwallowedConflictIsRetriedSoonWithoutBackOff": {
			res: requeue, noted: outcome{conflicted: true},
			want: reconcile.Result{RequeueAfter: conflictRetry},
		},
		"AReturnedConflictIsRetriedSoonWithoutBackOff": {
			res: requeue, err: errors.Join(errors.New("cannot update managed resource status"), conflict), noted: outcome{conflicted: true},
			want: reconcile.Result{RequeueAfter: conflictRetry},
		},
		"AConflictBeatsWaiting": {
			res: requeue, noted: outcome{conflicted: true, waiting: true},
			want: reconcile.Result{RequeueAfter: conflictRetry},
		},
		"AnotherErrorAfterAConflictKeepsItsBackOff": {
			res: requeue, err: boom, noted: outcome{conflicted: true},
			want: requeue, wantErr: boom,
		},
		"APollAfterAConflictThatWasOvercomeStaysAPoll": {
			res: reconcile.Result{RequeueAfter: 50 * time.Second}, noted: outcome{conflicted: true},
			want: reconcile.Result{RequeueAfter: 50 * time.Second, Priority: ptr.To(poll.Priority)},
		},
		"APollHasLowPriority": {
			res:  reconcile.Result{RequeueAfter: 50 * time.Second},
			want: reconcile.Result{RequeueAfter: 50 * time.Second, Priority: ptr.To(poll.Priority)},
		},
		"NoRequeueStaysSo": {
			res:  reconcile.Result{},
			want: reconcile.Result{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := adjust(tc.res, tc.err, tc.noted, Waits{Unwatched: time.Minute, Watched: 10 * time.Minute})
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("error: got %v, want %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPollsDoNotStarveAStart: the resources a starting provider finds are
// queued at handler.LowPriority; a poll queued above it would be served
// before them every time, and with enough polls they would never be.
func TestPollsDoNotStarveAStart(t *testing.T) {
	if poll.Priority > handler.LowPriority {
		t.Errorf("poll.Priority %d is above the priority of a start's initial list (%d): polls would starve it", poll.Priority, handler.LowPriority)
	}
	if poll.Priority >= 0 {
		t.Errorf("poll.Priority %d does not yield to changes (0)", poll.Priority)
	}
}
