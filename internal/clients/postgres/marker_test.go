package postgres

import "testing"

func TestParseMarker(t *testing.T) {
	cases := map[string]struct {
		stored, comment string
		mark            Mark
	}{
		"MarkerOnly":  {"[provider-postgresql uid=abc]", "", Mark{UID: "abc"}},
		"WithComment": {"hello\n[provider-postgresql uid=abc]", "hello", Mark{UID: "abc"}},
		"Sealed":      {"hello\n[provider-postgresql uid=abc seal=s3al]", "hello", Mark{UID: "abc", Seal: "s3al"}},
		"NoMarker":    {"somebody else's role", "somebody else's role", Mark{}},
		"Empty":       {"", "", Mark{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, m := ParseMarker(tc.stored)
			if c != tc.comment || m != tc.mark {
				t.Errorf("ParseMarker(%q) = %q, %+v; want %q, %+v", tc.stored, c, m, tc.comment, tc.mark)
			}
			if tc.mark.UID != "" && WithMarker(c, m) != tc.stored {
				t.Errorf("WithMarker does not round-trip %q", tc.stored)
			}
		})
	}
}
