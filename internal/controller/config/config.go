// Package config is what every controller of the provider is set up with:
// the flags' values (Config), the options every managed reconciler shares,
// and the wrapping of each controller's reconciler and work queue. The
// machinery those options switch on lives in packages of its own
// (reconciler, poll, queue, secretmemo).
package config

import (
	"cmp"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/crossplane/crossplane-runtime/v2/pkg/statemetrics"

	"github.com/ayatori/provider-postgresql/internal/clients/admintoken"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/controller/poll"
	"github.com/ayatori/provider-postgresql/internal/controller/queue"
	"github.com/ayatori/provider-postgresql/internal/controller/reconciler"
	"github.com/ayatori/provider-postgresql/internal/seal"
)

// The defaults of the flags that decide how much work the provider does at
// once (docs/performance.md says why each is what it is).
const (
	// DefaultMaxReconcileRate bounds reconciles per second, every kind
	// together: at 5,000 objects and a one-minute poll, 83 per second
	// observe each once per poll, and the rest is left for changes.
	DefaultMaxReconcileRate = 100
	// DefaultMaxConcurrentReconciles is each controller's concurrency.
	// Reconciles wait on a handful of server connections (--max-conns),
	// so more workers would only queue there.
	DefaultMaxConcurrentReconciles = 10
	// DefaultMinPollInterval is the shortest poll interval a resource's
	// crossplane.io/poll-interval annotation may ask for: whoever may
	// annotate a resource could otherwise keep the provider observing it
	// in a loop, at the expense of every other resource under the global
	// rate.
	DefaultMinPollInterval = 5 * time.Second
)

// Config is what every controller of the provider is set up with.
type Config struct {
	controller.Options

	// Namespace is the provider's own namespace, where Instance admin
	// credentials and CA bundles live.
	Namespace string

	// PollJitter is added at random to each managed resource's poll interval.
	PollJitter time.Duration

	// MinPollInterval is the shortest interval a crossplane.io/poll-interval
	// annotation may ask for (shorter ones are raised to it); zero means
	// DefaultMinPollInterval.
	MinPollInterval time.Duration

	// Pools is the connection pool registry every controller shares.
	Pools *postgres.Registry

	// AdminTokens are the Instances' admin token sources, and the
	// commands and directories they may use (--admin-token-command,
	// --admin-token-dir); nil allows none.
	AdminTokens *admintoken.Sources

	// Observations, when set, records the intervals between observations.
	Observations *poll.Observations

	// Queues is what the work queues of every managed controller share
	// (SharedQueues); nil shares only the global reconcile rate, and no
	// controller's polls wait for another's changes.
	Queues *queue.Shared

	// InstanceSecrets reads the Instances' admin credentials and CA
	// bundles (secretmemo.InstanceSecrets); the controllers' setup sets it when nil.
	InstanceSecrets client.Reader

	// ServiceAccountTokenFile holds a token of the provider's
	// ServiceAccount, read only to learn which ServiceAccount it is: a
	// credentialVault's Kubernetes auth is given tokens of it asked for
	// that vault's audience (package kubetoken); empty: the pod's own.
	ServiceAccountTokenFile string

	// Seal signs the ownership markers the provider writes, so that a
	// resource restored from a backup is recognised as the one a marker
	// names (package seal); nil writes markers without a seal.
	Seal *seal.Key
}

// ManagedReconcilerOptions returns the options every managed reconciler of
// the provider shares, and registers the kind's state metrics recorder.
// list is an empty list of the kind, for the recorder.
func ManagedReconcilerOptions(mgr ctrl.Manager, c Config, name string, list resource.ManagedList) ([]managed.ReconcilerOption, error) {
	o := []managed.ReconcilerOption{
		managed.WithLogger(c.Logger.WithValues("controller", name)),
		managed.WithRecorder(event.NewAPIRecorder(mgr.GetEventRecorderFor(name), c.EventFilterFunctions...)), //nolint:staticcheck // crossplane-runtime's recorder takes record.EventRecorder.
		managed.WithPollInterval(c.PollInterval),
		managed.WithPollIntervalHook(c.PollIntervalHook(nil)),
		managed.WithMinPollInterval(cmp.Or(c.MinPollInterval, DefaultMinPollInterval)),
		// Every kind declares its own managementPolicies default.
		managed.WithManagementPolicies(),
		// The grace period exists for eventually consistent cloud APIs:
		// PostgreSQL's catalog shows a created object at once, and waiting
		// would only delay deleting a freshly created resource.
		managed.WithCreationGracePeriod(0),
		// Names are chosen in the spec, never by the server, so after a
		// create interrupted by a crash the next Observe can look the
		// object up; its ownership marker then decides whether it is
		// ours (otherwise: Conflict), instead of crossplane-runtime
		// refusing to proceed until someone removes an annotation.
		managed.WithDeterministicExternalName(true),
		managed.WithCriticalAnnotationUpdater(reconciler.CriticalAnnotationUpdater(mgr.GetClient(), mgr.GetAPIReader())),
		// A new object's finalizer goes with its create-pending
		// annotation (reconciler/created.go).
		managed.WithFinalizer(reconciler.Finalizer(mgr.GetClient())),
	}
	if c.ChangeLogOptions != nil {
		// --enable-changelogs: one entry per create, update and delete
		// on the server (package changelog).
		o = append(o, managed.WithChangeLogger(c.ChangeLogOptions.ChangeLogger))
	}
	if c.MetricOptions != nil {
		if c.MetricOptions.MRMetrics != nil {
			o = append(o, managed.WithMetricRecorder(c.MetricOptions.MRMetrics))
		}
		if c.MetricOptions.MRStateMetrics != nil {
			rec := statemetrics.NewMRStateRecorder(reconciler.UncopiedLists{Client: mgr.GetClient()}, c.Logger, c.MetricOptions.MRStateMetrics, list, c.MetricOptions.PollStateMetricInterval)
			if err := mgr.Add(rec); err != nil {
				return nil, errors.Wrap(err, "cannot add the state metrics recorder")
			}
		}
	}
	return o, nil
}

