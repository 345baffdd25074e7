package controller_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/controller/config"
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
	err := providertest.Wait(ctx, 10*time.Minute+time.Duration(units)*time.Second, func(ctx context.Context) (bool, error) {
		ready = 0
		for _, l := range mixedKinds() {
			if err := env.Kube.List(ctx, l, client.InNamespace("scale")); err != nil {
				return false, err
			}
			items, err := meta.ExtractList(l)
			if err != nil {
				return false, err
			}
			for _, it := range items {
				c, ok := it.(providertest.Conditioned)
				if ok && strings.HasPrefix(c.GetName(), prefix) && c.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == want, nil
	})
	if err != nil {
		tb.Fatalf("%d of %d objects Ready: %v", ready, want, err)
	}
	return time.Since(start)
}

// allReconciles is how many reconciles the managed controllers of the
// mixed workload's kinds have run in this process.
func allReconciles(tb testing.TB) float64 {
	tb.Helper()
	return reconcilesOf(tb, func(c string) bool {
		return strings.HasPrefix(c, "managed/postgresql") && !strings.HasPrefix(c, "managed/postgresqlinstance")
	})
}

// restoreScaleEnv restarts the provider with the scale environment's
// options, after a benchmark changed them.
func restoreScaleEnv(ctx context.Context, b *testing.B) {
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
	families, err := metrics.Registry.Gather()
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

// logPoolWaits logs where the provider waited for server connections:
// for a connection of the Instance's own pool (its maintenance database),
// of the databases' pools, and for a slot under the global cap, with the
// connections acquired of each.
func logPoolWaits(tb testing.TB, pools *postgres.Registry) {
	tb.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(pools); err != nil {
		tb.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	var wait, acquires [2]float64 // [0] maintenance database, [1] the others
	var slot float64
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
			}
		}
	}
	tb.Logf("connections: maintenance pool %.0f acquired, %.1f s waited; database pools %.0f acquired, %.1f s waited; %.1f s waited for a slot under the cap",
		acquires[0], wait[0], acquires[1], wait[1], slot)
}

// mixedVersions maps every object of the mixed workload, and every Secret,
// whose name has prefix, to its resourceVersion.
func mixedVersions(ctx context.Context, tb testing.TB, prefix string) map[string]string {
	tb.Helper()
	return resourceVersions(ctx, tb, prefix, append(mixedKinds(), &corev1.SecretList{})...)
}

// intervalBuckets returns the cumulative counts of o's observation
// intervals by bucket upper bound (+Inf as 0), all kinds together.
func intervalBuckets(tb testing.TB, o *config.Observations) map[float64]uint64 {
	tb.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(o)
	fams, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	out := map[float64]uint64{}
	for _, f := range fams {
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

// rssMiB is the resident memory of this process (controllers, caches and
// the test's own client) in MiB.
func rssMiB(tb testing.TB) float64 {
	tb.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				tb.Fatal(err)
			}
			return float64(kb) / 1024
		}
	}
	tb.Fatal("no VmRSS in /proc/self/status")
	return 0
}

func init() {
	// The default samples one allocation per 512 KiB: too coarse to tell
	// what the provider keeps per object.
	if os.Getenv("BENCH_HEAP_PROFILE") != "" {
		runtime.MemProfileRate = 4096
	}
}

// heapProfile writes the live heap, in steady state, to the file
// BENCH_HEAP_PROFILE names (with the size before its extension), for
// `go tool pprof -sample_index=inuse_space`: what the provider keeps per
// object, which a profile taken at exit (-memprofile) no longer shows.
func heapProfile(tb testing.TB, size int) {
	tb.Helper()
	path := os.Getenv("BENCH_HEAP_PROFILE")
	if path == "" {
		return
	}
	ext := filepath.Ext(path)
	f, err := os.Create(fmt.Sprintf("%s-%d%s", strings.TrimSuffix(path, ext), size, ext))
	if err != nil {
		tb.Fatal(err)
	}
	if err := errors.Join(pprof.WriteHeapProfile(f), f.Close()); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("live heap profile: %s", f.Name())
}

