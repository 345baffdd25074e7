// Package eventsink sends the Kubernetes events the provider's controllers
// record to the API server, several at a time, and counts what it could
// not send.
package eventsink

import (
	"context"
	"errors"
	"hash/maphash"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Senders and Queue are what New gives a Broadcaster: sixteen events in
// flight to the API server at once, and up to 1,000 waiting for each
// sender (about 16 MiB at most, held only while the API server lags).
// Eight senders with 500 each dropped 349 of the 28,000 events of a
// 10,000-object wave on a 2-core node, the API server's CPU saturated.
const (
	Senders = 16
	Queue   = 1000
)

// Tries is how often an event is sent before it is given up, and Backoff
// how long a sender waits between tries: the API server unreachable for
// about a minute loses what was recorded meanwhile, as client-go's own
// sender does after twelve tries ten seconds apart, but one sender's
// retries no longer hold up the others.
const (
	Tries   = 6
	Backoff = 10 * time.Second
)

var (
	outcomesOnce sync.Once
	outcomes     = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "provider_postgresql_events_total",
		Help: "Kubernetes events the provider recorded, by what became of them: sent (created or counted on an earlier one), " +
			"filtered (held back by client-go's per-object spam filter: 25 at once, then one every five minutes), " +
			"dropped (the senders' queue was full: the API server did not keep up) or failed (the API server refused it, or did not answer after every try).",
	}, []string{"result"})
)

// Outcome names, the result label of provider_postgresql_events_total.
const (
	Sent     = "sent"
	Filtered = "filtered"
	Dropped  = "dropped"
	Failed   = "failed"
)

// A Broadcaster is client-go's event broadcaster (record.NewBroadcaster)
// but for how it sends. client-go's sends one event at a time, each a
// round trip to the API server, and drops, without a word, every event
// recorded while a thousand wait: under a wave of thousands of objects on
// a busy API server the provider recorded events faster than one sender
// wrote them, and `kubectl get events` missed some. This one sends from
// Senders goroutines, the events of one object always through the same
// one (so that a repeat, which counts on the event before it, follows
// it), and counts every event it drops or gives up on
// (provider_postgresql_events_total), logging the first of each burst.
//
// Give it to the manager (ctrl.Options.EventBroadcaster) and Shutdown it
// once the manager has stopped: controller-runtime stops only the
// broadcasters it makes itself.
type Broadcaster struct {
	record.EventBroadcaster

	senders, queue int
	log            logr.Logger
	ctx            context.Context
	cancel         context.CancelFunc
	wg             sync.WaitGroup
	backoff        time.Duration

	// queues are the senders' queues, once recording started.
	queues []chan *corev1.Event

	mu         sync.Mutex
	lastLogged time.Time
}

// New returns a Broadcaster with Senders senders of Queue events each,
// logging to log.
func New(log logr.Logger) *Broadcaster {
	return newBroadcaster(log, Senders, Queue, Backoff)
}

