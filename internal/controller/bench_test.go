package controller_test

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/fixture/proc"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

// objectsPerUnit is what one unit of the mixed workload manages: a login
// role with its Secret, a database it owns, a schema in it, a grant of the
// schema to a shared reader role, and default privileges for the reader on
// the owner's future tables.
const objectsPerUnit = 5

// mixedKinds lists the kinds of the mixed workload.
func mixedKinds() []client.ObjectList {
	return []client.ObjectList{
		&v1alpha1.PostgreSQLRoleList{}, &v1alpha1.PostgreSQLDatabaseList{}, &v1alpha1.PostgreSQLSchemaList{},
		&v1alpha1.PostgreSQLGrantList{}, &v1alpha1.PostgreSQLDefaultPrivilegesList{},
	}
}

// provisionMixed creates units of the mixed workload (names start with
// prefix) and waits until every object is Ready.
func provisionMixed(ctx context.Context, tb testing.TB, prefix string, units int) time.Duration {
	tb.Helper()
	watched, stop := watchScale(ctx, tb)
	defer stop()
	start := time.Now()
	on := v1alpha1.InstanceReference{Name: "main"}
	ref := func(n string) *v1alpha1.LocalReference { return &v1alpha1.LocalReference{Name: n} }
	reader := &v1alpha1.PostgreSQLRole{ObjectMeta: metav1.ObjectMeta{Name: prefix + "reader", Namespace: "scale"}, Spec: v1alpha1.PostgreSQLRoleSpec{InstanceRef: on}}
	if err := env.Kube.Create(ctx, reader); err != nil {
		tb.Fatal(err)
	}
	for i := range units {
		o, d, s := fmt.Sprintf("%so%d", prefix, i), fmt.Sprintf("%sd%d", prefix, i), fmt.Sprintf("%ss%d", prefix, i)
		objs := []client.Object{
			&v1alpha1.PostgreSQLRole{ObjectMeta: metav1.ObjectMeta{Name: o, Namespace: "scale"}, Spec: v1alpha1.PostgreSQLRoleSpec{
				InstanceRef: on, ForProvider: v1alpha1.PostgreSQLRoleParameters{Login: ptr.To(true)},
				WriteConnectionSecretToReference: &xpv2.LocalSecretReference{Name: o + "-conn"},
			}},
			&v1alpha1.PostgreSQLDatabase{ObjectMeta: metav1.ObjectMeta{Name: d, Namespace: "scale"}, Spec: v1alpha1.PostgreSQLDatabaseSpec{
				InstanceRef: on, ForProvider: v1alpha1.PostgreSQLDatabaseParameters{OwnerRef: ref(o)},
			}},
			&v1alpha1.PostgreSQLSchema{ObjectMeta: metav1.ObjectMeta{Name: s, Namespace: "scale"}, Spec: v1alpha1.PostgreSQLSchemaSpec{
				InstanceRef: on, ForProvider: v1alpha1.PostgreSQLSchemaParameters{DatabaseRef: ref(d), OwnerRef: ref(o)},
			}},
			&v1alpha1.PostgreSQLGrant{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%sg%d", prefix, i), Namespace: "scale"}, Spec: v1alpha1.PostgreSQLGrantSpec{
				InstanceRef: on, ForProvider: v1alpha1.PostgreSQLGrantParameters{
					RoleRef: ref(reader.Name), ObjectType: v1alpha1.GrantObjectSchema, DatabaseRef: ref(d), SchemaRef: ref(s), Privileges: []v1alpha1.Privilege{"USAGE"},
				},
			}},
			&v1alpha1.PostgreSQLDefaultPrivileges{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%sp%d", prefix, i), Namespace: "scale"}, Spec: v1alpha1.PostgreSQLDefaultPrivilegesSpec{
				InstanceRef: on, ForProvider: v1alpha1.PostgreSQLDefaultPrivilegesParameters{
					RoleRef: ref(reader.Name), OwnerRef: ref(o), DatabaseRef: ref(d), SchemaRef: ref(s),
					ObjectType: v1alpha1.DefaultPrivilegesTables, Privileges: []v1alpha1.Privilege{"SELECT"},
				},
			}},
		}
		for _, obj := range objs {
			if err := env.Kube.Create(ctx, obj); err != nil {
				tb.Fatal(err)
			}
		}
	}
	want := units*objectsPerUnit + 1
	var ready int
	err := providertest.WaitEvery(ctx, 10*time.Minute+time.Duration(units)*time.Second, lookEvery(units), func(ctx context.Context) (bool, error) {
		ready = 0
		objs, err := mixedObjects(ctx, watched, prefix, client.UnsafeDisableDeepCopy)
		for _, o := range objs {
			if o.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue {
				ready++
			}
		}
		return ready == want, err
	})
	if err != nil {
		tb.Fatalf("%d of %d objects Ready: %v", ready, want, err)
	}
	return time.Since(start)
}

