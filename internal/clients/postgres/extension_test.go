package postgres

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPendingExtensions(t *testing.T) {
	got := map[string]InstalledExtension{"citext": {Name: "citext", Version: "1.6", Schema: "public"}}
	want := []ExtensionSpec{{Name: "citext"}, {Name: "citext", Version: "1.6", Schema: "public"}, {Name: "citext", Schema: "ext"}, {Name: "hstore"}}
	if diff := cmp.Diff([]ExtensionSpec{{Name: "citext", Schema: "ext"}, {Name: "hstore"}}, PendingExtensions(want, got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestUnsafeExtensions(t *testing.T) {
	got := map[string]InstalledExtension{"pg_stat_statements": {Name: "pg_stat_statements", Version: "1.9", Schema: "public"}}
	cases := map[string]struct {
		reason  string
		pending []ExtensionSpec
		facts   map[string]ExtensionFacts
		refused []string
	}{
		"TrustedAnywhere": {
			reason:  "A trusted extension is one the database owner may install itself: nothing is handed over.",
			pending: []ExtensionSpec{{Name: "citext"}},
			facts:   map[string]ExtensionFacts{"citext": {Trusted: true, Schema: "public", Writable: []SchemaWriters{{"public", "pg_database_owner"}}}},
		},
		"UntrustedInAdminSchema": {
			reason:  "No one but superusers and the admin may create objects where the script runs.",
			pending: []ExtensionSpec{{Name: "postgres_fdw", Schema: "ext"}},
			facts:   map[string]ExtensionFacts{"postgres_fdw": {Schema: "ext"}},
		},
		"UntrustedInOwnersSchema": {
			reason:  "The owner could place objects the superuser script resolves.",
			pending: []ExtensionSpec{{Name: "postgres_fdw"}},
			facts:   map[string]ExtensionFacts{"postgres_fdw": {Schema: "public", Writable: []SchemaWriters{{"public", "pg_database_owner"}}}},
			refused: []string{`"postgres_fdw" (role(s) pg_database_owner may create objects in schema "public")`},
		},
		"UntrustedUpdateInPublicSchema": {
			reason:  "An update runs a script too, in the schema the extension is in.",
			pending: []ExtensionSpec{{Name: "pg_stat_statements", Version: "1.10"}},
			facts:   map[string]ExtensionFacts{"pg_stat_statements": {Schema: "public", Writable: []SchemaWriters{{"public", "PUBLIC"}}}},
			refused: []string{`"pg_stat_statements" (role(s) PUBLIC may create objects in schema "public")`},
		},
		"UntrustedRequiringAnExtensionInAWritableSchema": {
			reason:  "The script's search_path holds the schemas of the extensions it requires: one the owner writes to is as dangerous as its own.",
			pending: []ExtensionSpec{{Name: "earthdistance", Schema: "ext"}},
			facts:   map[string]ExtensionFacts{"earthdistance": {Schema: "ext", Writable: []SchemaWriters{{"public", "pg_database_owner"}}}},
			refused: []string{`"earthdistance" (role(s) pg_database_owner may create objects in schema "public" (of an extension it requires))`},
		},
		"UntrustedRequiringAnExtensionCreatedWithIt": {
			reason:  "A required extension created in the same step, in a schema the owner writes to, is on the script's search_path too.",
			pending: []ExtensionSpec{{Name: "cube"}, {Name: "earthdistance", Schema: "ext"}},
			facts: map[string]ExtensionFacts{
				"cube":          {Trusted: true, Schema: "public", Writable: []SchemaWriters{{"public", "pg_database_owner"}}},
				"earthdistance": {Schema: "ext", Requires: []string{"cube"}},
			},
			refused: []string{`"earthdistance" (role(s) pg_database_owner may create objects in schema "public" (of an extension it requires))`},
		},
		"UntrustedMoveOnly": {
			reason:  "SET SCHEMA runs no script.",
			pending: []ExtensionSpec{{Name: "pg_stat_statements", Schema: "ext"}},
			facts:   map[string]ExtensionFacts{"pg_stat_statements": {Schema: "public", Writable: []SchemaWriters{{"public", "PUBLIC"}}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			msg := UnsafeExtensions(tc.pending, got, tc.facts)
			if (msg == "") != (len(tc.refused) == 0) {
				t.Fatalf("%s\nUnsafeExtensions() = %q, want refused %v", tc.reason, msg, tc.refused)
			}
			for _, r := range tc.refused {
				if !strings.Contains(msg, r) {
					t.Errorf("%s\nmessage %q does not name %s", tc.reason, msg, r)
				}
			}
		})
	}
}
