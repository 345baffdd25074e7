package controller_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/fixture/pgserver"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

// BenchmarkInstances runs the provider's binary, with the shipped flags,
// against a fleet of BENCH_INSTANCES (100) PostgreSQL servers on loopback,
// one PostgreSQLInstance each, and applies BENCH_INSTANCE_PAIRS (10) login
// roles with Secrets and databases each owned by its role to every one:
// 20 objects per Instance. It reports the time until every object is
// Ready, and the most sessions the provider held on all the servers
// together (sampled on the servers) against --max-conns, which every
// Instance shares: with more servers than the cap has sessions, each
// server's sessions must close for the next server's to open.
//
// Then one server is frozen (SIGSTOP: it accepts TCP connections and
// answers nothing, as a host cut off by a partition does) and a second
// wave of the same size is applied to every Instance. It reports the
// healthy Instances' time to Ready against the first wave's
// (x-first-wave: the frozen one must not slow the others), how long the
// frozen Instance took to be reported not Ready, and, once the server is
// thawed, how long its objects took to be Ready. It fails when the
// session cap is exceeded, an object is in Conflict, or a healthy
// Instance's object is not Ready in time.
func BenchmarkInstances(b *testing.B) {
	suite.Server(b)
	ctx := context.Background()
	instances, pairs := envInt(b, "BENCH_INSTANCES", 100, 2), envInt(b, "BENCH_INSTANCE_PAIRS", 10, 1)
	bin, err := providertest.BuildProvider(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer restoreScaleEnv(ctx, b)
	for range b.N {
		measureFleet(ctx, b, bin, instances, pairs)
	}
}

// envInt is the integer in the environment variable name, def when it is
// unset; one below least fails tb.
func envInt(tb testing.TB, name string, def, least int) int {
	tb.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < least {
		tb.Fatalf("%s=%q: want a number, at least %d", name, s, least)
	}
	return n
}

// A fleetServer is one server of the fleet, its Instance's name, and the
// test's own session to it, which samples the provider's sessions there.
type fleetServer struct {
	pg       *pgserver.Server
	instance string
	sampler  *pgx.Conn
}

func measureFleet(ctx context.Context, b *testing.B, bin string, instances, pairs int) {
	b.Helper()
	fleet := startFleet(ctx, b, instances)
	p, err := env.RunProvider(ctx, bin, providertest.ProcessOptions{})
	if err != nil {
		for _, s := range fleet {
			_ = s.pg.Stop()
		}
		b.Fatal(err)
	}
	defer p.Stop()
	// Before the provider stops: it removes the Instances' finalizers.
	defer stopFleet(ctx, b, fleet)
	defer func() {
		if b.Failed() {
			b.Logf("the provider's log ends with:\n%s", p.LogTail())
		}
	}()
	start := time.Now()
	for _, s := range fleet {
		if err := env.WaitForReady(ctx, &v1alpha1.PostgreSQLInstance{ObjectMeta: metav1.ObjectMeta{Name: s.instance}}, corev1.ConditionTrue, xpv2.ReasonAvailable, 5*time.Minute); err != nil {
			b.Fatalf("Instance %s: %v", s.instance, err)
		}
	}
	b.Logf("%d Instances Ready %s after the provider started", instances, time.Since(start).Round(time.Second))
	connCap := metricValue(b, p.Gather, "provider_postgresql_max_connections")

	// The first wave, every server up.
	first := map[string]string{"bench": "fleet1"}
	sampler := sampleFleet(ctx, fleet, nil)
	start = time.Now()
	applyFleetWave(ctx, b, fleet, "f1", first, pairs)
	waitReadyCount(ctx, b, first, 2*pairs*instances, 30*time.Minute)
	firstWave := time.Since(start)
	peakFirst := sampler.done()
	b.Logf("first wave: %d objects on %d Instances Ready in %s; at most %d provider sessions on all servers together (cap %.0f)",
		2*pairs*instances, instances, firstWave.Round(time.Millisecond), peakFirst, connCap)
	// A poll later (1 min and its jitter): the sessions the fleet holds
	// while nothing changes.
	sampler = sampleFleet(ctx, fleet, nil)
	time.Sleep(70 * time.Second)
	peakSteady := sampler.done()
	openSteady := sampleFleetOnce(ctx, fleet, nil)
	pools := metricSeries(b, p.Gather, "provider_postgresql_pool_connections")

	// The second wave, one server frozen.
	frozen := fleet[0]
	if err := frozen.pg.Freeze(); err != nil {
		b.Fatal(err)
	}
	frozenAt := time.Now()
	// Watched from the freeze on, while the second wave runs.
	noticedCh := make(chan time.Time, 1)
	go func() { noticedCh <- waitInstanceNotReady(ctx, b, frozen.instance, 10*time.Minute) }()
	second := map[string]string{"bench": "fleet2"}
	healthy := map[string]string{"bench": "fleet2", "fleet-frozen": "false"}
	sampler = sampleFleet(ctx, fleet, frozen)
	start = time.Now()
	applyFleetWave(ctx, b, fleet, "f2", second, pairs)
	waitReadyCount(ctx, b, healthy, 2*pairs*(instances-1), 30*time.Minute)
	secondWave := time.Since(start)
	peakSecond := sampler.done()
	noticed := <-noticedCh
	if noticed.IsZero() {
		b.FailNow()
	}
	noticedAfter := noticed.Sub(frozenAt)
	stuck := readyCount(ctx, b, map[string]string{"bench": "fleet2", "fleet-frozen": "true"})
	b.Logf("second wave, %s frozen: the other %d Instances' %d objects Ready in %s (%.2f× the first wave per object); the frozen Instance reported not Ready %s after the freeze; %d of its objects Ready; at most %d provider sessions on the other servers",
		frozen.instance, instances-1, 2*pairs*(instances-1), secondWave.Round(time.Millisecond), perObjectRatio(secondWave, instances-1, firstWave, instances), noticedAfter.Round(time.Second), stuck, peakSecond)
	if stuck != 0 {
		b.Errorf("%d objects of the frozen Instance are Ready", stuck)
	}

	// Thawed: its objects follow.
	if err := frozen.pg.Thaw(); err != nil {
		b.Fatal(err)
	}
	thawedAt := time.Now()
	waitReadyCount(ctx, b, second, 2*pairs*instances, 15*time.Minute)
	recovered := time.Since(thawedAt)
	b.Logf("thawed: its %d objects Ready %s later", 2*pairs, recovered.Round(time.Second))

	// Sessions opened over both waves: with more servers than the cap has
	// sessions, most reconciles on a server log in afresh.
	opened := metricValue(b, p.Gather, "provider_postgresql_connections_opened_total")
	rss, err := p.PeakRSSMiB()
	if err != nil {
		b.Fatal(err)
	}
	removeFailover(ctx, b, first)
	removeFailover(ctx, b, second)

	b.ReportMetric(float64(instances), "instances")
	b.ReportMetric(float64(2*pairs*instances), "objects-per-wave")
	b.ReportMetric(firstWave.Seconds(), "s-first-wave")
	b.ReportMetric(secondWave.Seconds(), "s-second-wave-healthy")
	b.ReportMetric(perObjectRatio(secondWave, instances-1, firstWave, instances), "x-first-wave")
	b.ReportMetric(float64(max(peakFirst, peakSteady, peakSecond)), "peak-conns")
	b.ReportMetric(connCap, "conn-cap")
	b.ReportMetric(float64(openSteady), "conns-open-steady")
	b.ReportMetric(float64(pools), "pools-open-steady")
	b.ReportMetric(noticedAfter.Seconds(), "s-frozen-noticed")
	b.ReportMetric(recovered.Seconds(), "s-ready-after-thaw")
	b.ReportMetric(opened/float64(4*pairs*instances), "sessions-opened/object")
	b.ReportMetric(rss, "MiB-rss-peak")
	b.ReportMetric(0, "ns/op")
	if peak := max(peakFirst, peakSteady, peakSecond); float64(peak) > connCap {
		b.Errorf("at most %d provider sessions on the fleet, over the cap of %.0f", peak, connCap)
	}
}

// perObjectRatio is the time per Instance of one wave against another's.
func perObjectRatio(took time.Duration, instances int, base time.Duration, baseInstances int) float64 {
	return (took.Seconds() / float64(instances)) / (base.Seconds() / float64(baseInstances))
}

// startFleet starts n servers, two at a time (the machine's cores), and
// registers an Instance for each.
func startFleet(ctx context.Context, b *testing.B, n int) []*fleetServer {
	b.Helper()
	fleet := make([]*fleetServer, n)
	started := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				s, err := pgserver.Start(ctx, pgserver.Options{ExtraConfig: []string{
					// A small server: a hundred of them share 24 GiB.
					"max_connections = 30", "shared_buffers = 8MB",
				}})
				if err != nil {
					errs <- err
					return
				}
				fleet[i] = &fleetServer{pg: s, instance: fmt.Sprintf("fleet%03d", i)}
				if i%10 == 9 {
					b.Logf("%d of %d servers started (%s)", i+1, n, time.Since(started).Round(time.Second))
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		stopFleet(ctx, b, fleet)
		b.Fatal(err)
	}
	for _, s := range fleet {
		admin, ca := s.instance+"-admin", s.instance+"-ca"
		if err := env.AdminSecret(ctx, admin, s.pg.AdminUser, s.pg.AdminPassword); err != nil {
			b.Fatal(err)
		}
		if err := env.Kube.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: ca, Namespace: providertest.Namespace},
			Data:       map[string][]byte{"ca.crt": s.pg.CA.CertPEM},
		}); err != nil {
			b.Fatal(err)
		}
		if err := env.Kube.Create(ctx, &v1alpha1.PostgreSQLInstance{
			ObjectMeta: metav1.ObjectMeta{Name: s.instance},
			Spec: v1alpha1.PostgreSQLInstanceSpec{
				Endpoint:           v1alpha1.Endpoint{Host: s.pg.Host, Hostaddr: s.pg.Hostaddr, Port: int32(s.pg.Port)},
				AdminCredentialRef: &v1alpha1.AdminCredentialReference{Name: admin},
				CABundleRef:        &v1alpha1.CABundleReference{Name: ca},
			},
		}); err != nil {
			b.Fatal(err)
		}
		c, err := s.pg.Connect(ctx, "postgres")
		if err != nil {
			b.Fatal(err)
		}
		s.sampler = c
	}
	b.Logf("%d servers started and registered in %s", n, time.Since(started).Round(time.Second))
	return fleet
}