// lookEvery is how often the benchmark looks at units of the mixed
// workload to see whether a wave or a deletion is over. Each look goes
// through every object: looked at every 100 ms, 10,000 objects cost this
// process 5.3 ms of CPU per object (2.8 at 1,000), taken from the
// provider and the servers on 2 cores. Looking less often the more
// objects there are keeps the looks' cost per object the same at every
// size, and the end known within a thousandth of its length.
func lookEvery(units int) time.Duration {
	return max(100*time.Millisecond, time.Duration(units)*time.Millisecond/2)
}

// mixedObjects lists, from r, the objects of the mixed workload whose
// names have prefix.
func mixedObjects(ctx context.Context, r client.Reader, prefix string, opts ...client.ListOption) ([]providertest.Conditioned, error) {
	var out []providertest.Conditioned
	for _, l := range mixedKinds() {
		if err := r.List(ctx, l, append([]client.ListOption{client.InNamespace("scale")}, opts...)...); err != nil {
			return nil, err
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			if c, ok := it.(providertest.Conditioned); ok && strings.HasPrefix(c.GetName(), prefix) {
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// watchScale returns a reader of the managed kinds in the scale namespace
// (the mixed workload's, roles and databases among them) that a watch
// keeps up to date, and the func that stops it. Waiting for objects by
// listing them from the API server every 100 ms would load the API server
// the provider shares, the more so the more objects there are and the
// longer the wave lasts: at 5,000 objects the benchmark's own lists kept
// the API server busier than the provider's work did, and at 200 they
// were 20 lists a second of 100 objects each during a wave of a few
// seconds. A watch costs it one event per change.
func watchScale(ctx context.Context, tb testing.TB) (client.Reader, func()) {
	tb.Helper()
	c, stop := env.Cache(ctx, tb, "scale")
	// The first list of each kind starts its informer and waits for it to
	// sync.
	if _, err := mixedObjects(ctx, c, "", client.UnsafeDisableDeepCopy); err != nil {
		stop()
		tb.Fatal(err)
	}
	return c, stop
}

// allReconciles is how many reconciles the managed controllers of the
// mixed workload's kinds have run in this process.
func allReconciles(tb testing.TB, g gatherFunc) float64 {
	tb.Helper()
	var n float64
	for k, v := range reconcilesByResultOf(tb, g) {
		if strings.HasPrefix(k[0], "managed/postgresql") && !strings.HasPrefix(k[0], "managed/postgresqlinstance") {
			n += v
		}
	}
	return n
}

// restoreScaleEnv restarts the provider with the scale environment's
// options, after a benchmark changed them.
func restoreScaleEnv(ctx context.Context, b testing.TB) {
	b.Helper()
	if err := env.RestartWith(ctx, func(o *providertest.Options) {
		o.PollInterval, o.PollJitter, o.MaxReconcileRate, o.MaxConcurrentReconciles, o.Pools = scalePoll, 0, 0, 0, scalePools
		o.DiscardLog = false
	}); err != nil {
		b.Fatal(err)
	}
}

// reconcilesByResult counts the reconciles of each controller of this
// process by result (success, error, requeue, requeue_after).
func reconcilesByResult(tb testing.TB) map[[2]string]float64 {
	tb.Helper()
	return reconcilesByResultOf(tb, metrics.Registry.Gather)
}

// gatherFunc returns metric families: this process's registry, or a
// provider process's /metrics.
type gatherFunc func() ([]*dto.MetricFamily, error)

// reconcilesByResultOf counts the reconciles in g by controller and result.
func reconcilesByResultOf(tb testing.TB, g gatherFunc) map[[2]string]float64 {
	tb.Helper()
	families, err := g()
	if err != nil {
		tb.Fatal(err)
	}
	out := map[[2]string]float64{}
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			var k [2]string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "controller":
					k[0] = l.GetValue()
				case "result":
					k[1] = l.GetValue()
				}
			}
			out[k] += m.GetCounter().GetValue()
		}
	}
	return out
}