func newBroadcaster(log logr.Logger, senders, queue int, backoff time.Duration) *Broadcaster {
	outcomesOnce.Do(func() {
		metrics.Registry.MustRegister(outcomes)
		// Every result from zero: a rate or an alert over dropped events
		// sees the first one.
		for _, r := range []string{Sent, Filtered, Dropped, Failed} {
			outcomes.WithLabelValues(r)
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	return &Broadcaster{
		EventBroadcaster: record.NewBroadcaster(record.WithContext(ctx)),
		senders:          senders, queue: queue, log: log, ctx: ctx, cancel: cancel, backoff: backoff,
	}
}

// StartRecordingToSink implements record.EventBroadcaster: events go
// through client-go's correlator (which folds repeats into a count and
// holds back one object's flood), then to sink from the senders.
func (b *Broadcaster) StartRecordingToSink(sink record.EventSink) watch.Interface {
	if b.ctx.Err() != nil {
		// Shut down before anything was recorded: controller-runtime
		// starts recording on its way out too.
		return watch.NewEmptyWatch()
	}
	c := record.NewEventCorrelatorWithOptions(record.CorrelatorOptions{})
	queues := make([]chan *corev1.Event, b.senders)
	for i := range queues {
		queues[i] = make(chan *corev1.Event, b.queue)
		b.queues = append(b.queues, queues[i])
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			b.send(sink, c, queues[i])
		}()
	}
	return b.StartEventWatcher(func(e *corev1.Event) {
		// Other watchers (the log) see the same event: send a copy.
		cp := *e
		select {
		case queues[shard(&cp, len(queues))] <- &cp:
		default:
			b.count(Dropped, &cp, "The API server is not keeping up with the provider's events: events are being dropped (provider_postgresql_events_total{result=\"dropped\"} counts them)")
		}
	})
}

// StartEventWatcher implements record.EventBroadcaster, watching nothing
// once the broadcaster is shut down (client-go's logs an error).
func (b *Broadcaster) StartEventWatcher(handle func(*corev1.Event)) watch.Interface {
	if b.ctx.Err() != nil {
		return watch.NewEmptyWatch()
	}
	return b.EventBroadcaster.StartEventWatcher(handle)
}

// Shutdown stops the broadcaster and its senders; what waits to be sent
// is lost, as with client-go's.
func (b *Broadcaster) Shutdown() {
	b.EventBroadcaster.Shutdown()
	b.cancel()
	b.wg.Wait()
}

// seed spreads objects over the senders.
var seed = maphash.MakeSeed()

// shard is the sender of e's object.
func shard(e *corev1.Event, n int) int {
	o := e.InvolvedObject
	return int(maphash.String(seed, string(o.UID)+"/"+o.Namespace+"/"+o.Name) % uint64(n)) //nolint:gosec // n is a small positive count of senders.
}

// send writes the events of queue to sink until the broadcaster stops.
func (b *Broadcaster) send(sink record.EventSink, c *record.EventCorrelator, queue <-chan *corev1.Event) {
	for {
		select {
		case <-b.ctx.Done():
			return
		case e := <-queue:
			b.write(sink, c, e)
		}
	}
}

// write correlates e and writes it: a new event is created, a repeat
// counted on the one before it (created again if that one is gone).
func (b *Broadcaster) write(sink record.EventSink, c *record.EventCorrelator, e *corev1.Event) {
	r, err := c.EventCorrelate(e)
	if err != nil {
		b.log.Error(err, "Cannot correlate an event; sending it as it is", "reason", e.Reason)
	}
	if r.Skip {
		outcomes.WithLabelValues(Filtered).Inc()
		return
	}
	for try := 1; ; try++ {
		written, err := b.writeOnce(sink, r)
		if err == nil {
			c.UpdateState(written)
			outcomes.WithLabelValues(Sent).Inc()
			return
		}
		if permanent(err) || try == Tries {
			b.count(Failed, r.Event, "Cannot write an event: "+err.Error())
			return
		}
		select {
		case <-b.ctx.Done():
			return
		case <-time.After(b.backoff):
		}
	}
}

// writeOnce creates r's event, or counts it on the one before it.
func (b *Broadcaster) writeOnce(sink record.EventSink, r *record.EventCorrelateResult) (*corev1.Event, error) {
	if r.Event.Count > 1 {
		written, err := sink.Patch(r.Event, r.Patch)
		if !kerrors.IsNotFound(err) {
			return written, err
		}
	}
	e := *r.Event
	e.ResourceVersion = ""
	return sink.Create(&e)
}

// permanent: the API server refused the event itself (invalid, in a
// namespace being deleted, a duplicate); sending it again would not help.
// A timeout, a throttle or an unreachable server may pass.
func permanent(err error) bool {
	var s kerrors.APIStatus
	if !errors.As(err, &s) {
		return false
	}
	return !kerrors.IsTimeout(err) && !kerrors.IsServerTimeout(err) && !kerrors.IsTooManyRequests(err) &&
		!kerrors.IsInternalError(err) && !kerrors.IsServiceUnavailable(err)
}

// count counts an event that was not sent, and logs why at most once a
// minute: a burst of drops is one line, not thousands.
func (b *Broadcaster) count(result string, e *corev1.Event, msg string) {
	outcomes.WithLabelValues(result).Inc()
	b.mu.Lock()
	now := time.Now()
	quiet := now.Sub(b.lastLogged) < time.Minute
	if !quiet {
		b.lastLogged = now
	}
	b.mu.Unlock()
	if !quiet {
		b.log.Info(msg, "result", result, "object", e.InvolvedObject.Namespace+"/"+e.InvolvedObject.Name, "kind", e.InvolvedObject.Kind, "reason", e.Reason)
	}
}
