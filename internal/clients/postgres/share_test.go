package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestSharesGoToTheNamespaceHoldingFewest: a namespace alone takes every
// session; once another waits, each session that comes free goes to the
// waiter whose namespace holds the fewest, first come first served among
// equals.
func TestSharesGoToTheNamespaceHoldingFewest(t *testing.T) {
	s := newShares(2)
	ctx := context.Background()
	for range 2 {
		if err := s.take(ctx, "noisy"); err != nil {
			t.Fatal(err)
		}
	}
	var order []string
	got := make(chan string, 4)
	queued := 0
	wait := func(key string) {
		go func() {
			if err := s.take(ctx, key); err != nil {
				t.Error(err)
			}
			got <- key
		}()
		// Queued in this order: one more waiter each time.
		queued++
		deadline := time.Now().Add(5 * time.Second)
		for {
			s.mu.Lock()
			n := len(s.waiting)
			s.mu.Unlock()
			if n == queued {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d waiting, want %d", n, queued)
			}
			time.Sleep(time.Millisecond)
		}
	}
	wait("noisy")
	wait("noisy")
	wait("quiet")
	// noisy gives back one: quiet (holding none) goes before noisy's
	// earlier waiters (noisy holds one still).
	s.give("noisy")
	order = append(order, <-got)
	// noisy gives back another: both hold one, noisy's first waiter came
	// first.
	s.give("noisy")
	order = append(order, <-got)
	s.give("quiet")
	order = append(order, <-got)
	if diff := cmp.Diff([]string{"quiet", "noisy", "noisy"}, order); diff != "" {
		t.Errorf("turns (-want +got):\n%s", diff)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used != 2 || s.held["noisy"] != 2 || s.held["quiet"] != 0 {
		t.Errorf("used %d, held %v; want 2, noisy 2", s.used, s.held)
	}
}

// TestSharesWaitEnds: a waiter whose context ends leaves the queue and
// holds nothing; the share it would have had goes to the next.
func TestSharesWaitEnds(t *testing.T) {
	s := newShares(1)
	if err := s.take(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := s.take(ctx, "b"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("take with an ended context: %v, want its deadline", err)
	}
	s.give("a")
	if err := s.take(context.Background(), "c"); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used != 1 || len(s.waiting) != 0 || s.held["b"] != 0 {
		t.Errorf("used %d, waiting %d, held %v; want 1, 0, c alone", s.used, len(s.waiting), s.held)
	}
}
