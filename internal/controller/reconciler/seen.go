package reconciler

import "github.com/crossplane/crossplane-runtime/v2/pkg/errors"

// ErrNotObserved is the error of Create, Update or Delete without an
// Observe in the same reconcile.
const ErrNotObserved = "nothing was observed in this reconcile: observe before changing anything"

// Seen is what one reconcile's Observe found and decided, kept for the
// Create, Update or Delete that crossplane-runtime calls next: it connects
// an external client per reconcile, so what the client keeps lives no
// longer than the reconcile. It is the one way a kind's external client
// carries anything from Observe to what follows; everything else is read
// again.
//
// It holds what the server answered and what the status said when Observe
// ended. Between Observe and Create crossplane-runtime stores the
// create-pending annotation with an update whose answer replaces the
// object, status included, by the stored one (TestCreatePendingResetsStatus):
// a kind whose Create depends on the status Observe wrote restores it
// from here.
type Seen[O any] struct {
	o *O
}

// Keep records o as this reconcile's observation.
func (s *Seen[O]) Keep(o *O) { s.o = o }

// Forget drops the observation, at the start of an Observe: a failed one
// leaves nothing behind for a Create to act on.
func (s *Seen[O]) Forget() { s.o = nil }

// Get returns this reconcile's observation; an error when Observe did not
// record one.
func (s *Seen[O]) Get() (*O, error) {
	if s.o == nil {
		return nil, errors.New(ErrNotObserved)
	}
	return s.o, nil
}
