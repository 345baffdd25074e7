package role

import (
	"testing"

	"github.com/google/go-cmp/cmp"
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
