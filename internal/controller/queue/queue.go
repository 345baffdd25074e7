// Package queue is the work queue of every controller of the provider:
// controller-runtime's priority queue, behind a wrapper that shuts down
// cleanly (closingQueue).
package queue

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// queueDrainTimeout bounds how long a shutting-down queue waits for the
// workers blocked on it before it closes anyway.
const queueDrainTimeout = 10 * time.Second

// New is controller-runtime's priority queue, the one it uses by
// default, behind closingQueue.
func New(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return newClosingQueue(priorityqueue.New(name, func(o *priorityqueue.Opts[reconcile.Request]) { o.RateLimiter = rl }), queueDrainTimeout)
}

// closingQueue works around a deadlock of controller-runtime's priority
// queue at shutdown (kubernetes-sigs/controller-runtime#3538, fixed in
// v0.25, which also moves every Kubernetes library to 0.37: an upgrade of
// its own): a worker waiting for an item returns when the
// queue closes without taking back its place among the waiters, and the
// queue's dispatcher may then block for good handing an item to nobody,
// holding the lock every worker needs to finish its item. The controller
// never stops; a provider being stopped hung until its grace period ran
// out (a restart in the test suite failed on it, "failed waiting for all
// runnables to end").
//
// So the inner queue is closed only once no worker waits on it: ShutDown
// first turns new waits away, wakes each worker still waiting with an item
// of its own (which no reconciler ever sees), and waits for them to leave,
// at most drain, before it closes the inner queue. Remove with
// controller-runtime v0.25.
type closingQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]

	drain time.Duration
	once  sync.Once
	mu    sync.Mutex
	left  *sync.Cond
	// closing: ShutDown has begun; inside: workers waiting in the inner
	// queue; gaveUp: ShutDown stopped waiting for them after drain.
	closing, gaveUp bool
	inside          int
}

func newClosingQueue(q priorityqueue.PriorityQueue[reconcile.Request], drain time.Duration) *closingQueue {
	c := &closingQueue{PriorityQueue: q, drain: drain}
	c.left = sync.NewCond(&c.mu)
	return c
}

// GetWithPriority implements priorityqueue.PriorityQueue.
func (q *closingQueue) GetWithPriority() (reconcile.Request, int, bool) {
	q.mu.Lock()
	if q.closing {
		q.mu.Unlock()
		return reconcile.Request{}, 0, true
	}
	q.inside++
	q.mu.Unlock()
	item, priority, shutdown := q.PriorityQueue.GetWithPriority()
	q.mu.Lock()
	q.inside--
	closing := q.closing
	q.left.Broadcast()
	q.mu.Unlock()
	if closing {
		// An item taken while closing (a wake-up item, or a real one) is
		// not worked on: the controller is stopping.
		return reconcile.Request{}, 0, true
	}
	return item, priority, shutdown
}

// Get implements workqueue.Interface.
func (q *closingQueue) Get() (reconcile.Request, bool) {
	item, _, shutdown := q.GetWithPriority()
	return item, shutdown
}

// ShutDown implements workqueue.Interface.
func (q *closingQueue) ShutDown() {
	q.once.Do(func() {
		q.mu.Lock()
		q.closing = true
		waiting := q.inside
		q.mu.Unlock()
		for i := range waiting {
			// Not a name any object can have: no reconciler sees it.
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: fmt.Sprintf("\x00wake-%d", i)}})
		}
		left := make(chan struct{})
		go func() {
			defer close(left)
			q.mu.Lock()
			defer q.mu.Unlock()
			for q.inside > 0 && !q.gaveUp {
				q.left.Wait()
			}
		}()
		select {
		case <-left:
		case <-time.After(q.drain):
			q.mu.Lock()
			q.gaveUp = true
			q.left.Broadcast()
			q.mu.Unlock()
			<-left
		}
		q.PriorityQueue.ShutDown()
	})
}

// ShuttingDown implements workqueue.Interface.
func (q *closingQueue) ShuttingDown() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closing || q.PriorityQueue.ShuttingDown()
}

// ShutDownWithDrain implements workqueue.Interface; like the priority
// queue, it does not drain.
func (q *closingQueue) ShutDownWithDrain() { q.ShutDown() }
