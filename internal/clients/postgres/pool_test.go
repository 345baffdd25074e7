package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

func TestRegistryReplacesPoolWhenCredentialChanges(t *testing.T) {
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
			p, err := r.Pool(gctx, target("uid-cap", db))
			if err != nil {
				return err
			}
			var got string
			if err := p.QueryRow(gctx, "SELECT current_database() FROM pg_sleep(0.05)").Scan(&got); err != nil {
				return fmt.Errorf("query on %s: %w", db, err)
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
