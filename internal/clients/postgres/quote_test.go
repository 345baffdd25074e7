package postgres

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestQuoteLiteralRoundTrip has the server read each quoted literal back:
// what it reads must be exactly the input.
func TestQuoteLiteralRoundTrip(t *testing.T) {
	suite.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := adminConn(ctx, t)
	for _, in := range []string{
		"plain", "it's", `back\slash`, `'; DROP ROLE postgres; --`, `\'`, "$$dollar$$", "ünïcödé", "new\nline", "",
		"a comment\r\n[marker]", "it's\\n not a line break\n", `\n`,
	} {
		for name, quote := range map[string]func(string) string{"QuoteLiteral": QuoteLiteral, "QuoteLiteralOneLine": QuoteLiteralOneLine} {
			var got string
			if err := conn.QueryRow(ctx, "SELECT "+quote(in)).Scan(&got); err != nil {
				t.Errorf("SELECT %s: %v", quote(in), err)
				continue
			}
			if got != in {
				t.Errorf("%s(%q) read back as %q", name, in, got)
			}
		}
		if q := QuoteLiteralOneLine(in); strings.ContainsAny(q, "\n\r") {
			t.Errorf("QuoteLiteralOneLine(%q) = %q spans lines", in, q)
		}
	}
	for _, in := range []string{"MixedCase", `with"quote`, "space name", "select"} {
		rows, err := conn.Query(ctx, "SELECT 1 AS "+QuoteIdentifier(in))
		if err != nil {
			t.Errorf("identifier %q: %v", in, err)
			continue
		}
		got := rows.FieldDescriptions()[0].Name
		rows.Close()
		if got != in {
			t.Errorf("QuoteIdentifier(%q) named the column %q", in, got)
		}
	}
}
