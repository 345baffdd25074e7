package postgres

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// rotating is a TokenSource whose token the test changes, counting what it
// was asked for.
type rotating struct {
	mu               sync.Mutex
	current, stale   string
	asked, forgotten int
}

func (r *rotating) Token(context.Context) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked++
	if r.stale != "" {
		// Until forgotten, it still offers the token it held.
		return r.stale, nil
	}
	return r.current, nil
}

func (r *rotating) Forget() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forgotten++
	r.stale = ""
}

func (*rotating) ID() string { return "rotating" }

func (r *rotating) set(current, stale string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.current, r.stale = current, stale
}

// TestTokenLogins: a login with a token source asks it at each new
// connection, not each statement; its pool stays the same pool whatever
// the token; a session logged in stays so when the password behind the
// token changes; a token the server refuses is forgotten, and the
// readiness login (Authenticate) tries once more with a new one.
func TestTokenLogins(t *testing.T) {
	suite.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := adminConn(ctx, t)
	role := "token_admin"
	for _, s := range []string{"DROP ROLE IF EXISTS " + role, "CREATE ROLE " + role + " LOGIN PASSWORD 'first-token'"} {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _, _ = conn.Exec(context.Background(), "DROP ROLE IF EXISTS "+role) })
	src := &rotating{current: "first-token"}
	tgt := target("uid-token", "postgres")
	tgt.Credentials = Credentials{Username: role, Token: src}
	r := NewRegistry(RegistryOptions{MaxConnsPerPool: 1})
	defer r.Close()

	p, err := r.Pool(ctx, tgt)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := p.Exec(ctx, "SELECT 1"); err != nil {
			t.Fatal(err)
		}
	}
	if src.asked != 1 {
		t.Errorf("the token was asked for %d times over 5 statements on one session, want 1", src.asked)
	}

	// The password behind the token rotates: the session logged in
	// stays so; a new one logs in with the new token.
	if _, err := conn.Exec(ctx, "ALTER ROLE "+role+" PASSWORD 'second-token'"); err != nil {
		t.Fatal(err)
	}
	src.set("second-token", "")
	if _, err := p.Exec(ctx, "SELECT 1"); err != nil {
		t.Errorf("the session logged in before the rotation: %v", err)
	}
	same, err := r.Pool(ctx, tgt)
	if err != nil {
		t.Fatal(err)
	}
	if same != p {
		t.Error("another pool for the same token source: every rotation would close the sessions")
	}
	p.Reset()
	if _, err := p.Exec(ctx, "SELECT 1"); err != nil {
		t.Errorf("a new session after the rotation: %v", err)
	}
	if src.asked != 2 {
		t.Errorf("the token was asked for %d times, want 2 (one per session)", src.asked)
	}

	// The source still holds the old token: the pool's login fails and
	// the source forgets it, so the next one gets the new.
	if _, err := conn.Exec(ctx, "ALTER ROLE "+role+" PASSWORD 'third-token'"); err != nil {
		t.Fatal(err)
	}
	src.set("third-token", "second-token")
	p.Reset()
	if _, err := p.Exec(ctx, "SELECT 1"); err == nil || !strings.Contains(err.Error(), "password authentication failed") {
		t.Errorf("a login with a refused token: %v, want it refused", err)
	}
	if src.forgotten != 1 {
		t.Errorf("the refused token was forgotten %d times, want 1", src.forgotten)
	}
	if _, err := p.Exec(ctx, "SELECT 1"); err != nil {
		t.Errorf("the login after the refused token was forgotten: %v", err)
	}

	// Authenticate retries once with a new token.
	if _, err := conn.Exec(ctx, "ALTER ROLE "+role+" PASSWORD 'fourth-token'"); err != nil {
		t.Fatal(err)
	}
	src.set("fourth-token", "third-token")
	if err := r.Authenticate(ctx, tgt); err != nil {
		t.Errorf("Authenticate with a stale token held: %v, want it to try a new one", err)
	}
	src.set("fifth-token", "")
	if err := r.Authenticate(ctx, tgt); !errors.Is(err, ErrPasswordRejected) {
		t.Errorf("Authenticate with a token the server does not take: %v, want ErrPasswordRejected", err)
	}
}
