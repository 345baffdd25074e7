package postgres

import (
	"context"
	"sync"
	"time"

	"strings"
)

// The ownership marker ends the comment of every object the provider
// creates, so that an object of the same name that the provider did not
// create is never mistaken for one it did.
const markerPrefix = "[provider-postgresql uid="

// WithMarker returns comment with the ownership marker of uid appended.
func WithMarker(comment, uid string) string {
	m := markerPrefix + uid + "]"
	if comment == "" {
		return m
	}
	return comment + "\n" + m
}

// ParseMarker splits a stored comment into the user's comment and the UID
// of the marker it ends with ("" when there is none).
func ParseMarker(stored string) (comment, uid string) {
	i := strings.LastIndex(stored, markerPrefix)
	if i < 0 || !strings.HasSuffix(stored, "]") {
		return stored, ""
	}
	uid = stored[i+len(markerPrefix) : len(stored)-1]
	return strings.TrimSuffix(stored[:i], "\n"), uid
}

const databaseMarkerSQL = `SELECT coalesce(pg_catalog.shobj_description(oid, 'pg_database'), '') FROM pg_catalog.pg_database WHERE datname = $1`

// ObserveDatabaseMarker returns the UID the named database's ownership
// marker names ("" for none) and whether the database exists, read from
// the catalog every database of a server shares.
func ObserveDatabaseMarker(ctx context.Context, q RowsQuerier, name string) (string, bool, error) {
	rows, err := q.Query(ctx, databaseMarkerSQL, name)
	if err != nil {
		return "", false, err
	}
	defer rows.Close()
	if !rows.Next() {
		return "", false, rows.Err()
	}
	var comment string
	if err := rows.Scan(&comment); err != nil {
		return "", false, err
	}
	_, marker := ParseMarker(comment)
	return marker, true, rows.Err()
}

// markerTTL is how long the registry trusts a database's marker it read:
// the objects of a database are polled at one moment (every schema, grant
// and default privilege in it asks before entering it), and a marker
// changes only when the database is dropped, created or adopted.
const markerTTL = 5 * time.Second

// markers remembers, for a short while, the markers of databases that
// exist. An absent database is never remembered: one created a moment
// later, by anyone, must not be entered on the strength of an old answer.
type markers struct {
	mu   sync.Mutex
	seen map[string]markerSeen
}

type markerSeen struct {
	marker string
	at     time.Time
}

// DatabaseMarker is ObserveDatabaseMarker for database name on t's server,
// read through q at most once per markerTTL while the database exists.
func (r *Registry) DatabaseMarker(ctx context.Context, t Target, q RowsQuerier, name string) (string, bool, error) {
	key := t.InstanceUID + "\x00" + name
	r.markers.mu.Lock()
	m, ok := r.markers.seen[key]
	r.markers.mu.Unlock()
	if ok && time.Since(m.at) < markerTTL {
		return m.marker, true, nil
	}
	marker, exists, err := ObserveDatabaseMarker(ctx, q, name)
	if err != nil {
		return "", false, err
	}
	r.markers.mu.Lock()
	defer r.markers.mu.Unlock()
	if r.markers.seen == nil {
		r.markers.seen = map[string]markerSeen{}
	}
	for k, m := range r.markers.seen {
		if time.Since(m.at) >= markerTTL {
			delete(r.markers.seen, k)
		}
	}
	if exists {
		r.markers.seen[key] = markerSeen{marker: marker, at: time.Now()}
	} else {
		delete(r.markers.seen, key)
	}
	return marker, exists, nil
}
