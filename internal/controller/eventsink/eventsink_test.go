package eventsink

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/ayatori/provider-postgresql/internal/fixture/controlplane"
	"github.com/ayatori/provider-postgresql/internal/fixture/tier"
)

// shared is the package's API server, started by the first test that
// needs it.
var shared = tier.NewFixture(2*time.Minute, func(ctx context.Context) (func() error, error) {
	cp, err := controlplane.Start(ctx, controlplane.Options{})
	if err != nil {
		return nil, err
	}
	sharedCP = cp
	return cp.Stop, nil
})

var sharedCP *controlplane.ControlPlane

func TestMain(m *testing.M) { os.Exit(shared.Run(m)) }

// TestABurstArrivesWhole: two thousand events recorded at once (ten
// objects' worth for each of two hundred objects, as a wave of failures
// records them) all reach the API server, none dropped; an event recorded
// again on its object is counted on the first, not created twice.
// client-go's own broadcaster, one event in flight and a thousand
// waiting, dropped about half of such a burst.
func TestABurstArrivesWhole(t *testing.T) {
	tier.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	shared.Server(t)
	cs, err := kubernetes.NewForConfig(sharedCP.Config)
	if err != nil {
		t.Fatal(err)
	}
	created, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "burst-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns := created.Name

	b := New(logr.Discard())
	defer b.Shutdown()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	rec := b.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: "eventsink-test"})
	sentBefore := testutil.ToFloat64(outcomes.WithLabelValues(Sent))
	droppedBefore := testutil.ToFloat64(outcomes.WithLabelValues(Dropped))

	// As a wave of failures records them: the provider's workers, each
	// recording an event for one object after another.
	const objects, each, workers = 200, 10, 8
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < objects; i += workers {
				obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%d", i), UID: types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i))}}
				obj.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
				for j := range each {
					rec.Event(obj, corev1.EventTypeNormal, fmt.Sprintf("Step%d", j), fmt.Sprintf("step %d of %s", j, obj.Name))
					time.Sleep(100 * time.Microsecond)
				}
			}
		})
	}
	wg.Wait()
	// The first object's first event again: a count of 2 on it.
	again := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm-0", UID: types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", 0))}}
	again.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
	rec.Event(again, corev1.EventTypeNormal, "Step0", "step 0 of cm-0")

	var got map[string]int32
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		l, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got = map[string]int32{}
		var counted int32
		for _, e := range l.Items {
			got[e.InvolvedObject.Name+" "+e.Reason] += e.Count
			counted += e.Count
		}
		if counted == objects*each+1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the API server holds %d events (by count) of the %d recorded, 60 s on; dropped: %.0f",
				counted, objects*each+1, testutil.ToFloat64(outcomes.WithLabelValues(Dropped))-droppedBefore)
		}
	}
	want := map[string]int32{}
	for i := range objects {
		for j := range each {
			want[fmt.Sprintf("cm-%d Step%d", i, j)] = 1
		}
	}
	want["cm-0 Step0"] = 2
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events by object and reason, with their counts (-want +got):\n%s", diff)
	}
	if d := testutil.ToFloat64(outcomes.WithLabelValues(Dropped)) - droppedBefore; d != 0 {
		t.Errorf("%.0f events counted as dropped, want none", d)
	}
	if s := testutil.ToFloat64(outcomes.WithLabelValues(Sent)) - sentBefore; s != objects*each+1 {
		t.Errorf("%.0f events counted as sent, want %d", s, objects*each+1)
	}
}

// blockingSink holds every write until released, then fails it with err
// when set.
type blockingSink struct {
	release chan struct{}
	entered atomic.Int64
	mu      sync.Mutex
	created []string
	err     error
}

func (s *blockingSink) write(e *corev1.Event) (*corev1.Event, error) {
	s.entered.Add(1)
	<-s.release
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	s.created = append(s.created, e.Reason)
	return e, nil
}

func (s *blockingSink) Create(e *corev1.Event) (*corev1.Event, error) { return s.write(e) }
func (s *blockingSink) Update(e *corev1.Event) (*corev1.Event, error) { return s.write(e) }
func (s *blockingSink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) {
	return s.write(e)
}

// TestWhatCannotBeSentIsCounted: with its one sender stuck on a slow API
// server and its queue full, an event is dropped and counted, the rest
// sent once the server answers; an event the server refuses is counted
// as failed and not tried again.
func TestWhatCannotBeSentIsCounted(t *testing.T) {
	b := newBroadcaster(logr.Discard(), 1, 1, time.Millisecond)
	defer b.Shutdown()
	sink := &blockingSink{release: make(chan struct{})}
	b.StartRecordingToSink(sink)
	rec := b.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: "eventsink-test"})
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", UID: "u"}}
	obj.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
	dropped := testutil.ToFloat64(outcomes.WithLabelValues(Dropped))
	failed := testutil.ToFloat64(outcomes.WithLabelValues(Failed))

	// One in the sender (stuck), one in the queue: the third is dropped.
	rec.Event(obj, corev1.EventTypeNormal, "First", "first")
	waitFor(t, "the first event in the sender", func() bool { return sink.entered.Load() == 1 })
	rec.Event(obj, corev1.EventTypeNormal, "Second", "second")
	waitFor(t, "the second event queued", func() bool { return b.queueLens()[0] == 1 })
	rec.Event(obj, corev1.EventTypeNormal, "Third", "third")
	waitFor(t, "the third event dropped", func() bool { return testutil.ToFloat64(outcomes.WithLabelValues(Dropped))-dropped == 1 })
	close(sink.release)
	waitFor(t, "the first two sent", func() bool { sink.mu.Lock(); defer sink.mu.Unlock(); return len(sink.created) == 2 })
	sink.mu.Lock()
	if diff := cmp.Diff([]string{"First", "Second"}, sink.created); diff != "" {
		t.Errorf("sent (-want +got):\n%s", diff)
	}
	sink.err = kerrors.NewForbidden(schema.GroupResource{Resource: "events"}, "x", errors.New("namespace is being terminated"))
	sink.mu.Unlock()
	rec.Event(obj, corev1.EventTypeWarning, "Fourth", "fourth")
	waitFor(t, "the refused event counted as failed", func() bool { return testutil.ToFloat64(outcomes.WithLabelValues(Failed))-failed == 1 })
}

// queueLens is how many events wait in each sender's queue.
func (b *Broadcaster) queueLens() []int {
	n := make([]int, len(b.queues))
	for i, q := range b.queues {
		n[i] = len(q)
	}
	return n
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
	}
}

// TestStartedAfterShutdown: a manager that recorded nothing starts
// recording on its way out, after the broadcaster was shut down; that
// starts nothing and says nothing.
func TestStartedAfterShutdown(t *testing.T) {
	b := New(logr.Discard())
	b.Shutdown()
	w := b.StartRecordingToSink(&blockingSink{release: make(chan struct{})})
	defer w.Stop()
	if len(b.queues) != 0 {
		t.Errorf("%d senders started after shutdown", len(b.queues))
	}
	if _, open := <-b.StartEventWatcher(func(*corev1.Event) {}).ResultChan(); open {
		t.Error("a watcher started after shutdown is open")
	}
}
