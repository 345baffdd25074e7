package postgres

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	xperrors "github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// A Beginner starts transactions: *pgxpool.Pool, *pgx.Conn.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// A TxQuerier reads inside a transaction: a guard of ExecGuarded.
type TxQuerier interface {
	Querier
	RowsQuerier
}

// Exec runs statements in one transaction. Statements may hold password
// verifiers, so an error names the failing statement's position, never its
// text.
func Exec(ctx context.Context, db Beginner, stmts []string) error {
	return ExecGuarded(ctx, db, nil, nil, stmts)
}

// roleLockClass is the first key of the advisory locks that serialize
// what the provider does with a role name (RoleLockStatement).
const roleLockClass = 0x70677270

// RoleLockStatement takes, until the transaction ends, the lock on each
// role name that the provider's CREATE ROLE of that name also takes. A
// decision about a role (whose it is, what it may do) made under it holds
// until the transaction commits: no role of that name can be created by
// another of the provider's sessions between the check and the GRANT.
// Names are locked in order, so two transactions never wait on each
// other crosswise.
func RoleLockStatement(names []string) string {
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	calls := make([]string, len(sorted))
	for i, n := range sorted {
		calls[i] = "pg_catalog.pg_advisory_xact_lock(" + strconv.Itoa(roleLockClass) + ", pg_catalog.hashtext(" + QuoteLiteral(n) + "))"
	}
	return "SELECT " + strings.Join(calls, ", ")
}

// IsGuard reports whether stmt is one of the statements that only guard
// a step (the role-name lock, the transaction-local setting that keeps a
// CREATEROLE admin from granting itself the roles it creates): they
// change nothing that lasts, and plans leave them out.
func IsGuard(stmt string) bool {
	return stmt == NoSelfGrantSQL || strings.HasPrefix(stmt, "SELECT pg_catalog.pg_advisory_xact_lock("+strconv.Itoa(roleLockClass)+",")
}

// afterGuard, when set (by tests), runs once between a guard and the
// statements, and is then cleared.
var afterGuard atomic.Pointer[func()]

// ExecGuarded runs statements in one transaction that first locks the
// role names roles (RoleLockStatement) and then runs guard, which reads
// the catalog through the transaction and refuses by returning an error:
// the guard's decision and the statements are one, as far as the roles'
// existence and identity go. Without roles and guard it is Exec.
func ExecGuarded(ctx context.Context, db Beginner, roles []string, guard func(TxQuerier) error, stmts []string) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if ms, ok := longerTimeout(ctx); ok {
			if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = "+ms); err != nil {
				return xperrors.Wrap(describePgError(err), "cannot set the statement timeout")
			}
		}
		if len(roles) > 0 {
			if _, err := tx.Exec(ctx, RoleLockStatement(roles)); err != nil {
				return xperrors.Wrap(describePgError(err), "cannot lock the role names")
			}
		}
		if guard != nil {
			if err := guard(tx); err != nil {
				return err
			}
		}
		if hook := afterGuard.Swap(nil); hook != nil {
			(*hook)()
		}
		for i, s := range stmts {
			if _, err := tx.Exec(ctx, s); err != nil {
				return xperrors.Errorf("statement %d of %d (%s): %w", i+1, len(stmts), verb(s), describePgError(err))
			}
		}
		return nil
	})
}

// verb is the first words of a statement, enough to say what failed
// without repeating values.
func verb(stmt string) string {
	f := strings.Fields(stmt)
	if len(f) > 2 {
		f = f[:2]
	}
	return strings.Join(f, " ")
}

// describePgError keeps a server error's message, detail and hint, which
// say what blocks an operation (such as the objects a role still owns).
func describePgError(err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return ClassifyConnectError(err)
	}
	msg := pe.Message
	if pe.Detail != "" {
		msg += ": " + pe.Detail
	}
	if pe.Hint != "" {
		msg += " (hint: " + pe.Hint + ")"
	}
	return &Error{Code: pe.Code, Message: msg}
}

// An Error is a server error with its SQLSTATE.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message + " (SQLSTATE " + e.Code + ")" }

// SQLSTATE classes and codes the controllers act on.
const (
	CodeDependentObjectsStillExist = "2BP01"
	CodeObjectInUse                = "55006"
	CodeDuplicateObject            = "42710"
	CodeInsufficientPrivilege      = "42501"
	CodeInvalidPassword            = "28P01"
	CodeInvalidCatalogName         = "3D000"
)

// IsCode reports whether err is a server error with the given SQLSTATE.
func IsCode(err error, code string) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.Code == code
	}
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code
}

// ExecEach runs statements one by one, outside a transaction, for those
// (CREATE/DROP DATABASE) that cannot run in one.
func ExecEach(ctx context.Context, db Execer, stmts []string) error {
	if ms, ok := longerTimeout(ctx); ok {
		// A session setting: one connection for the SET, the statements
		// and the RESET.
		if p, isPool := db.(*pgxpool.Pool); isPool {
			c, err := p.Acquire(ctx)
			if err != nil {
				return xperrors.Wrap(err, "cannot get a connection")
			}
			defer c.Release()
			db = c
		}
		if _, err := db.Exec(ctx, "SET statement_timeout = "+ms); err != nil {
			return xperrors.Wrap(describePgError(err), "cannot set the statement timeout")
		}
		// Back to the session's own limit before the connection is reused.
		defer func() {
			rctx, cancel := cleanupContext(ctx)
			defer cancel()
			_, _ = db.Exec(rctx, "RESET statement_timeout") // A failed reset leaves a longer limit on one pooled session; the next RESET wins.
		}()
	}
	for i, s := range stmts {
		if _, err := db.Exec(ctx, s); err != nil {
			return xperrors.Errorf("statement %d of %d (%s): %w", i+1, len(stmts), verb(s), describePgError(err))
		}
	}
	return nil
}

// cleanupTimeout bounds what must run after an operation even when it was
// cancelled (giving back a membership, resetting a session setting).
const cleanupTimeout = 10 * time.Second

// cleanupContext outlives ctx's cancellation but not by more than
// cleanupTimeout: a shutdown must not wait forever on a connection that
// never comes.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}
