package role

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/controller/oninstance"
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
			e := &external{conn: &oninstance.Connection{Target: postgres.Target{Endpoint: postgres.Endpoint{Host: tc.host, Hostaddr: "10.0.0.5", Port: 5432, SSLMode: "verify-full"}}}}
			mg := &v1alpha1.PostgreSQLRole{}
			mg.Spec.WriteConnectionSecretToReference = &xpv2.LocalSecretReference{Name: "app"}
			mg.Spec.ConnectionDatabase = tc.db
			d := e.details(mg, "app", "pw")
			if diff := cmp.Diff(tc.uri, string(d["uri"])); diff != "" {
				t.Errorf("uri (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.jdbcURL, string(d["jdbc-url"])); diff != "" {
				t.Errorf("jdbc-url (-want +got):\n%s", diff)
			}
		})
	}
}
