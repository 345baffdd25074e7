package queue

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func req(ns, name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
}

func newQueue(t *testing.T, pace *rate.Limiter) *Fair {
	t.Helper()
	q := New("test", workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Millisecond, time.Second), Paced(pace))
	t.Cleanup(q.ShutDown)
	return q
}

// drain takes n items, marking each done, and returns them in order.
func drain(t *testing.T, q *Fair, n int) []string {
	t.Helper()
	var out []string
	for range n {
		got := make(chan reconcile.Request, 1)
		go func() { r, _ := q.Get(); got <- r }()
		select {
		case r := <-got:
			out = append(out, r.Namespace+"/"+r.Name)
			q.Done(r)
		case <-time.After(5 * time.Second):
			t.Fatalf("no item after %v", out)
		}
	}
	return out
}

func TestTurns(t *testing.T) {
	cases := map[string]struct {
		reason string
		add    func(q *Fair)
		want   []string
	}{
		"OneNamespaceIsFirstComeFirstServed": {
			reason: "Alone, a namespace's items go in the order they came.",
			add: func(q *Fair) {
				q.Add(req("a", "1"))
				q.Add(req("a", "2"))
				q.Add(req("a", "3"))
			},
			want: []string{"a/1", "a/2", "a/3"},
		},
		"ANewcomerWaitsOneTurn": {
			reason: "A namespace's one item, added after another namespace's wave, goes after the wave's first, not after all of it.",
			add: func(q *Fair) {
				for i := range 5 {
					q.Add(req("noisy", fmt.Sprint(i)))
				}
				q.Add(req("quiet", "claim"))
			},
			want: []string{"noisy/0", "quiet/claim", "noisy/1", "noisy/2", "noisy/3", "noisy/4"},
		},
		"NamespacesTakeTurns": {
			reason: "Two busy namespaces alternate, whoever came first.",
			add: func(q *Fair) {
				for i := range 3 {
					q.Add(req("a", fmt.Sprint(i)))
				}
				for i := range 3 {
					q.Add(req("b", fmt.Sprint(i)))
				}
			},
			want: []string{"a/0", "b/0", "a/1", "b/1", "a/2", "b/2"},
		},
		"PriorityBeforeTurn": {
			reason: "A higher priority (a change) goes before a lower one (a poll), whichever namespace's turn it is.",
			add: func(q *Fair) {
				q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(-100)}, req("a", "poll"))
				q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(-100)}, req("b", "poll"))
				q.Add(req("b", "change"))
			},
			want: []string{"b/change", "a/poll", "b/poll"},
		},
		"OnceEach": {
			reason: "An object added twice is queued once, at the higher priority.",
			add: func(q *Fair) {
				q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(-100)}, req("a", "x"))
				q.Add(req("b", "y"))
				q.Add(req("a", "x"))
			},
			want: []string{"a/x", "b/y"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			q := newQueue(t, nil)
			tc.add(q)
			if diff := cmp.Diff(tc.want, drain(t, q, len(tc.want))); diff != "" {
				t.Errorf("%s\norder (-want +got):\n%s", tc.reason, diff)
			}
			if n := q.Len(); n != 0 {
				t.Errorf("%d items left", n)
			}
		})
	}
}

// TestNotWhileWorkedOn: an object added while a worker has it is handed
// out only once that worker is done with it, and then once.
func TestNotWhileWorkedOn(t *testing.T) {
	q := newQueue(t, nil)
	q.Add(req("a", "x"))
	x, _ := q.Get()
	q.Add(req("a", "x"))
	q.Add(req("a", "x"))
	q.Add(req("a", "y"))
	if got := drain(t, q, 1); got[0] != "a/y" {
		t.Fatalf("handed out %v while a/x was worked on", got)
	}
	if n := q.Len(); n != 0 {
		t.Fatalf("%d items ready while a/x is worked on, want 0", n)
	}
	q.Done(x)
	if diff := cmp.Diff([]string{"a/x"}, drain(t, q, 1)); diff != "" {
		t.Errorf("after Done (-want +got):\n%s", diff)
	}
	if n := q.Len(); n != 0 {
		t.Errorf("%d items left, want 0: the object was queued more than once", n)
	}
}

