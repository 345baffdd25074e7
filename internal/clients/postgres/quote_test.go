package postgres

import (
	"context"
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
	} {
		var got string
		if err := conn.QueryRow(ctx, "SELECT "+QuoteLiteral(in)).Scan(&got); err != nil {
			t.Errorf("SELECT %s: %v", QuoteLiteral(in), err)
			continue
		}
		if got != in {
			t.Errorf("QuoteLiteral(%q) read back as %q", in, got)
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