// logReconciles logs where the reconciles to Ready went: per controller
// and result, per unit of the workload (one object of each kind).
func logReconciles(tb testing.TB, before, after map[[2]string]float64, units float64) {
	tb.Helper()
	keys := make([][2]string, 0, len(after))
	for k, v := range after {
		if v > before[k] {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+"/"+a[1], b[0]+"/"+b[1]) })
	var sb strings.Builder
	for _, k := range keys {
		name := strings.TrimSuffix(strings.TrimPrefix(k[0], "managed/"), ".database.ayatori.ddupan.top")
		fmt.Fprintf(&sb, "\n  %-40s %-14s %6.2f per unit", name, k[1], (after[k]-before[k])/units)
	}
	tb.Logf("reconciles to Ready by controller and result:%s", sb.String())
}

// logRequests logs the API server's requests between two counts, over
// what, by kind, per object, the most first, and returns them per object all together:
// with the API server's CPU per object, whether it does more per request
// or is asked more (the test's creates and its informer's watch among
// them).
func logRequests(tb testing.TB, over string, before, after map[requestKind]float64, objects float64) float64 {
	tb.Helper()
	per := map[requestKind]float64{}
	var all float64
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			per[k] = d / objects
			all += d / objects
		}
	}
	kinds := slices.SortedFunc(maps.Keys(per), func(a, c requestKind) int { return cmp.Compare(per[c], per[a]) })
	var sb strings.Builder
	for _, k := range kinds[:min(len(kinds), 12)] {
		fmt.Fprintf(&sb, "\n  %-50s %6.2f per object", k, per[k])
	}
	tb.Logf("API requests over %s: %.2f per object, the most asked:%s", over, all, sb.String())
	return all
}

// eventOutcomes is the provider's provider_postgresql_events_total by
// result.
func eventOutcomes(tb testing.TB, g gatherFunc) map[string]float64 {
	tb.Helper()
	families, err := g()
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "provider_postgresql_events_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" {
					out[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// logEvents logs what became of the events the provider recorded, per
// object, and fails on any it could not send: `kubectl get events` would
// miss them.
func logEvents(tb testing.TB, g gatherFunc, objects float64) {
	tb.Helper()
	o := eventOutcomes(tb, g)
	tb.Logf("events recorded, per object: %.2f sent, %.2f filtered by client-go's spam filter, %.2f dropped, %.2f failed",
		o["sent"]/objects, o["filtered"]/objects, o["dropped"]/objects, o["failed"]/objects)
	if lost := o["dropped"] + o["failed"]; lost > 0 {
		tb.Errorf("%.0f events could not be sent (%.0f dropped, %.0f failed)", lost, o["dropped"], o["failed"])
	}
}

// logPoolWaits logs where the provider waited for server connections:
// for a connection of the Instance's own pool (its maintenance database),
// of the databases' pools, and for a slot under the global cap, with the
// connections acquired of each.
func logPoolWaits(tb testing.TB, g gatherFunc) {
	tb.Helper()
	families, err := g()
	if err != nil {
		tb.Fatal(err)
	}
	var wait, acquires [2]float64 // [0] maintenance database, [1] the others
	var slot, opened float64
	for _, f := range families {
		for _, m := range f.GetMetric() {
			i := 1
			for _, l := range m.GetLabel() {
				if l.GetName() == "database" && (l.GetValue() == "" || l.GetValue() == "postgres") {
					i = 0
				}
			}
			switch f.GetName() {
			case "provider_postgresql_pool_acquire_wait_seconds_total":
				wait[i] += m.GetCounter().GetValue()
			case "provider_postgresql_pool_acquires_total":
				acquires[i] += m.GetCounter().GetValue()
			case "provider_postgresql_connection_slot_wait_seconds_total":
				slot += m.GetCounter().GetValue()
			case "provider_postgresql_connections_opened_total":
				opened += m.GetCounter().GetValue()
			}
		}
	}
	tb.Logf("connections: maintenance pool %.0f acquired, %.1f s waited; database pools %.0f acquired, %.1f s waited; %.1f s waited for a slot under the cap; %.0f opened",
		acquires[0], wait[0], acquires[1], wait[1], slot, opened)
}

// gatherOf gathers the metrics of in-process collectors (the pool
// registry, the observations), which the test's provider does not register
// with controller-runtime's registry.
func gatherOf(tb testing.TB, cs ...prometheus.Collector) gatherFunc {
	tb.Helper()
	reg := prometheus.NewPedanticRegistry()
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			tb.Fatal(err)
		}
	}
	return reg.Gather
}

// mixedVersions maps every object of the mixed workload, and every Secret,
// whose name has prefix, to its resourceVersion.
func mixedVersions(ctx context.Context, tb testing.TB, prefix string) map[string]string {
	tb.Helper()
	return resourceVersions(ctx, tb, prefix, append(mixedKinds(), &corev1.SecretList{})...)
}

// The provider's histograms of the time between two observations of one
// object, and of how late polls came after their scheduled moment.
const (
	intervalHistogram = "provider_postgresql_observation_interval_seconds"
	latenessHistogram = "provider_postgresql_poll_lateness_seconds"
)

// histogramBuckets returns the cumulative counts of the histogram name in g
// by bucket upper bound (+Inf as 0), all kinds together.
func histogramBuckets(tb testing.TB, g gatherFunc, name string) map[float64]uint64 {
	tb.Helper()
	fams, err := g()
	if err != nil {
		tb.Fatal(err)
	}
	out := map[float64]uint64{}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			h := m.GetHistogram()
			for _, b := range h.GetBucket() {
				out[b.GetUpperBound()] += b.GetCumulativeCount()
			}
			out[0] += h.GetSampleCount()
		}
	}
	return out
}