// BenchmarkScale runs the mixed workload (roles with Secrets, databases,
// schemas, grants, default privileges) at 1,000 and 5,000 objects with
// the provider's default flags (poll 1m with 10s jitter, rate, concurrency
// and connection caps) and reports, per size: reconciles per object to
// Ready, peak server sessions against the cap, then over two polls of
// steady state the statements and API writes per object per poll and the
// longest interval between two observations of one object (the upper
// bound of its histogram bucket), and the process's resident memory and
// live heap after a collection. BENCH_SCALE_SIZES (objects, comma-separated)
// picks other sizes; BENCH_HEAP_PROFILE writes the live heap then.
func BenchmarkScale(b *testing.B) {
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
	const poll, jitter = time.Minute, 10 * time.Second
	defer restoreScaleEnv(ctx, b)
	for i, size := range sizes {
		b.Run(fmt.Sprintf("objects=%d", size), func(b *testing.B) {
			for range b.N {
				if err := env.RestartWith(ctx, func(o *providertest.Options) {
					o.PollInterval, o.PollJitter, o.Pools = poll, jitter, postgres.RegistryOptions{}
					o.MaxReconcileRate, o.MaxConcurrentReconciles = config.DefaultMaxReconcileRate, config.DefaultMaxConcurrentReconciles
					// Measure the provider, not the test's copy of its
					// debug log.
					o.DiscardLog = true
				}); err != nil {
					b.Fatal(err)
				}
				prefix := fmt.Sprintf("m%dx", i)
				units := size / objectsPerUnit
				objects := float64(units*objectsPerUnit + 1)
				before, byBefore := allReconciles(b), reconcilesByResult(b)
				sampler := samplePeak(ctx, b)
				took := provisionMixed(ctx, b, prefix, units)
				peak := sampler.done()
				perObject := (allReconciles(b) - before) / objects
				logReconciles(b, byBefore, reconcilesByResult(b), float64(units))

				// Steady state: two polls after a first one has passed.
				time.Sleep(poll + jitter)
				obs := intervalBuckets(b, env.Observations)
				versions := mixedVersions(ctx, b, prefix)
				if err := env.Postgres.SetLogStatement(ctx, "all"); err != nil {
					b.Fatal(err)
				}
				from := env.ServerLogLen(b)
				window := 2 * poll
				time.Sleep(window)
				statements := countStatements(env.ServerLog(b, from))
				if err := env.Postgres.SetLogStatement(ctx, "none"); err != nil {
					b.Fatal(err)
				}
				writes := 0
				for k, v := range mixedVersions(ctx, b, prefix) {
					if versions[k] != v {
						writes++
					}
				}
				longest, intervals := longestBetween(obs, intervalBuckets(b, env.Observations))
				// What stays in use once garbage is gone: the controllers'
				// caches mostly (the test's own lists are garbage by now).
				debug.FreeOSMemory()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				rss := rssMiB(b)
				heapProfile(b, size)

				b.ReportMetric(took.Seconds(), "s-to-ready")
				b.ReportMetric(perObject, "reconciles/object")
				b.ReportMetric(float64(peak), "peak-conns")
				b.ReportMetric(float64(postgres.DefaultMaxConns), "conn-cap")
				b.ReportMetric(float64(statements)/objects/(float64(window)/float64(poll)), "stmts/object/poll")
				b.ReportMetric(float64(writes)/objects/(float64(window)/float64(poll)), "writes/object/poll")
				b.ReportMetric(longest.Seconds(), "s-longest-observation-interval")
				b.ReportMetric(float64(intervals), "intervals")
				b.ReportMetric(rss, "MiB-rss")
				b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "MiB-heap-in-use")
				if peak > int64(postgres.DefaultMaxConns) {
					b.Errorf("peak provider sessions %d exceed the cap %d", peak, postgres.DefaultMaxConns)
				}
				if writes != 0 {
					b.Errorf("%d objects or Secrets written in steady state, with nothing changed", writes)
				}
			}
		})
	}
}
