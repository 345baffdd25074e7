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
	leaves := takeTurns(t, r, tenant, 2)
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
	entered := enterLater(r, tenant)
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
	leaves := takeTurns(t, r, tenant, 2)
	login := handOver{slots: r.slots, admit: &r.admit, database: databaseKey(tenant)}
	login.TraceConnectStart(ctx, pgx.TraceConnectStartData{})
	entered := enterLater(r, tenant)
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

// takeTurns takes n turns in t's database and returns what lets each go.
func takeTurns(tb testing.TB, r *Registry, t Target, n int) []func() {
	tb.Helper()
	var leaves []func()
	for range n {
		leave, err := r.Enter(context.Background(), t)
		if err != nil {
			tb.Fatal(err)
		}
		leaves = append(leaves, leave)
	}
	return leaves
}

// enterLater enters t's database on its own goroutine, lets go at once,
// and sends what Enter returned.
func enterLater(r *Registry, t Target) <-chan error {
	entered := make(chan error, 1)
	go func() {
		leave, err := r.Enter(context.Background(), t)
		if err == nil {
			leave()
		}
		entered <- err
	}()
	return entered
}
