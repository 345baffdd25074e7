// Command provider runs provider-postgresql: the Crossplane controllers that
// manage PostgreSQL instances, databases, roles, grants, schemas and default
// privileges, and the Locks that protect them.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/alecthomas/kingpin/v2"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/feature"
	"github.com/crossplane/crossplane-runtime/v2/pkg/gate"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/customresourcesgate"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/statemetrics"

	"github.com/ayatori/provider-postgresql/cluster"
	"github.com/ayatori/provider-postgresql/internal/admission"
	"github.com/ayatori/provider-postgresql/internal/changelog"
	"github.com/ayatori/provider-postgresql/internal/clients/admintoken"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	pgcontroller "github.com/ayatori/provider-postgresql/internal/controller"
	"github.com/ayatori/provider-postgresql/internal/controller/config"
	"github.com/ayatori/provider-postgresql/internal/controller/manager"
	"github.com/ayatori/provider-postgresql/internal/controller/poll"
	"github.com/ayatori/provider-postgresql/internal/seal"
	"github.com/ayatori/provider-postgresql/internal/version"
)

// leaderElectionID names the Lease the replicas of this provider compete for.
const leaderElectionID = "provider-postgresql.database.ayatori.ddupan.top"

func main() {
	app := kingpin.New("provider",
		"Crossplane provider for PostgreSQL: instances, databases, roles, grants, schemas, default privileges and Locks.\n\n"+
			"Every flag can also be set through the environment variable shown beside it.").
		DefaultEnvars()
	app.Version(version.Version)

	var (
		debug = app.Flag("debug", "Log at debug level, controller-runtime's messages included.").Short('d').Bool()

		namespace = app.Flag("namespace", "The provider's own namespace: where Instance admin credential Secrets and CA bundles are read, and where the leader election Lease lives.").
				Default("crossplane-system").Envar("POD_NAMESPACE").String()
		leaderElection = app.Flag("leader-election", "Elect a leader through a Lease, so only one replica reconciles at a time. Turn it on when running more than one replica.").
				Short('l').Default("false").Envar("LEADER_ELECTION").Bool()
		leaseDuration = app.Flag("leader-election-lease-duration", "With --leader-election: how long a standby waits after the leader's last renewal before it takes over. A leader that dies without stopping (killed, its node lost) stops the provider's work for up to this long; a graceful stop hands over at once.").
				Default("60s").Duration()
		renewDeadline = app.Flag("leader-election-renew-deadline", "With --leader-election: how long the leader keeps trying to renew before it gives up leadership and exits. Shorter than the lease duration.").
				Default("50s").Duration()
		retryPeriod = app.Flag("leader-election-retry-period", "With --leader-election: how often the leader renews and a standby tries to take over.").
				Default("2s").Duration()

		syncInterval = app.Flag("sync", "How often every watched object is re-listed from the API server, as a safety net for missed events.").
				Short('s').Default("1h").Duration()
		pollInterval = app.Flag("poll", "How often each managed resource is compared with PostgreSQL to detect drift.").
				Default("1m").Duration()
		pollJitter = app.Flag("poll-jitter", "How far a poll may move from the interval (at most a quarter of a resource's interval): random jitter, so resources created together do not poll together, except that the schemas, grants and default privileges of one database are polled together, at a moment of that database.").
				Default("10s").Duration()
		minPollInterval = app.Flag("min-poll-interval", "The shortest poll interval a resource may ask for with its crossplane.io/poll-interval annotation; shorter ones are raised to it.").
				Default(config.DefaultMinPollInterval.String()).Duration()
		pollStateMetricInterval = app.Flag("poll-state-metric", "How often the managed resource state metrics (exists, ready, synced) are recorded.").
					Default("5s").Duration()
		maxReconcileRate = app.Flag("max-reconcile-rate", "Global maximum number of reconciles per second across all controllers; the API client is limited to five times as many requests per second.").
					Default(strconv.Itoa(config.DefaultMaxReconcileRate)).Int()
		maxConcurrentReconciles = app.Flag("max-concurrent-reconciles", "Reconciles each controller runs at once; they share the server connections of --max-conns.").
					Default(strconv.Itoa(config.DefaultMaxConcurrentReconciles)).Int()

		metricsAddr = app.Flag("metrics-bind-address", "Address the Prometheus metrics endpoint (/metrics) listens on. \"0\" turns it off.").
				Default(":8080").String()
		pprofAddr = app.Flag("pprof-bind-address", "Address Go's profiler (/debug/pprof/, heap and goroutine profiles) listens on, for measuring the provider's memory; \"0\" turns it off. Bind it to localhost and reach it with kubectl port-forward.").
				Default("0").String()
		probeAddr = app.Flag("health-probe-bind-address", "Address the /healthz and /readyz probes listen on.").
				Default(":8081").String()
		maxConnsPerPool = app.Flag("max-conns-per-pool", "Maximum server connections of the pool into each Instance's own database (spec.endpoint.database), where roles and databases are managed.").
				Default(strconv.Itoa(postgres.DefaultMaxConnsPerPool)).Int32()
		maxConnsPerDatabase = app.Flag("max-conns-per-database", "Maximum server connections of the pool into each other database, where schemas, grants, default privileges and extensions are managed; its objects are polled together and take turns on them.").
					Default(strconv.Itoa(postgres.DefaultMaxConnsPerDatabase)).Int32()
		maxConns = app.Flag("max-conns", "Maximum server connections across all pools and servers together. Idle connections of the least recently used pool are closed to stay under it.").
				Default(strconv.Itoa(postgres.DefaultMaxConns)).Int()
		connIdleTimeout = app.Flag("conn-idle-timeout", "Close a server connection idle for longer than this.").
				Default(postgres.DefaultIdleTimeout.String()).Duration()
		adminTokenCommands = app.Flag("admin-token-command", "A command (absolute path, shipped in the provider's image) that an Instance's spec.adminTokenSource.exec may run to get its admin's login token, such as a cloud CLI. Repeat for each; none by default.").
					Strings()
		adminTokenDirs = app.Flag("admin-token-dir", "A directory of the provider's pod whose files an Instance's spec.adminTokenSource.file may read its admin's login token from (a projected volume, an agent's output). Repeat for each; none by default.").
				Strings()
		installLockPolicy = app.Flag("install-lock-policy", "On by default. Install the ValidatingAdmissionPolicy that enforces Locks, and its binding, at start-up, or bring an installed one in line with this provider's version (keeping its identity lists); needs cluster/rbac-install-lock-policy.yaml. --no-install-lock-policy leaves the policy to you (apply cluster/lock-policy.yaml).").
					Default("true").Bool()
		installTenantPolicy = app.Flag("install-tenant-policy", "On by default. Install the ValidatingAdmissionPolicy that checks PostgreSQLTenant claims naming a registered database (cluster/tenant-policy.yaml), and its binding, at start-up, or bring installed ones in line with this provider's version; needs cluster/rbac-install-lock-policy.yaml. --no-install-tenant-policy leaves it to you.").
					Default("true").Bool()
		installInUsePolicy = app.Flag("install-in-use-policy", "On by default. Install the ValidatingAdmissionPolicy that refuses deleting a Bound PostgreSQLDatabase or a PostgreSQLInstance resources refer to (cluster/in-use-policy.yaml), and its binding, at start-up, or bring installed ones in line with this provider's version; needs cluster/rbac-install-lock-policy.yaml. Without it the finalizers still hold such deletions, after accepting them. --no-install-in-use-policy leaves it to you.").
					Default("true").Bool()
		enableChangeLogs = app.Flag("enable-changelogs", "Send an entry for every create, update and delete made on a PostgreSQL server to Crossplane's change log sidecar (see docs/install.md, \"Change logs\").").
					Default("false").Bool()
		changeLogsSocket = app.Flag("changelogs-socket-path", "The Unix socket the change log sidecar listens on (with --enable-changelogs).").
					Default(changelog.DefaultSocket).String()
		shutdownTimeout = app.Flag("graceful-shutdown-timeout", "How long running reconciles may take to finish after SIGTERM before the process exits.").
				Default("30s").Duration()
	)
	kingpin.MustParse(app.Parse(os.Args[1:]))
	// client-go's leader election refuses these at start-up with a
	// message that names none of the flags.
	if *retryPeriod <= 0 || float64(*renewDeadline) <= 1.2*float64(*retryPeriod) || *leaseDuration <= *renewDeadline {
		kingpin.Fatalf("--leader-election-lease-duration (%s) must be longer than --leader-election-renew-deadline (%s), which must be longer than 1.2 × --leader-election-retry-period (%s), which must be positive",
			*leaseDuration, *renewDeadline, *retryPeriod)
	}
	// The crash hook of the tests (postgres.KillBeforeEnv); unset in a
	// provider as shipped.
	kingpin.FatalIfError(postgres.ArmKillBefore(os.Getenv(postgres.KillBeforeEnv)), "Cannot arm the crash hook")
	// Zero would stop every controller without a word.
	for name, v := range map[string]int{"--max-reconcile-rate": *maxReconcileRate, "--max-concurrent-reconciles": *maxConcurrentReconciles, "--max-conns": *maxConns} {
		if v < 1 {
			kingpin.Fatalf("%s must be at least 1, not %d", name, v)
		}
	}

	zl := zap.New(zap.UseDevMode(*debug))
	log := logging.NewLogrLogger(zl.WithName("provider-postgresql"))
	if *debug {
		// controller-runtime is very verbose; give it a real logger only in
		// debug mode.
		ctrl.SetLogger(zl)
	} else {
		ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	}
	if pct := setGCPercent(os.Getenv); pct > 0 {
		log.Info("Garbage collection target set (GOGC overrides it)", "gcPercent", pct)
	}
	if soft := setSoftMemoryLimit("/sys/fs/cgroup", os.Getenv); soft > 0 {
		log.Info("Soft memory limit set from the container's", "limitMiB", soft>>20, "share", memoryLimitShare)
	}
	log.Info("Starting", "version", version.Version, "namespace", *namespace,
		"poll", pollInterval.String(), "poll-jitter", pollJitter.String(), "sync", syncInterval.String(),
		"max-reconcile-rate", *maxReconcileRate, "max-concurrent-reconciles", *maxConcurrentReconciles, "leader-election", *leaderElection)

	cfg, err := ctrl.GetConfig()
	kingpin.FatalIfError(err, "Cannot get API server rest config")

	scheme, err := manager.Scheme()
	kingpin.FatalIfError(err, "Cannot build the scheme")

	opts := manager.Options(scheme, manager.CRDGateCache())
	// After the manager has stopped: events recorded on the way out are
	// sent, or counted as lost.
	defer opts.EventBroadcaster.Shutdown() //nolint:staticcheck // The deprecated option is the one a manager takes an event broadcaster from.
	opts.Cache.SyncPeriod = syncInterval
	opts.Metrics = metricsserver.Options{BindAddress: *metricsAddr}
	opts.HealthProbeBindAddress = *probeAddr
	opts.PprofBindAddress = *pprofAddr
	profileHeap(*pprofAddr)
	opts.GracefulShutdownTimeout = shutdownTimeout
	// Leases only. The defaults are those of Crossplane's providers, longer
	// than controller-runtime's: under load, renewals missing a 10 s
	// deadline cost leadership needlessly (docs/install.md, "Two
	// replicas", measures what each setting costs).
	opts.LeaderElection = *leaderElection
	opts.LeaderElectionID = leaderElectionID
	opts.LeaderElectionNamespace = *namespace
	opts.LeaderElectionResourceLock = resourcelock.LeasesResourceLock
	opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = leaseDuration, renewDeadline, retryPeriod
	// Release the Lease on SIGTERM so a successor starts at once instead
	// of waiting for it to expire.
	opts.LeaderElectionReleaseOnCancel = true
	mgr, err := ctrl.NewManager(ratelimiter.LimitRESTConfig(cfg, *maxReconcileRate), opts)
	kingpin.FatalIfError(err, "Cannot create controller manager")

	kingpin.FatalIfError(mgr.AddHealthzCheck("ping", healthz.Ping), "Cannot add health check")
	kingpin.FatalIfError(mgr.AddReadyzCheck("ping", healthz.Ping), "Cannot add readiness check")

	mrMetrics := managed.NewMRMetricRecorder()
	stateMetrics := statemetrics.NewMRStateMetrics()
	metrics.Registry.MustRegister(mrMetrics, stateMetrics)

	o := controller.Options{
		Logger:                  log,
		MaxConcurrentReconciles: *maxConcurrentReconciles,
		PollInterval:            *pollInterval,
		GlobalRateLimiter:       ratelimiter.NewGlobal(*maxReconcileRate),
		Features:                manager.Features(),
		MetricOptions: &controller.MetricOptions{
			PollStateMetricInterval: *pollStateMetricInterval,
			MRMetrics:               mrMetrics,
			MRStateMetrics:          stateMetrics,
		},
		Gate: new(gate.Gate[schema.GroupVersionKind]),
	}
	if *enableChangeLogs {
		c, err := changelog.Dial(*changeLogsSocket, "provider-postgresql:"+version.Version)
		kingpin.FatalIfError(err, "Cannot set up change logs")
		defer func() { _ = c.Close() }()
		o.Features.Enable(feature.EnableAlphaChangeLogs)
		o.ChangeLogOptions = c.Options
		log.Info("Change logs enabled", "socket", *changeLogsSocket)
	}

	ctx, cancel := context.WithCancelCause(ctrl.SetupSignalHandler())
	defer cancel(nil)

	kingpin.FatalIfError(customresourcesgate.Setup(mgr, o), "Cannot set up the CRD gate")
	pools := postgres.NewRegistry(postgres.RegistryOptions{
		MaxConnsPerPool:     *maxConnsPerPool,
		MaxConnsPerDatabase: *maxConnsPerDatabase,
		MaxConns:            *maxConns,
		IdleTimeout:         *connIdleTimeout,
	})
	// Close every server connection on the way out, after the manager has
	// stopped its reconciles.
	defer pools.Close()
	observations := poll.NewObservations(pgcontroller.ManagedKinds()...)
	metrics.Registry.MustRegister(append(pgcontroller.Collectors(mgr.GetClient()), pools, observations)...)

	direct, err := client.New(cfg, client.Options{Scheme: scheme})
	kingpin.FatalIfError(err, "Cannot create an API client")
	// Each policy is not fatal: what it enforces is held, later or less
	// well, without it, and its absence is logged with what to do.
	for _, p := range []struct {
		on               bool
		what, name, file string
		install          func() error
		without, noFlag  string
	}{
		{*installLockPolicy, "Lock", cluster.LockPolicyName, cluster.LockPolicyFile,
			func() error { return admission.InstallLockPolicy(ctx, direct, *namespace) },
			"Locks are NOT enforced until it is installed (every Lock says PolicyMissing)", "--no-install-lock-policy"},
		{*installTenantPolicy, "tenant", cluster.TenantPolicyName, cluster.TenantPolicyFile,
			func() error { return admission.Install(ctx, direct, cluster.TenantPolicyFile, nil) },
			"claims naming a registered database are checked only by the composition", "--no-install-tenant-policy"},
		{*installInUsePolicy, "in-use", cluster.InUsePolicyName, cluster.InUsePolicyFile,
			func() error { return admission.Install(ctx, direct, cluster.InUsePolicyFile, nil) },
			"deleting a Bound database or an Instance in use is accepted and held by finalizers, not refused", "--no-install-in-use-policy"},
	} {
		if !p.on {
			continue
		}
		if err := p.install(); err != nil {
			log.Info(fmt.Sprintf("Cannot install or update the %s admission policy: %s. Grant the provider what a package cannot ask for (%s): it keeps trying and installs it then, no restart needed. Or apply cluster/%s yourself and run with %s",
				p.what, p.without, cluster.GrantCommand(version.Version), p.file, p.noFlag), "policy", p.name, "error", err.Error())
			// Crossplane v2's packages cannot request this RBAC, so
			// a plain package install starts without it: once an admin
			// grants it, the policy goes in.
			go retryInstall(ctx, log, p.what, p.name, p.install)
			continue
		}
		log.Info("Installed the "+p.what+" admission policy", "policy", p.name)
	}

	// The key that seals ownership markers, made on first start: a
	// resource restored from a backup is recognised by it (package seal).
	key, err := ensureSeal(ctx, direct, *namespace)
	kingpin.FatalIfError(err, "Cannot set up the marker seal key (the provider needs to read, or once create, this Secret in its namespace)")

	kingpin.FatalIfError(pgcontroller.SetupGated(ctx, mgr, config.Config{
		Options:         o,
		Namespace:       *namespace,
		PollJitter:      *pollJitter,
		MinPollInterval: *minPollInterval,
		Pools:           pools,
		AdminTokens:     admintoken.NewSources(*adminTokenCommands, *adminTokenDirs),
		Observations:    observations,
		Queues:          config.SharedQueues(o),
		Seal:            key,
	}, cancel), "Cannot set up controllers")

	kingpin.FatalIfError(mgr.Start(ctx), "Cannot start controller manager")
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		kingpin.Fatalf("Stopped: %v", err)
	}
	log.Info("Stopped")
}

// retryInstall tries install again every ten seconds for five minutes
// (an admin granting the RBAC after a package install is usually at it),
// then every minute, until it succeeds or ctx ends.
func retryInstall(ctx context.Context, log logging.Logger, what, name string, install func() error) {
	start := time.Now()
	for {
		wait := 10 * time.Second
		if time.Since(start) > 5*time.Minute {
			wait = time.Minute
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		if err := install(); err != nil {
			log.Debug("Still cannot install the "+what+" admission policy", "policy", name, "error", err.Error())
			continue
		}
		log.Info("Installed the "+what+" admission policy", "policy", name)
		return
	}
}

// ensureSeal is seal.Ensure, retried for up to half a minute while the
// API server forbids it: a pod started from a fresh package install may
// run before Crossplane's RBAC manager has bound its ServiceAccount to
// the Secrets of its namespace.
func ensureSeal(ctx context.Context, kube client.Client, namespace string) (*seal.Key, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		key, err := seal.Ensure(ctx, kube, namespace)
		if err == nil || !kerrors.IsForbidden(err) || time.Now().After(deadline) {
			return key, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(2 * time.Second):
		}
	}
}
