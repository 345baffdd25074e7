// Package queue is the work queue of every controller of the provider: a
// priority queue that shares its workers fairly between namespaces, and
// paces what it hands out under the provider's global reconcile rate.
package queue

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Fair is a controller's work queue. Like controller-runtime's priority
// queue, which it replaces, it holds each object at most once, hands out
// higher priorities first (a change before a poll, a poll before the
// start-up list), never hands out an object that a worker is still
// working on, and delays an object by what it is asked to or by its
// back-off.
//
// Unlike it, items of one priority are not handed out first come, first
// served, but in turn between namespaces (start-time fair queuing): an
// item that becomes ready is tagged one after the last item of its
// namespace, or after the last item handed out when its namespace has
// none waiting, and the smallest tag goes first. A namespace that applies
// 2,000 objects at once, or whose 300 objects fail and retry, so holds one
// turn in each round; another namespace's one new object waits for one
// item of each busy namespace, not for all of them.
//
// The provider's global reconcile rate is kept here too (Shared): a
// worker that takes an item waits for the rate's next token.
// crossplane-runtime's rate-limited reconciler, which this replaces,
// reserved a token for every reconcile it turned away, so that a wave of
// one namespace's objects booked the next seconds of tokens ahead of
// everyone else. A poll also waits, for a while, when a change waits in
// another controller's queue (Shared).
type Fair struct {
	rl     workqueue.TypedRateLimiter[reconcile.Request]
	shared *Shared

	mu    sync.Mutex
	ready *sync.Cond
	// items are the queued objects, ready, waiting or parked.
	items   map[reconcile.Request]*entry
	byTurn  entries
	byTime  entries
	working map[reconcile.Request]bool
	// handed is the tag of the last item handed out; last, each
	// namespace's last tag.
	handed uint64
	last   map[string]uint64
	seq    uint64
	closed bool

	wake     chan struct{}
	stopped  chan struct{}
	paceCtx  context.Context
	stopPace context.CancelFunc
	depth    depthGauge

	// urgent counts the urgent entries in byTurn (Shared); holdAt is
	// when holdTimer wakes the held workers.
	urgent    int64
	holdTimer *time.Timer
	holdAt    time.Time
}

var _ priorityqueue.PriorityQueue[reconcile.Request] = &Fair{}

// An entry is a queued object.
type entry struct {
	req      reconcile.Request
	priority int
	// readyAt is when a waiting entry becomes ready; zero once it is.
	readyAt time.Time
	// parked: ready, but a worker is still working on the object.
	parked bool
	// urgent: a change rather than a poll or a retry (Shared.urgentFor);
	// since: when it last became ready, from which a poll is held at
	// most Shared's hold.
	urgent bool
	since  time.Time
	// tag is the entry's turn, seq the order it became ready in, which
	// settles equal turns first come, first served.
	tag, seq uint64
	// turn and wait are the entry's places in byTurn and byTime, -1 when
	// it is in neither.
	turn, wait int
}

// New returns the fair queue of controller name: rl decides the back-off
// of the items added rate-limited, shared (nil: nothing) the rate at which
// items are handed out and the precedence of changes over polls, both
// across every controller made with it.
func New(name string, rl workqueue.TypedRateLimiter[reconcile.Request], shared *Shared) *Fair {
	if rl == nil {
		rl = workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]()
	}
	ctx, cancel := context.WithCancel(context.Background())
	q := &Fair{
		rl: rl, shared: shared,
		items: map[reconcile.Request]*entry{}, working: map[reconcile.Request]bool{}, last: map[string]uint64{},
		wake: make(chan struct{}, 1), stopped: make(chan struct{}),
		paceCtx: ctx, stopPace: cancel, depth: depthOf(name),
		byTurn: byTurnOrder(), byTime: byTimeOrder(),
	}
	q.ready = sync.NewCond(&q.mu)
	if shared != nil {
		shared.join(q)
	}
	go q.release()
	return q
}