// longestBetween returns the upper bound of the highest bucket that gained
// intervals between two snapshots (a day when only +Inf did), and how
// many intervals were recorded in between: the longest an object waited
// between two observations in that window.
func longestBetween(before, after map[float64]uint64) (time.Duration, uint64) {
	n := after[0] - before[0]
	var bounds []float64
	for b := range after {
		if b != 0 {
			bounds = append(bounds, b)
		}
	}
	slices.Sort(bounds)
	longest := 0.0
	below := uint64(0)
	for _, b := range bounds {
		cum := after[b] - before[b]
		if cum > below {
			longest = b
		}
		below = cum
	}
	if n > below {
		longest = 24 * 3600
	}
	return time.Duration(longest * float64(time.Second)), n
}

// BenchmarkScale runs the mixed workload (roles with Secrets, databases,
// schemas, grants, default privileges) at 1,000 and 5,000 objects on the
// provider's own binary with its default flags (poll 1m with 10s jitter,
// rate, concurrency and connection caps), as a process of its own, so its
// memory is the provider's alone. It reports, per size: reconciles per
// object to Ready, peak server sessions against the cap, then over two
// polls of steady state the statements and API writes per object per poll,
// what became of the events the provider recorded (failing on any it
// could not send),
// the server sessions opened per database per poll and the longest
// interval between two observations of one object (the upper bound of
// its histogram bucket), the process's resident memory (at the end of the
// steady state, and its peak) and heap in use, and the time to delete everything again (each size starts
// from an empty namespace). BENCH_SCALE_SIZES (objects, comma-separated)
// picks other sizes; BENCH_HEAP_PROFILE writes the live heap in steady
// state, BENCH_CPU_PROFILE the process's CPU over the steady-state
// window and BENCH_WAVE_CPU_PROFILE over the wave, in 20-second pieces
// (the size is added before each one's extension), and
// BENCH_APISERVER_CPU_PROFILE the API server's CPU over the wave and over
// the deletion (with "-delete" added too); BENCH_PROVIDER_ARGS
// (space-separated flags, such as --max-conns=20) runs the provider with
// other settings than the shipped ones, and BENCH_PROVIDER_ENV
// (space-separated KEY=value, such as GOGC=100) with another environment.
// The provider serves its profiler
// only when a profile is asked for, or BENCH_PPROF is set (to profile it
// by hand while it runs).
func BenchmarkScale(b *testing.B) {
	suite.Server(b)
	ctx := context.Background()
	sizes := []int{1000, 5000}
	if s := os.Getenv("BENCH_SCALE_SIZES"); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				b.Fatalf("BENCH_SCALE_SIZES: %v", err)
			}
			sizes = append(sizes, n)
		}
	}
	if os.Getenv("BENCH_HEAP_PROFILE") != "" {
		// The runtime's default samples one allocation per 512 KiB: too
		// coarse to tell what the provider keeps per object.
		b.Setenv("GODEBUG", "memprofilerate=4096")
	}
	bin, err := providertest.BuildProvider(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	const poll, jitter = time.Minute, 10 * time.Second
	// The in-process controllers, stopped while the binary runs, come back
	// for the benchmarks after this one.
	defer restoreScaleEnv(ctx, b)
	for i, size := range sizes {
		b.Run(fmt.Sprintf("objects=%d", size), func(b *testing.B) {
			for range b.N {
				// The flags as shipped: nothing but where to listen, and
				// what BENCH_PROVIDER_ARGS adds to try another setting.
				// The profiler only when a profile is asked for: it keeps
				// heap samples, which the shipped provider does not.
				profiled := os.Getenv("BENCH_HEAP_PROFILE") != "" || os.Getenv("BENCH_CPU_PROFILE") != "" || os.Getenv("BENCH_WAVE_CPU_PROFILE") != "" || os.Getenv("BENCH_PPROF") != ""
				p, err := env.RunProvider(ctx, bin, providertest.ProcessOptions{
					Args: strings.Fields(os.Getenv("BENCH_PROVIDER_ARGS")), Env: strings.Fields(os.Getenv("BENCH_PROVIDER_ENV")), Profiled: profiled,
				})
				if err != nil {
					b.Fatal(err)
				}
				func() {
					defer p.Stop()
					measureScale(ctx, b, p, fmt.Sprintf("m%dx", i), size, poll, jitter)
				}()
			}
		})
	}
}

