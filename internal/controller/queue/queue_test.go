package queue

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestQueueShutsDown: workers that take items, work on them and mark them
// done while others keep adding, as a controller's do, all return once the
// queue is shut down, round after round. controller-runtime's priority
// queue alone, in place of closingQueue here, deadlocks in the first
// rounds (kubernetes-sigs/controller-runtime#3538). No worker ever gets
// one of the wake-up items.
func TestQueueShutsDown(t *testing.T) {
	const rounds, workers = 100, 20
	for round := range rounds {
		inner := priorityqueue.New[reconcile.Request](fmt.Sprintf("round-%d", round))
		q := newClosingQueue(inner, 10*time.Second)
		var wg sync.WaitGroup
		woken := make(chan string, workers)
		for range workers {
			wg.Go(func() {
				for {
					key := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: fmt.Sprint(rand.Int())}}
					q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(rand.IntN(3))}, key)
					item, _, shutdown := q.GetWithPriority()
					if shutdown {
						return
					}
					if strings.HasPrefix(item.Name, "\x00") {
						woken <- item.Name
					}
					q.Done(item)
				}
			})
		}
		time.Sleep(time.Duration(rand.IntN(10)) * time.Millisecond)
		q.ShutDown()
		stopped := make(chan struct{})
		go func() { wg.Wait(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(15 * time.Second):
			t.Fatalf("round %d: workers still blocked 15 s after the queue was shut down", round)
		}
		close(woken)
		for name := range woken {
			t.Errorf("round %d: a worker was handed the wake-up item %q", round, name)
		}
		if !q.ShuttingDown() {
			t.Errorf("round %d: the queue does not say it is shutting down", round)
		}
	}
}

// TestNewIsAClosingPriorityQueue: New gives the closing queue, in which
// controller-runtime still sees a priority queue (it checks for one and
// would otherwise drop priorities).
func TestNewIsAClosingPriorityQueue(t *testing.T) {
	q := New("test", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	if _, ok := q.(*closingQueue); !ok {
		t.Errorf("New returns %T, want *closingQueue", q)
	}
	if _, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); !ok {
		t.Errorf("New returns %T, which controller-runtime does not take for a priority queue", q)
	}
}

// stuckQueue hands out nothing, whatever is added, until it is shut down:
// a queue whose workers the wake-up items do not reach.
type stuckQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	done chan struct{}
}

func (s *stuckQueue) Add(reconcile.Request) {}
func (s *stuckQueue) GetWithPriority() (reconcile.Request, int, bool) {
	<-s.done
	return reconcile.Request{}, 0, true
}
func (s *stuckQueue) ShutDown() { close(s.done) }

// TestQueueGivesUpWaiting: when the workers waiting on the queue do not
// leave, ShutDown closes the inner queue after drain anyway, and they
// return.
func TestQueueGivesUpWaiting(t *testing.T) {
	const drain = 200 * time.Millisecond
	q := newClosingQueue(&stuckQueue{done: make(chan struct{})}, drain)
	returned := make(chan bool)
	go func() { _, _, shutdown := q.GetWithPriority(); returned <- shutdown }()
	for {
		q.mu.Lock()
		inside := q.inside
		q.mu.Unlock()
		if inside == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	shut := make(chan struct{})
	go func() { q.ShutDown(); close(shut) }()
	select {
	case <-shut:
	case <-time.After(5 * time.Second):
		t.Fatal("ShutDown still waits 5 s after its drain of 200 ms")
	}
	if took := time.Since(start); took < drain {
		t.Errorf("ShutDown returned after %s, before its drain of %s", took, drain)
	}
	select {
	case shutdown := <-returned:
		if !shutdown {
			t.Error("the waiting worker was not told the queue shut down")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting worker did not return after ShutDown")
	}
}
