package queue

import (
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Shared is what the work queues of every managed controller share: the
// provider's global reconcile rate, and the precedence of first-time work
// over polls across controllers.
//
// Each queue already hands out a change before a poll. But each
// controller has workers of its own: in a wave of thousands of new
// objects the database controller's queue holds creates for minutes while
// the role, schema and grant controllers, their own creates done, poll
// every object already Ready once a minute, on the same cores and under
// the same connection cap as the creates. Every object created early was
// so observed again and again before the wave ended, and a large apply
// cost more per object than a small one (docs/performance.md). So a queue
// holds back an item at or below the hold priority (a poll, the fallback
// look of a waiting resource, the start-up list) while an urgent item (a
// change or a create, not a retry after an error) is ready in any queue,
// but never for longer than hold after the item became due: a steady
// stream of changes delays drift detection, it does not stop it.
type Shared struct {
	pace  *rate.Limiter
	hold  time.Duration
	below int

	// urgent counts the urgent items ready in every queue.
	urgent atomic.Int64

	mu     sync.Mutex
	queues []*Fair
}

// NewShared returns what the queues made with it share: pace (nil: no
// rate), and items at or below priority below held for at most hold (0:
// never held) while urgent work is ready in any of them.
func NewShared(pace *rate.Limiter, hold time.Duration, below int) *Shared {
	return &Shared{pace: pace, hold: hold, below: below}
}

// Paced shares only a rate: nothing is held.
func Paced(pace *rate.Limiter) *Shared { return &Shared{pace: pace} }

// join makes q one of the queues that are woken when the last urgent item
// is handed out.
func (s *Shared) join(q *Fair) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queues = append(s.queues, q)
}

// leave is join undone, for a queue shut down.
func (s *Shared) leave(q *Fair) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, o := range s.queues {
		if o == q {
			s.queues = append(s.queues[:i], s.queues[i+1:]...)
			return
		}
	}
}

// add records delta urgent items ready; once none is left, the queues'
// held workers look again. The wake-up runs on its own goroutine: the
// caller holds its queue's lock, and waking takes each queue's.
func (s *Shared) add(delta int64) {
	if delta == 0 {
		return
	}
	if s.urgent.Add(delta) == 0 && delta < 0 {
		go s.wakeAll()
	}
}

func (s *Shared) wakeAll() {
	s.mu.Lock()
	qs := append([]*Fair(nil), s.queues...)
	s.mu.Unlock()
	for _, q := range qs {
		q.wakeHeld()
	}
}

// urgentFor says whether an item added with priority, rate-limited or
// not, is urgent: a change, not a poll, and not a retry after an error,
// which a namespace whose objects keep failing would otherwise make
// urgent for good.
func (s *Shared) urgentFor(priority int, rateLimited bool) bool {
	return s != nil && s.hold > 0 && priority > s.below && !rateLimited
}

// heldFor is how much longer e, first in its queue, is held at now: 0
// when it goes.
func (s *Shared) heldFor(e *entry, now time.Time) time.Duration {
	if s == nil || s.hold <= 0 || e.priority > s.below || s.urgent.Load() == 0 {
		return 0
	}
	return max(e.since.Add(s.hold).Sub(now), 0)
}