// measureScale provisions size objects of the mixed workload on the
// provider process p, measures them, and deletes them again.
func measureScale(ctx context.Context, b *testing.B, p *providertest.Process, prefix string, size int, poll, jitter time.Duration) {
	b.Helper()
	defer func() {
		if b.Failed() {
			b.Logf("the provider's log ends with:\n%s", p.LogTail())
		}
	}()
	units := size / objectsPerUnit
	objects := float64(units*objectsPerUnit + 1)
	settleServer(ctx, b)
	before, byBefore := allReconciles(b, p.Gather), reconcilesByResultOf(b, p.Gather)
	sampler := samplePeak(ctx, b)
	waveProfiled := profilePieces(ctx, b, "the provider", p.CPUProfile, sizedPath(os.Getenv("BENCH_WAVE_CPU_PROFILE"), size))
	apiServerProfiled := profilePieces(ctx, b, "the API server", apiServerCPUProfile, sizedPath(os.Getenv("BENCH_APISERVER_CPU_PROFILE"), size))
	cpuFrom, err := proc.CPUByCommand()
	if err != nil {
		b.Fatal(err)
	}
	logStatements := resetStatements(ctx, b, "the wave")
	requestsFrom, conflictsFrom := apiRequestCounts(ctx, b), conflicts(ctx, b)
	took := provisionMixed(ctx, b, prefix, units)
	requests := logRequests(b, "the wave", requestsFrom, apiRequestCounts(ctx, b), objects)
	// A conflict is a reconcile more: what reconciles per object grow by.
	conflicted, where := conflictsPerObject(conflictsFrom, conflicts(ctx, b), int(objects))
	b.Logf("writes refused as conflicts over the wave: %.3f per object (%s)", conflicted, where)
	cpuTo, err := proc.CPUByCommand()
	if err != nil {
		b.Fatal(err)
	}
	peak := sampler.done()
	waveProfiled()
	apiServerProfiled()
	logWaveCPU(b, cpuFrom, cpuTo, objects)
	logStatements(objects)
	perObject := (allReconciles(b, p.Gather) - before) / objects
	logReconciles(b, byBefore, reconcilesByResultOf(b, p.Gather), float64(units))
	logPoolWaits(b, p.Gather)
	// Sessions move between databases when more of them have work than
	// the cap holds, each move a login: the cost that grows with a wave's
	// databases at a small --max-conns.
	b.ReportMetric(metricValue(b, p.Gather, "provider_postgresql_connections_opened_total")/float64(units), "wave-logins/database")

	// Steady state: two polls after a first one has passed.
	time.Sleep(poll + jitter)
	obs, late := histogramBuckets(b, p.Gather, intervalHistogram), histogramBuckets(b, p.Gather, latenessHistogram)
	versions := mixedVersions(ctx, b, prefix)
	if err := env.Postgres.SetLogStatement(ctx, "all"); err != nil {
		b.Fatal(err)
	}
	from := env.ServerLogLen(b)
	openedFrom := metricValue(b, p.Gather, "provider_postgresql_connections_opened_total")
	window := 2 * poll
	profiled := make(chan error, 1)
	cpuPath := sizedPath(os.Getenv("BENCH_CPU_PROFILE"), size)
	if cpuPath != "" {
		// What the process spends its CPU on in steady state.
		go func() { profiled <- p.CPUProfile(ctx, cpuPath, window) }()
	}
	time.Sleep(window)
	if cpuPath != "" {
		if err := <-profiled; err != nil {
			b.Fatal(err)
		}
		b.Logf("steady-state CPU profile: %s", cpuPath)
	}
	opened := metricValue(b, p.Gather, "provider_postgresql_connections_opened_total") - openedFrom
	// By now every event of the wave has been sent, or lost.
	logEvents(b, p.Gather, objects)
	logEventReasons(ctx, b, prefix, objects)
	steady := env.ServerLog(b, from)
	statements := countStatements(steady)
	b.Logf("statements over two polls of steady state, by shape:%s", statementShapes(steady))
	if err := env.Postgres.SetLogStatement(ctx, "none"); err != nil {
		b.Fatal(err)
	}
	var written []string
	for k, v := range mixedVersions(ctx, b, prefix) {
		if versions[k] != v {
			written = append(written, k)
		}
	}
	writes := len(written)
	longest, intervals := longestBetween(obs, histogramBuckets(b, p.Gather, intervalHistogram))
	latest, _ := longestBetween(late, histogramBuckets(b, p.Gather, latenessHistogram))
	rss, err := p.RSSMiB()
	if err != nil {
		b.Fatal(err)
	}
	peakRSS, err := p.PeakRSSMiB()
	if err != nil {
		b.Fatal(err)
	}
	heap := metricValue(b, p.Gather, "go_memstats_heap_inuse_bytes") / (1 << 20)
	// What the process has spent of the machine's CPU, wave and steady
	// state together: what a lower GOGC, say, costs.
	cpu := metricValue(b, p.Gather, "process_cpu_seconds_total")
	// The cap the process runs with (--max-conns), as it reports it.
	connCap := metricValue(b, p.Gather, "provider_postgresql_max_connections")
	if path := sizedPath(os.Getenv("BENCH_HEAP_PROFILE"), size); path != "" {
		if err := p.HeapProfile(ctx, path); err != nil {
			b.Fatal(err)
		}
		b.Logf("live heap profile: %s", path)
	}
	logDeletes := resetStatements(ctx, b, "the deletion")
	cpuFrom, err = proc.CPUByCommand()
	if err != nil {
		b.Fatal(err)
	}
	requestsFrom = apiRequestCounts(ctx, b)
	apiServerProfiled = profilePieces(ctx, b, "the API server", apiServerCPUProfile, sizedPath(deletionPath(os.Getenv("BENCH_APISERVER_CPU_PROFILE")), size))
	deleted := removeMixed(ctx, b, prefix)
	if cpuTo, err = proc.CPUByCommand(); err != nil {
		b.Fatal(err)
	}
	apiServerProfiled()
	logRequests(b, "the deletion", requestsFrom, apiRequestCounts(ctx, b), objects)
	logCPU(b, "deletion", cpuFrom, cpuTo, objects)
	logDeletes(objects)
	// The floor last, on a server as empty as the provider found it.
	settleServer(ctx, b)
	base := floorMixed(ctx, b, prefix+"f", units)

	// Also in the log: a failed benchmark reports no metrics.
	b.Logf("%.0f objects Ready in %s (floor %s, %.1f×), %.2f reconciles per object; steady state: %.2f statements per object per poll, longest interval %s, latest poll %s; RSS %.0f MiB (peak %.0f); deleted in %s",
		objects, took.Round(100*time.Millisecond), base.Round(100*time.Millisecond), took.Seconds()/base.Seconds(), perObject,
		float64(statements)/objects/(float64(window)/float64(poll)), longest, latest, rss, peakRSS, deleted.Round(100*time.Millisecond))
	b.ReportMetric(took.Seconds(), "s-to-ready")
	b.ReportMetric(base.Seconds(), "s-floor")
	b.ReportMetric(took.Seconds()/base.Seconds(), "x-floor")
	b.ReportMetric(perObject, "reconciles/object")
	b.ReportMetric(requests, "api-requests/object")
	b.ReportMetric(float64(peak), "peak-conns")
	b.ReportMetric(connCap, "conn-cap")
	b.ReportMetric(float64(statements)/objects/(float64(window)/float64(poll)), "stmts/object/poll")
	b.ReportMetric(float64(writes)/objects/(float64(window)/float64(poll)), "writes/object/poll")
	// Each unit has a database of its own.
	b.ReportMetric(opened/float64(units)/(float64(window)/float64(poll)), "sessions/database/poll")
	b.ReportMetric(longest.Seconds(), "s-longest-observation-interval")
	b.ReportMetric(float64(intervals), "intervals")
	b.ReportMetric(latest.Seconds(), "s-latest-poll")
	b.ReportMetric(rss, "MiB-rss")
	b.ReportMetric(peakRSS, "MiB-rss-peak")
	b.ReportMetric(cpu, "s-provider-cpu")
	b.ReportMetric(heap, "MiB-heap-in-use")
	b.ReportMetric(deleted.Seconds(), "s-to-delete")
	if float64(peak) > connCap {
		b.Errorf("peak provider sessions %d exceed the cap %.0f", peak, connCap)
	}
	if writes != 0 {
		slices.Sort(written)
		b.Errorf("%d objects or Secrets written in steady state, with nothing changed; the first: %s", writes, strings.Join(written[:min(len(written), 10)], ", "))
		logEventsOf(ctx, b, written[:min(len(written), 3)])
	}
}