// PollIntervalHook is the poll interval hook of every managed resource
// (poll.Schedule); wake, when set, polls sooner when something is due
// sooner.
func (c Config) PollIntervalHook(wake func(resource.Managed, time.Time) time.Duration) managed.PollIntervalHook {
	return poll.Schedule{Jitter: c.PollJitter, Observations: c.Observations}.Hook(wake)
}

// Reconciler wraps a managed reconciler the way every controller of the
// provider runs it (reconciler.Wrap). The global reconcile rate is kept by
// its work queue (ForManaged).
func Reconciler(c Config, r reconcile.Reconciler) reconcile.Reconciler {
	return reconciler.Wrap(c.waits(), r)
}

// maxWaitRequeue bounds how long a resource waiting for an object the
// provider does not manage sleeps (nothing wakes it): the longest step of
// the error back-off it replaces.
const maxWaitRequeue = time.Minute

// watchedWaitRequeue is how long a resource waiting for a managed resource
// of its namespace sleeps: that resource's observation wakes it, so this
// only guards against an event lost. A large apply's schemas, grants and
// default privileges wait for their databases for minutes
// (docs/performance.md).
const watchedWaitRequeue = 10 * time.Minute

// waits is how long a reconcile that waits for another object is left
// before it looks again, unless the object appearing wakes it sooner: the
// poll interval, at most a minute, for an object the provider does not
// manage; watchedWaitRequeue for a managed resource.
func (c Config) waits() reconciler.Waits {
	w := reconciler.Waits{Unwatched: maxWaitRequeue, Watched: watchedWaitRequeue}
	if c.PollInterval > 0 && c.PollInterval < maxWaitRequeue {
		w.Unwatched = c.PollInterval
	}
	return w
}

// ForControllerRuntime is crossplane-runtime's controller options with the
// provider's work queue (queue.Fair), which shares the workers fairly
// between namespaces.
func (c Config) ForControllerRuntime() ctrlcontroller.Options {
	return c.withQueue(nil)
}

// ForManaged is ForControllerRuntime for a managed reconciler: its queue
// also keeps the global reconcile rate (--max-reconcile-rate), and holds
// its polls while changes wait in another managed controller's queue,
// both shared with every managed controller through Queues.
func (c Config) ForManaged() ctrlcontroller.Options {
	s := c.Queues
	if s == nil {
		s = queue.Paced(pace(c.GlobalRateLimiter))
	}
	return c.withQueue(s)
}

// SharedQueues is what the queues of every managed controller set up with
// o share (Config.Queues): o's global reconcile rate, and polls held while
// changes wait, for at most poll.Hold.
func SharedQueues(o controller.Options) *queue.Shared {
	return queue.NewShared(pace(o.GlobalRateLimiter), poll.Hold(o.PollInterval), poll.Priority)
}

func (c Config) withQueue(s *queue.Shared) ctrlcontroller.Options {
	o := c.Options.ForControllerRuntime()
	o.NewQueue = func(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		return queue.New(name, rl, s)
	}
	return o
}

// pace is the token bucket behind crossplane-runtime's global rate
// limiter (ratelimiter.NewGlobal), nil when there is none.
func pace(l ratelimiter.RateLimiter) *rate.Limiter {
	if b, ok := l.(*ratelimiter.BucketRateLimiter); ok {
		return b.Limiter
	}
	return nil
}
