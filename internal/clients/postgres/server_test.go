package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestObserveServer(t *testing.T) {
	suite.Versions(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := adminConn(ctx, t)
	if _, err := admin.Exec(ctx, "CREATE ROLE observer_creator LOGIN CREATEDB CREATEROLE PASSWORD 'pw-observer'"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, "CREATE ROLE observer_plain LOGIN PASSWORD 'pw-plain'"); err != nil {
		t.Fatal(err)
	}
	var wantID, wantVersion string
	if err := admin.QueryRow(ctx, "SELECT system_identifier::text, current_setting('server_version') FROM pg_control_system()").Scan(&wantID, &wantVersion); err != nil {
		t.Fatal(err)
	}

	cases := map[string]struct {
		reason         string
		cred           Credentials
		wantPrivileges []bool
		wantSufficient bool
	}{
		"Superuser": {
			reason:         "The bootstrap superuser can do everything.",
			cred:           Credentials{Username: server.AdminUser, Password: server.AdminPassword},
			wantPrivileges: []bool{true, true, true},
			wantSufficient: true,
		},
		"CreateDBAndCreateRole": {
			reason:         "CREATEDB with CREATEROLE is enough without superuser.",
			cred:           Credentials{Username: "observer_creator", Password: "pw-observer"},
			wantPrivileges: []bool{false, true, true},
			wantSufficient: true,
		},
		"PlainRole": {
			reason:         "A plain login role is not enough, and is reported so.",
			cred:           Credentials{Username: "observer_plain", Password: "pw-plain"},
			wantPrivileges: []bool{false, false, false},
			wantSufficient: false,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := NewRegistry(RegistryOptions{})
			defer r.Close()
			tg := target("uid-observe", "postgres")
			tg.Credentials = tc.cred
			p, err := r.Pool(ctx, tg)
			if err != nil {
				t.Fatal(err)
			}
			info, err := ObserveServer(ctx, p)
			if err != nil {
				t.Fatalf("%s\nObserveServer: %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.wantPrivileges, []bool{info.Superuser, info.CreateDB, info.CreateRole}); diff != "" {
				t.Errorf("%s\nsuperuser, createdb, createrole (-want +got):\n%s", tc.reason, diff)
			}
			if info.Sufficient() != tc.wantSufficient {
				t.Errorf("%s\nSufficient() = %t", tc.reason, info.Sufficient())
			}
			if info.SystemIdentifier != wantID {
				t.Errorf("SystemIdentifier = %q, want %q", info.SystemIdentifier, wantID)
			}
			if info.VersionNum < 150000 || info.Version == "" || len(info.Version) > len(wantVersion) {
				t.Errorf("Version = %q (%d), server says %q", info.Version, info.VersionNum, wantVersion)
			}
			found := map[string]bool{}
			for _, e := range info.Extensions {
				found[e.Name] = e.DefaultVersion != ""
			}
			for _, want := range []string{"pgcrypto", "citext", "plpgsql"} {
				if !found[want] {
					t.Errorf("extension %s is not listed with a default version", want)
				}
			}
		})
	}
}
