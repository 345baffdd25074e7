package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5"
)

func TestCreateDatabaseStatements(t *testing.T) {
	cases := map[string]struct {
		reason string
		s      DatabaseSettings
		o      DatabaseCreateOptions
		staged bool
		want   DatabaseCreate
	}{
		"Defaults": {
			reason: "A database with the server's defaults is created closed under its staging name, then marked, renamed and opened in one transaction.",
			s:      DatabaseSettings{ConnectionLimit: -1, AllowConnections: true},
			want: DatabaseCreate{
				Create: `CREATE DATABASE "tmp" WITH ALLOW_CONNECTIONS false`,
				Finish: []string{
					`COMMENT ON DATABASE "tmp" IS '[provider-postgresql uid=u-1]'`,
					`ALTER DATABASE "tmp" RENAME TO "orders"`,
					`ALTER DATABASE "orders" WITH ALLOW_CONNECTIONS true`,
				},
			},
		},
		"Everything": {
			reason: "Every option is spelled out, identifiers and literals quoted; the owner is given the database last.",
			s:      DatabaseSettings{Owner: "app", ConnectionLimit: 10, AllowConnections: false, IsTemplate: true, Comment: "it's", RevokePublic: true},
			o: DatabaseCreateOptions{Template: "template0", Encoding: "UTF8", LCCollate: "C.UTF-8", LCCtype: "C.UTF-8",
				LocaleProvider: "icu", ICULocale: "und", Strategy: "file_copy", Tablespace: "pg_default", KeepAdminConnect: true},
			want: DatabaseCreate{
				Create: `CREATE DATABASE "tmp" WITH TEMPLATE "template0" ENCODING 'UTF8' LC_COLLATE 'C.UTF-8' LC_CTYPE 'C.UTF-8' ` +
					`LOCALE_PROVIDER "icu" ICU_LOCALE 'und' STRATEGY "file_copy" TABLESPACE "pg_default" CONNECTION LIMIT 10 ALLOW_CONNECTIONS false`,
				Finish: []string{
					`COMMENT ON DATABASE "tmp" IS 'it''s` + "\n" + `[provider-postgresql uid=u-1]'`,
					`REVOKE ALL ON DATABASE "tmp" FROM PUBLIC`,
					`ALTER DATABASE "tmp" RENAME TO "orders"`,
					`ALTER DATABASE "orders" WITH IS_TEMPLATE true`,
					`ALTER DATABASE "orders" OWNER TO "app"`,
					`GRANT CONNECT ON DATABASE "orders" TO CURRENT_USER`,
				},
			},
		},
		"Staged": {
			reason: "A create cut short after CREATE DATABASE is finished: the staging database is not created again.",
			s:      DatabaseSettings{ConnectionLimit: -1, AllowConnections: true},
			staged: true,
			want: DatabaseCreate{Finish: []string{
				`COMMENT ON DATABASE "tmp" IS '[provider-postgresql uid=u-1]'`,
				`ALTER DATABASE "tmp" RENAME TO "orders"`,
				`ALTER DATABASE "orders" WITH ALLOW_CONNECTIONS true`,
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, CreateDatabaseStatements("orders", "tmp", tc.staged, tc.s, tc.o, Mark{UID: "u-1"})); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
	if n := StagingDatabaseName("0b0e6f0c-54a1-4b52-9f57-4bd5d1b1b0c1"); len(n) > 63 {
		t.Errorf("the staging name %q is longer than PostgreSQL's 63 bytes", n)
	}
}

func TestUpdateDatabaseStatements(t *testing.T) {
	base := ObservedDatabase{DatabaseSettings: DatabaseSettings{Owner: "app", ConnectionLimit: -1, AllowConnections: true}, MarkerOwner: "u-1", AdminCanConnect: true}
	cases := map[string]struct {
		reason string
		want   DatabaseSettings
		got    func(*ObservedDatabase)
		stmts  []string
	}{
		"AdminShutOut": {
			reason: "An admin that may not connect (PUBLIC's CONNECT revoked) is granted CONNECT, and nothing else.",
			want:   DatabaseSettings{Owner: "app", ConnectionLimit: -1, AllowConnections: true, RevokePublic: true},
			got:    func(o *ObservedDatabase) { o.AdminCanConnect = false },
			stmts:  []string{`GRANT CONNECT ON DATABASE "orders" TO CURRENT_USER`},
		},
		"UpToDate": {
			reason: "No statement for an up-to-date database.",
			want:   DatabaseSettings{Owner: "app", ConnectionLimit: -1, AllowConnections: true},
		},
		"OwnerUnset": {
			reason: "An empty desired owner leaves the owner alone.",
			want:   DatabaseSettings{ConnectionLimit: -1, AllowConnections: true},
		},
		"Changed": {
			reason: "Owner, limits and flags that differ are altered.",
			want:   DatabaseSettings{Owner: "other", ConnectionLimit: 5, AllowConnections: false, IsTemplate: true},
			stmts: []string{
				`ALTER DATABASE "orders" OWNER TO "other"`,
				`ALTER DATABASE "orders" WITH CONNECTION LIMIT 5 ALLOW_CONNECTIONS false IS_TEMPLATE true`,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := base
			if tc.got != nil {
				tc.got(&got)
			}
			if diff := cmp.Diff(tc.stmts, UpdateDatabaseStatements("orders", tc.want, got, Mark{UID: "u-1"})); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestExtensionStatements(t *testing.T) {
	got := map[string]InstalledExtension{"citext": {Name: "citext", Version: "1.5", Schema: "public"}}
	want := []ExtensionSpec{
		{Name: "pgcrypto", Schema: "ext"},
		{Name: "citext", Version: "1.6", Schema: "ext"},
		{Name: "hstore"},
	}
	facts := map[string]ExtensionFacts{"plpgsql": {FixedSchema: "pg_catalog"}}
	stmts := ExtensionStatements(append(want, ExtensionSpec{Name: "plpgsql"}), got, facts)
	wantStmts := []string{
		`CREATE EXTENSION IF NOT EXISTS "pgcrypto" SCHEMA "ext"`,
		`ALTER EXTENSION "citext" UPDATE TO '1.6'`,
		`ALTER EXTENSION "citext" SET SCHEMA "ext"`,
		// Always a schema: the admin's search_path is pg_catalog alone.
		`CREATE EXTENSION IF NOT EXISTS "hstore" SCHEMA "public"`,
		`CREATE EXTENSION IF NOT EXISTS "plpgsql" SCHEMA "pg_catalog"`,
	}
	if diff := cmp.Diff(wantStmts, stmts); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if s := ExtensionStatements([]ExtensionSpec{{Name: "citext"}}, got, nil); len(s) != 0 {
		t.Errorf("an installed extension without version or schema asked for needs %v", s)
	}
}

func TestNearMatches(t *testing.T) {
	available := []string{"pgcrypto", "pg_trgm", "citext", "hstore", "uuid-ossp", "postgis_raster"}
	cases := map[string][]string{
		"pgcrpyto": {"pgcrypto"},
		"uuid":     {"uuid-ossp"},
		"postgis":  {"postgis_raster"},
		"zzz":      nil,
	}
	for in, want := range cases {
		if diff := cmp.Diff(want, NearMatches(in, available)); diff != "" {
			t.Errorf("NearMatches(%q) (-want +got):\n%s", in, diff)
		}
	}
}

// TestDatabaseRoundTrip creates a database from statements and observes it:
// the observation needs no further statement.
func TestDatabaseRoundTrip(t *testing.T) {
	suite.Versions(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := adminConn(ctx, t)
	if _, err := conn.Exec(ctx, "CREATE ROLE rt_db_owner"); err != nil {
		t.Fatal(err)
	}
	s := DatabaseSettings{Owner: "rt_db_owner", ConnectionLimit: 4, AllowConnections: true, Comment: "round trip"}
	o := DatabaseCreateOptions{Template: "template0", Encoding: "UTF8", LCCollate: "C", LCCtype: "C", Strategy: "wal_log"}
	if err := CreateDatabase(ctx, conn, "uid-db", CreateDatabaseStatements("rt_db", StagingDatabaseName("uid-db"), false, s, o, Mark{UID: "uid-db"})); err != nil {
		t.Fatal(err)
	}
	got, system, err := ObserveDatabase(ctx, conn, "rt_db")
	if err != nil || got == nil {
		t.Fatalf("ObserveDatabase = %v, %v", got, err)
	}
	if diff := cmp.Diff(s, got.DatabaseSettings); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if system == "" {
		t.Error("no system identifier observed")
	}
	if got.Encoding != "UTF8" || got.LCCollate != "C" || got.MarkerOwner != "uid-db" {
		t.Errorf("observed %+v", got)
	}
	if stmts := UpdateDatabaseStatements("rt_db", s, *got, Mark{UID: "uid-db"}); len(stmts) != 0 {
		t.Errorf("a freshly created database needs %v", stmts)
	}
	if missing, _, err := ObserveDatabase(ctx, conn, "rt_missing"); err != nil || missing != nil {
		t.Errorf("a missing database observed as %v, %v", missing, err)
	}
}

// ownerPowersSQL is what OwnerAttributes means, asked the long way: for
// every role on the server, whether the owner is a member of it.
const ownerPowersSQL = `SELECT ARRAY(SELECT a.name FROM (VALUES ('SUPERUSER', r.rolsuper), ('CREATEROLE', r.rolcreaterole),
                                       ('REPLICATION', r.rolreplication), ('BYPASSRLS', r.rolbypassrls)) AS a(name, has) WHERE a.has)
       || ARRAY(SELECT 'member of ' || g.rolname FROM pg_roles g
                 WHERE g.oid <> r.oid AND g.rolname <> 'pg_database_owner'
                   AND (g.rolname LIKE 'pg\_%' OR g.rolsuper OR g.rolcreaterole OR g.rolreplication OR g.rolbypassrls)
                   AND pg_has_role(r.oid, g.oid, 'MEMBER') ORDER BY 1)
  FROM pg_roles r WHERE r.rolname = $1`

// TestOwnerAttributesFollowMemberships: a database's observation names
// every power its owner holds through memberships, direct or through
// other roles, predefined roles' own memberships included, as asking
// pg_has_role of every role on the server does; a superuser owner is a
// member of every such role.
func TestOwnerAttributesFollowMemberships(t *testing.T) {
	suite.Versions(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := adminConn(ctx, t)
	for _, stmt := range []string{
		"CREATE ROLE oa_plain", "CREATE ROLE oa_direct", "CREATE ROLE oa_through", "CREATE ROLE oa_creator_member", "CREATE ROLE oa_super SUPERUSER",
		"CREATE ROLE oa_mid", "CREATE ROLE oa_top", "CREATE ROLE oa_creator CREATEROLE",
		"GRANT pg_read_server_files TO oa_direct",
		// Two levels up, to a predefined role that is itself a member of
		// three others.
		"GRANT oa_mid TO oa_through", "GRANT oa_top TO oa_mid", "GRANT pg_monitor TO oa_top",
		"GRANT oa_creator TO oa_creator_member",
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	for _, owner := range []string{"oa_plain", "oa_direct", "oa_through", "oa_creator_member", "oa_super"} {
		t.Run(owner, func(t *testing.T) {
			db := owner + "_db"
			s := DatabaseSettings{Owner: owner, ConnectionLimit: -1, AllowConnections: true}
			if err := CreateDatabase(ctx, conn, "uid-"+owner, CreateDatabaseStatements(db, StagingDatabaseName("uid-"+owner), false, s, DatabaseCreateOptions{}, Mark{UID: "uid-" + owner})); err != nil {
				t.Fatal(err)
			}
			got, _, err := ObserveDatabase(ctx, conn, db)
			if err != nil || got == nil {
				t.Fatalf("ObserveDatabase = %v, %v", got, err)
			}
			var want []string
			if err := conn.QueryRow(ctx, ownerPowersSQL, owner).Scan(&want); err != nil {
				t.Fatal(err)
			}
			if owner != "oa_plain" && len(want) == 0 {
				t.Fatalf("%s holds no power, as the server says: the case proves nothing", owner)
			}
			if diff := cmp.Diff(want, got.OwnerAttributes, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("owner attributes (-as pg_has_role says +observed):\n%s", diff)
			}
		})
	}
}

func TestDatabaseRevokePublic(t *testing.T) {
	suite.Versions(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := adminConn(ctx, t)
	s := DatabaseSettings{ConnectionLimit: -1, AllowConnections: true, RevokePublic: true}
	if err := CreateDatabase(ctx, conn, "uid-p", CreateDatabaseStatements("rt_private", StagingDatabaseName("uid-p"), false, s, DatabaseCreateOptions{}, Mark{UID: "uid-p"})); err != nil {
		t.Fatal(err)
	}
	got, _, err := ObserveDatabase(ctx, conn, "rt_private")
	if err != nil || got == nil {
		t.Fatalf("ObserveDatabase = %v, %v", got, err)
	}
	if len(got.PublicPrivileges) != 0 {
		t.Errorf("PUBLIC holds %v on a database created with RevokePublic", got.PublicPrivileges)
	}
	if stmts := UpdateDatabaseStatements("rt_private", s, *got, Mark{UID: "uid-p"}); len(stmts) != 0 {
		t.Errorf("an up-to-date private database needs %v", stmts)
	}
	if _, err := conn.Exec(ctx, "GRANT CONNECT ON DATABASE rt_private TO PUBLIC"); err != nil {
		t.Fatal(err)
	}
	got, _, _ = ObserveDatabase(ctx, conn, "rt_private")
	if diff := cmp.Diff([]string{"CONNECT"}, got.PublicPrivileges); diff != "" {
		t.Errorf("PUBLIC's privileges (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{`REVOKE ALL ON DATABASE "rt_private" FROM PUBLIC`}, UpdateDatabaseStatements("rt_private", s, *got, Mark{UID: "uid-p"})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	public, _, _ := ObserveDatabase(ctx, conn, "postgres")
	if diff := cmp.Diff([]string{"CONNECT", "TEMPORARY"}, public.PublicPrivileges); diff != "" {
		t.Errorf("a default database's PUBLIC privileges (-want +got):\n%s", diff)
	}
}

func TestMembershipGrants(t *testing.T) {
	cases := map[string]struct {
		need          RoleNeed
		version       int
		grant, revoke string
	}{
		"PostgreSQL15": {need: RoleNeed{Role: "orders_owner", Set: true}, version: 150010,
			grant: `GRANT "orders_owner" TO CURRENT_USER`, revoke: `REVOKE "orders_owner" FROM CURRENT_USER`},
		"PostgreSQL16SetOnly": {need: RoleNeed{Role: "orders_owner", Set: true}, version: 160000,
			grant: `GRANT "orders_owner" TO CURRENT_USER WITH INHERIT FALSE, SET TRUE`, revoke: `REVOKE "orders_owner" FROM CURRENT_USER`},
		"PostgreSQL18InheritOnly": {need: RoleNeed{Role: "old_owner", Inherit: true}, version: 180004,
			grant: `GRANT "old_owner" TO CURRENT_USER WITH INHERIT TRUE, SET FALSE`, revoke: `REVOKE "old_owner" FROM CURRENT_USER`},
		"QuotedName": {need: RoleNeed{Role: `we"ird`, Set: true, Inherit: true}, version: 170000,
			grant: `GRANT "we""ird" TO CURRENT_USER WITH INHERIT TRUE, SET TRUE`, revoke: `REVOKE "we""ird" FROM CURRENT_USER`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g, r := MembershipGrants(tc.need, tc.version)
			if g != tc.grant || r != tc.revoke {
				t.Errorf("MembershipGrants(%+v, %d) = %q, %q; want %q, %q", tc.need, tc.version, g, r, tc.grant, tc.revoke)
			}
		})
	}
}

// TestStatementTimeoutFollowsLongDeadlines: statements given a deadline
// longer than the sessions' statement_timeout (60 s) run under a timeout
// that matches it, and the session is back at 60 s afterwards; a shorter
// deadline leaves the session's timeout alone (no extra statement).
func TestStatementTimeoutFollowsLongDeadlines(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	cfg, err := ConnConfig(endpointOf(server), admin(server))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx) //nolint:errcheck // Test.
	// Fails unless statement_timeout is within want.
	check := func(lo, hi time.Duration) []string {
		return []string{fmt.Sprintf(`DO $$ BEGIN
			IF current_setting('statement_timeout')::interval NOT BETWEEN '%d ms' AND '%d ms' THEN
				RAISE EXCEPTION 'statement_timeout is %%', current_setting('statement_timeout');
			END IF; END $$`, lo.Milliseconds(), hi.Milliseconds())}
	}
	long, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	short, cancelShort := context.WithTimeout(ctx, 30*time.Second)
	defer cancelShort()
	cases := map[string]struct {
		ctx    context.Context
		exec   func(context.Context, []string) error
		lo, hi time.Duration
	}{
		"ExecLongDeadline":     {ctx: long, exec: func(c context.Context, s []string) error { return Exec(c, conn, s) }, lo: 4 * time.Minute, hi: 5 * time.Minute},
		"ExecEachLongDeadline": {ctx: long, exec: func(c context.Context, s []string) error { return ExecEach(c, conn, s) }, lo: 4 * time.Minute, hi: 5 * time.Minute},
		"ExecShortDeadline":    {ctx: short, exec: func(c context.Context, s []string) error { return Exec(c, conn, s) }, lo: time.Minute, hi: time.Minute},
		"ExecNoDeadline":       {ctx: ctx, exec: func(c context.Context, s []string) error { return ExecEach(c, conn, s) }, lo: time.Minute, hi: time.Minute},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if err := tc.exec(tc.ctx, check(tc.lo, tc.hi)); err != nil { //nolint:contextcheck // Each case brings its own deadline.
				t.Fatal(err)
			}
			var after string
			if err := conn.QueryRow(ctx, "SHOW statement_timeout").Scan(&after); err != nil || after != "1min" {
				t.Errorf("statement_timeout after the statements = %q (%v), want the session's 1min", after, err)
			}
		})
	}
}

func TestMemberOfPrefixIsWhatTheQueryWrites(t *testing.T) {
	if !strings.Contains(observeDatabaseSQL, "'"+MemberOfPrefix+"'") {
		t.Errorf("observeDatabaseSQL does not write memberships as %q", MemberOfPrefix)
	}
}

// TestDatabaseCreateCutShort: a create that stops after CREATE DATABASE
// leaves a database only this resource could have left, which the next
// create finishes; a database of that name someone else made is refused,
// and one that took the name meanwhile leaves no staging database behind.
func TestDatabaseCreateCutShort(t *testing.T) {
	suite.Versions(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := adminConn(ctx, t)
	s := DatabaseSettings{ConnectionLimit: 3, AllowConnections: true, Comment: "cut short"}
	create := func(name, uid string, staged bool) DatabaseCreate {
		return CreateDatabaseStatements(name, StagingDatabaseName(uid), staged, s, DatabaseCreateOptions{}, Mark{UID: uid})
	}
	exists := func(name string) bool {
		t.Helper()
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}

	// Killed after CREATE DATABASE: the staging database is there,
	// closed, the admin's, unmarked.
	if err := ExecEach(ctx, conn, []string{create("rt_cut", "uid-cut", false).Create}); err != nil {
		t.Fatal(err)
	}
	staged, err := ObserveStagingDatabase(ctx, conn, "uid-cut")
	if err != nil || !staged {
		t.Fatalf("ObserveStagingDatabase = %v, %v; want the staging database recognised", staged, err)
	}
	if staged, err := ObserveStagingDatabase(ctx, conn, "uid-other"); err != nil || staged {
		t.Errorf("another resource's staging database = %v, %v; want none", staged, err)
	}
	if err := CreateDatabase(ctx, conn, "uid-cut", create("rt_cut", "uid-cut", true)); err != nil {
		t.Fatalf("finishing the create: %v", err)
	}
	got, _, err := ObserveDatabase(ctx, conn, "rt_cut")
	if err != nil || got == nil {
		t.Fatalf("ObserveDatabase = %v, %v", got, err)
	}
	if got.MarkerOwner != "uid-cut" || !got.AllowConnections || got.ConnectionLimit != 3 || got.Comment != "cut short" {
		t.Errorf("the finished database is %+v", got)
	}
	if exists(StagingDatabaseName("uid-cut")) {
		t.Error("the staging database is still there after the create finished")
	}

	// Someone made a database of a staging name that accepts connections.
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+QuoteIdentifier(StagingDatabaseName("uid-squat"))); err != nil {
		t.Fatal(err)
	}
	if _, err := ObserveStagingDatabase(ctx, conn, "uid-squat"); err == nil || !strings.Contains(err.Error(), "was not left by this provider") {
		t.Errorf("a database someone made under a staging name: %v; want it refused", err)
	}
	if err := DropStagingDatabase(ctx, conn, "uid-squat"); err == nil || !exists(StagingDatabaseName("uid-squat")) {
		t.Errorf("DropStagingDatabase dropped a database the provider did not leave (%v)", err)
	}

	// The name was taken between the observation and the rename.
	if _, err := conn.Exec(ctx, "CREATE DATABASE rt_taken"); err != nil {
		t.Fatal(err)
	}
	err = CreateDatabase(ctx, conn, "uid-late", create("rt_taken", "uid-late", false))
	if !IsCode(err, CodeDuplicateDatabase) {
		t.Errorf("a create whose name was taken: %v; want %s", err, CodeDuplicateDatabase)
	}
	if exists(StagingDatabaseName("uid-late")) {
		t.Error("the staging database of a create whose name was taken is left behind")
	}
}