// stopFleet removes the fleet's Instances and Secrets and stops its
// servers. An Instance's delete is refused while its status counts users
// (the in-use admission policy), which it recounts at its next poll once
// they are gone: each delete is tried again until it is taken.
func stopFleet(ctx context.Context, b *testing.B, fleet []*fleetServer) {
	b.Helper()
	left := map[string]bool{}
	for _, s := range fleet {
		if s != nil {
			left[s.instance] = true
		}
	}
	var last error
	err := providertest.WaitEvery(ctx, 5*time.Minute, 2*time.Second, func(ctx context.Context) (bool, error) {
		for name := range left {
			in := &v1alpha1.PostgreSQLInstance{}
			err := env.Kube.Get(ctx, client.ObjectKey{Name: name}, in)
			if kerrors.IsNotFound(err) {
				delete(left, name)
				continue
			}
			if err == nil && in.GetDeletionTimestamp() == nil {
				err = env.Kube.Delete(ctx, in)
			}
			if err != nil {
				last = err
			}
		}
		return len(left) == 0, nil
	})
	if err != nil {
		b.Errorf("Instances %v not gone: %v (last: %v)", slices.Sorted(maps.Keys(left)), err, last)
	}
	for _, s := range fleet {
		if s == nil {
			continue
		}
		if s.sampler != nil {
			_ = s.sampler.Close(ctx)
		}
		for _, name := range []string{s.instance + "-admin", s.instance + "-ca"} {
			_ = env.Kube.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: providertest.Namespace}})
		}
		_ = s.pg.Stop()
	}
}

