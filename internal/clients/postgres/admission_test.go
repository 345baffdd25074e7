package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestEnterBoundsADatabasesShare(t *testing.T) {
	ctx := context.Background()
	r := NewRegistry(RegistryOptions{MaxConnsPerDatabase: 1})
	tenant := Target{InstanceUID: "u", HomeDatabase: "postgres", Endpoint: Endpoint{Database: "shop"}}
	var leaves []func()
	for i := range 2 {
		leave, err := r.Enter(ctx, tenant)
		if err != nil {
			t.Fatalf("reconcile %d was turned away from a database holding %d: %v", i+1, i, err)
		}
		leaves = append(leaves, leave)
	}
	start := time.Now()
	if _, err := r.Enter(ctx, tenant); !errors.Is(err, ErrDatabaseBusy) {
		t.Fatalf("a third reconcile in a database of pool size 1 got %v, want ErrDatabaseBusy", err)
	}
	if took := time.Since(start); took < enterWait || took > enterWait+time.Second {
		t.Errorf("turned away after %s, want about %s", took, enterWait)
	}
	if n := r.BusyRefusals(); n != 1 {
		t.Errorf("BusyRefusals() = %d, want 1", n)
	}
	for _, other := range []Target{
		{InstanceUID: "u", HomeDatabase: "postgres", Endpoint: Endpoint{Database: "postgres"}},
		{InstanceUID: "u", HomeDatabase: "postgres", Endpoint: Endpoint{Database: "ledger"}},
		{InstanceUID: "v", HomeDatabase: "postgres", Endpoint: Endpoint{Database: "shop"}},
	} {
		leave, err := r.Enter(ctx, other)
		if err != nil {
			t.Errorf("database %q of Instance %q is held by another's turns: %v", other.Endpoint.Database, other.InstanceUID, err)
			continue
		}
		leave()
	}
	leaves[0]()
	leaves[0]() // Twice: the second does nothing.
	leave, err := r.Enter(ctx, tenant)
	if err != nil {
		t.Fatalf("a turn given back was not given to the next: %v", err)
	}
	leave()
	if _, err := r.Enter(ctx, tenant); err != nil {
		t.Errorf("a turn let go twice freed one slot only once, as it must; but the next Enter failed: %v", err)
	}
}

