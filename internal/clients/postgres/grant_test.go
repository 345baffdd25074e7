package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/utils/ptr"
)

func TestGrantStatements(t *testing.T) {
	suite.Versions(t)
	cases := map[string]struct {
		target GrantTarget
		refs   []string
		plan   PrivilegePlan
		option bool
		want   []string
	}{
		"Database": {
			target: GrantTarget{Kind: KindDatabase, Database: "shop"}, refs: []string{`shop`},
			plan: PrivilegePlan{Grant: []string{"CONNECT", "TEMPORARY"}, GrantOn: []int{0}},
			want: []string{`GRANT CONNECT, TEMPORARY ON DATABASE shop TO "ro"`},
		},
		"Tablespace": {
			target: GrantTarget{Kind: KindTablespace, Tablespace: "fast ssd"}, refs: []string{`"fast ssd"`},
			plan: PrivilegePlan{Grant: []string{"CREATE"}, GrantOn: []int{0}},
			want: []string{`GRANT CREATE ON TABLESPACE "fast ssd" TO "ro"`},
		},
		"TablesWithGrantOptionAndRevocations": {
			target: GrantTarget{Kind: KindTable, Schema: "app", Objects: []string{"orders", "items"}}, refs: []string{`app.orders`, `app.items`},
			plan:   PrivilegePlan{Grant: []string{"SELECT"}, GrantOn: []int{1}, Revoke: []string{"INSERT"}, RevokeGrantOption: []string{"UPDATE"}},
			option: true,
			want: []string{
				`REVOKE INSERT ON TABLE app.orders, app.items FROM "ro"`,
				`REVOKE GRANT OPTION FOR UPDATE ON TABLE app.orders, app.items FROM "ro"`,
				`GRANT SELECT ON TABLE app.items TO "ro" WITH GRANT OPTION`,
			},
		},
		"AllTablesInSchema": {
			target: GrantTarget{Kind: KindTable, Schema: "App Data", AllInSchema: true}, refs: []string{`"App Data".a`},
			plan: PrivilegePlan{Grant: []string{"SELECT"}, GrantOn: []int{0}, Revoke: []string{"DELETE"}},
			want: []string{`REVOKE DELETE ON ALL TABLES IN SCHEMA "App Data" FROM "ro"`, `GRANT SELECT ON ALL TABLES IN SCHEMA "App Data" TO "ro"`},
		},
		"FunctionsAsRoutines": {
			target: GrantTarget{Kind: KindFunction, Schema: "app", Objects: []string{"add(integer)"}}, refs: []string{`app.add(integer)`},
			plan: PrivilegePlan{Grant: []string{"EXECUTE"}, GrantOn: []int{0}},
			want: []string{`GRANT EXECUTE ON ROUTINE app.add(integer) TO "ro"`},
		},
		"AllSequences": {
			target: GrantTarget{Kind: KindSequence, Schema: "app", AllInSchema: true}, refs: []string{`app.s`},
			plan: PrivilegePlan{Grant: []string{"USAGE"}, GrantOn: []int{0}},
			want: []string{`GRANT USAGE ON ALL SEQUENCES IN SCHEMA "app" TO "ro"`},
		},
		"NothingToDo": {
			target: GrantTarget{Kind: KindSchema, Schema: "app"}, refs: []string{`app`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := make([]ObservedObject, len(tc.refs))
			for i, r := range tc.refs {
				objs[i] = ObservedObject{Ref: r}
			}
			got := PlanStatements("ro", tc.target, objs, tc.plan, tc.option)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestMembershipStatements(t *testing.T) {
	cases := map[string]struct {
		reason       string
		want, got    Membership
		appliedAdmin bool
		version      int
		stmts        []string
		err          bool
	}{
		"NewMembership15": {
			want: Membership{Member: true}, version: 150014,
			stmts: []string{`GRANT "grp" TO "app"`},
		},
		"NewWithAdmin15": {
			want: Membership{Member: true, Admin: true}, version: 150014,
			stmts: []string{`GRANT "grp" TO "app" WITH ADMIN OPTION`},
		},
		"UpToDate15": {
			want: Membership{Member: true, Admin: true}, got: Membership{Member: true, Admin: true}, version: 150014,
		},
		"AdminOptionAdded": {
			want: Membership{Member: true, Admin: true}, got: Membership{Member: true}, version: 150014,
			stmts: []string{`GRANT "grp" TO "app" WITH ADMIN OPTION`},
		},
		"AdminOptionRevokedWhenOurs": {
			want: Membership{Member: true}, got: Membership{Member: true, Admin: true}, appliedAdmin: true, version: 150014,
			stmts: []string{`REVOKE ADMIN OPTION FOR "grp" FROM "app"`},
		},
		"AdminOptionNotOursKept": {
			want: Membership{Member: true}, got: Membership{Member: true, Admin: true}, version: 150014,
		},
		"InheritAndSetNeed16": {
			reason: "WITH INHERIT/SET does not parse before PostgreSQL 16.",
			want:   Membership{Member: true, Inherit: ptr.To(false)}, version: 150014, err: true,
		},
		"NewWithOptions16": {
			want: Membership{Member: true, Admin: true, Inherit: ptr.To(false), Set: ptr.To(true)}, version: 160004,
			stmts: []string{`GRANT "grp" TO "app" WITH ADMIN OPTION, INHERIT FALSE, SET TRUE`},
		},
		"OptionChanged16": {
			reason: "On 16+ re-granting updates the options of the existing membership.",
			want:   Membership{Member: true, Set: ptr.To(false)}, got: Membership{Member: true, Inherit: ptr.To(true), Set: ptr.To(true)}, version: 170002,
			stmts: []string{`GRANT "grp" TO "app" WITH SET FALSE`},
		},
		"OptionsUpToDate16": {
			want: Membership{Member: true, Inherit: ptr.To(true)}, got: Membership{Member: true, Inherit: ptr.To(true), Set: ptr.To(true)}, version: 160004,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := MembershipStatements("app", "grp", tc.want, tc.got, tc.appliedAdmin, tc.version)
			if (err != nil) != tc.err {
				t.Fatalf("%s\nerr = %v, want error %t", tc.reason, err, tc.err)
			}
			if diff := cmp.Diff(tc.stmts, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestDefaultPrivilegesStatements(t *testing.T) {
	got := DefaultPrivilegesStatements("ro", DefaultPrivilegesTarget{Owner: "app", Schema: "data", Kind: KindTable},
		PrivilegePlan{Grant: []string{"SELECT"}, Revoke: []string{"DELETE"}, RevokeGrantOption: []string{"SELECT"}}, false)
	want := []string{
		`ALTER DEFAULT PRIVILEGES FOR ROLE "app" IN SCHEMA "data" REVOKE DELETE ON TABLES FROM "ro"`,
		`ALTER DEFAULT PRIVILEGES FOR ROLE "app" IN SCHEMA "data" REVOKE GRANT OPTION FOR SELECT ON TABLES FROM "ro"`,
		`ALTER DEFAULT PRIVILEGES FOR ROLE "app" IN SCHEMA "data" GRANT SELECT ON TABLES TO "ro"`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	got = DefaultPrivilegesStatements("ro", DefaultPrivilegesTarget{Owner: "app", Kind: KindSchema}, PrivilegePlan{Grant: []string{"USAGE"}}, true)
	if diff := cmp.Diff([]string{`ALTER DEFAULT PRIVILEGES FOR ROLE "app" GRANT USAGE ON SCHEMAS TO "ro" WITH GRANT OPTION`}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestSchemaStatements(t *testing.T) {
	if diff := cmp.Diff([]string{`CREATE SCHEMA "app" AUTHORIZATION "owner"`, `COMMENT ON SCHEMA "app" IS '` + WithMarker("c", Mark{UID: "u-1"}) + `'`},
		CreateSchemaStatements("app", SchemaSettings{Owner: "owner", Comment: "c"}, Mark{UID: "u-1"})); diff != "" {
		t.Errorf("create (-want +got):\n%s", diff)
	}
	up := ObservedSchema{Owner: "owner", Comment: "c", MarkerOwner: "u-1"}
	if got := UpdateSchemaStatements("app", SchemaSettings{Owner: "owner", Comment: "c"}, up, Mark{UID: "u-1"}); len(got) != 0 {
		t.Errorf("an up-to-date schema needs %v", got)
	}
	public := up
	public.PublicPrivileges = []string{"CREATE", "USAGE"}
	if diff := cmp.Diff([]string{`ALTER SCHEMA "app" OWNER TO "other"`, `REVOKE CREATE, USAGE ON SCHEMA "app" FROM PUBLIC`},
		UpdateSchemaStatements("app", SchemaSettings{Owner: "other", Comment: "c", RevokePublic: true}, public, Mark{UID: "u-1"})); diff != "" {
		t.Errorf("update (-want +got):\n%s", diff)
	}
	if got := UpdateSchemaStatements("app", SchemaSettings{Owner: "owner", Comment: "c"}, public, Mark{UID: "u-1"}); len(got) != 0 {
		t.Errorf("PUBLIC's privileges are left alone unless asked: %v", got)
	}
	if got := DropSchemaStatement("app", false); got != `DROP SCHEMA IF EXISTS "app" RESTRICT` {
		t.Errorf("drop = %s", got)
	}
}

// TestGrantRoundTrip runs the observation queries and the statements the
// plans produce against the real server: after applying a plan, the next
// observation plans nothing.
func TestGrantRoundTrip(t *testing.T) {
	suite.Versions(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := adminConn(ctx, t)
	if _, err := conn.Exec(ctx, `CREATE ROLE rt_ro; CREATE SCHEMA rt_app;
		CREATE TABLE rt_app.orders (id int); CREATE TABLE rt_app."Items" (id int); CREATE SEQUENCE rt_app.seq;
		CREATE FUNCTION rt_app.add(a integer, b text) RETURNS int LANGUAGE sql AS 'SELECT 1';
		CREATE PROCEDURE rt_app.proc() LANGUAGE sql AS 'SELECT 1';
		CREATE FUNCTION rt_app."Mixed"(numeric(10,2), int[]) RETURNS int LANGUAGE sql AS 'SELECT 1';
		CREATE FUNCTION rt_app.nothing() RETURNS int LANGUAGE sql AS 'SELECT 1';
		GRANT DELETE ON rt_app.orders TO rt_ro`); err != nil {
		t.Fatal(err)
	}
	apply := func(t *testing.T, target GrantTarget, privileges []string, option bool) *ObservedGrant {
		t.Helper()
		got, system, err := ObserveGrant(ctx, conn, "rt_ro", target)
		if err != nil || system == "" || !got.RoleExists || !got.ParentExists {
			t.Fatalf("ObserveGrant = %+v, %q, %v", got, system, err)
		}
		held := make([]Held, len(got.Objects))
		for i, o := range got.Objects {
			held[i] = o.Held
		}
		w := PrivilegeWant{Privileges: privileges, GrantOption: option}
		if err := Exec(ctx, conn, PlanStatements("rt_ro", target, got.Objects, PlanPrivileges(w, held), option)); err != nil {
			t.Fatal(err)
		}
		again, _, err := ObserveGrant(ctx, conn, "rt_ro", target)
		if err != nil {
			t.Fatal(err)
		}
		held = held[:0]
		for _, o := range again.Objects {
			held = append(held, o.Held)
		}
		if p := PlanPrivileges(w, held); !p.Empty() {
			t.Errorf("after applying, the plan is %+v", p)
		}
		return again
	}

	t.Run("NamedTables", func(t *testing.T) {
		got := apply(t, GrantTarget{Kind: KindTable, Database: "postgres", Schema: "rt_app", Objects: []string{"orders", "Items"}}, []string{"SELECT"}, true)
		var refs []string
		for _, o := range got.Objects {
			refs = append(refs, o.Ref)
			if !o.Held.has("SELECT", true) {
				t.Errorf("%s lacks SELECT with grant option", o.Ref)
			}
		}
		// In the order of their names, whatever order the server joined
		// them in: a plan is the same from one observation to the next.
		if diff := cmp.Diff([]string{`"rt_app"."Items"`, `"rt_app"."orders"`}, refs); diff != "" {
			t.Errorf("refs (-want +got):\n%s", diff)
		}
		if _, ok := got.Objects[1].Held["DELETE"]; !ok {
			t.Error("the observation lost a privilege held by other means")
		}
	})
	t.Run("MissingObjects", func(t *testing.T) {
		got, _, err := ObserveGrant(ctx, conn, "rt_ro", GrantTarget{Kind: KindTable, Schema: "rt_app", Objects: []string{"orders", "nope"}})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"nope"}, got.Missing); diff != "" || len(got.Objects) != 1 {
			t.Errorf("missing (-want +got):\n%s; objects %+v", diff, got.Objects)
		}
	})
	t.Run("AllTablesInSchema", func(t *testing.T) {
		got := apply(t, GrantTarget{Kind: KindTable, Schema: "rt_app", AllInSchema: true}, []string{"INSERT"}, false)
		if len(got.Objects) != 2 {
			t.Errorf("all tables: %+v", got.Objects)
		}
	})
	t.Run("FunctionBySignature", func(t *testing.T) {
		got := apply(t, GrantTarget{Kind: KindFunction, Schema: "rt_app", Objects: []string{"add(integer, text)"}}, []string{"EXECUTE"}, false)
		if len(got.Objects) != 1 || got.Objects[0].Ref != `"rt_app"."add"("pg_catalog"."int4", "pg_catalog"."text")` {
			t.Errorf("function: %+v", got.Objects)
		}
	})
	t.Run("FunctionSignatures", func(t *testing.T) {
		// Found by catalog lookup, as PostgreSQL would resolve the
		// signature: case folding, quoting, type aliases and typmods;
		// a wrong arity or an unknown type matches nothing.
		sigs := []string{`ADD(int4, varchar)`, `add(int, text)`, `"Mixed"(numeric(10, 2), integer[])`, `nothing()`, `Nothing( )`,
			`add(int)`, `add(int, text, text)`, `add(int, no_such_type)`, `"Add"(int, text)`, `add int`}
		got, _, err := ObserveGrant(ctx, conn, "rt_ro", GrantTarget{Kind: KindFunction, Schema: "rt_app", Objects: sigs})
		if err != nil {
			t.Fatal(err)
		}
		found := map[string]string{}
		for _, o := range got.Objects {
			found[o.Name] = o.Ref
		}
		want := map[string]string{
			// Named by the provider from catalog names, every part
			// quoted and qualified (integer[] is pg_catalog._int4).
			`add(int, text)`:                     `"rt_app"."add"("pg_catalog"."int4", "pg_catalog"."text")`,
			`"Mixed"(numeric(10, 2), integer[])`: `"rt_app"."Mixed"("pg_catalog"."numeric", "pg_catalog"."_int4")`,
			`nothing()`:                          `"rt_app"."nothing"()`,
			`Nothing( )`:                         `"rt_app"."nothing"()`,
		}
		if diff := cmp.Diff(want, found); diff != "" {
			t.Errorf("found (-want +got):\n%s", diff)
		}
		// varchar is not text: a different signature.
		wantMissing := []string{`"Add"(int, text)`, `ADD(int4, varchar)`, `add int`, `add(int)`, `add(int, no_such_type)`, `add(int, text, text)`}
		if diff := cmp.Diff(wantMissing, got.Missing); diff != "" {
			t.Errorf("missing (-want +got):\n%s", diff)
		}
	})
	t.Run("AllFunctionsLeaveProceduresOut", func(t *testing.T) {
		got := apply(t, GrantTarget{Kind: KindFunction, Schema: "rt_app", AllInSchema: true}, []string{"EXECUTE"}, false)
		if len(got.Objects) != 3 {
			t.Errorf("all functions: %+v", got.Objects)
		}
		for _, o := range got.Objects {
			if strings.HasPrefix(o.Name, "proc") {
				t.Errorf("a procedure was counted: %+v", o)
			}
		}
	})
	t.Run("Sequence", func(t *testing.T) {
		apply(t, GrantTarget{Kind: KindSequence, Schema: "rt_app", Objects: []string{"seq"}}, []string{"USAGE", "SELECT"}, false)
	})
	t.Run("SchemaAndDatabase", func(t *testing.T) {
		apply(t, GrantTarget{Kind: KindSchema, Schema: "rt_app"}, []string{"USAGE"}, false)
		apply(t, GrantTarget{Kind: KindDatabase, Database: "postgres"}, []string{"CONNECT", "TEMPORARY"}, false)
	})
	t.Run("RoleMissing", func(t *testing.T) {
		got, _, err := ObserveGrant(ctx, conn, "rt_nobody", GrantTarget{Kind: KindSchema, Schema: "rt_app"})
		if err != nil || got.RoleExists || !got.ParentExists {
			t.Errorf("observed %+v, %v", got, err)
		}
	})
}

func TestMembershipRoundTrip(t *testing.T) {
	suite.Versions(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := adminConn(ctx, t)
	if _, err := conn.Exec(ctx, `CREATE ROLE rt_mmember; CREATE ROLE rt_mgroup`); err != nil {
		t.Fatal(err)
	}
	got, system, err := ObserveMembership(ctx, conn, "rt_mmember", "rt_mgroup")
	if err != nil || system == "" || !got.RoleExists || !got.GroupExists || got.Member {
		t.Fatalf("before: %+v, %v", got, err)
	}
	want := Membership{Member: true, Admin: true}
	stmts, err := MembershipStatements("rt_mmember", "rt_mgroup", want, got.Membership, false, got.ServerVersion)
	if err != nil {
		t.Fatal(err)
	}
	if err := Exec(ctx, conn, stmts); err != nil {
		t.Fatal(err)
	}
	got, _, err = ObserveMembership(ctx, conn, "rt_mmember", "rt_mgroup")
	if err != nil || !got.Member || !got.Admin {
		t.Fatalf("after: %+v, %v", got, err)
	}
	if stmts, _ := MembershipStatements("rt_mmember", "rt_mgroup", want, got.Membership, true, got.ServerVersion); len(stmts) != 0 {
		t.Errorf("an up-to-date membership needs %v", stmts)
	}
	if err := Exec(ctx, conn, []string{RevokeMembershipStatement("rt_mmember", "rt_mgroup")}); err != nil {
		t.Fatal(err)
	}
	if got, _, _ = ObserveMembership(ctx, conn, "rt_mmember", "rt_mgroup"); got.Member {
		t.Error("still a member after the revoke")
	}
}

// TestMembershipOptionsBesideAnotherGrantor: on PostgreSQL 16+ another
// role may have granted the same membership with other options. The
// admin's GRANT changes only its own grant, so the options are compared
// with that one: one GRANT, then nothing, for a superuser admin (its
// grants are recorded as the bootstrap superuser's) and for a CREATEROLE
// one. Compared with every grant, the other grantor's SET would differ
// from the spec for good, and the GRANT would be sent at every poll.
func TestMembershipOptionsBesideAnotherGrantor(t *testing.T) {
	suite.Versions(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := adminConn(ctx, t)
	var version int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version < Version16 {
		// One grant per membership before 16, and no SET option.
		return
	}
	if _, err := conn.Exec(ctx, `CREATE ROLE og_group; CREATE ROLE og_member; CREATE ROLE og_member2;
		CREATE ROLE og_other CREATEROLE; GRANT og_group TO og_other WITH ADMIN OPTION;
		CREATE ROLE og_admin CREATEROLE; GRANT og_group TO og_admin WITH ADMIN OPTION;
		SET ROLE og_other; GRANT og_group TO og_member WITH SET TRUE; GRANT og_group TO og_member2 WITH SET TRUE; RESET ROLE`); err != nil {
		t.Fatal(err)
	}
	want := Membership{Member: true, Set: ptr.To(false)}
	for name, tc := range map[string]struct{ member, asRole string }{
		"Superuser":  {member: "og_member"},
		"CreateRole": {member: "og_member2", asRole: "og_admin"},
	} {
		t.Run(name, func(t *testing.T) {
			role := "RESET ROLE"
			if tc.asRole != "" {
				role = "SET ROLE " + tc.asRole
			}
			if _, err := conn.Exec(ctx, role); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "RESET ROLE") })
			var sent [][]string
			for range 3 {
				got, _, err := ObserveMembership(ctx, conn, tc.member, "og_group")
				if err != nil {
					t.Fatal(err)
				}
				stmts, err := MembershipStatements(tc.member, "og_group", want, got.Membership, false, got.ServerVersion)
				if err != nil {
					t.Fatal(err)
				}
				if len(stmts) == 0 {
					break
				}
				sent = append(sent, stmts)
				if err := Exec(ctx, conn, stmts); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff([][]string{{`GRANT "og_group" TO "` + tc.member + `" WITH SET FALSE`}}, sent); diff != "" {
				t.Errorf("statements sent until nothing was planned (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDefaultPrivilegesRoundTrip includes provider-sql #458: an entry for
// another schema or object type must not make the wanted one look
// applied.
func TestDefaultPrivilegesRoundTrip(t *testing.T) {
	suite.Versions(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := adminConn(ctx, t)
	if _, err := conn.Exec(ctx, `CREATE ROLE rt_dp_owner; CREATE ROLE rt_dp_ro; CREATE SCHEMA rt_dp; CREATE SCHEMA rt_dp_other;
		ALTER DEFAULT PRIVILEGES FOR ROLE rt_dp_owner IN SCHEMA rt_dp_other GRANT SELECT ON TABLES TO rt_dp_ro;
		ALTER DEFAULT PRIVILEGES FOR ROLE rt_dp_owner IN SCHEMA rt_dp GRANT SELECT ON SEQUENCES TO rt_dp_ro`); err != nil {
		t.Fatal(err)
	}
	target := DefaultPrivilegesTarget{Owner: "rt_dp_owner", Schema: "rt_dp", Kind: KindTable}
	got, system, err := ObserveDefaultPrivileges(ctx, conn, "rt_dp_ro", target)
	if err != nil || system == "" || !got.RoleExists || !got.OwnerExists || !got.SchemaExists {
		t.Fatalf("observed %+v, %v", got, err)
	}
	if len(got.Held) != 0 {
		t.Fatalf("entries for another schema or object type were taken for this one: %v", got.Held)
	}
	w := PrivilegeWant{Privileges: []string{"SELECT"}}
	plan := PlanPrivileges(w, []Held{got.Held})
	if err := Exec(ctx, conn, DefaultPrivilegesStatements("rt_dp_ro", target, plan, false)); err != nil {
		t.Fatal(err)
	}
	got, _, err = ObserveDefaultPrivileges(ctx, conn, "rt_dp_ro", target)
	if err != nil {
		t.Fatal(err)
	}
	if p := PlanPrivileges(w, []Held{got.Held}); !p.Empty() {
		t.Errorf("after applying, the plan is %+v (held %v)", p, got.Held)
	}
	global, _, err := ObserveDefaultPrivileges(ctx, conn, "rt_dp_ro", DefaultPrivilegesTarget{Owner: "rt_dp_owner", Kind: KindTable})
	if err != nil || len(global.Held) != 0 {
		t.Errorf("a schema entry was taken for the database-wide one: %+v, %v", global, err)
	}
}

func TestSchemaRoundTrip(t *testing.T) {
	suite.Versions(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := adminConn(ctx, t)
	if _, err := conn.Exec(ctx, `CREATE ROLE rt_schema_owner`); err != nil {
		t.Fatal(err)
	}
	s := SchemaSettings{Owner: "rt_schema_owner", Comment: "orders"}
	if err := Exec(ctx, conn, CreateSchemaStatements("rt_schema", s, Mark{UID: "u-s"})); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `GRANT USAGE ON SCHEMA rt_schema TO PUBLIC`); err != nil {
		t.Fatal(err)
	}
	got, system, err := ObserveSchema(ctx, conn, "rt_schema")
	if err != nil || got == nil || system == "" {
		t.Fatalf("observed %+v, %v", got, err)
	}
	if diff := cmp.Diff(ObservedSchema{Owner: "rt_schema_owner", Comment: "orders", MarkerOwner: "u-s", PublicPrivileges: []string{"USAGE"}}, *got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	s.RevokePublic = true
	if err := Exec(ctx, conn, UpdateSchemaStatements("rt_schema", s, *got, Mark{UID: "u-s"})); err != nil {
		t.Fatal(err)
	}
	if got, _, _ = ObserveSchema(ctx, conn, "rt_schema"); len(got.PublicPrivileges) != 0 {
		t.Errorf("PUBLIC still holds %v", got.PublicPrivileges)
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE rt_schema.t (id int)`); err != nil {
		t.Fatal(err)
	}
	err = Exec(ctx, conn, []string{DropSchemaStatement("rt_schema", false)})
	if !IsCode(err, CodeDependentObjectsStillExist) {
		t.Fatalf("RESTRICT drop of a non-empty schema: %v", err)
	}
	if want := "table rt_schema.t depends on schema rt_schema"; !strings.Contains(err.Error(), want) {
		t.Errorf("the error %q does not say what blocks the drop (%q)", err, want)
	}
	if err := Exec(ctx, conn, []string{DropSchemaStatement("rt_schema", true)}); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := ObserveSchema(ctx, conn, "rt_schema"); got != nil {
		t.Error("the schema survived DROP … CASCADE")
	}
}

func TestSplitSignature(t *testing.T) {
	type result struct {
		Name string
		Args []string
		OK   bool
	}
	cases := map[string]struct {
		sig  string
		want result
	}{
		"NoArgs":          {sig: "f()", want: result{Name: "f", OK: true}},
		"Spaces":          {sig: "  f ( ) ", want: result{Name: "f", OK: true}},
		"FoldsUnquoted":   {sig: "Add(int, text)", want: result{Name: "add", Args: []string{"int", "text"}, OK: true}},
		"KeepsQuoted":     {sig: `"Add"(int)`, want: result{Name: "Add", Args: []string{"int"}, OK: true}},
		"QuoteInQuoted":   {sig: `"a""b"(int)`, want: result{Name: `a"b`, Args: []string{"int"}, OK: true}},
		"TypmodComma":     {sig: "f(numeric(10,2), text)", want: result{Name: "f", Args: []string{"numeric(10,2)", "text"}, OK: true}},
		"QuotedTypeComma": {sig: `f("my,type", int)`, want: result{Name: "f", Args: []string{`"my,type"`, "int"}, OK: true}},
		"EmptyArg":        {sig: "f(int,)", want: result{Name: "f", Args: []string{"int", ""}, OK: true}},
		"NoParens":        {sig: "f", want: result{}},
		"Unclosed":        {sig: "f(int", want: result{}},
		"UnclosedQuote":   {sig: `"f(int)`, want: result{}},
		"NoName":          {sig: "(int)", want: result{}},
		"Trailing":        {sig: "f(int) x", want: result{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n, args, ok := splitSignature(tc.sig)
			if diff := cmp.Diff(tc.want, result{Name: n, Args: args, OK: ok}); diff != "" {
				t.Errorf("splitSignature(%q) (-want +got):\n%s", tc.sig, diff)
			}
		})
	}
}