// TestWaits: an object added after a delay, or rate-limited, is handed
// out once its time comes, not before; an earlier add wins.
func TestWaits(t *testing.T) {
	q := newQueue(t, nil)
	start := time.Now()
	q.AddAfter(req("a", "later"), 300*time.Millisecond)
	q.AddAfter(req("a", "sooner"), time.Hour)
	q.AddAfter(req("a", "sooner"), 100*time.Millisecond)
	if n := q.Len(); n != 0 {
		t.Fatalf("%d items ready at once, want 0", n)
	}
	got := drain(t, q, 2)
	if diff := cmp.Diff([]string{"a/sooner", "a/later"}, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("both handed out after %s, before the later one's 300 ms", took)
	}
	r := req("a", "failing")
	for range 3 {
		q.AddRateLimited(r)
		drain(t, q, 1)
	}
	if n := q.NumRequeues(r); n != 3 {
		t.Errorf("NumRequeues = %d after three rate-limited adds, want 3", n)
	}
	q.Forget(r)
	if n := q.NumRequeues(r); n != 0 {
		t.Errorf("NumRequeues = %d after Forget, want 0", n)
	}
}

// TestPaced: items are handed out no faster than the shared rate.
func TestPaced(t *testing.T) {
	q := newQueue(t, rate.NewLimiter(20, 1))
	for i := range 6 {
		q.Add(req("a", fmt.Sprint(i)))
	}
	start := time.Now()
	drain(t, q, 6)
	// The first token is there at once, the other five 50 ms apart.
	if took := time.Since(start); took < 240*time.Millisecond {
		t.Errorf("6 items handed out in %s at 20 per second, want at least 250 ms", took)
	}
}

// TestShutDown: workers waiting for an item, or for the rate, return at
// once when the queue shuts down, round after round while others add and
// take.
func TestShutDown(t *testing.T) {
	for round := range 50 {
		// Items at priority 0 are held while 1s and 2s wait, for a few
		// milliseconds: a held worker returns at shutdown too.
		q := New(fmt.Sprintf("round-%d", round), nil, NewShared(rate.NewLimiter(1, 1), 5*time.Millisecond, 0))
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				for {
					q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(rand.IntN(3))}, req(fmt.Sprint(rand.IntN(3)), fmt.Sprint(rand.Int())))
					r, shutdown := q.Get()
					if shutdown {
						return
					}
					q.Done(r)
				}
			})
		}
		time.Sleep(time.Duration(rand.IntN(10)) * time.Millisecond)
		q.ShutDown()
		stopped := make(chan struct{})
		go func() { wg.Wait(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: workers still blocked 5 s after the queue was shut down", round)
		}
		if !q.ShuttingDown() {
			t.Errorf("round %d: the queue does not say it is shutting down", round)
		}
	}
}

// TestIsAPriorityQueue: controller-runtime takes the queue for a priority
// queue (it checks, and would otherwise drop priorities).
func TestIsAPriorityQueue(t *testing.T) {
	var q workqueue.TypedRateLimitingInterface[reconcile.Request] = newQueue(t, nil)
	if _, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); !ok {
		t.Errorf("%T is not a priorityqueue.PriorityQueue", q)
	}
}

// TestForgetsIdleNamespaces: the tags of namespaces with nothing queued
// are dropped once there are many, so that the queue does not grow with
// every namespace ever seen.
func TestForgetsIdleNamespaces(t *testing.T) {
	q := newQueue(t, nil)
	for i := range 1000 {
		q.Add(req(fmt.Sprint("ns-", i), "x"))
		drain(t, q, 1)
	}
	q.mu.Lock()
	n := len(q.last)
	q.mu.Unlock()
	if n > 256 {
		t.Errorf("%d namespaces' tags kept with nothing queued, want at most 256", n)
	}
}

// The poll priority of these tests: items at or below it are held.
const pollPriority = -100

// get takes one item from q within limit, or reports none (ok false).
func get(q *Fair, limit time.Duration) (took time.Duration, ok bool) {
	got := make(chan reconcile.Request, 1)
	start := time.Now()
	go func() { r, _ := q.Get(); got <- r }()
	select {
	case <-got:
		return time.Since(start), true
	case <-time.After(limit):
		return limit, false
	}
}

