package postgres

import (
	stdcmp "cmp"
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/ayatori/provider-postgresql/internal/fixture/pgserver"
	"github.com/ayatori/provider-postgresql/internal/fixture/pki"
)

// server is the one PostgreSQL server of this test package.
var server *pgserver.Server

// suite is the package's PostgreSQL server, started by the first test
// that declares it needs it.
var suite = pgserver.Suite(func(s *pgserver.Server) { server = s })

func TestMain(m *testing.M) { os.Exit(suite.Run(m)) }

// adminConn opens an admin connection to the test server's postgres
// database for the test, closed when it ends.
func adminConn(ctx context.Context, t *testing.T) *pgx.Conn {
	t.Helper()
	conn, err := server.Connect(ctx, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.WithoutCancel(ctx)) })
	return conn
}

func endpointOf(s *pgserver.Server) Endpoint {
	return Endpoint{Host: s.Host, Hostaddr: s.Hostaddr, Port: s.Port, Database: "postgres", SSLMode: SSLModeVerifyFull, CAPEM: s.CA.CertPEM}
}

func admin(s *pgserver.Server) Credentials {
	return Credentials{Username: s.AdminUser, Password: s.AdminPassword}
}

func connect(ctx context.Context, ep Endpoint, cred Credentials) error {
	cfg, err := ConnConfig(ep, cred)
	if err != nil {
		return err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return ClassifyConnectError(err)
	}
	return conn.Close(ctx)
}

func TestConnectTLS(t *testing.T) {
	suite.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	otherCA, err := pki.NewCA("some other CA")
	if err != nil {
		t.Fatal(err)
	}
	// A server whose certificate lacks 127.0.0.1 as an IP SAN.
	noIPSAN, err := pgserver.Start(ctx, pgserver.Options{IPSANs: []net.IP{net.ParseIP("127.0.0.2")}})
	if err != nil {
		t.Fatal(err)
	}
	defer noIPSAN.Stop() //nolint:errcheck // Test cleanup.
	// A server with TLS off.
	plain, err := pgserver.Start(ctx, pgserver.Options{DisableTLS: true})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Stop() //nolint:errcheck // Test cleanup.

	cases := map[string]struct {
		reason string
		ep     func() Endpoint
		want   error
	}{
		"VerifyFullWithTestCA": {
			reason: "The certificate chains to the CA and carries host and hostaddr.",
			ep:     func() Endpoint { return endpointOf(server) },
		},
		"VerifyFullWithOtherCA": {
			reason: "A certificate that does not chain to the configured CA is refused.",
			ep: func() Endpoint {
				ep := endpointOf(server)
				ep.CAPEM = otherCA.CertPEM
				return ep
			},
			want: ErrUnknownCA,
		},
		"VerifyCAWithOtherCA": {
			reason: "verify-ca checks the chain too.",
			ep: func() Endpoint {
				ep := endpointOf(server)
				ep.SSLMode, ep.CAPEM = SSLModeVerifyCA, otherCA.CertPEM
				return ep
			},
			want: ErrUnknownCA,
		},
		"VerifyFullHostNotInDNSSAN": {
			reason: "A host the certificate does not name is refused.",
			ep: func() Endpoint {
				ep := endpointOf(server)
				ep.Host = "elsewhere.localtest"
				return ep
			},
			want: ErrHostNotInDNSSAN,
		},
		"VerifyCAIgnoresNames": {
			reason: "verify-ca does not check names.",
			ep: func() Endpoint {
				ep := endpointOf(server)
				ep.SSLMode, ep.Host = SSLModeVerifyCA, "elsewhere.localtest"
				return ep
			},
		},
		"VerifyFullHostaddrNotInIPSAN": {
			reason: "With verify-full the dialled address must be an IP SAN.",
			ep:     func() Endpoint { return endpointOf(noIPSAN) },
			want:   ErrHostaddrNotInIPSAN,
		},
		"TLSRefused": {
			reason: "A server without TLS is refused, never fallen back to clear text.",
			ep:     func() Endpoint { return endpointOf(plain) },
			want:   ErrTLSRefused,
		},
		"RequireWithoutCAAcceptsAnyCertificate": {
			reason: "require without a CA bundle encrypts without authenticating, as in libpq.",
			ep: func() Endpoint {
				ep := endpointOf(server)
				ep.SSLMode, ep.CAPEM, ep.Host = SSLModeRequire, nil, "elsewhere.localtest"
				return ep
			},
		},
		"RequireWithCAVerifiesChain": {
			reason: "require with a CA bundle verifies the chain, as in libpq.",
			ep: func() Endpoint {
				ep := endpointOf(server)
				ep.SSLMode, ep.CAPEM = SSLModeRequire, otherCA.CertPEM
				return ep
			},
			want: ErrUnknownCA,
		},
		"DisableOnPlainServer": {
			reason: "sslMode disable connects in clear text.",
			ep: func() Endpoint {
				ep := endpointOf(plain)
				ep.SSLMode, ep.CAPEM = SSLModeDisable, nil
				return ep
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ep := tc.ep()
			cred := Credentials{Username: server.AdminUser, Password: server.AdminPassword}
			switch {
			case strings.HasPrefix(name, "VerifyFullHostaddr"):
				cred = admin(noIPSAN)
			case name == "TLSRefused" || name == "DisableOnPlainServer":
				cred = admin(plain)
			}
			err := connect(ctx, ep, cred)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("%s\nconnect: %v", tc.reason, err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("%s\nconnect: got %v, want %v", tc.reason, err, tc.want)
			}
			if strings.Contains(err.Error(), cred.Password) {
				t.Errorf("the error contains the password: %v", err)
			}
		})
	}
}

