package inventory_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ayatori/provider-postgresql/internal/fixture/pgserver"
	"github.com/ayatori/provider-postgresql/internal/inventory"
)

var server *pgserver.Server

// suite is the package's PostgreSQL server, started by the first test
// that declares it needs it.
var suite = pgserver.Suite(func(s *pgserver.Server) { server = s })

func TestMain(m *testing.M) { os.Exit(suite.Run(m)) }

// counter counts the sessions an Opener opens and the queries they send.
type counter struct {
	sessions, queries atomic.Int64
}

func (c *counter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.queries.Add(1)
	return ctx
}

func (*counter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// opener opens sessions to the test server as its superuser, counted.
func (c *counter) opener(_ context.Context, database string) (*pgx.ConnConfig, error) {
	cfg, err := server.ConnConfig(database)
	if err != nil {
		return nil, err
	}
	cfg.Tracer = c
	c.sessions.Add(1)
	return cfg, nil
}

// sql runs statements, each on its own (CREATE DATABASE cannot run in a
// transaction), in database.
func sql(ctx context.Context, tb testing.TB, database string, stmts ...string) {
	tb.Helper()
	c, err := server.Connect(ctx, database)
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close(context.WithoutCancel(ctx)) //nolint:errcheck // Test set-up.
	for _, s := range stmts {
		if _, err := c.Exec(ctx, s); err != nil {
			tb.Fatalf("%s: %v", s, err)
		}
	}
}

// build makes a server of roles login roles in 10 groups and databases
// databases, each with schemas schemas of tables tables, granted to a
// group, and default privileges, all named with prefix.
func build(ctx context.Context, tb testing.TB, prefix string, roles, databases, schemas, tables int) {
	tb.Helper()
	sql(ctx, tb, "postgres", fmt.Sprintf(`DO $$
BEGIN
  FOR g IN 0..9 LOOP EXECUTE format('CREATE ROLE %%I NOLOGIN', '%[1]s_group_' || g); END LOOP;
  FOR i IN 1..%[2]d LOOP
    EXECUTE format('CREATE ROLE %%I LOGIN CONNECTION LIMIT 5 IN ROLE %%I', '%[1]s_login_' || i, '%[1]s_group_' || i %% 10);
    EXECUTE format('ALTER ROLE %%I SET statement_timeout = %%L', '%[1]s_login_' || i, '30s');
  END LOOP;
END $$`, prefix, roles))
	for d := 1; d <= databases; d++ {
		db := fmt.Sprintf("%s_db_%d", prefix, d)
		sql(ctx, tb, "postgres", fmt.Sprintf("CREATE DATABASE %s OWNER %s_login_%d", db, prefix, d))
		var b strings.Builder
		for s := 1; s <= schemas; s++ {
			fmt.Fprintf(&b, "CREATE SCHEMA s%d AUTHORIZATION %s_login_%d; GRANT USAGE ON SCHEMA s%d TO %s_group_%d;\n", s, prefix, d, s, prefix, s%10)
			for t := 1; t <= tables; t++ {
				fmt.Fprintf(&b, "CREATE TABLE s%d.t%d (id int); ALTER TABLE s%d.t%d OWNER TO %s_login_%d;\n", s, t, s, t, prefix, d)
			}
			fmt.Fprintf(&b, "GRANT SELECT ON ALL TABLES IN SCHEMA s%d TO %s_group_%d;\n", s, prefix, s%10)
			fmt.Fprintf(&b, "ALTER DEFAULT PRIVILEGES FOR ROLE %s_login_%d IN SCHEMA s%d GRANT SELECT ON TABLES TO %s_group_%d;\n", prefix, d, s, prefix, s%10)
		}
		sql(ctx, tb, db, b.String())
	}
}

// TestReadIsPerDatabase: the inventory sends a fixed number of queries
// for the server and for each database it reads, whatever the number of
// roles, schemas, tables and grants: the catalogs are read whole.
func TestReadIsPerDatabase(t *testing.T) {
	suite.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var c counter
	before, err := inventory.Read(ctx, c.opener, "postgres", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	base := func(s *inventory.Server) int {
		n := 0
		for _, d := range s.Databases {
			if d.Unread == "" {
				n++
			}
		}
		return n
	}
	read := base(before)
	wantSessions, wantQueries := int64(1+read), int64(4+4*read)
	if c.sessions.Load() != wantSessions || c.queries.Load() != wantQueries {
		t.Errorf("an empty server: %d sessions and %d queries, want %d and %d", c.sessions.Load(), c.queries.Load(), wantSessions, wantQueries)
	}

	build(ctx, t, "per", 200, 3, 4, 25)
	c = counter{}
	got, err := inventory.Read(ctx, c.opener, "postgres", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	read = base(got)
	wantSessions, wantQueries = int64(1+read), int64(4+4*read)
	if c.sessions.Load() != wantSessions || c.queries.Load() != wantQueries {
		t.Errorf("200 roles, 3 databases of 100 tables: %d sessions and %d queries, want %d and %d (one session and four queries a database)",
			c.sessions.Load(), c.queries.Load(), wantSessions, wantQueries)
	}
	// A mapping that places one database reads inside that one only.
	c = counter{}
	o := inventory.Options{Instance: "main", Home: "postgres", Mapping: inventory.Mapping{Namespaces: []inventory.Placement{{Namespace: "shop", Databases: []string{"per_db_2"}}}}}
	if _, err := inventory.Read(ctx, c.opener, "postgres", o.Reads, nil); err != nil {
		t.Fatal(err)
	}
	if c.sessions.Load() != 2 || c.queries.Load() != 8 {
		t.Errorf("one database placed: %d sessions and %d queries, want 2 and 8", c.sessions.Load(), c.queries.Load())
	}
	// What was read is all there.
	roles, tables := 0, 0
	for _, r := range got.Roles {
		if strings.HasPrefix(r.Name, "per_") {
			roles++
		}
	}
	for _, d := range got.Databases {
		for _, g := range d.Grants {
			if g.Kind == "Table" && strings.HasPrefix(g.Grantee, "per_group_") {
				tables++
			}
		}
	}
	if roles != 210 || tables != 300 {
		t.Errorf("read %d of the 210 roles and %d of the 300 tables' grants", roles, tables)
	}
}

// BenchmarkInventory reads a server of 1,000 login roles in 10 groups and
// 20 databases of 5 schemas of 10 tables each (granted to a group, with
// default privileges), and describes it: the time, per object and
// against the minute a platform engineer would wait.
func BenchmarkInventory(b *testing.B) {
	suite.Server(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	build(ctx, b, "bench", 1000, 20, 5, 10)
	b.Logf("server built in %s", time.Since(start).Round(time.Millisecond))
	b.ResetTimer()
	for b.Loop() {
		var c counter
		start := time.Now()
		srv, err := inventory.Read(ctx, c.opener, "postgres", nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		inv := inventory.Describe(srv, inventory.Options{Instance: "main", Mapping: inventory.Everything("bench")})
		took := time.Since(start)
		objects := srv.Objects()
		b.ReportMetric(took.Seconds(), "s-inventory")
		b.ReportMetric(took.Seconds()/60, "x-minute")
		b.ReportMetric(float64(objects), "objects-read")
		b.ReportMetric(float64(len(inv.Manifests)), "manifests")
		b.ReportMetric(float64(took.Microseconds())/float64(objects), "µs/object")
		b.ReportMetric(float64(c.queries.Load()), "queries")
	}
}

// TestADatabaseOwnerCannotSteerTheInventory: the owner of a database
// decides what each new session in it starts with (ALTER DATABASE … SET).
// A search_path that puts its own schema first would have the inventory's
// catalog queries, run as the admin, resolve an operator to the owner's
// function; a statement_timeout of 1 ms or role = the owner would fail or
// narrow them. The inventory reads the database as it is regardless.
func TestADatabaseOwnerCannotSteerTheInventory(t *testing.T) {
	suite.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sql(ctx, t, "postgres", "CREATE ROLE steer LOGIN", "CREATE DATABASE steered OWNER steer")
	sql(ctx, t, "steered",
		"SET ROLE steer",
		"CREATE SCHEMA trap",
		"CREATE TABLE trap.kept (id int)",
		`CREATE FUNCTION trap.hijack(name, text) RETURNS boolean LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'the admin ran the owner''s operator'; END$$`,
		"CREATE OPERATOR trap.!~ (LEFTARG = name, RIGHTARG = text, FUNCTION = trap.hijack)",
		"GRANT SELECT ON trap.kept TO PUBLIC",
		"ALTER DATABASE steered SET search_path = trap, pg_catalog",
		"ALTER DATABASE steered SET statement_timeout = 1",
		"ALTER DATABASE steered SET role = steer",
	)
	var c counter
	got, err := inventory.Read(ctx, c.opener, "postgres", func(db string) bool { return db == "steered" }, nil)
	if err != nil {
		t.Fatalf("the inventory of a database whose owner set its sessions up: %v", err)
	}
	i := slices.IndexFunc(got.Databases, func(d inventory.Database) bool { return d.Name == "steered" })
	if i < 0 {
		t.Fatal("the database was not read")
	}
	d := got.Databases[i]
	if !slices.ContainsFunc(d.Schemas, func(s inventory.Schema) bool { return s.Name == "trap" && s.Owner == "steer" }) ||
		!slices.ContainsFunc(d.Grants, func(g inventory.Grant) bool { return g.Object == "kept" && g.Grantee == "PUBLIC" }) {
		t.Errorf("the database read as %+v", d)
	}
}