// TestPollsWaitForChangesElsewhere: a queue holds a poll while a change
// is ready in another queue sharing it, and hands it out as soon as the
// change is taken, or once held for hold whatever waits; a retry after an
// error holds nothing, and a change in the poll's own queue goes at once.
func TestPollsWaitForChangesElsewhere(t *testing.T) {
	const hold = 400 * time.Millisecond
	poll := priorityqueue.AddOpts{Priority: ptr.To(pollPriority)}
	change := priorityqueue.AddOpts{Priority: ptr.To(0)}
	retry := priorityqueue.AddOpts{Priority: ptr.To(0), RateLimited: true}
	setUp := func(t *testing.T) (polls, changes *Fair) {
		t.Helper()
		s := NewShared(nil, hold, pollPriority)
		polls = New("polls", workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](0, 0), s)
		changes = New("changes", workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](0, 0), s)
		t.Cleanup(polls.ShutDown)
		t.Cleanup(changes.ShutDown)
		return polls, changes
	}

	t.Run("HeldUntilTheChangeIsTaken", func(t *testing.T) {
		polls, changes := setUp(t)
		changes.AddWithOpts(change, req("a", "create"))
		polls.AddWithOpts(poll, req("a", "poll"))
		got := make(chan time.Time, 1)
		go func() { _, _ = polls.Get(); got <- time.Now() }()
		select {
		case <-got:
			t.Fatal("the poll was handed out while a change was ready in another queue")
		case <-time.After(hold / 4):
		}
		if _, ok := get(changes, time.Second); !ok {
			t.Fatal("the change was not handed out")
		}
		taken := time.Now()
		select {
		case at := <-got:
			if d := at.Sub(taken); d > hold/4 {
				t.Errorf("the poll came %s after the change was taken, want at once", d)
			}
		case <-time.After(hold):
			t.Fatal("the poll was still held after the change was taken")
		}
	})

	t.Run("HeldAtMostHold", func(t *testing.T) {
		polls, changes := setUp(t)
		changes.AddWithOpts(change, req("a", "create"))
		polls.AddWithOpts(poll, req("a", "poll"))
		took, ok := get(polls, 3*hold)
		if !ok {
			t.Fatalf("the poll was held for over %s, with hold %s", 3*hold, hold)
		}
		if took < hold*3/4 {
			t.Errorf("the poll was handed out after %s while a change waited, want about %s", took, hold)
		}
	})

	t.Run("ARetryHoldsNothing", func(t *testing.T) {
		polls, changes := setUp(t)
		changes.AddWithOpts(retry, req("a", "failing"))
		polls.AddWithOpts(poll, req("a", "poll"))
		if took, ok := get(polls, hold/4); !ok {
			t.Errorf("the poll was held %s by a retry after an error", took)
		}
	})

	t.Run("AChangeToARetryHolds", func(t *testing.T) {
		polls, changes := setUp(t)
		changes.AddWithOpts(retry, req("a", "failing"))
		// The object changes before its retry is due: it is a change now.
		changes.AddWithOpts(change, req("a", "failing"))
		polls.AddWithOpts(poll, req("a", "poll"))
		if _, ok := get(polls, hold/4); ok {
			t.Error("the poll was handed out while a change waited in another queue")
		}
	})

	t.Run("AChangeInTheSameQueueGoesAtOnce", func(t *testing.T) {
		polls, changes := setUp(t)
		changes.AddWithOpts(change, req("a", "create"))
		polls.AddWithOpts(poll, req("a", "poll"))
		got := make(chan reconcile.Request, 1)
		go func() { r, _ := polls.Get(); got <- r }()
		time.Sleep(hold / 8)
		polls.AddWithOpts(change, req("a", "update"))
		select {
		case r := <-got:
			if r.Name != "update" {
				t.Errorf("got %s, want the change of the same queue", r.Name)
			}
		case <-time.After(hold / 2):
			t.Fatal("a change of the held queue's own was not handed out")
		}
	})

	t.Run("NothingHeldWithoutHold", func(t *testing.T) {
		s := Paced(nil)
		polls, changes := New("p", nil, s), New("c", nil, s)
		t.Cleanup(polls.ShutDown)
		t.Cleanup(changes.ShutDown)
		changes.AddWithOpts(change, req("a", "create"))
		polls.AddWithOpts(poll, req("a", "poll"))
		if took, ok := get(polls, hold/4); !ok {
			t.Errorf("the poll was held %s with no hold", took)
		}
	})
}
