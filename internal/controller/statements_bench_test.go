package controller_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
)

// BENCH_STATEMENTS=1 starts the package's PostgreSQL with
// pg_stat_statements and makes BenchmarkScale log what the server's
// statements cost over the wave and over the deletion, grouped by shape
// across databases: the benchmark's PostgreSQL CPU per object, set
// against the time its statements took, tells what grows with the
// objects (statements, or what no statement counts: logins, CREATE
// DATABASE's copy, background work).
// Off by default, since the extension costs a little on every statement.
const statementsEnv = "BENCH_STATEMENTS"

// statementStatsConfig is the server configuration BENCH_STATEMENTS asks
// for. The entries are many: pg_stat_statements keeps one per statement
// and database, and PostgreSQL 15 does not normalize utility statements,
// so every CREATE DATABASE is one; with too few, the least used are
// dropped and the sums come out short.
func statementStatsConfig() []string {
	if os.Getenv(statementsEnv) == "" {
		return nil
	}
	return []string{
		"shared_preload_libraries = 'pg_stat_statements'",
		"pg_stat_statements.max = 50000",
		"pg_stat_statements.track_utility = on",
	}
}

// resetStatements starts the count, when BENCH_STATEMENTS is set; the
// function it returns logs what was counted since, over names it (the
// wave, the deletion).
func resetStatements(ctx context.Context, tb testing.TB, over string) func(objects float64) {
	tb.Helper()
	if os.Getenv(statementsEnv) == "" {
		return func(float64) {}
	}
	env.SQL(ctx, tb, "postgres", "CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset()")
	return func(objects float64) { logStatements(ctx, tb, over, objects) }
}

// statementShapesSQL sums pg_stat_statements by statement shape: names in
// double quotes and string constants replaced, so that the CREATE
// DATABASE of every database, and one query in every database, each count
// as one.
const statementShapesSQL = `WITH s AS (
  SELECT calls, total_exec_time + total_plan_time AS ms,
         left(regexp_replace(regexp_replace(regexp_replace(query, '"[^"]*"', '?', 'g'), '''[^'']*''', '?', 'g'), '\s+', ' ', 'g'), 90) AS shape
    FROM pg_stat_statements)
SELECT shape, sum(calls)::float8, sum(ms)::float8, (SELECT sum(ms) FROM s)::float8, (SELECT sum(calls) FROM s)::float8, (SELECT count(*) FROM pg_stat_statements)::float8
  FROM s GROUP BY shape ORDER BY 3 DESC LIMIT 12`

func logStatements(ctx context.Context, tb testing.TB, over string, objects float64) {
	tb.Helper()
	conn, err := env.Postgres.Connect(ctx, "postgres")
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx) //nolint:errcheck // Benchmark.
	rows, err := conn.Query(ctx, statementShapesSQL)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	var total, calls, entries float64
	for rows.Next() {
		var shape string
		var n, ms float64
		if err := rows.Scan(&shape, &n, &ms, &total, &calls, &entries); err != nil {
			tb.Fatal(err)
		}
		fmt.Fprintf(&b, "\n  %8.0f calls %8.3f ms/call %7.3f ms/object  %s", n, ms/n, ms/objects, shape)
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("statements over %s: %.0f (%.1f per object) took %.2f ms per object of the server's time (%.0f entries); the costliest shapes:%s",
		over, calls, calls/objects, total/objects, entries, b.String())
}
