package postgres

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// queued waits until q holds n waiters.
func queued(t *testing.T, q *slotQueue, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		q.mu.Lock()
		got := len(q.waiting)
		q.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters queued, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSlotQueueServesInOrder: freed slots go to the waiters in the order
// they queued, a newcomer queues behind them even when a slot is about to
// be freed, and room is made once per waiter, never more.
func TestSlotQueueServesInOrder(t *testing.T) {
	ctx := context.Background()
	q := newSlotQueue(2)
	var rooms atomic.Int32
	room := func() bool { rooms.Add(1); return true }
	for range 2 {
		if waited, err := q.take(ctx, room); waited || err != nil {
			t.Fatalf("take with free slots: waited %v, err %v", waited, err)
		}
	}
	served := make(chan int, 4)
	for i := range 4 {
		go func() {
			if _, err := q.take(ctx, room); err != nil {
				t.Error(err)
			}
			served <- i
		}()
		queued(t, q, i+1)
	}
	q.mu.Lock()
	if rooms.Load() != 4 || q.closing != 4 {
		t.Errorf("4 waiters made room %d times, %d closes counted; want 4 and 4", rooms.Load(), q.closing)
	}
	q.mu.Unlock()
	if q.wantsRoom() {
		t.Error("a connection given back was asked to close, with a close under way for every waiter")
	}
	var order []int
	for range 4 {
		q.free()
		order = append(order, <-served)
	}
	if diff := cmp.Diff([]int{0, 1, 2, 3}, order); diff != "" {
		t.Errorf("order served (-want +got):\n%s", diff)
	}
	if got := q.inUse(); got != 2 {
		t.Errorf("slots in use after hand-overs = %d, want 2", got)
	}
	q.free()
	q.free()
	if got := q.inUse(); got != 0 {
		t.Errorf("slots in use after both freed = %d, want 0", got)
	}
}

// TestSlotQueueNothingIdle: when no idle connection can be closed, the
// next connection given back closes instead, once per waiter.
func TestSlotQueueNothingIdle(t *testing.T) {
	ctx := context.Background()
	q := newSlotQueue(1)
	if _, err := q.take(ctx, nil); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := q.take(ctx, func() bool { return false })
		done <- err
	}()
	queued(t, q, 1)
	// The waiter found nothing idle: its close is not counted as under way.
	deadline := time.Now().Add(5 * time.Second)
	for !q.wantsRoom() {
		if time.Now().After(deadline) {
			t.Fatal("a connection given back was never asked to close for the waiter")
		}
		time.Sleep(time.Millisecond)
	}
	if q.wantsRoom() {
		t.Error("a second connection was asked to close for one waiter")
	}
	q.free()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := q.inUse(); got != 1 {
		t.Errorf("slots in use = %d, want 1 (handed over)", got)
	}
}

// TestSlotQueueGivesUp: a waiter whose context ends leaves the queue, and
// the slot freed later goes back, not to it.
func TestSlotQueueGivesUp(t *testing.T) {
	q := newSlotQueue(1)
	if _, err := q.take(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	waited, err := q.take(ctx, func() bool { return true })
	if !waited || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("take with no slot: waited %v, err %v; want true and the deadline", waited, err)
	}
	queued(t, q, 0)
	q.free()
	if got := q.inUse(); got != 0 {
		t.Errorf("slots in use = %d, want 0", got)
	}
	if waited, err := q.take(context.Background(), nil); waited || err != nil {
		t.Errorf("take after the waiter gave up: waited %v, err %v; want a free slot", waited, err)
	}
}