// profilePieces takes CPU profiles of a process (the provider's or the
// API server's, as profile fetches them) one after another, 20 s each,
// into path with a number added before its extension, until the function
// it returns is called: a wave or a deletion, whatever its length, in
// pieces `go tool pprof` merges when given them all. An empty path takes
// none.
func profilePieces(ctx context.Context, b *testing.B, of string, profile func(context.Context, string, time.Duration) error, path string) func() {
	b.Helper()
	if path == "" {
		return func() {}
	}
	done, finished := make(chan struct{}), make(chan []string)
	go func() {
		var paths []string
		for i := 0; ; i++ {
			select {
			case <-done:
				finished <- paths
				return
			default:
			}
			piece := sizedPath(path, i)
			if err := profile(ctx, piece, 20*time.Second); err != nil {
				b.Error(err)
				<-done
				finished <- paths
				return
			}
			paths = append(paths, piece)
		}
	}()
	return func() {
		close(done)
		b.Logf("CPU profiles of %s (merge with go tool pprof): %s", of, strings.Join(<-finished, " "))
	}
}

// apiServerCPUProfile writes the API server's CPU profile over d into
// path, from its own profiler (on by default, and the test's user may
// read it).
func apiServerCPUProfile(ctx context.Context, path string, d time.Duration) error {
	cs, err := kubernetes.NewForConfig(env.ControlPlane.Config)
	if err != nil {
		return err
	}
	body, err := cs.RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", strconv.Itoa(int(d.Seconds()))).Timeout(d + time.Minute).DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("cannot fetch the API server's CPU profile: %w", err)
	}
	return os.WriteFile(path, body, 0o600)
}

