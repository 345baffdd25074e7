package postgres

import (
	"context"
	"errors"
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
	return ExecGuarded(ctx, db, nil, stmts)
}

// IsGuard reports whether stmt is one of the statements that only guard
// a step (the transaction-local setting that keeps a CREATEROLE admin from
// granting itself the roles it creates): it changes nothing that lasts,
// and plans leave it out.
func IsGuard(stmt string) bool {
	return stmt == NoSelfGrantSQL
}

// afterGuard, when set (by tests), runs once between a guard and the
// statements, and is then cleared.
var afterGuard atomic.Pointer[func()]

// ExecGuarded runs statements in one transaction that first runs guard,
// which reads the catalog through the transaction and refuses by returning
// an error. Run under the locks of the role names guard decides about
// (Registry.LockRoleNames), the guard's decision and the statements are
// one, as far as the roles' existence and identity go. Without guard it is
// Exec.
func ExecGuarded(ctx context.Context, db Beginner, guard func(TxQuerier) error, stmts []string) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if ms, ok := longerTimeout(ctx); ok {
			if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = "+ms); err != nil {
				return xperrors.Wrap(describePgError(err), "cannot set the statement timeout")
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
			beforeStatement()
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
		switch p := db.(type) {
		case *pgxpool.Pool:
			c, err := p.Acquire(ctx)
			if err != nil {
				return xperrors.Wrap(err, "cannot get a connection")
			}
			defer c.Release()
			db = c
		case SharedDB:
			c, done, err := p.session(ctx)
			if err != nil {
				return xperrors.Wrap(err, "cannot get a connection")
			}
			defer done()
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
		beforeStatement()
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
