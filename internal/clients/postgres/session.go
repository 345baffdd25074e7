package postgres

import (
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// The provider's admin sessions run inside databases whose owner is a
// tenant, and a database owner decides what every new session in its
// database starts with (ALTER DATABASE … SET): the names it resolves
// (search_path), whether it may write (default_transaction_read_only), how
// long it may wait (statement_timeout, lock_timeout), even which role it
// acts as (role). PostgreSQL ranks a setting sent in the startup packet
// above database and role settings, so every admin session pins its
// environment there, at no cost: no statement, no round trip. Pinned is
// every setting a database owner may set that changes how the provider's
// statements are parsed, resolved, executed or committed, or whether its
// session survives; what is left (planner and memory knobs, and on
// PostgreSQL 17+ transaction_timeout, which the startup packet of an older
// server would refuse) can only slow or fail the provider's work in the
// owner's own database, where the admission bound (Registry.Enter) keeps
// it from others. The session user's own role settings (ALTER ROLE admin
// SET …) are the platform's and stay unless pinned.
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
		// exit_on_error = on would end the session at its first error.
		"exit_on_error":               "off",
		"transform_null_equals":       "off",
		"array_nulls":                 "on",
		"backslash_quote":             "safe_encoding",
		"synchronous_commit":          "on",
		"default_table_access_method": "heap",
	}
}

// homeLockTimeout is lock_timeout in an Instance's own database, where
// the provider works for every namespace through a couple of sessions: a
// tenant holding the rows of objects it owns there (its database's, its
// role's) makes each repair of them hold a session, and a worker, for this
// long before it fails and is retried with back-off. The provider's own
// statements there lock what they touch for milliseconds.
const homeLockTimeout = 250 * time.Millisecond

// pinSession sets c up as an admin session: the startup pins, and in the
// Instance's own database (home) the shorter lock_timeout.
func pinSession(c *pgconn.Config, home bool) {
	c.RuntimeParams = sessionParams()
	if home {
		c.RuntimeParams["lock_timeout"] = strconv.FormatInt(homeLockTimeout.Milliseconds(), 10)
	}
}

// PinSession sets c up as an admin session outside the provider's pools
// (kubectl pg inventory): the same startup pins, so that a database
// owner's settings steer it no more than the provider's own sessions.
func PinSession(c *pgconn.Config) { pinSession(c, false) }
