package postgres

import (
	"context"
	"slices"
	"sync"
)

// A slotQueue hands out the slots of the global connection cap. A dial
// takes a slot at once while one is free and nobody waits; otherwise it
// queues, and slots go to the queue in the order it was joined, handed
// over by the connection that closes rather than put back for anyone to
// grab. A newcomer never overtakes a waiter.
//
// Waiting is not polling: room is made once per waiter, by closing an idle
// connection of another pool (makeRoom) or, when none is idle, the next
// connection any pool is given back (wantsRoom). closing counts the closes
// under way for the queue, so that a waiter is not served twice: closing
// more sessions than the queue needs would only make their databases dial
// again. The scheme before this one had every waiter close a whole pool's
// idle sessions every 10 ms; with it, BenchmarkScale measured 2.4 sessions per
// database per poll at 2,000 objects, how much of that it caused is not
// measured apart.
type slotQueue struct {
	mu      sync.Mutex
	max     int
	used    int
	waiting []chan struct{}
	closing int
}

func newSlotQueue(maxSlots int) *slotQueue { return &slotQueue{max: maxSlots} }

// take returns with a slot, or ctx's error. waited reports whether it had
// to queue. makeRoom, called outside the lock when the queue needs another
// close, starts closing an idle connection and reports whether it found
// one.
func (q *slotQueue) take(ctx context.Context, makeRoom func() bool) (waited bool, err error) {
	q.mu.Lock()
	if q.used < q.max && len(q.waiting) == 0 {
		q.used++
		q.mu.Unlock()
		return false, nil
	}
	turn := make(chan struct{})
	q.waiting = append(q.waiting, turn)
	room := q.claimClose()
	q.mu.Unlock()
	if room && !makeRoom() {
		// Nothing idle: the next connection given back closes instead.
		q.mu.Lock()
		q.closing--
		q.mu.Unlock()
	}
	select {
	case <-turn:
		return true, nil
	case <-ctx.Done():
		if !withdraw(&q.mu, &q.waiting, turn) {
			// Handed over as ctx ended: pass the slot on.
			q.free()
		}
		return true, ctx.Err()
	}
}

// claimClose, called with mu held, reports whether the queue needs another
// close started, and counts it if so.
func (q *slotQueue) claimClose() bool {
	if len(q.waiting) > q.closing {
		q.closing++
		return true
	}
	return false
}

// wantsRoom is asked when a connection is given back to its pool: true
// means close it, its slot going to the queue.
func (q *slotQueue) wantsRoom() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.claimClose()
}

// free gives a closed connection's slot to the first waiter, or back.
func (q *slotQueue) free() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiting) == 0 {
		q.used--
		q.closing = 0
		return
	}
	turn := q.waiting[0]
	q.waiting = slices.Delete(q.waiting, 0, 1)
	// Whatever closed, the close counted for the queue may have been this
	// one: counting one too few costs one extra close at worst, one too
	// many would leave a waiter waiting for a close nobody started.
	q.closing = max(q.closing-1, 0)
	close(turn)
}

// inUse returns the slots taken.
// queued is how many connections wait for a slot.
func (q *slotQueue) queued() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waiting)
}

func (q *slotQueue) inUse() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.used
}

// withdraw takes w out of the queue mu guards, a waiter that stops
// waiting, and reports whether it was still there: false when its turn
// came as it stopped, and what it was handed must be passed on.
func withdraw[T comparable](mu *sync.Mutex, queue *[]T, w T) bool {
	mu.Lock()
	defer mu.Unlock()
	i := slices.Index(*queue, w)
	if i >= 0 {
		*queue = slices.Delete(*queue, i, i+1)
	}
	return i >= 0
}
