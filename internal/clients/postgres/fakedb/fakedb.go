// Package fakedb is a scripted stand-in for a PostgreSQL database
// (postgres.DB), for table tests of the controllers' decisions without a
// server: each query is answered with the rows its script gives, and every
// statement is recorded, with whether its transaction committed. It
// proves branches, not SQL: the real-server tests prove the SQL.
//
// A query no answer matches fails with an error naming it, and a row
// whose values do not fit the query's Scan fails naming the column, so a
// changed catalog query breaks its table tests loudly instead of feeding
// them zero values.
package fakedb

import (
	"context"
	"reflect"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
)

// An Answer is what the database says to a query or statement whose text
// contains Match.
type Answer struct {
	// Match is a part of the SQL text that identifies the query, such as
	// "FROM pg_catalog.pg_namespace".
	Match string
	// Rows are the query's rows, each its columns' values in order (Go
	// values of the types the query's Scan reads into; nil for NULL).
	// QueryRow reads the first; none is pgx.ErrNoRows.
	Rows [][]any
	// Err fails the query or statement instead, such as a
	// *pgconn.PgError with the SQLSTATE a test needs.
	Err error
}

// A DB is a scripted database. The zero value answers no query and
// accepts every statement.
type DB struct {
	mu      sync.Mutex
	answers []Answer
	// sent is every statement run, in order, committed or not.
	sent []Statement
	// queries is every query's SQL, in order.
	queries []string
	txs     int
}

var _ postgres.DB = (*DB)(nil)

// A Statement is one statement the code ran.
type Statement struct {
	SQL string
	// Tx is the statement's transaction, counting from 1; 0 outside one.
	Tx int
	// Committed says whether its transaction committed (always true
	// outside one, for a statement that did not fail).
	Committed bool
}

// New returns a database that answers with answers, the first that
// matches winning.
func New(answers ...Answer) *DB {
	return &DB{answers: answers}
}

// Answer adds answers, which win over those given before: a test can
// change what the database says between two calls.
func (d *DB) Answer(answers ...Answer) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.answers = append(append([]Answer{}, answers...), d.answers...)
}

// Committed returns the statements that took effect, in order: those of
// committed transactions and those run outside one that did not fail.
// Statements the provider runs for itself (SET LOCAL, statement timeouts) are
// left out; All has them.
func (d *DB) Committed() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, s := range d.sent {
		if s.Committed && !plumbing(s.SQL) {
			out = append(out, s.SQL)
		}
	}
	return out
}

// All returns every statement run, in order.
func (d *DB) All() []Statement {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Statement(nil), d.sent...)
}

// Queries returns the SQL of every query, in order.
func (d *DB) Queries() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.queries...)
}

// plumbing is a statement that frames the work rather than doing it: a
// statement timeout for a long deadline.
func plumbing(sql string) bool {
	for _, p := range []string{"SET LOCAL ", "SET statement_timeout ", "RESET statement_timeout"} {
		if strings.HasPrefix(sql, p) {
			return true
		}
	}
	return false
}

func (d *DB) answer(sql string) (Answer, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, a := range d.answers {
		if strings.Contains(sql, a.Match) {
			return a, true
		}
	}
	return Answer{}, false
}

func (d *DB) query(sql string) (*rows, error) {
	d.mu.Lock()
	d.queries = append(d.queries, sql)
	d.mu.Unlock()
	a, ok := d.answer(sql)
	if !ok {
		return nil, errors.Errorf("fakedb: no answer for the query %q", firstLine(sql))
	}
	if a.Err != nil {
		return nil, a.Err
	}
	return &rows{sql: sql, rows: a.Rows, i: -1}, nil
}