// deletionPath is path with "-delete" added before its extension, "" for
// "".
func deletionPath(path string) string {
	if path == "" {
		return ""
	}
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "-delete" + ext
}

// sizedPath is path with the size added before its extension, "" for "".
func sizedPath(path string, size int) string {
	if path == "" {
		return ""
	}
	ext := filepath.Ext(path)
	return fmt.Sprintf("%s-%d%s", strings.TrimSuffix(path, ext), size, ext)
}

// floorMixed is the floor of units of the mixed workload: a shared reader
// role, then for each unit a login role with its verifier and a database
// it owns, and inside that database the schema, its grant to the reader
// and the default privileges, one statement after the other. It drops what
// it made afterwards.
func floorMixed(ctx context.Context, tb testing.TB, prefix string, units int) time.Duration {
	tb.Helper()
	q := postgres.QuoteIdentifier
	reader := prefix + "reader"
	took := floorOf(ctx, tb, prefix, units, postgres.CreateRoleStatements(reader, postgres.DefaultRoleAttributes(), "", postgres.Mark{UID: "floor"}), func(name string) []string {
		s := name + "s"
		return append(postgres.CreateSchemaStatements(s, postgres.SchemaSettings{Owner: name}, postgres.Mark{UID: "floor"}),
			"GRANT USAGE ON SCHEMA "+q(s)+" TO "+q(reader),
			"ALTER DEFAULT PRIVILEGES FOR ROLE "+q(name)+" IN SCHEMA "+q(s)+" GRANT SELECT ON TABLES TO "+q(reader))
	})
	dropPairs(ctx, tb, prefix, units)
	env.SQL(ctx, tb, "postgres", "DROP ROLE "+q(reader))
	return took
}

// metricValue is the value of the unlabelled gauge or counter name in g.
func metricValue(tb testing.TB, g gatherFunc, name string) float64 {
	tb.Helper()
	fams, err := g()
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			m := f.GetMetric()[0]
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	tb.Fatalf("no gauge or counter %s in the provider's metrics", name)
	return 0
}

