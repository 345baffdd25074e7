package postgres

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// A Querier runs a query that returns one row. *pgxpool.Pool, *pgx.Conn and
// pgx.Tx are Queriers.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// RowsQuerier runs a query that returns several rows.
type RowsQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// A DB is what the controllers use of a database's connection pool: read
// rows, run a statement, begin a transaction. *pgxpool.Pool is one; a
// scripted stand-in (internal/clients/postgres/fakedb) is another, so the
// controllers' decisions can be tested without a server.
type DB interface {
	Querier
	RowsQuerier
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Begin(ctx context.Context) (pgx.Tx, error)
}

var _ DB = (*pgxpool.Pool)(nil)

// Extension is an extension the server can install.
type Extension struct {
	Name           string
	DefaultVersion string
}

// ServerInfo is what an Instance observes of its server.
type ServerInfo struct {
	// Version is the server version, such as "15.18".
	Version string
	// VersionNum is server_version_num, such as 150018.
	VersionNum int
	// SystemIdentifier tells servers apart: a different one at the same
	// endpoint is a different server.
	SystemIdentifier string
	// Privileges of the role the provider logs in as.
	Superuser  bool
	CreateDB   bool
	CreateRole bool
	// Extensions the server can install, by name.
	Extensions []Extension
	// MaxConnections is max_connections.
	MaxConnections int32
	// ReservedForAdmin is how many slots the login role may take once
	// every other login's are in use: superuser_reserved_connections for a
	// superuser, reserved_connections (PostgreSQL 16+) for a member of
	// pg_use_reserved_connections, else 0.
	ReservedForAdmin int32
	// ReservedForOthers is reserved_connections where the login role may
	// not use it (PostgreSQL 16+; 0 before): slots a platform kept for
	// someone, not for the provider.
	ReservedForOthers int32
	// PublicConnect lists the shared databases (template1, the session's
	// own database) whose CONNECT PUBLIC holds: every login may connect to
	// them.
	PublicConnect []string
	// LeftoverMemberships are the roles a non-superuser admin holds
	// through a membership it granted itself: the temporary memberships
	// of a provider killed in the middle of a step (RevokeLeftovers).
	LeftoverMemberships []string
}

// Sufficient reports whether the admin role can do what the provider needs:
// create databases and roles (superuser implies both).
func (i ServerInfo) Sufficient() bool {
	return i.Superuser || (i.CreateDB && i.CreateRole)
}

// observeServerSQL reads everything an Instance reports in one round trip.
// reserved_connections and pg_use_reserved_connections exist from
// PostgreSQL 16: read so that an older server answers 0 and false.
const observeServerSQL = `SELECT pg_catalog.current_setting('server_version'),
       pg_catalog.current_setting('server_version_num')::pg_catalog.int4,
       (SELECT system_identifier::pg_catalog.text FROM pg_catalog.pg_control_system()),
       r.rolsuper, r.rolcreatedb, r.rolcreaterole,
       coalesce(e.names, '{}'), coalesce(e.versions, '{}'),
       pg_catalog.current_setting('max_connections')::pg_catalog.int4,
       pg_catalog.current_setting('superuser_reserved_connections')::pg_catalog.int4,
       coalesce(pg_catalog.current_setting('reserved_connections', true), '0')::pg_catalog.int4,
       EXISTS (SELECT FROM pg_catalog.pg_roles u WHERE u.rolname = 'pg_use_reserved_connections'
                  AND pg_catalog.pg_has_role(r.oid, u.oid, 'USAGE')),
       coalesce((SELECT pg_catalog.array_agg(d.datname::pg_catalog.text ORDER BY d.datname) FROM pg_catalog.pg_database d
                  WHERE d.datname = ANY (ARRAY['template1', pg_catalog.current_database()])
                    AND pg_catalog.has_database_privilege('public', d.oid, 'CONNECT')), '{}'),
       CASE WHEN r.rolsuper THEN '{}'
            ELSE coalesce((SELECT pg_catalog.array_agg(g.rolname::pg_catalog.text ORDER BY g.rolname) FROM ` + selfGrantedSQL + `), '{}') END
  FROM pg_catalog.pg_roles r,
       LATERAL (SELECT pg_catalog.array_agg(name::pg_catalog.text ORDER BY name) AS names,
                       pg_catalog.array_agg(coalesce(default_version, '') ORDER BY name) AS versions
                  FROM pg_catalog.pg_available_extensions) e
 WHERE r.rolname = current_user`

// ObserveServer reads the server's version, identity, the login role's
// privileges and the extensions it can install.
func ObserveServer(ctx context.Context, q Querier) (*ServerInfo, error) {
	i := &ServerInfo{}
	var names, versions []string
	var superuserReserved, reserved int32
	var useReserved bool
	if err := q.QueryRow(ctx, observeServerSQL).Scan(&i.Version, &i.VersionNum, &i.SystemIdentifier,
		&i.Superuser, &i.CreateDB, &i.CreateRole, &names, &versions,
		&i.MaxConnections, &superuserReserved, &reserved, &useReserved, &i.PublicConnect, &i.LeftoverMemberships); err != nil {
		return nil, errors.Wrap(ClassifyConnectError(err), "cannot read server information")
	}
	// A superuser may take the superuser-reserved slots and, being a
	// member of every role, the reserved ones too.
	switch {
	case i.Superuser:
		i.ReservedForAdmin = superuserReserved + reserved
	case useReserved:
		i.ReservedForAdmin = reserved
	default:
		i.ReservedForOthers = reserved
	}
	// server_version may carry a distribution suffix: "15.18 (Debian 15.18-0+deb12u1)".
	i.Version, _, _ = strings.Cut(i.Version, " ")
	i.Extensions = make([]Extension, len(names))
	for n := range names {
		i.Extensions[n] = Extension{Name: names[n], DefaultVersion: versions[n]}
	}
	return i, nil
}
