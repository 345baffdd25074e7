// Package config holds what every controller of the provider is set up
// with. It is its own package so that the per-kind controller packages and
// the package that registers them can both use it.
package config

import (
	"context"
	"math/rand/v2"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/crossplane/crossplane-runtime/v2/pkg/statemetrics"

	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/controller/reference"
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
)

// Config is what every controller of the provider is set up with.
type Config struct {
	controller.Options

	// Namespace is the provider's own namespace, where Instance admin
	// credentials and CA bundles live.
	Namespace string

	// PollJitter is added at random to each managed resource's poll interval.
	PollJitter time.Duration

	// Pools is the connection pool registry every controller shares.
	Pools *postgres.Registry

	// Observations, when set, records the intervals between observations.
	Observations *Observations
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
		managed.WithCriticalAnnotationUpdater(CriticalAnnotationUpdater(mgr.GetClient(), mgr.GetAPIReader())),
	}
	if c.MetricOptions != nil {
		if c.MetricOptions.MRMetrics != nil {
			o = append(o, managed.WithMetricRecorder(c.MetricOptions.MRMetrics))
		}
		if c.MetricOptions.MRStateMetrics != nil {
			rec := statemetrics.NewMRStateRecorder(mgr.GetClient(), c.Logger, c.MetricOptions.MRStateMetrics, list, c.MetricOptions.PollStateMetricInterval)
			if err := mgr.Add(rec); err != nil {
				return nil, errors.Wrap(err, "cannot add the state metrics recorder")
			}
		}
	}
	return o, nil
}

// PollIntervalHook returns a poll interval hook that adds up to
// ±PollJitter at random to the poll interval and, with wake, polls sooner
// when wake says something is due sooner (a positive duration from now).
// crossplane-runtime calls it after each successful observation, which it
// records in Observations.
func (c Config) PollIntervalHook(wake func(resource.Managed, time.Time) time.Duration) managed.PollIntervalHook {
	jitter := c.PollJitter
	return func(mg resource.Managed, poll time.Duration) time.Duration {
		if c.Observations != nil {
			c.Observations.Observed(mg, time.Now(), poll)
		}
		d := poll
		if jitter > 0 {
			d += time.Duration((rand.Float64() - 0.5) * 2 * float64(jitter)) //nolint:gosec // jitter needs no secure randomness.
		}
		if wake != nil {
			if w := wake(mg, time.Now()); w > 0 && w < d {
				return w
			}
		}
		return d
	}
}

// Reconciler wraps a managed reconciler the way every controller of the
// provider runs it: under the global rate limit, with API conflicts
// requeued silently, and its requeues adjusted by requeues (below).
func Reconciler(name string, c Config, r reconcile.Reconciler) reconcile.Reconciler {
	return ratelimiter.NewReconciler(name, errors.WithSilentRequeueOnConflict(requeues{r: r, after: c.waitRequeue()}), c.GlobalRateLimiter)
}

// maxWaitRequeue bounds how long a waiting resource sleeps when nothing
// wakes it (it waits for an object the provider does not manage): the
// longest step of the error back-off it replaces.
const maxWaitRequeue = time.Minute

// waitRequeue is how long a reconcile that waits for another object is
// left before it looks again, unless the object appearing wakes it
// sooner: the poll interval, at most a minute.
func (c Config) waitRequeue() time.Duration {
	if c.PollInterval > 0 && c.PollInterval < maxWaitRequeue {
		return c.PollInterval
	}
	return maxWaitRequeue
}

// PollPriority is the work queue priority of a resource that has nothing
// to do until a later time (its next poll, a scheduled rotation, or the
// fallback look of a waiting resource): below the 0 that a change to a
// resource enqueues with. Every reconcile takes a token of the global
// rate, polls included, so in a wave of new objects the polls of objects
// already Ready would otherwise take turns with the work that creates
// (docs/performance.md). A change to a resource raises its priority
// again at once (controller-runtime's priority queue keeps the highest).
//
// It is exactly the priority of the resources a starting provider finds
// (controller-runtime's handler.LowPriority): above it, polls of the
// resources already seen would overtake, forever, those not seen yet
// after a restart (a CI run of TestRestartMidwayConverges caught that
// with -10); equal, they are served in the order they were queued.
const PollPriority = handler.LowPriority

// requeues adjusts what the managed reconciler asks of the work queue:
//   - a reconcile marked by reference.Wait is requeued once, after a fixed
//     delay, rather than with back-off. crossplane-runtime asks for a
//     rate-limited requeue (Requeue: true) on every error;
//     controller-runtime, given RequeueAfter and no error instead, also
//     forgets the item's back-off, so a real error after the wait starts
//     again from the shortest step.
//   - a requeue after a delay (a poll) gets PollPriority.
type requeues struct {
	r     reconcile.Reconciler
	after time.Duration
}

func (q requeues) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ctx, note := reference.WithNote(ctx)
	res, err := q.r.Reconcile(ctx, req)
	return adjust(res, err, note.Waiting(), q.after)
}

// adjust is requeues' decision, given the managed reconciler's result and
// whether the reconcile waits for another object.
func adjust(res reconcile.Result, err error, waiting bool, after time.Duration) (reconcile.Result, error) {
	if err != nil {
		return res, err
	}
	if waiting && res.Requeue && res.RequeueAfter == 0 { //nolint:staticcheck // crossplane-runtime still returns Requeue.
		return reconcile.Result{RequeueAfter: after, Priority: ptr.To(PollPriority)}, nil
	}
	if res.RequeueAfter > 0 && !res.Requeue { //nolint:staticcheck // As above.
		res.Priority = ptr.To(PollPriority)
	}
	return res, nil
}

// Deletes reports whether mg's management policies let the provider
// delete what it manages: "*" or Delete.
func Deletes(mg resource.Managed) bool {
	for _, p := range mg.GetManagementPolicies() {
		if p == xpv2.ManagementActionAll || p == xpv2.ManagementActionDelete {
			return true
		}
	}
	return false
}

// ObserveOnly reports whether mg's management policies let the provider
// only read (an import): neither "*", Create nor Update.
func ObserveOnly(mg resource.Managed) bool {
	for _, p := range mg.GetManagementPolicies() {
		if p == xpv2.ManagementActionAll || p == xpv2.ManagementActionCreate || p == xpv2.ManagementActionUpdate {
			return false
		}
	}
	return true
}