// TestEnterWaitsWhileTheProviderWaitsForConnections: while a connection
// waits for a slot under the cap, the reconciles at work in a database may
// be waiting for one too: the next one waits for its turn past enterWait
// instead of being turned away (and its status written twice), and is
// turned away once nothing waits for a slot any more.
func TestEnterWaitsWhileTheProviderWaitsForConnections(t *testing.T) {
	ctx := context.Background()
	r := NewRegistry(RegistryOptions{MaxConnsPerDatabase: 1, MaxConns: 1})
	tenant := Target{InstanceUID: "u", HomeDatabase: "postgres", Endpoint: Endpoint{Database: "shop"}}
	leaves := takeTurns(ctx, t, r, tenant)
	// The one slot of the cap is taken, and a connection waits for it.
	if _, err := r.slots.take(ctx, func() bool { return false }); err != nil {
		t.Fatal(err)
	}
	queued := make(chan error, 1)
	go func() {
		_, err := r.slots.take(ctx, func() bool { return false })
		queued <- err
	}()
	for r.slots.queued() == 0 {
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	entered := enterLater(ctx, r, tenant)
	time.Sleep(3 * enterWait)
	leaves[0]()
	if err := <-entered; err != nil {
		t.Fatalf("turned away after %s while a connection waited for a slot: %v", time.Since(start), err)
	}
	// Nothing waits for a slot any more: a stalled database turns the
	// next one away again.
	r.slots.free()
	if err := <-queued; err != nil {
		t.Fatal(err)
	}
	again, err := r.Enter(ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	defer again()
	if _, err := r.Enter(ctx, tenant); !errors.Is(err, ErrDatabaseBusy) {
		t.Errorf("with no connection waiting: %v, want ErrDatabaseBusy", err)
	}
	leaves[1]()
}

// TestEnterWaitsWhileALoginToTheDatabaseRuns: a connection logging in to
// the database (a slow login on a busy server) is not the database being
// held: the next reconcile waits for its turn past enterWait.
func TestEnterWaitsWhileALoginToTheDatabaseRuns(t *testing.T) {
	ctx := context.Background()
	r := NewRegistry(RegistryOptions{MaxConnsPerDatabase: 1})
	tenant := Target{InstanceUID: "u", HomeDatabase: "postgres", Endpoint: Endpoint{Database: "shop"}}
	leaves := takeTurns(ctx, t, r, tenant)
	login := handOver{slots: r.slots, admit: &r.admit, database: databaseKey(tenant)}
	login.TraceConnectStart(ctx, pgx.TraceConnectStartData{})
	entered := enterLater(ctx, r, tenant)
	time.Sleep(3 * enterWait)
	leaves[0]()
	if err := <-entered; err != nil {
		t.Fatalf("turned away while a login to the database ran: %v", err)
	}
	login.TraceConnectEnd(ctx, pgx.TraceConnectEndData{})
	again, err := r.Enter(ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	defer again()
	if _, err := r.Enter(ctx, tenant); !errors.Is(err, ErrDatabaseBusy) {
		t.Errorf("with no login running: %v, want ErrDatabaseBusy", err)
	}
	leaves[1]()
}

// takeTurns takes the two turns a database of pool size 1 holds, in t's
// database, and returns what lets each go.
func takeTurns(ctx context.Context, tb testing.TB, r *Registry, t Target) []func() {
	tb.Helper()
	var leaves []func()
	for range 2 {
		leave, err := r.Enter(ctx, t)
		if err != nil {
			tb.Fatal(err)
		}
		leaves = append(leaves, leave)
	}
	return leaves
}

// enterLater enters t's database on its own goroutine, lets go at once,
// and sends what Enter returned.
func enterLater(ctx context.Context, r *Registry, t Target) <-chan error {
	entered := make(chan error, 1)
	go func() {
		leave, err := r.Enter(ctx, t)
		if err == nil {
			leave()
		}
		entered <- err
	}()
	return entered
}

// TestEnterTurnsAwayOnlyFromALockWait: with the database's turns all
// taken for longer than enterWait, the next reconcile waits for its turn
// while the provider's sessions there make progress (here, one sleeping
// through a slow statement), and is turned away as soon as one of them
// waits on a lock a tenant holds (an open transaction in its database).
func TestEnterTurnsAwayOnlyFromALockWait(t *testing.T) {
	suite.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := adminConn(ctx, t)
	for _, s := range []string{"DROP DATABASE IF EXISTS turns", "CREATE DATABASE turns"} {
		if _, err := admin.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _, _ = admin.Exec(context.Background(), "DROP DATABASE IF EXISTS turns WITH (FORCE)") })
	tgt := target("uid-turns", "turns")
	tgt.HomeDatabase = "postgres"
	r := NewRegistry(RegistryOptions{MaxConnsPerDatabase: 1, MaxConnsPerPool: 2})
	defer r.Close()
	p, err := r.Pool(ctx, tgt)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Exec(ctx, "CREATE TABLE public.held (id int)"); err != nil {
		t.Fatal(err)
	}

	t.Run("SlowIsProgress", func(t *testing.T) {
		leaves := takeTurns(ctx, t, r, tgt)
		slow := make(chan error, 1)
		go func() { _, err := p.Exec(ctx, "SELECT pg_sleep(1)"); slow <- err }()
		start := time.Now()
		entered := enterLater(ctx, r, tgt)
		if err := <-slow; err != nil {
			t.Fatal(err)
		}
		leaves[0]()
		if err := <-entered; err != nil {
			t.Fatalf("turned away after %s while the session at work slept through a statement: %v", time.Since(start), err)
		}
		leaves[1]()
	})

	t.Run("ALockWaitIsStalled", func(t *testing.T) {
		cfg, err := server.ConnConfig("turns")
		if err != nil {
			t.Fatal(err)
		}
		tenant, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer tenant.Close(context.WithoutCancel(ctx)) //nolint:errcheck // A test's session.
		if _, err := tenant.Exec(ctx, "BEGIN; LOCK TABLE public.held IN ACCESS EXCLUSIVE MODE"); err != nil {
			t.Fatal(err)
		}
		leaves := takeTurns(ctx, t, r, tgt)
		defer func() {
			for _, l := range leaves {
				l()
			}
		}()
		blocked := make(chan error, 1)
		go func() { _, err := p.Exec(ctx, "SELECT count(*) FROM public.held"); blocked <- err }()
		for waiting := 0; waiting == 0; time.Sleep(10 * time.Millisecond) {
			if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = 'turns' AND wait_event_type = 'Lock'").Scan(&waiting); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		if _, err := r.Enter(ctx, tgt); !errors.Is(err, ErrDatabaseBusy) {
			t.Fatalf("with the provider's session waiting on a tenant's lock: %v, want ErrDatabaseBusy", err)
		}
		if took := time.Since(start); took > enterWait+lockCheckTimeout {
			t.Errorf("turned away after %s, want within %s", took, enterWait+lockCheckTimeout)
		}
		if _, err := tenant.Exec(ctx, "COMMIT"); err != nil {
			t.Fatal(err)
		}
		if err := <-blocked; err != nil {
			t.Fatal(err)
		}
	})
}