// AddWithOpts implements priorityqueue.PriorityQueue: an object already
// queued keeps the higher priority and the earlier time of the two.
func (q *Fair) AddWithOpts(o priorityqueue.AddOpts, reqs ...reconcile.Request) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	now := time.Now()
	priority := 0
	if o.Priority != nil {
		priority = *o.Priority
	}
	urgent := q.shared.urgentFor(priority, o.RateLimited)
	for _, req := range reqs {
		after := o.After
		if o.RateLimited {
			if backoff := q.rl.When(req); after == 0 || backoff < after {
				after = backoff
			}
		}
		e, ok := q.items[req]
		if !ok {
			e = &entry{req: req, priority: priority, urgent: urgent, turn: -1, wait: -1}
			q.items[req] = e
			q.depth.Inc()
			if after > 0 {
				q.await(e, now.Add(after))
			} else {
				q.makeReady(e)
			}
			continue
		}
		if priority > e.priority {
			e.priority = priority
			if e.turn >= 0 {
				heap.Fix(&q.byTurn, e.turn)
			}
		}
		if urgent && !e.urgent {
			e.urgent = true
			if e.turn >= 0 {
				q.countUrgent(1)
			}
		}
		switch {
		case e.wait < 0:
			// Ready or parked already: nothing is sooner.
		case after <= 0:
			heap.Remove(&q.byTime, e.wait)
			q.makeReady(e)
		case now.Add(after).Before(e.readyAt):
			e.readyAt = now.Add(after)
			heap.Fix(&q.byTime, e.wait)
			q.poke()
		}
	}
}

// await puts e among the waiting until at.
func (q *Fair) await(e *entry, at time.Time) {
	e.readyAt = at
	heap.Push(&q.byTime, e)
	q.poke()
}

// makeReady gives e its turn, or parks it while a worker has its object.
func (q *Fair) makeReady(e *entry) {
	e.readyAt = time.Time{}
	if q.working[e.req] {
		e.parked = true
		return
	}
	e.parked = false
	e.since = time.Now()
	if e.urgent {
		q.countUrgent(1)
	}
	ns := e.req.Namespace
	e.tag = max(q.handed, q.last[ns]) + 1
	q.last[ns] = e.tag
	q.seq++
	e.seq = q.seq
	heap.Push(&q.byTurn, e)
	q.ready.Signal()
}

// poke wakes release to look at the waiting again.
func (q *Fair) poke() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// release makes the waiting entries ready as their time comes.
func (q *Fair) release() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		q.mu.Lock()
		now := time.Now()
		for q.byTime.Len() > 0 && !q.byTime.e[0].readyAt.After(now) {
			e, _ := heap.Pop(&q.byTime).(*entry)
			q.makeReady(e)
		}
		next := time.Hour
		if q.byTime.Len() > 0 {
			next = q.byTime.e[0].readyAt.Sub(now)
		}
		q.mu.Unlock()
		timer.Reset(next)
		select {
		case <-q.stopped:
			return
		case <-q.wake:
		case <-timer.C:
		}
	}
}

// GetWithPriority implements priorityqueue.PriorityQueue: the next turn,
// once no change waits anywhere before it (Shared) and the global rate
// allows it.
func (q *Fair) GetWithPriority() (reconcile.Request, int, bool) {
	q.mu.Lock()
	for !q.closed {
		if q.byTurn.Len() == 0 {
			q.ready.Wait()
			continue
		}
		d := q.shared.heldFor(q.byTurn.e[0], time.Now())
		if d == 0 {
			break
		}
		q.holdUntil(time.Now().Add(d))
		q.ready.Wait()
	}
	if q.closed {
		q.mu.Unlock()
		return reconcile.Request{}, 0, true
	}
	e, _ := heap.Pop(&q.byTurn).(*entry)
	if e.urgent {
		q.countUrgent(-1)
	}
	delete(q.items, e.req)
	q.depth.Dec()
	q.working[e.req] = true
	q.handed = max(q.handed, e.tag)
	q.forgetIdleNamespaces()
	q.mu.Unlock()
	if q.shared != nil && q.shared.pace != nil {
		if err := q.shared.pace.Wait(q.paceCtx); err != nil {
			// Shut down while waiting: the controller stops.
			return e.req, e.priority, true
		}
	}
	return e.req, e.priority, false
}

// forgetIdleNamespaces drops the last tags that no longer matter (at or
// before the last handed out: such a namespace's next item is tagged from
// that anyway), once they are many, so that the map holds the namespaces
// with work waiting, not every namespace ever seen.
func (q *Fair) forgetIdleNamespaces() {
	if len(q.last) < 256 || len(q.last) < 2*len(q.items) {
		return
	}
	for ns, tag := range q.last {
		if tag <= q.handed {
			delete(q.last, ns)
		}
	}
}