func TestConnectionSettings(t *testing.T) {
	suite.Versions(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.Setenv("PGAPPNAME", "from-the-environment")
	t.Setenv("PGSSLMODE", "disable")
	cfg, err := ConnConfig(endpointOf(server), admin(server))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx) //nolint:errcheck // Test cleanup.
	var app, stmt, lock string
	var ssl bool
	if err := conn.QueryRow(ctx, `SELECT current_setting('application_name'), current_setting('statement_timeout'),
		current_setting('lock_timeout'), (SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid())`).Scan(&app, &stmt, &lock, &ssl); err != nil {
		t.Fatal(err)
	}
	got := []any{app, stmt, lock, ssl}
	want := []any{ApplicationName, "1min", "1s", true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("session settings (-want +got):\n%s", diff)
	}
}

func TestTLSConfig(t *testing.T) {
	cases := map[string]struct {
		reason  string
		ep      Endpoint
		wantNil bool
		// wantErr is the sentinel expected; wantAnyErr accepts any error.
		wantErr    error
		wantAnyErr bool
	}{
		"Disable": {
			reason:  "sslMode disable means no TLS configuration at all.",
			ep:      Endpoint{SSLMode: SSLModeDisable, Hostaddr: "127.0.0.1"},
			wantNil: true,
		},
		"InvalidBundle": {
			reason:  "A CA bundle without certificates is an error, not an empty trust store.",
			ep:      Endpoint{SSLMode: SSLModeVerifyFull, Hostaddr: "127.0.0.1", CAPEM: []byte("not a certificate")},
			wantNil: true,
			wantErr: ErrInvalidCABundle,
		},
		"UnknownMode": {
			reason:     "A mode outside the closed set is refused.",
			ep:         Endpoint{SSLMode: "prefer", Hostaddr: "127.0.0.1"},
			wantNil:    true,
			wantAnyErr: true,
		},
		"VerifyFull": {
			reason: "verify-full names the host for SNI.",
			ep:     Endpoint{SSLMode: SSLModeVerifyFull, Host: "db.example", Hostaddr: "127.0.0.1"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg, err := TLSConfig(tc.ep)
			switch {
			case tc.wantAnyErr:
				if err == nil {
					t.Errorf("%s\nTLSConfig: want an error", tc.reason)
				}
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Errorf("%s\nTLSConfig: got %v, want %v", tc.reason, err, tc.wantErr)
				}
			case err != nil:
				t.Errorf("%s\nTLSConfig: %v", tc.reason, err)
			}
			if (cfg == nil) != tc.wantNil {
				t.Errorf("%s\nTLSConfig returned %v, want nil: %t", tc.reason, cfg, tc.wantNil)
			}
			if cfg != nil && cfg.ServerName != tc.ep.Host {
				t.Errorf("%s\nServerName = %q, want %q", tc.reason, cfg.ServerName, tc.ep.Host)
			}
		})
	}
}

func TestConnConfigRejectsBadEndpoint(t *testing.T) {
	cases := map[string]Endpoint{
		"HostaddrNotIP": {Host: "db", Hostaddr: "db.example", Port: 5432, SSLMode: SSLModeVerifyFull},
		"PortZero":      {Host: "db", Hostaddr: "127.0.0.1", Port: 0, SSLMode: SSLModeVerifyFull},
	}
	for name, ep := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := ConnConfig(ep, Credentials{}); err == nil {
				t.Errorf("ConnConfig(%+v) succeeded", ep)
			}
		})
	}
}

func TestRequireAuth(t *testing.T) {
	token := Credentials{Username: "admin", Token: &rotating{}}
	cases := map[string]struct {
		allowed []string
		sslMode string
		cred    Credentials
		want    string
	}{
		"SafeByDefault": {want: "!password,!md5"},
		"MD5Allowed":    {allowed: []string{"md5"}, want: "!password"},
		"ClearText":     {allowed: []string{"password"}, want: "!md5"},
		"Both":          {allowed: []string{"md5", "password"}, want: ""},
		// Managed services take IAM tokens in clear inside TLS: a token
		// may go to a verified server that way, never as MD5.
		"TokenVerifiedFull":        {sslMode: SSLModeVerifyFull, cred: token, want: "!md5"},
		"TokenVerifiedCA":          {sslMode: SSLModeVerifyCA, cred: token, want: "!md5"},
		"TokenVerifiedMD5Allowed":  {sslMode: SSLModeVerifyFull, cred: token, allowed: []string{"md5"}, want: ""},
		"TokenVerifiedAlreadyOpen": {sslMode: SSLModeVerifyFull, cred: token, allowed: []string{"password"}, want: "!md5"},
		"TokenUnverified":          {sslMode: SSLModeRequire, cred: token, want: "!password,!md5"},
		"TokenInClear":             {sslMode: SSLModeDisable, cred: token, want: "!password,!md5"},
		"PasswordVerified":         {sslMode: SSLModeVerifyFull, cred: Credentials{Username: "admin", Password: "pw"}, want: "!password,!md5"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ep := Endpoint{Host: "db", Hostaddr: "127.0.0.1", Port: 5432, SSLMode: stdcmp.Or(tc.sslMode, SSLModeDisable), AllowPasswordMethods: tc.allowed}
			if tc.sslMode == SSLModeVerifyFull || tc.sslMode == SSLModeVerifyCA {
				ca, err := pki.NewCA("a CA")
				if err != nil {
					t.Fatal(err)
				}
				ep.CAPEM = ca.CertPEM
			}
			cfg, err := ConnConfig(ep, tc.cred)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, cfg.RequireAuth); diff != "" {
				t.Errorf("RequireAuth (-want +got):\n%s", diff)
			}
		})
	}
}