// removeMixed deletes every object of the mixed workload whose name has
// prefix, all at once as a user deleting a namespace's worth would, and
// waits until the provider has let every one go; it returns how long that
// took.
func removeMixed(ctx context.Context, tb testing.TB, prefix string) time.Duration {
	tb.Helper()
	watched, stop := watchScale(ctx, tb)
	defer stop()
	start := time.Now()
	objs, err := mixedObjects(ctx, env.Kube, prefix)
	if err != nil {
		tb.Fatal(err)
	}
	for _, o := range objs {
		if o.GetDeletionTimestamp() == nil {
			if err := client.IgnoreNotFound(env.Kube.Delete(ctx, o)); err != nil {
				tb.Fatal(err)
			}
		}
	}
	var n int
	err = providertest.WaitEvery(ctx, 30*time.Minute, lookEvery(len(objs)/objectsPerUnit), func(ctx context.Context) (bool, error) {
		objs, err := mixedObjects(ctx, watched, prefix, client.UnsafeDisableDeepCopy)
		n = len(objs)
		return n == 0, err
	})
	if err != nil {
		tb.Fatalf("%d objects of %s* still there: %v", n, prefix, err)
	}
	return time.Since(start)
}

// logEventReasons logs the events of the objects whose names start with
// prefix, by kind, type and reason, counted (a repeat counts on its
// event) per object of the size: what each event an object costs is for.
func logEventReasons(ctx context.Context, tb testing.TB, prefix string, objects float64) {
	tb.Helper()
	l := &corev1.EventList{}
	if err := env.Kube.List(ctx, l, client.InNamespace("scale")); err != nil {
		tb.Fatal(err)
	}
	by := map[string]int32{}
	for _, e := range l.Items {
		if strings.HasPrefix(e.InvolvedObject.Name, prefix) {
			by[fmt.Sprintf("%-28s %-8s %s", e.InvolvedObject.Kind, e.Type, e.Reason)] += e.Count
		}
	}
	keys := slices.Sorted(maps.Keys(by))
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %s %6.2f per object", k, float64(by[k])/objects)
	}
	tb.Logf("events by kind, type and reason:%s", b.String())
}

// logEventsOf logs the events of the objects named "TYPE NAME" (as
// resourceVersions keys them) in namespace scale: what a write in steady
// state was about.
func logEventsOf(ctx context.Context, tb testing.TB, objects []string) {
	tb.Helper()
	l := &corev1.EventList{}
	if err := env.Kube.List(ctx, l, client.InNamespace("scale")); err != nil {
		tb.Logf("cannot list events: %v", err)
		return
	}
	for _, o := range objects {
		name := o[strings.LastIndex(o, " ")+1:]
		for _, e := range l.Items {
			if e.InvolvedObject.Name == name {
				tb.Logf("%s: %s %s x%d, last %s: %s", o, e.Type, e.Reason, e.Count, e.LastTimestamp.Format(time.RFC3339), e.Message)
			}
		}
	}
}

// logWaveCPU says what each program of the machine spent of its CPU on a
// wave of objects (the provider, the API server, etcd, PostgreSQL, this
// benchmark's own watch), and reports the servers' shares per object: on
// 2 cores they share, a program whose CPU per object grows with the size
// slows every other.
func logWaveCPU(b *testing.B, from, to map[string]float64, objects float64) {
	b.Helper()
	spent := logCPU(b, "wave", from, to, objects)
	for comm, unit := range map[string]string{"kube-apiserver": "ms-apiserver-cpu/object", "etcd": "ms-etcd-cpu/object", "postgres": "ms-postgres-cpu/object"} {
		b.ReportMetric(1000*spent[comm]/objects, unit)
	}
}

// logCPU logs the CPU each program spent between two readings (of half a
// second or more), per object, the most first, over what; and returns it
// by program.
func logCPU(tb testing.TB, what string, from, to map[string]float64, objects float64) map[string]float64 {
	tb.Helper()
	spent := map[string]float64{}
	for comm, v := range to {
		if d := v - from[comm]; d >= 0.5 {
			spent[comm] = d
		}
	}
	comms := slices.SortedFunc(maps.Keys(spent), func(a, c string) int { return cmp.Compare(spent[c], spent[a]) })
	var parts []string
	for _, comm := range comms {
		parts = append(parts, fmt.Sprintf("%s %.1f s (%.1f ms/object)", comm, spent[comm], 1000*spent[comm]/objects))
	}
	tb.Logf("%s CPU by program: %s", what, strings.Join(parts, ", "))
	return spent
}