// applyFleetWave creates pairs login roles with Secrets and databases each
// owned by its role on every Instance of the fleet, labelled with labels
// and with whether their server is the first, the one the second wave
// freezes.
func applyFleetWave(ctx context.Context, b *testing.B, fleet []*fleetServer, prefix string, labels map[string]string, pairs int) {
	b.Helper()
	per := 2 * pairs
	err := env.Burst(ctx, per*len(fleet), func(i int) client.Object {
		// Spread over the fleet: the first objects go to every server.
		k, j := i%len(fleet), i/len(fleet)
		l := map[string]string{"fleet-frozen": strconv.FormatBool(k == 0)}
		for key, v := range labels {
			l[key] = v
		}
		on := v1alpha1.InstanceReference{Name: fleet[k].instance}
		role := fmt.Sprintf("%si%dr%d", prefix, k, j/2)
		if j%2 == 0 {
			return &v1alpha1.PostgreSQLRole{ObjectMeta: metav1.ObjectMeta{Name: role, Namespace: "scale", Labels: l}, Spec: v1alpha1.PostgreSQLRoleSpec{
				InstanceRef: on, ForProvider: v1alpha1.PostgreSQLRoleParameters{Login: ptr.To(true)},
				WriteConnectionSecretToReference: &xpv2.LocalSecretReference{Name: role + "-conn"},
			}}
		}
		return &v1alpha1.PostgreSQLDatabase{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%si%dd%d", prefix, k, j/2), Namespace: "scale", Labels: l}, Spec: v1alpha1.PostgreSQLDatabaseSpec{
			InstanceRef: on, ForProvider: v1alpha1.PostgreSQLDatabaseParameters{OwnerRef: &v1alpha1.LocalReference{Name: role}},
		}}
	})
	if err != nil {
		b.Fatal(err)
	}
}

