package postgres

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// sqlSources are the packages whose SQL runs in the provider's admin
// sessions, tenant databases included.
var sqlSources = []string{".", "../../controller/boundary"}

// A sqlLiteral is a string constant of the code that holds SQL.
type sqlLiteral struct {
	pos  string
	text string
}

// SQLLiterals returns every string literal of the non-test Go files of
// dirs that holds a query (contains SELECT), with its position. The
// hostile-owner test shadows every catalog name they use.
func SQLLiterals(t testing.TB, dirs ...string) []sqlLiteral {
	t.Helper()
	var out []sqlLiteral
	fset := token.NewFileSet()
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(fset, f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(file, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatalf("%s: %v", fset.Position(lit.Pos()), err)
				}
				if isSQL(s) {
					out = append(out, sqlLiteral{pos: fset.Position(lit.Pos()).String(), text: s})
				}
				return true
			})
		}
	}
	return out
}

var (
	quoted = regexp.MustCompile(`'[^']*'`)
	// A name followed by "(": a call, unless syntax or an alias's column
	// list ("AS s(name, …)").
	call  = regexp.MustCompile(`(?i)\b([a-z_][a-z0-9_]*)\s*\(`)
	alias = regexp.MustCompile(`(?i)\bAS\s+$`)
	cast  = regexp.MustCompile(`::\s*("?[A-Za-z_][A-Za-z0-9_]*"?)(\.?)`)
	// A catalog name (pg_…).
	catalogName = regexp.MustCompile(`\b(pg_[a-z_]+)\b`)
	regclass    = regexp.MustCompile(`'([^']*)'::pg_catalog\.regclass`)
	// An alias's column list, whose columns may carry types
	// ("AS s(name text, …)" after a function returning records).
	columns = regexp.MustCompile(`(?i)\bAS\s+\w+\s*\(([^()]*)\)`)
)

// qualifiedAt says whether the name starting at i in s follows a dot: it
// carries its schema.
func qualifiedAt(s string, i int) bool {
	return i > 0 && s[i-1] == '.'
}

// sqlSyntax are the words followed by "(" that are SQL syntax, not
// functions a schema could shadow.
var sqlSyntax = map[string]bool{
	"select": true, "exists": true, "any": true, "all": true, "array": true, "values": true, "coalesce": true,
	"in": true, "not": true, "and": true, "or": true, "filter": true, "over": true, "lateral": true, "from": true,
	"where": true, "join": true, "on": true, "with": true, "case": true, "when": true, "then": true, "else": true,
	"nullif": true, "greatest": true, "least": true, "row": true, "using": true, "is": true, "as": true,
}

// unqualified returns the names in a query that resolve through
// search_path: calls, casts and catalog relations without their schema.
func unqualified(sql string) []string {
	var bad []string
	bare := quoted.ReplaceAllString(sql, "''")
	for _, m := range call.FindAllStringSubmatchIndex(bare, -1) {
		name := bare[m[2]:m[3]]
		if sqlSyntax[strings.ToLower(name)] || qualifiedAt(bare, m[2]) || alias.MatchString(bare[:m[2]]) {
			continue
		}
		bad = append(bad, name+"()")
	}
	for _, m := range cast.FindAllStringSubmatch(bare, -1) {
		if m[2] == "" {
			bad = append(bad, "::"+m[1])
		}
	}
	for _, m := range catalogName.FindAllStringSubmatchIndex(bare, -1) {
		name := bare[m[2]:m[3]]
		if name == "pg_catalog" || name == "pg_temp" || qualifiedAt(bare, m[2]) {
			continue
		}
		bad = append(bad, name)
	}
	for _, m := range columns.FindAllStringSubmatch(bare, -1) {
		for _, col := range strings.Split(m[1], ",") {
			if f := strings.Fields(col); len(f) >= 2 && !strings.HasPrefix(f[1], "pg_catalog.") {
				bad = append(bad, "column type "+f[1])
			}
		}
	}
	for _, m := range regclass.FindAllStringSubmatch(sql, -1) {
		if !strings.Contains(m[1], ".") {
			bad = append(bad, "'"+m[1]+"'::regclass")
		}
	}
	sort.Strings(bad)
	return bad
}

// TestCatalogNamesAreQualified holds every query of the provider to
// pg_dump's rule since CVE-2018-1058: each relation, function and type it
// names carries its schema, so that nothing a database owner creates can
// stand in for a catalog object, whatever search_path a session has. The
// session's pinned search_path (sessionParams) is the second wall; this is
// the first.
func TestCatalogNamesAreQualified(t *testing.T) {
	lits := SQLLiterals(t, sqlSources...)
	if len(lits) < 20 {
		t.Fatalf("found %d queries; the scan is broken", len(lits))
	}
	for _, l := range lits {
		if bad := unqualified(l.text); len(bad) > 0 {
			t.Errorf("%s: not schema-qualified: %s", l.pos, strings.Join(bad, ", "))
		}
	}
}

func TestUnqualified(t *testing.T) {
	cases := map[string]struct {
		sql  string
		want []string
	}{
		"QualifiedEverything": {
			sql: `SELECT pg_catalog.count(*) FROM pg_catalog.pg_roles r WHERE r.rolname = $1::pg_catalog.text AND s.classid = 'pg_catalog.pg_class'::pg_catalog.regclass`,
		},
		"BareRelation": {sql: `SELECT 1 FROM pg_extension e`, want: []string{"pg_extension"}},
		"BareFunction": {sql: `SELECT quote_ident(n.nspname) FROM x`, want: []string{"quote_ident()"}},
		"BareCast":     {sql: `SELECT $1::text`, want: []string{"::text"}},
		"BareRegclass": {sql: `SELECT 'pg_authid'::pg_catalog.regclass`, want: []string{"'pg_authid'::regclass"}},
		"BareColumnType": {
			sql:  `SELECT 1 FROM pg_catalog.jsonb_to_recordset($1) AS s(name pg_catalog.text, args text[])`,
			want: []string{"column type text[]"},
		},
		"SyntaxAndAliases": {
			sql: `SELECT EXISTS (SELECT 1), COALESCE(x, 1), ARRAY(SELECT 1) FROM pg_catalog.unnest($1) WITH ORDINALITY AS n(name, i) WHERE x = ANY($2)`,
		},
		"LiteralsIgnored": {sql: `SELECT pg_catalog.shobj_description(d.oid, 'pg_database')`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, unqualified(tc.sql), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("unqualified(%q): -want +got:\n%s", tc.sql, diff)
			}
		})
	}
}

// isSQL says whether a literal is (part of) a query: queries are built
// from several literals, and each part is checked on its own.
func isSQL(s string) bool {
	for _, m := range []string{"SELECT", "FROM ", "JOIN ", "::"} {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}
