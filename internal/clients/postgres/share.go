package postgres

import (
	"context"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// shares hands out the sessions of one pool between namespaces: a
// statement (or a transaction, or rows being read) takes a share before
// it takes a session, and when a session comes free it goes to the
// waiting namespace that holds the fewest, first come first served among
// equals. A namespace alone may use every session; one whose statements
// wait on locks (a tenant holding its own catalog rows in the Instance's
// maintenance database, each repair of them held for up to lock_timeout)
// holds at most its turn once another namespace waits.
type shares struct {
	mu      sync.Mutex
	size    int
	used    int
	held    map[string]int
	waiting []*shareWaiter
}

type shareWaiter struct {
	key  string
	turn chan struct{}
}

func newShares(size int) *shares { return &shares{size: size, held: map[string]int{}} }

// take returns once key holds a share, or with ctx's error.
func (s *shares) take(ctx context.Context, key string) error {
	s.mu.Lock()
	if s.used < s.size && len(s.waiting) == 0 {
		s.used++
		s.held[key]++
		s.mu.Unlock()
		return nil
	}
	w := &shareWaiter{key: key, turn: make(chan struct{})}
	s.waiting = append(s.waiting, w)
	s.mu.Unlock()
	select {
	case <-w.turn:
		return nil
	case <-ctx.Done():
		if !withdraw(&s.mu, &s.waiting, w) {
			// Handed over as ctx ended: pass it on.
			s.give(key)
		}
		return errors.Wrap(ctx.Err(), "cannot wait for a session of the Instance's own database")
	}
}

// give gives key's share back, to the waiter of the namespace holding the
// fewest.
func (s *shares) give(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[key]--; s.held[key] <= 0 {
		delete(s.held, key)
	}
	if len(s.waiting) == 0 {
		s.used--
		return
	}
	next := 0
	for i, w := range s.waiting {
		if s.held[w.key] < s.held[s.waiting[next].key] {
			next = i
		}
	}
	w := s.waiting[next]
	s.waiting = slices.Delete(s.waiting, next, next+1)
	s.held[w.key]++
	close(w.turn)
}

// A SharedDB is a pool used on behalf of one namespace, through its
// shares (Registry.Shared): every statement, transaction and row set takes
// a share first and gives it back when it is done with its session.
type SharedDB struct {
	pool   *pgxpool.Pool
	shares *shares
	key    string
}

var _ DB = SharedDB{}

// Config is the pool's configuration: which server and user its sessions
// log in to, which the temporary memberships of ActingAs belong to. Shares
// of one pool, and the pools of one server, must share them: keyed by the
// share, the Instance's revoke of a membership left by a killed provider
// pulled it from under a database's create of another share.
func (d SharedDB) Config() *pgxpool.Config { return d.pool.Config() }

func (d SharedDB) take(ctx context.Context) (func(), error) {
	if err := d.shares.take(ctx, d.key); err != nil {
		return nil, err
	}
	return sync.OnceFunc(func() { d.shares.give(d.key) }), nil
}

// Exec implements DB.
func (d SharedDB) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	give, err := d.take(ctx)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	defer give()
	return d.pool.Exec(ctx, sql, args...)
}

// Query implements DB: the share goes back once the rows are read or
// closed.
func (d SharedDB) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	give, err := d.take(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := d.pool.Query(ctx, sql, args...)
	if err != nil {
		give()
		return nil, err
	}
	return sharedRows{Rows: rows, give: give}, nil
}

// QueryRow implements DB: the share goes back once the row is scanned.
func (d SharedDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	give, err := d.take(ctx)
	if err != nil {
		return errRow{err}
	}
	return sharedRow{row: d.pool.QueryRow(ctx, sql, args...), give: give}
}

// Begin implements DB: the share goes back with the transaction's end.
func (d SharedDB) Begin(ctx context.Context) (pgx.Tx, error) {
	give, err := d.take(ctx)
	if err != nil {
		return nil, err
	}
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		give()
		return nil, err
	}
	return sharedTx{Tx: tx, give: give}, nil
}

// session takes a share and one connection for a run of statements that
// must share a session, and returns the function that gives both back.
func (d SharedDB) session(ctx context.Context) (*pgxpool.Conn, func(), error) {
	give, err := d.take(ctx)
	if err != nil {
		return nil, nil, err
	}
	c, err := d.pool.Acquire(ctx)
	if err != nil {
		give()
		return nil, nil, err
	}
	return c, func() { c.Release(); give() }, nil
}

type sharedRows struct {
	pgx.Rows
	give func()
}

func (r sharedRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.give()
	return false
}

func (r sharedRows) Close() {
	r.Rows.Close()
	r.give()
}

type sharedRow struct {
	row  pgx.Row
	give func()
}

func (r sharedRow) Scan(dest ...any) error {
	defer r.give()
	return r.row.Scan(dest...)
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

type sharedTx struct {
	pgx.Tx
	give func()
}

func (t sharedTx) Commit(ctx context.Context) error {
	defer t.give()
	return t.Tx.Commit(ctx)
}

func (t sharedTx) Rollback(ctx context.Context) error {
	defer t.give()
	return t.Tx.Rollback(ctx)
}

// Shared returns t's pool used on behalf of namespace: its sessions are
// shared out between namespaces (shares), as many as the pool holds.
func (r *Registry) Shared(ctx context.Context, t Target, namespace string) (SharedDB, error) {
	p, err := r.Pool(ctx, t)
	if err != nil {
		return SharedDB{}, err
	}
	key := keyOf(t)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.shared == nil {
		r.shared = map[poolKey]*shares{}
	}
	s, ok := r.shared[key]
	if !ok {
		s = newShares(int(r.opts.maxConns(t)))
		r.shared[key] = s
	}
	return SharedDB{pool: p, shares: s, key: namespace}, nil
}
