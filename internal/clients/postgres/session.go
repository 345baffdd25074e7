package postgres

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5/pgconn"

	xperrors "github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// The provider's admin sessions run inside databases whose owner is a
// tenant, and a database owner decides what every new session in its
// database starts with (ALTER DATABASE … SET): the names it resolves
// (search_path), whether it may write (default_transaction_read_only), how
// long it may wait (statement_timeout, lock_timeout), even which role it
// acts as (role). PostgreSQL ranks a setting sent in the startup packet
// above database and role settings, so every admin session pins its
// environment there; what a database may still set beyond that is reset
// once the session is up (neutralizeSQL). The session user's own role
// settings (ALTER ROLE admin SET …) are the platform's and stay.
//
// sessionParams are those pins, by parameter. Every one exists in every
// supported server (15 and newer): an unknown name would make the server
// refuse the connection.
func sessionParams() map[string]string {
	return map[string]string{
		"application_name": ApplicationName,
		// pg_catalog first and alone: no relation, function, operator or
		// type resolves to a tenant's schema. pg_temp last, so that even
		// the session's own temporary schema is never searched before the
		// catalog (it is never searched for functions or operators).
		"search_path": "pg_catalog, pg_temp",
		// A cancelled context only closes the socket; these make the
		// server give up too. A database setting of 1 ms would otherwise
		// fail every statement.
		"statement_timeout":                   strconv.FormatInt(statementTimeout.Milliseconds(), 10),
		"lock_timeout":                        strconv.FormatInt(lockTimeout.Milliseconds(), 10),
		"idle_in_transaction_session_timeout": strconv.FormatInt(statementTimeout.Milliseconds(), 10),
		// Pooled sessions sit idle between polls; the pool closes them.
		"idle_session_timeout": "0",
		// default_transaction_read_only = on would fail every write.
		"default_transaction_read_only":  "off",
		"default_transaction_isolation":  "read committed",
		"default_transaction_deferrable": "off",
		// role = <tenant role> would make the session act as the tenant
		// (or, for a role the admin is not a member of, fail to start).
		"role": "none",
		// A library list the server cannot load fails every connection.
		"local_preload_libraries": "",
		// What CREATE EXTENSION creates goes to the database's default
		// tablespace, not to one the owner names.
		"default_tablespace": "",
		"temp_tablespaces":   "",
		// QuoteLiteral and pgx's own quoting assume standard strings and
		// UTF-8.
		"standard_conforming_strings": "on",
		"client_encoding":             "UTF8",
		"client_min_messages":         "warning",
		"check_function_bodies":       "on",
		"row_security":                "on",
		"DateStyle":                   "ISO, MDY",
		"IntervalStyle":               "postgres",
		"TimeZone":                    "UTC",
		"extra_float_digits":          "1",
		"bytea_output":                "hex",
		"quote_all_identifiers":       "off",
		"xmloption":                   "content",
	}
}

// neutralizeSQL resets, for the session, every parameter the database
// sets (pg_settings.source 'database') to the server's built-in default:
// the parameters not pinned above, and those of newer servers that the
// startup packet cannot name (transaction_timeout on 17,
// createrole_self_grant on 16). Where the server has it (15.8, 16.4, 17
// and newer), restrict_nonsystem_relation_kind then makes any view or
// foreign table outside the system catalogs an error in this session, as
// pg_dump does: a name that somehow resolved to a tenant's view would fail
// rather than run the tenant's code. One round trip, once per session.
const neutralizeSQL = `SELECT pg_catalog.count(pg_catalog.set_config(s.name, COALESCE(s.boot_val, ''), false))
  FROM pg_catalog.pg_settings s WHERE s.source = 'database';
SELECT pg_catalog.set_config(s.name, 'view, foreign-table', false)
  FROM pg_catalog.pg_settings s WHERE s.name = 'restrict_nonsystem_relation_kind'`

// pinSession sets c up as an admin session: the startup pins, and, for a
// session in a database other than the Instance's own (one a tenant may
// own), a shorter lock_timeout (tenantLockTimeout) and the reset of what
// that database sets.
func pinSession(c *pgconn.Config, tenantDatabase bool) {
	c.RuntimeParams = sessionParams()
	if tenantDatabase {
		c.RuntimeParams["lock_timeout"] = strconv.FormatInt(tenantLockTimeout.Milliseconds(), 10)
		c.AfterConnect = neutralize
	}
}

// neutralize runs neutralizeSQL on a new session.
func neutralize(ctx context.Context, c *pgconn.PgConn) error {
	_, err := c.Exec(ctx, neutralizeSQL).ReadAll()
	return xperrors.Wrap(describePgError(err), "cannot reset the settings the database gives new sessions")
}
