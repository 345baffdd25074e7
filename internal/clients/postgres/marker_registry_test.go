package postgres_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres/fakedb"
)

// slowQuerier counts its queries and holds each until release is closed,
// so that asks made at the same moment overlap.
type slowQuerier struct {
	db      *fakedb.DB
	queries atomic.Int32
	release chan struct{}
}

func (q *slowQuerier) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	q.queries.Add(1)
	<-q.release
	return q.db.Query(ctx, sql, args...)
}

// TestDatabaseMarkerOneReadForConcurrentAsks: the objects of a database
// ask for its marker at the same moment, each from its own controller;
// they share one read, and asks within the marker's short memory read
// nothing. An absent database is read again each time.
func TestDatabaseMarkerOneReadForConcurrentAsks(t *testing.T) {
	cases := map[string]struct {
		rows      [][]any
		wantReads int32
		// then: reads after one more ask, a moment later.
		then       int32
		wantExists bool
		wantMarker string
	}{
		"AnExistingDatabase": {rows: [][]any{{"orders [provider-postgresql uid=u1]"}}, wantReads: 1, then: 1, wantExists: true, wantMarker: "u1"},
		"AnAbsentDatabase":   {rows: nil, wantReads: 1, then: 2},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := postgres.NewRegistry(postgres.RegistryOptions{})
			q := &slowQuerier{db: fakedb.New(fakedb.Answer{Match: "FROM pg_catalog.pg_database", Rows: tc.rows}), release: make(chan struct{})}
			target := postgres.Target{InstanceUID: "in1"}
			ctx := context.Background()
			const asks = 3
			type got struct {
				marker string
				exists bool
			}
			results := make([]got, asks)
			var wg sync.WaitGroup
			for i := range asks {
				wg.Go(func() {
					m, ok, err := r.DatabaseMarker(ctx, target, q, "orders")
					if err != nil {
						t.Error(err)
					}
					results[i] = got{m, ok}
				})
			}
			// Every ask is waiting on the one read, or about to.
			time.Sleep(100 * time.Millisecond)
			close(q.release)
			wg.Wait()
			if n := q.queries.Load(); n != tc.wantReads {
				t.Errorf("%d concurrent asks read the marker %d times, want %d", asks, n, tc.wantReads)
			}
			for _, g := range results {
				if diff := cmp.Diff(got{tc.wantMarker, tc.wantExists}, g, cmp.AllowUnexported(got{})); diff != "" {
					t.Errorf("marker (-want +got):\n%s", diff)
				}
			}
			if _, _, err := r.DatabaseMarker(ctx, target, q, "orders"); err != nil {
				t.Fatal(err)
			}
			if n := q.queries.Load(); n != tc.then {
				t.Errorf("after one more ask: %d reads, want %d", n, tc.then)
			}
		})
	}
}
