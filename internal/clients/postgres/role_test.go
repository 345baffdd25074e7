package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCreateRoleStatements(t *testing.T) {
	until := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := map[string]struct {
		reason   string
		name     string
		attrs    RoleAttributes
		verifier string
		want     []string
	}{
		"Defaults": {
			reason: "A role with CREATE ROLE's defaults gets no options, just its marker.",
			name:   "app",
			attrs:  DefaultRoleAttributes(),
			want: []string{
				NoSelfGrantSQL,
				`CREATE ROLE "app"`,
				`COMMENT ON ROLE "app" IS '[provider-postgresql uid=u-1]'`,
			},
		},
		"Everything": {
			reason: "Every attribute that differs from the defaults is spelled out; identifiers and literals are quoted; memberships come before settings (SET role needs one).",
			name:   "App-User",
			attrs: RoleAttributes{
				Login: true, Inherit: false, CreateDB: true, ConnectionLimit: 5, ValidUntil: &until,
				Config:   map[string]string{"statement_timeout": "5s", "application_name": "it's"},
				MemberOf: []string{"readers", "Writers"}, Comment: "orders app",
			},
			verifier: "SCRAM-SHA-256$4096:c2FsdA==$a:b",
			want: []string{
				NoSelfGrantSQL,
				`CREATE ROLE "App-User" WITH LOGIN NOINHERIT CREATEDB CONNECTION LIMIT 5 VALID UNTIL '2030-01-02T03:04:05Z' PASSWORD 'SCRAM-SHA-256$4096:c2FsdA==$a:b'`,
				`COMMENT ON ROLE "App-User" IS 'orders app` + "\n" + `[provider-postgresql uid=u-1]'`,
				`GRANT "readers" TO "App-User"`,
				`GRANT "Writers" TO "App-User"`,
				`ALTER ROLE "App-User" SET application_name TO 'it''s'`,
				`ALTER ROLE "App-User" SET statement_timeout TO '5s'`,
			},
		},
		"SharedRoleWithoutSet": {
			reason: "A membership the policy opens for privileges only is granted WITH SET FALSE; the others keep the server's default.",
			name:   "app",
			attrs: func() RoleAttributes {
				a := DefaultRoleAttributes()
				a.MemberOf, a.WithoutSet = []string{"own_group", "shared"}, []string{"shared"}
				return a
			}(),
			want: []string{
				NoSelfGrantSQL,
				`CREATE ROLE "app"`,
				`COMMENT ON ROLE "app" IS '[provider-postgresql uid=u-1]'`,
				`GRANT "own_group" TO "app"`,
				`GRANT "shared" TO "app" WITH SET FALSE`,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := CreateRoleStatements(tc.name, tc.attrs, tc.verifier, Mark{UID: "u-1"})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nCreateRoleStatements (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestUpdateRoleStatements(t *testing.T) {
	base := func() ObservedRole {
		return ObservedRole{RoleAttributes: RoleAttributes{
			Login: true, Inherit: true, ConnectionLimit: -1,
			Config: map[string]string{"statement_timeout": "5s"}, MemberOf: []string{"readers"}, Comment: "c",
		}, Owner: "u-1"}
	}
	want := func() RoleAttributes { return base().RoleAttributes }
	cases := map[string]struct {
		reason string
		want   func() RoleAttributes
		got    func() ObservedRole
		stmts  []string
	}{
		"UpToDate": {
			reason: "An up-to-date role costs no statement at all.",
			want:   want,
			got:    base,
		},
		"AttributesDrifted": {
			reason: "Only the attributes that differ are altered, in one statement.",
			want:   want,
			got: func() ObservedRole {
				o := base()
				o.Login, o.CreateDB, o.ConnectionLimit = false, true, 3
				return o
			},
			stmts: []string{`ALTER ROLE "app" WITH LOGIN NOCREATEDB CONNECTION LIMIT -1`},
		},
		"SettingsAndMemberships": {
			reason: "Changed settings are set, extra ones reset; missing memberships granted, extra ones revoked.",
			want: func() RoleAttributes {
				w := want()
				w.Config = map[string]string{"statement_timeout": "10s", "work_mem": "64MB"}
				w.MemberOf = []string{"writers"}
				return w
			},
			got: func() ObservedRole {
				o := base()
				o.Config["lock_timeout"] = "1s"
				return o
			},
			stmts: []string{
				`ALTER ROLE "app" SET statement_timeout TO '10s'`,
				`ALTER ROLE "app" SET work_mem TO '64MB'`,
				`ALTER ROLE "app" RESET lock_timeout`,
				`GRANT "writers" TO "app"`,
				`REVOKE "readers" FROM "app"`,
			},
		},
		"ValidUntilCleared": {
			reason: "Removing validUntil makes the password valid forever again.",
			want:   want,
			got: func() ObservedRole {
				o := base()
				t := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
				o.ValidUntil = &t
				return o
			},
			stmts: []string{`ALTER ROLE "app" WITH VALID UNTIL 'infinity'`},
		},
		"ExistingMembershipKeepsItsOptions": {
			reason: "A membership that exists is not granted again, whatever options it has: only a new one is granted WITH SET FALSE.",
			want: func() RoleAttributes {
				w := want()
				w.MemberOf, w.WithoutSet = []string{"readers", "shared"}, []string{"readers", "shared"}
				return w
			},
			got:   base,
			stmts: []string{`GRANT "shared" TO "app" WITH SET FALSE`},
		},
		"CommentChanged": {
			reason: "The comment is rewritten with the marker kept.",
			want: func() RoleAttributes {
				w := want()
				w.Comment = "new"
				return w
			},
			got:   base,
			stmts: []string{`COMMENT ON ROLE "app" IS 'new` + "\n" + `[provider-postgresql uid=u-1]'`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := UpdateRoleStatements("app", tc.want(), tc.got(), Mark{UID: "u-1"})
			if diff := cmp.Diff(tc.stmts, got); diff != "" {
				t.Errorf("%s\nUpdateRoleStatements (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestRoleRoundTrip creates a role from statements, observes it, and
// checks that the observation needs no further statement. Its name needs
// quoting (upper case, a dash): its memberships are looked up by name too.
func TestRoleRoundTrip(t *testing.T) {
	suite.Versions(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := adminConn(ctx, t)
	if _, err := conn.Exec(ctx, "CREATE ROLE rt_group"); err != nil {
		t.Fatal(err)
	}
	until := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	want := RoleAttributes{
		Login: true, Inherit: false, CreateDB: true, ConnectionLimit: 7, ValidUntil: &until,
		Config: map[string]string{"statement_timeout": "5s"}, MemberOf: []string{"rt_group"}, Comment: "it's mine",
	}
	if got, system, err := ObserveRole(ctx, conn, "RT-role", false); err != nil || got != nil || system == "" {
		t.Fatalf("ObserveRole before create = %v, %q, %v; want nil, a system identifier, nil", got, system, err)
	}
	if err := Exec(ctx, conn, CreateRoleStatements("RT-role", want, "", Mark{UID: "uid-rt"})); err != nil {
		t.Fatal(err)
	}
	got, _, err := ObserveRole(ctx, conn, "RT-role", false)
	if err != nil || got == nil {
		t.Fatalf("ObserveRole = %v, %v", got, err)
	}
	if diff := cmp.Diff(want, got.RoleAttributes); diff != "" {
		t.Errorf("observed attributes (-want +got):\n%s", diff)
	}
	if got.Owner != "uid-rt" {
		t.Errorf("marker owner = %q, want uid-rt", got.Owner)
	}
	if stmts := UpdateRoleStatements("RT-role", want, *got, Mark{UID: "uid-rt"}); len(stmts) != 0 {
		t.Errorf("a freshly created role needs statements: %v", stmts)
	}
	t.Run("SetWithheld", func(t *testing.T) {
		// A new membership of a shared group is granted without SET
		// (16+), and the observation then needs nothing more.
		var version int
		if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
			t.Fatal(err)
		}
		if version < Version16 {
			// 15 has no SET option; the controller never asks for it there.
			return
		}
		if _, err := conn.Exec(ctx, `CREATE ROLE rt_shared`); err != nil {
			t.Fatal(err)
		}
		w := want
		w.MemberOf, w.WithoutSet = []string{"rt_group", "rt_shared"}, []string{"rt_shared"}
		got, _, err := ObserveRole(ctx, conn, "RT-role", false)
		if err != nil {
			t.Fatal(err)
		}
		stmts := UpdateRoleStatements("RT-role", w, *got, Mark{UID: "uid-rt"})
		if diff := cmp.Diff([]string{`GRANT "rt_shared" TO "RT-role" WITH SET FALSE`}, stmts); diff != "" {
			t.Fatalf("statements (-want +got):\n%s", diff)
		}
		if err := Exec(ctx, conn, stmts); err != nil {
			t.Fatal(err)
		}
		if got, _, err = ObserveRole(ctx, conn, "RT-role", false); err != nil {
			t.Fatal(err)
		}
		if stmts := UpdateRoleStatements("RT-role", w, *got, Mark{UID: "uid-rt"}); len(stmts) != 0 {
			t.Errorf("a membership granted without SET needs statements again: %v", stmts)
		}
		// (The role is NOINHERIT: its memberships carry no privileges
		// either, so MEMBER is what is left to see.)
		var canSet, member bool
		if err := conn.QueryRow(ctx, `SELECT pg_has_role('RT-role', 'rt_shared', 'SET'), pg_has_role('RT-role', 'rt_shared', 'MEMBER')`).Scan(&canSet, &member); err != nil {
			t.Fatal(err)
		}
		if canSet || !member {
			t.Errorf("granted: SET %t (want false), member %t (want true)", canSet, member)
		}
		if _, err := conn.Exec(ctx, `REVOKE rt_shared FROM "RT-role"`); err != nil {
			t.Fatal(err)
		}
	})
	if err := Exec(ctx, conn, []string{"CREATE TABLE rt_owned ()", "ALTER TABLE rt_owned OWNER TO \"RT-role\""}); err != nil {
		t.Fatal(err)
	}
	err = Exec(ctx, conn, []string{DropRoleStatement("RT-role")})
	if !IsCode(err, CodeDependentObjectsStillExist) {
		t.Fatalf("dropping a role that owns a table: got %v, want SQLSTATE 2BP01", err)
	}
	if want := "owner of table rt_owned"; !strings.Contains(err.Error(), want) {
		t.Errorf("the error %q does not say what blocks the drop (%q)", err, want)
	}
}

func TestEndAccessStatements(t *testing.T) {
	cases := map[string]struct {
		got  ObservedRole
		want []string
	}{
		"LoginWithMembership": {
			got:  ObservedRole{RoleAttributes: RoleAttributes{Login: true, MemberOf: []string{"shop_owner"}}},
			want: []string{`ALTER ROLE "shop" NOLOGIN`, `REVOKE "shop_owner" FROM "shop"`},
		},
		"NothingLeft": {got: ObservedRole{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, EndAccessStatements("shop", tc.got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
