package postgres

import (
	"context"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// The ownership marker ends the comment of every object the provider
// creates, so that an object of the same name that the provider did not
// create is never mistaken for one it did.
const markerPrefix = "[provider-postgresql uid="

// sealField separates a marker's seal from its UID.
const sealField = " seal="

// A Mark is what an ownership marker holds: the UID of the resource that
// manages the object, and the seal that lets a resource restored from a
// backup (the same kind, namespace and name, a new UID) recognise the
// object as its predecessor's (package seal). Markers written before
// seals existed have none.
type Mark struct {
	UID, Seal string
}

// WithMarker returns comment with the ownership marker m appended.
func WithMarker(comment string, m Mark) string {
	s := markerPrefix + m.UID
	if m.Seal != "" {
		s += sealField + m.Seal
	}
	s += "]"
	if comment == "" {
		return s
	}
	return comment + "\n" + s
}

// ParseMarker splits a stored comment into the user's comment and the
// marker it ends with (zero when there is none).
func ParseMarker(stored string) (comment string, m Mark) {
	i := strings.LastIndex(stored, markerPrefix)
	if i < 0 || !strings.HasSuffix(stored, "]") {
		return stored, Mark{}
	}
	m.UID, m.Seal, _ = strings.Cut(stored[i+len(markerPrefix):len(stored)-1], sealField)
	return strings.TrimSuffix(stored[:i], "\n"), m
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
	return marker.UID, true, rows.Err()
}

// markerTTL is how long the registry trusts a database's marker it read:
// the objects of a database are polled at one moment (every schema, grant
// and default privilege in it asks before entering it), and a marker
// changes only when the database is dropped, created or adopted.
const markerTTL = 5 * time.Second

// markers remembers, for a short while, the markers of databases that
// exist. An absent database is never remembered: one created a moment
// later, by anyone, must not be entered on the strength of an old answer.
//
// The objects of a database ask at the same moment, each from its own
// controller: without reading sets they each missed the memory and read
// the marker themselves (three reads where one does, BenchmarkScale).
// Concurrent asks for one database share one read.
type markers struct {
	mu      sync.Mutex
	seen    map[string]markerSeen
	reading singleflight.Group
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
	type read struct {
		marker string
		exists bool
	}
	ch := r.markers.reading.DoChan(key, func() (any, error) {
		marker, exists, err := ObserveDatabaseMarker(ctx, q, name)
		return read{marker, exists}, err
	})
	var res singleflight.Result
	select {
	case res = <-ch:
	case <-ctx.Done():
		return "", false, ctx.Err()
	}
	if res.Err != nil {
		return "", false, res.Err
	}
	got, _ := res.Val.(read)
	marker, exists := got.marker, got.exists
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