func (d *DB) exec(sql string, tx int) error {
	a, ok := d.answer(sql)
	var err error
	if ok {
		err = a.Err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sent = append(d.sent, Statement{SQL: sql, Tx: tx, Committed: tx == 0 && err == nil})
	return err
}

// QueryRow answers a one-row query.
func (d *DB) QueryRow(_ context.Context, sql string, _ ...any) pgx.Row {
	r, err := d.query(sql)
	return &row{rows: r, err: err}
}

// Query answers a query.
func (d *DB) Query(_ context.Context, sql string, _ ...any) (pgx.Rows, error) {
	r, err := d.query(sql)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Exec records a statement outside a transaction; a matching Answer's Err
// fails it.
func (d *DB) Exec(_ context.Context, sql string, _ ...any) (pgconn.CommandTag, error) {
	return pgconn.CommandTag{}, d.exec(sql, 0)
}

// Begin starts a transaction whose statements count once it commits.
func (d *DB) Begin(context.Context) (pgx.Tx, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.txs++
	return &tx{db: d, n: d.txs}, nil
}

// tx is a transaction of a DB.
type tx struct {
	db     *DB
	n      int
	closed bool
}

func (t *tx) Begin(context.Context) (pgx.Tx, error) {
	return nil, errors.New("fakedb: nested transactions are not scripted")
}

func (t *tx) Commit(context.Context) error {
	if t.closed {
		return pgx.ErrTxClosed
	}
	t.closed = true
	t.db.mu.Lock()
	defer t.db.mu.Unlock()
	for i := range t.db.sent {
		if t.db.sent[i].Tx == t.n {
			t.db.sent[i].Committed = true
		}
	}
	return nil
}

func (t *tx) Rollback(context.Context) error {
	if t.closed {
		return pgx.ErrTxClosed
	}
	t.closed = true
	return nil
}

func (t *tx) Exec(_ context.Context, sql string, _ ...any) (pgconn.CommandTag, error) {
	return pgconn.CommandTag{}, t.db.exec(sql, t.n)
}

func (t *tx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return t.db.Query(ctx, sql, args...)
}

func (t *tx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return t.db.QueryRow(ctx, sql, args...)
}

func (t *tx) CopyFrom(context.Context, pgx.Identifier, []string, pgx.CopyFromSource) (int64, error) {
	return 0, errors.New("fakedb: COPY is not scripted")
}

func (t *tx) SendBatch(context.Context, *pgx.Batch) pgx.BatchResults { return nil }
func (t *tx) LargeObjects() pgx.LargeObjects                         { return pgx.LargeObjects{} }
func (t *tx) Prepare(context.Context, string, string) (*pgconn.StatementDescription, error) {
	return nil, errors.New("fakedb: prepared statements are not scripted")
}
func (t *tx) Conn() *pgx.Conn { return nil }

// rows are a query's answer.
type rows struct {
	sql  string
	rows [][]any
	i    int
	err  error
}

func (r *rows) Close()                                       {}
func (r *rows) Err() error                                   { return r.err }
func (r *rows) CommandTag() pgconn.CommandTag                { return pgconn.CommandTag{} }
func (r *rows) FieldDescriptions() []pgconn.FieldDescription { return nil }
func (r *rows) RawValues() [][]byte                          { return nil }
func (r *rows) Conn() *pgx.Conn                              { return nil }
func (r *rows) TypeMap() *pgtype.Map                         { return pgtype.NewMap() }

func (r *rows) Next() bool {
	if r.err != nil || r.i+1 >= len(r.rows) {
		return false
	}
	r.i++
	return true
}

func (r *rows) Values() ([]any, error) { return r.rows[r.i], nil }

func (r *rows) Scan(dest ...any) error {
	if err := assign(r.sql, r.rows[r.i], dest); err != nil {
		r.err = err
		return err
	}
	return nil
}

// row is a one-row query's answer.
type row struct {
	rows *rows
	err  error
}

func (r *row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	if !r.rows.Next() {
		return pgx.ErrNoRows
	}
	return r.rows.Scan(dest...)
}

// assign copies a row's values into Scan's destinations.
func assign(sql string, values, dest []any) error {
	if len(values) != len(dest) {
		return errors.Errorf("fakedb: the answer to %q has %d columns, the query scans %d", firstLine(sql), len(values), len(dest))
	}
	for i, v := range values {
		d := reflect.ValueOf(dest[i])
		if d.Kind() != reflect.Pointer || d.IsNil() {
			return errors.Errorf("fakedb: column %d of %q: Scan needs a pointer, got %T", i+1, firstLine(sql), dest[i])
		}
		to := d.Elem()
		if v == nil {
			to.Set(reflect.Zero(to.Type()))
			continue
		}
		from := reflect.ValueOf(v)
		switch {
		case from.Type().AssignableTo(to.Type()):
			to.Set(from)
		case to.Kind() == reflect.Pointer && from.Type().AssignableTo(to.Type().Elem()):
			p := reflect.New(to.Type().Elem())
			p.Elem().Set(from)
			to.Set(p)
		case from.Type().ConvertibleTo(to.Type()) && (from.Kind() == to.Kind() || (from.CanInt() && to.CanInt())):
			// A named type of the same kind, or an integer of another
			// width, as pgx scans int4 into int.
			to.Set(from.Convert(to.Type()))
		default:
			return errors.Errorf("fakedb: column %d of %q: the answer holds a %T, the query scans into a %s", i+1, firstLine(sql), v, to.Type())
		}
	}
	return nil
}

// firstLine shortens a query for a message.
func firstLine(sql string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(sql), "\n")
	if len(l) > 120 {
		l = l[:120] + "…"
	}
	return l
}

// ActsAsAnyRole answers the question postgres.ActingAs asks before acting
// as a role: the admin may already (a superuser), on a server of version
// (server_version_num), so nothing is granted.
func ActsAsAnyRole(version int) Answer {
	return Answer{Match: "SELECT r.rolsuper OR ", Rows: [][]any{{true, version, false}}}
}

// ActsAsNoRole answers it the other way: the admin (a managed-service one)
// must grant itself each membership for the statements that need it.
func ActsAsNoRole(version int) Answer {
	return Answer{Match: "SELECT r.rolsuper OR ", Rows: [][]any{{false, version, false}}}
}

// PgError is a server error with SQLSTATE code, as pgx returns it.
func PgError(code, message string) error {
	return &pgconn.PgError{Code: code, Message: message, Severity: "ERROR"}
}