// readyCount is how many roles and databases with labels are Ready.
func readyCount(ctx context.Context, b *testing.B, labels map[string]string) int {
	b.Helper()
	var n int
	roles, dbs := &v1alpha1.PostgreSQLRoleList{}, &v1alpha1.PostgreSQLDatabaseList{}
	for _, l := range []client.ObjectList{roles, dbs} {
		if err := env.Kube.List(ctx, l, client.InNamespace("scale"), client.MatchingLabels(labels)); err != nil {
			b.Fatal(err)
		}
	}
	for i := range roles.Items {
		if roles.Items[i].GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue {
			n++
		}
	}
	for i := range dbs.Items {
		if dbs.Items[i].GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue {
			n++
		}
	}
	return n
}

// waitInstanceNotReady waits until the Instance name is no longer Ready,
// and returns when it was seen so; the zero time, with b failed, when it
// stays Ready. It may run in a goroutine of its own.
func waitInstanceNotReady(ctx context.Context, b *testing.B, name string, timeout time.Duration) time.Time {
	in := &v1alpha1.PostgreSQLInstance{}
	err := providertest.WaitEvery(ctx, timeout, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		err := env.Kube.Get(ctx, client.ObjectKey{Name: name}, in)
		return err == nil && in.GetCondition(xpv2.TypeReady).Status != corev1.ConditionTrue, err
	})
	if err != nil {
		b.Errorf("the frozen Instance %s still Ready: %v", name, err)
		return time.Time{}
	}
	b.Logf("the frozen Instance: %s", in.GetCondition(xpv2.TypeReady).Message)
	return time.Now()
}

// sampleFleet keeps, in a peakSampler, the most provider sessions open at
// once on every server of a fleet but skip (which does not answer).
func sampleFleet(ctx context.Context, fleet []*fleetServer, skip *fleetServer) *peakSampler {
	s := &peakSampler{stop: make(chan struct{})}
	s.wg.Go(func() {
		for {
			if n := sampleFleetOnce(ctx, fleet, skip); n > s.peak.Load() {
				s.peak.Store(n)
			}
			select {
			case <-s.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	return s
}

// sampleFleetOnce is how many of the provider's sessions were open on the
// servers of the fleet but skip at one moment, as their pg_stat_activity
// shows them. The servers are asked one after the other, and a session
// may close on one and open on the next in between: a plain sum would
// count it twice. So only sessions started before the first question and
// still open at their server's answer are counted: each was open at that
// first moment, so the sum never exceeds what was open then (it may miss
// one started after it).
func sampleFleetOnce(ctx context.Context, fleet []*fleetServer, skip *fleetServer) int64 {
	var sum int64
	at := time.Now()
	for _, s := range fleet {
		if s == skip {
			continue
		}
		var n int64
		if err := s.sampler.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND backend_start <= $2", postgres.ApplicationName, at).Scan(&n); err == nil {
			sum += n
		}
	}
	return sum
}

// metricSeries is how many series of the metric name the provider
// exports: for a gauge by pool and state, the pools open times their
// states.
func metricSeries(tb testing.TB, g gatherFunc, name string) int {
	tb.Helper()
	families, err := g()
	if err != nil {
		tb.Fatal(err)
	}
	pools := map[string]bool{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			var key string
			for _, l := range m.GetLabel() {
				if l.GetName() != "state" {
					key += l.GetName() + "=" + l.GetValue() + ","
				}
			}
			pools[key] = true
		}
	}
	return len(pools)
}
