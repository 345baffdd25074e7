package postgres

import "testing"

func TestParseMarker(t *testing.T) {
	cases := map[string]struct{ stored, comment, uid string }{
		"MarkerOnly":  {"[provider-postgresql uid=abc]", "", "abc"},
		"WithComment": {"hello\n[provider-postgresql uid=abc]", "hello", "abc"},
		"NoMarker":    {"somebody else's role", "somebody else's role", ""},
		"Empty":       {"", "", ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, u := ParseMarker(tc.stored)
			if c != tc.comment || u != tc.uid {
				t.Errorf("ParseMarker(%q) = %q, %q; want %q, %q", tc.stored, c, u, tc.comment, tc.uid)
			}
			if tc.uid != "" && WithMarker(c, u) != tc.stored {
				t.Errorf("WithMarker does not round-trip %q", tc.stored)
			}
		})
	}
}
