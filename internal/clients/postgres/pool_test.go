package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/sync/errgroup"
)

func target(uid, database string) Target {
	ep := endpointOf(server)
	ep.Database = database
	return Target{InstanceUID: uid, InstanceName: "main", Endpoint: ep, Credentials: admin(server)}
}

// providerConnections counts the provider's sessions on the server.
func providerConnections(ctx context.Context, t *testing.T) int {
	t.Helper()
	conn := adminConn(ctx, t)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", ApplicationName).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// currentDatabase asks t's pool in r which database it runs in, with
// from appended to the query.
func currentDatabase(ctx context.Context, r *Registry, t Target, from string) (string, error) {
	p, err := r.Pool(ctx, t)
	if err != nil {
		return "", err
	}
	var got string
	if err := p.QueryRow(ctx, "SELECT current_database()"+from).Scan(&got); err != nil {
		return "", fmt.Errorf("query on %s: %w", t.Endpoint.Database, err)
	}
	return got, nil
}

func createDatabases(ctx context.Context, t *testing.T, prefix string, n int) []string {
	t.Helper()
	conn := adminConn(ctx, t)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s_%d", prefix, i)
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+names[i]); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

func TestRegistryReusesPools(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	r := NewRegistry(RegistryOptions{})
	defer r.Close()
	a, err := r.Pool(ctx, target("uid-1", "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Pool(ctx, target("uid-1", "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Error("the same target got two pools")
	}
	other, err := r.Pool(ctx, target("uid-2", "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	if other == a {
		t.Error("two Instances share a pool")
	}
}

// TestRegistryCountsOpenedConns: the opened-connections counter counts
// dials, not queries: queries one after another reuse one session.
func TestRegistryCountsOpenedConns(t *testing.T) {
	suite.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dbs := createDatabases(ctx, t, "opened", 2)
	r := NewRegistry(RegistryOptions{})
	defer r.Close()
	for i, db := range dbs {
		p, err := r.Pool(ctx, target("uid-opened", db))
		if err != nil {
			t.Fatal(err)
		}
		for range 5 {
			if _, err := p.Exec(ctx, "SELECT 1"); err != nil {
				t.Fatal(err)
			}
		}
		if got, want := r.OpenedConns(), int64(i+1); got != want {
			t.Errorf("after 5 queries in each of %d databases: %d connections opened, want %d", i+1, got, want)
		}
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(r)
	want := "# HELP provider_postgresql_connections_opened_total Server connections opened, across all pools and logins.\n# TYPE provider_postgresql_connections_opened_total counter\nprovider_postgresql_connections_opened_total 2\n"
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "provider_postgresql_connections_opened_total"); err != nil {
		t.Error(err)
	}
}

// TestRegistryPoolSizes: a pool into an Instance's own database holds
// MaxConnsPerPool connections, one into another database
// MaxConnsPerDatabase, and the objects there take turns on it: three
// reconciles at once open one session.
func TestRegistryPoolSizes(t *testing.T) {
	suite.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dbs := createDatabases(ctx, t, "sized", 1)
	r := NewRegistry(RegistryOptions{MaxConnsPerPool: 3})
	defer r.Close()
	home := target("uid-sized", "postgres")
	home.HomeDatabase = "postgres"
	cases := map[string]struct {
		t    Target
		want int32
	}{
		"HomeDatabase":  {t: home, want: 3},
		"OtherDatabase": {t: home.In(dbs[0]), want: DefaultMaxConnsPerDatabase},
		"NoInstance":    {t: target("uid-none", dbs[0]), want: 3},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := r.Pool(ctx, tc.t)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Config().MaxConns; got != tc.want {
				t.Errorf("pool size %d, want %d", got, tc.want)
			}
		})
	}

	p, err := r.Pool(ctx, home.In(dbs[0]))
	if err != nil {
		t.Fatal(err)
	}
	before := r.OpenedConns()
	g, gctx := errgroup.WithContext(ctx)
	for range 3 {
		g.Go(func() error {
			_, err := p.Exec(gctx, "SELECT pg_sleep(0.05)")
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := r.OpenedConns() - before; got != 1 {
		t.Errorf("three reconciles at once in one database opened %d sessions, want 1", got)
	}
}

func TestRegistryReplacesPoolWhenCredentialChanges(t *testing.T) {
	suite.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := NewRegistry(RegistryOptions{})
	defer r.Close()
	old, err := r.Pool(ctx, target("uid-1", "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	changed := target("uid-1", "postgres")
	changed.Credentials.Password = "rotated"
	fresh, err := r.Pool(ctx, changed)
	if err != nil {
		t.Fatal(err)
	}
	if fresh == old {
		t.Fatal("a changed password reused the old pool")
	}
	// The old pool is closed: nothing keeps using the old credential.
	deadline := time.Now().Add(10 * time.Second)
	for old.Stat().TotalConns() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := old.Exec(ctx, "SELECT 1"); err == nil || !strings.Contains(err.Error(), "closed pool") {
		t.Errorf("the replaced pool still works (err %v)", err)
	}
	if _, err := fresh.Exec(ctx, "SELECT 1"); err == nil || !strings.Contains(err.Error(), "password authentication failed") {
		t.Errorf("the new pool did not use the new (wrong) password: %v", err)
	}
	if strings.Contains(fmt.Sprint(keyOf(changed)), "rotated") {
		t.Error("a pool key holds the password in clear")
	}
}

// TestRegistryGlobalCap runs many concurrent queries over more databases
// than the cap allows connections for: all must finish, and the provider's
// sessions on the server must never exceed the cap.
func TestRegistryGlobalCap(t *testing.T) {
	suite.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const maxConns = 3
	dbs := createDatabases(ctx, t, "capped", 6)
	r := NewRegistry(RegistryOptions{MaxConnsPerPool: 2, MaxConns: maxConns})
	defer r.Close()

	var peak atomic.Int64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if n := int64(providerConnections(ctx, t)); n > peak.Load() {
				peak.Store(n)
			}
			if n := int64(r.OpenConns()); n > maxConns {
				t.Errorf("registry reports %d open connections, cap %d", n, maxConns)
			}
		}
	}()

	g, gctx := errgroup.WithContext(ctx)
	for i := range 24 {
		db := dbs[i%len(dbs)]
		g.Go(func() error {
			got, err := currentDatabase(gctx, r, target("uid-cap", db), " FROM pg_sleep(0.05)")
			if err != nil {
				return err
			}
			if got != db {
				return fmt.Errorf("query on %s ran in %s", db, got)
			}
			return nil
		})
	}
	err := g.Wait()
	close(stop)
	sampler.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if p := peak.Load(); p > maxConns || p == 0 {
		t.Errorf("peak provider sessions on the server = %d, want 1..%d", p, maxConns)
	}

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(r)
	if n, err := testutil.GatherAndCount(reg, "provider_postgresql_pool_connections", "provider_postgresql_max_connections", "provider_postgresql_pool_acquire_wait_seconds_total"); err != nil || n == 0 {
		t.Errorf("pool metrics: %d series, err %v", n, err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "provider_postgresql_max_connections" {
			if got := mf.GetMetric()[0].GetGauge().GetValue(); got != maxConns {
				t.Errorf("provider_postgresql_max_connections = %v, want %d", got, maxConns)
			}
		}
	}
}

func TestRegistryCloseInstance(t *testing.T) {
	suite.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := NewRegistry(RegistryOptions{})
	defer r.Close()
	p, err := r.Pool(ctx, target("uid-gone", "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	r.CloseInstance("uid-gone")
	deadline := time.Now().Add(10 * time.Second)
	for r.OpenConns() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := r.OpenConns(); n != 0 {
		t.Errorf("%d connections still open after the Instance's pools were closed", n)
	}
}

// TestRegistryCloseDatabaseEndsWithContext: closing a database's pools
// waits for a connection another reconcile still holds, but never past
// the caller's context (a shutdown must not wait on it), and the pool
// closes once the connection comes back.
func TestRegistryCloseDatabaseEndsWithContext(t *testing.T) {
	suite.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := NewRegistry(RegistryOptions{})
	defer r.Close()
	p, err := r.Pool(ctx, target("uid-held", "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	held, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	short, stop := context.WithTimeout(ctx, 200*time.Millisecond)
	defer stop()
	start := time.Now()
	if err := r.CloseDatabase(short, "uid-held", "postgres"); err == nil {
		t.Error("CloseDatabase returned no error while a connection was still held")
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("CloseDatabase took %s past its context's 200ms", took)
	}
	held.Release()
	deadline := time.Now().Add(10 * time.Second)
	for r.OpenConns() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := r.OpenConns(); n != 0 {
		t.Errorf("%d connections still open after the held one came back", n)
	}
	if err := r.CloseDatabase(ctx, "uid-held", "postgres"); err != nil {
		t.Errorf("closing a database without pools: %v", err)
	}
}

func TestShouldPing(t *testing.T) {
	for _, tc := range []struct {
		idle time.Duration
		want bool
	}{
		{idle: 0, want: false},
		{idle: 2 * time.Second, want: false},
		{idle: pingAfterIdle, want: false},
		{idle: pingAfterIdle + time.Millisecond, want: true},
		{idle: 10 * time.Minute, want: true},
	} {
		if got := shouldPing(context.Background(), pgxpool.ShouldPingParams{IdleDuration: tc.idle}); got != tc.want {
			t.Errorf("shouldPing(idle %s) = %v, want %v", tc.idle, got, tc.want)
		}
	}
}

// TestPoolDoesNotPingRecentConnections: a connection used a moment ago is
// not pinged before its next query (pgx's default pings after a second
// idle, which in steady state doubles the round trips of many polls).
func TestPoolDoesNotPingRecentConnections(t *testing.T) {
	suite.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := NewRegistry(RegistryOptions{MaxConnsPerPool: 1})
	defer r.Close()
	p, err := r.Pool(ctx, target("uid-ping", "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	if err := server.SetLogStatement(ctx, "all"); err != nil {
		t.Fatal(err)
	}
	defer server.SetLogStatement(ctx, "none") //nolint:errcheck // Test cleanup.
	before, err := server.Log()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := p.Exec(ctx, "SELECT 'ping-test'"); err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			time.Sleep(1500 * time.Millisecond)
		}
	}
	after, err := server.Log()
	if err != nil {
		t.Fatal(err)
	}
	log := string(after[len(before):])
	if n := strings.Count(log, "SELECT 'ping-test'"); n != 3 {
		t.Fatalf("the server log shows %d of the 3 queries: log_statement=all is not in effect", n)
	}
	if n := strings.Count(log, "-- ping"); n != 0 {
		t.Errorf("%d pings before queries on a connection used 1.5 s earlier, want none", n)
	}
}

// TestRegistryServesDialsInOrder: under the cap, dials waiting for a slot
// are served in the order they came, each by the connection given back
// before it (no newcomer, no luck of the draw), and each database opens
// one session.
func TestRegistryServesDialsInOrder(t *testing.T) {
	suite.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dbs := createDatabases(ctx, t, "ordered", 6)
	r := NewRegistry(RegistryOptions{MaxConns: 1})
	defer r.Close()
	first, err := r.Pool(ctx, target("uid-ordered", dbs[0]))
	if err != nil {
		t.Fatal(err)
	}
	held, err := first.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan string, len(dbs))
	g, gctx := errgroup.WithContext(ctx)
	for i, db := range dbs[1:] {
		g.Go(func() error {
			got, err := currentDatabase(gctx, r, target("uid-ordered", db), "")
			if err != nil {
				return err
			}
			served <- got
			return nil
		})
		queued(t, r.slots, i+1)
	}
	held.Release()
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	close(served)
	var order []string
	for db := range served {
		order = append(order, db)
	}
	if diff := cmp.Diff(dbs[1:], order); diff != "" {
		t.Errorf("databases served (-in the order they asked +as served):\n%s", diff)
	}
	if got, want := r.OpenedConns(), int64(len(dbs)); got != want {
		t.Errorf("%d sessions opened for %d databases, want one each", got, want)
	}
}

// TestRegistryClosesOneIdleConnection: a dial that finds the cap full
// closes one idle connection, of the least recently used pool, and leaves
// that pool its other one: closing more would only make it dial again.
func TestRegistryClosesOneIdleConnection(t *testing.T) {
	suite.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dbs := createDatabases(ctx, t, "oneidle", 3)
	r := NewRegistry(RegistryOptions{MaxConnsPerPool: 2, MaxConns: 3})
	defer r.Close()
	pools := make([]*pgxpool.Pool, len(dbs))
	for i, db := range dbs {
		p, err := r.Pool(ctx, target("uid-oneidle", db))
		if err != nil {
			t.Fatal(err)
		}
		pools[i] = p
	}
	// The first database's pool holds two idle connections, the second's
	// one, used after: the cap is full.
	a, err := pools[0].Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := pools[0].Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a.Release()
	b.Release()
	idle := func(p *pgxpool.Pool) int32 { return p.Stat().IdleConns() }
	// A connection given back goes idle a moment later (AfterRelease).
	settled := func(p *pgxpool.Pool, n int32) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); idle(p) != n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d idle connections, want %d", idle(p), n)
			}
		}
	}
	settled(pools[0], 2)
	if _, err := pools[1].Exec(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	settled(pools[1], 1)
	if _, err := pools[2].Exec(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	settled(pools[2], 1)
	if got := []int32{idle(pools[0]), idle(pools[1]), idle(pools[2])}; !slices.Equal(got, []int32{1, 1, 1}) {
		t.Errorf("idle connections per pool = %v, want one each: one of the least recently used pool's two closed", got)
	}
	if got := r.OpenedConns(); got != 4 {
		t.Errorf("%d sessions opened, want 4", got)
	}
	if got := providerConnections(ctx, t); got > 3 {
		t.Errorf("%d provider sessions on the server, cap 3", got)
	}
}
