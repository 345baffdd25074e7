package credential

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
)

func TestPgpassLine(t *testing.T) {
	cases := map[string]struct {
		host, port, user, pw string
		want                 string
	}{
		"Plain":   {host: "db.example", port: "5432", user: "app", pw: "s3cret", want: "db.example:5432:*:app:s3cret\n"},
		"Escaped": {host: "db", port: "5432", user: "app", pw: `a:b\c`, want: `db:5432:*:app:a\:b\\c` + "\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, pgpassLine(tc.host, tc.port, tc.user, tc.pw)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestServiceFragment(t *testing.T) {
	want := "[app]\nhost=db.example\nhostaddr=10.0.0.5\nport=5432\ndbname=orders\nuser=app\nsslmode=verify-full\n"
	if diff := cmp.Diff(want, serviceFragment("app", "db.example", "10.0.0.5", "5432", "orders", "app", "verify-full")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	noAddr := "[app]\nhost=db\nport=5432\ndbname=orders\nuser=app\nsslmode=require\n"
	if diff := cmp.Diff(noAddr, serviceFragment("app", "db", "", "5432", "orders", "app", "require")); diff != "" {
		t.Errorf("without hostaddr (-want +got):\n%s", diff)
	}
}

func TestDetailsURLs(t *testing.T) {
	cases := map[string]struct {
		host, db     string
		uri, jdbcURL string
	}{
		"DNSName": {
			host: "db.example", db: "orders",
			uri:     "postgresql://app:pw@db.example:5432/orders?hostaddr=10.0.0.5&sslmode=verify-full",
			jdbcURL: "jdbc:postgresql://db.example:5432/orders?password=pw&sslmode=verify-full&user=app",
		},
		"IPv6AddressIsBracketed": {
			host: "fd00::5", db: "orders",
			uri:     "postgresql://app:pw@[fd00::5]:5432/orders?hostaddr=10.0.0.5&sslmode=verify-full",
			jdbcURL: "jdbc:postgresql://[fd00::5]:5432/orders?password=pw&sslmode=verify-full&user=app",
		},
		"DatabaseNameIsEscaped": {
			host: "db.example", db: "my orders?",
			uri:     "postgresql://app:pw@db.example:5432/my%20orders%3F?hostaddr=10.0.0.5&sslmode=verify-full",
			jdbcURL: "jdbc:postgresql://db.example:5432/my%20orders%3F?password=pw&sslmode=verify-full&user=app",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := Details(postgres.Endpoint{Host: tc.host, Hostaddr: "10.0.0.5", Port: 5432, SSLMode: "verify-full"}, tc.db, "app", "pw")
			if diff := cmp.Diff(tc.uri, string(d["uri"])); diff != "" {
				t.Errorf("uri (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.jdbcURL, string(d["jdbc-url"])); diff != "" {
				t.Errorf("jdbc-url (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDetailsKeys(t *testing.T) {
	ep := postgres.Endpoint{Host: "db", Port: 5432, SSLMode: "require", Database: "postgres"}
	cases := map[string]struct {
		reason string
		ep     postgres.Endpoint
		db, pw string
		want   []string
	}{
		"WithPassword": {
			reason: "A password is handed out in every form clients take.",
			ep:     ep, pw: "pw",
			want: []string{"database", "host", "hostaddr", "jdbc-url", "password", "pg_service.conf", "pgpass", "port", "sslmode", "uri", "username"},
		},
		"WithoutPassword": {
			reason: "A login without a password the provider manages gets no password key, and no pgpass line.",
			ep:     ep,
			want:   []string{"database", "host", "hostaddr", "jdbc-url", "pg_service.conf", "port", "sslmode", "uri", "username"},
		},
		"WithCA": {
			reason: "The Instance's CA bundle goes with the details, so clients can verify the server.",
			ep:     postgres.Endpoint{Host: "db", Port: 5432, SSLMode: "verify-full", CAPEM: []byte("-----BEGIN CERTIFICATE-----")},
			pw:     "pw",
			want:   []string{"ca.crt", "database", "host", "hostaddr", "jdbc-url", "password", "pg_service.conf", "pgpass", "port", "sslmode", "uri", "username"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := Details(tc.ep, tc.db, "app", tc.pw)
			got := slices.Sorted(maps.Keys(d))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nkeys (-want +got):\n%s", tc.reason, diff)
			}
			if tc.db == "" && string(d["database"]) != tc.ep.Database {
				t.Errorf("with no database named, the details name %q, want the endpoint's %q", d["database"], tc.ep.Database)
			}
		})
	}
}