// Done implements workqueue.Interface: an object added while it was
// worked on gets its turn now.
func (q *Fair) Done(req reconcile.Request) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.working, req)
	if e, ok := q.items[req]; ok && e.parked {
		q.makeReady(e)
	}
}

// Add implements workqueue.Interface.
func (q *Fair) Add(req reconcile.Request) { q.AddWithOpts(priorityqueue.AddOpts{}, req) }

// AddAfter implements workqueue.DelayingInterface.
func (q *Fair) AddAfter(req reconcile.Request, d time.Duration) {
	q.AddWithOpts(priorityqueue.AddOpts{After: d}, req)
}

// AddRateLimited implements workqueue.RateLimitingInterface.
func (q *Fair) AddRateLimited(req reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, req)
}

// Get implements workqueue.Interface.
func (q *Fair) Get() (reconcile.Request, bool) {
	req, _, shutdown := q.GetWithPriority()
	return req, shutdown
}

// Forget implements workqueue.RateLimitingInterface.
func (q *Fair) Forget(req reconcile.Request) { q.rl.Forget(req) }

// NumRequeues implements workqueue.RateLimitingInterface.
func (q *Fair) NumRequeues(req reconcile.Request) int { return q.rl.NumRequeues(req) }

// Len implements workqueue.Interface: the items ready to be handed out.
func (q *Fair) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.byTurn.Len()
}

// ShutDown implements workqueue.Interface: every worker waiting for an
// item, or for the rate, returns at once.
func (q *Fair) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	q.closed = true
	close(q.stopped)
	q.stopPace()
	q.ready.Broadcast()
	if q.holdTimer != nil {
		q.holdTimer.Stop()
	}
	if q.shared != nil {
		q.countUrgent(-q.urgent)
		q.shared.leave(q)
	}
}

// countUrgent records delta urgent entries in byTurn, here and in Shared.
func (q *Fair) countUrgent(delta int64) {
	if q.shared == nil {
		return
	}
	q.urgent += delta
	q.shared.add(delta)
}

// holdUntil makes sure the held workers look again by at, when the item
// first in turn is no longer held whatever waits elsewhere.
func (q *Fair) holdUntil(at time.Time) {
	if q.holdTimer != nil && !q.holdAt.Before(time.Now()) && !at.Before(q.holdAt) {
		return
	}
	q.holdAt = at
	if q.holdTimer == nil {
		q.holdTimer = time.AfterFunc(time.Until(at), q.wakeHeld)
		return
	}
	q.holdTimer.Reset(time.Until(at))
}

// wakeHeld has the workers held back look again.
func (q *Fair) wakeHeld() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.ready.Broadcast()
}

// ShutDownWithDrain implements workqueue.Interface; like controller-runtime's
// priority queue, it does not drain.
func (q *Fair) ShutDownWithDrain() { q.ShutDown() }

// ShuttingDown implements workqueue.Interface.
func (q *Fair) ShuttingDown() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closed
}

// entries is a heap of entries in the order less gives, each knowing its
// place (the field at returns) so that it can be fixed or removed in place.
type entries struct {
	e    []*entry
	less func(a, b *entry) bool
	at   func(e *entry) *int
}

// byTurnOrder puts higher priorities first, then the smaller tag, then the
// one ready first; byTimeOrder the one ready soonest.
func byTurnOrder() entries {
	return entries{less: func(a, b *entry) bool {
		if a.priority != b.priority {
			return a.priority > b.priority
		}
		if a.tag != b.tag {
			return a.tag < b.tag
		}
		return a.seq < b.seq
	}, at: func(e *entry) *int { return &e.turn }}
}

func byTimeOrder() entries {
	return entries{less: func(a, b *entry) bool { return a.readyAt.Before(b.readyAt) }, at: func(e *entry) *int { return &e.wait }}
}

func (h entries) Len() int           { return len(h.e) }
func (h entries) Less(i, j int) bool { return h.less(h.e[i], h.e[j]) }
func (h entries) Swap(i, j int) {
	h.e[i], h.e[j] = h.e[j], h.e[i]
	*h.at(h.e[i]), *h.at(h.e[j]) = i, j
}

func (h *entries) Push(x any) {
	e, _ := x.(*entry)
	*h.at(e) = len(h.e)
	h.e = append(h.e, e)
}

func (h *entries) Pop() any {
	e := h.e[len(h.e)-1]
	h.e[len(h.e)-1] = nil
	h.e = h.e[:len(h.e)-1]
	*h.at(e) = -1
	return e
}
