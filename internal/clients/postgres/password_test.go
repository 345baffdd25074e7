package postgres

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestSCRAMVerifierKnownAnswer checks the verifier against one computed by
// PostgreSQL itself for the same password, salt and iteration count.
func TestSCRAMVerifierKnownAnswer(t *testing.T) {
	suite.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := adminConn(ctx, t)
	// Let the server hash a password, then recompute its verifier from the
	// salt and iterations it chose.
	if _, err := conn.Exec(ctx, "SET password_encryption = 'scram-sha-256'"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE ROLE scram_known PASSWORD 'correct horse battery staple'"); err != nil {
		t.Fatal(err)
	}
	var stored string
	if err := conn.QueryRow(ctx, "SELECT rolpassword FROM pg_authid WHERE rolname = 'scram_known'").Scan(&stored); err != nil {
		t.Fatal(err)
	}
	// SCRAM-SHA-256$<iterations>:<salt>$<storedkey>:<serverkey>
	head, _, _ := strings.Cut(stored, "$")
	rest := strings.TrimPrefix(stored, head+"$")
	iterSalt, _, _ := strings.Cut(rest, "$")
	_, saltB64, _ := strings.Cut(iterSalt, ":")
	salt, err := base64.StdEncoding.DecodeString(saltB64)
	if err != nil {
		t.Fatal(err)
	}
	got, err := scramVerifier("correct horse battery staple", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if got != stored {
		t.Errorf("scramVerifier = %q, PostgreSQL stored %q", got, stored)
	}
}

// TestSCRAMVerifierLogsIn sets a verifier computed here and logs in with
// the password, with every statement logged: the password never reaches
// the server log.
func TestSCRAMVerifierLogsIn(t *testing.T) {
	suite.Versions(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := server.SetLogStatement(ctx, "all"); err != nil {
		t.Fatal(err)
	}
	defer server.SetLogStatement(ctx, "none") //nolint:errcheck // Test cleanup.
	password, err := GeneratePassword()
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := SCRAMVerifier(password)
	if err != nil {
		t.Fatal(err)
	}
	conn := adminConn(ctx, t)
	if _, err := conn.Exec(ctx, "CREATE ROLE scram_login LOGIN PASSWORD "+QuoteLiteral(verifier)); err != nil {
		t.Fatal(err)
	}
	cfg, err := ConnConfig(endpointOf(server), Credentials{Username: "scram_login", Password: password})
	if err != nil {
		t.Fatal(err)
	}
	login, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("cannot log in with the password whose verifier was set: %v", err)
	}
	_ = login.Close(ctx)
	log, err := server.Log()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "CREATE ROLE scram_login") {
		t.Fatal("the server log does not show the CREATE ROLE: log_statement=all is not in effect")
	}
	if strings.Contains(string(log), password) {
		t.Error("the clear-text password appears in the server log")
	}
}

func TestGeneratePassword(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		p, err := GeneratePassword()
		if err != nil {
			t.Fatal(err)
		}
		if len(p) < 32 {
			t.Fatalf("password of %d characters, want at least 32", len(p))
		}
		if strings.Trim(p, passwordAlphabet) != "" {
			t.Fatalf("password %q holds characters outside letters and digits", p)
		}
		if seen[p] {
			t.Fatal("the same password was generated twice")
		}
		seen[p] = true
	}
}

func TestSCRAMVerifierRefusesNonASCII(t *testing.T) {
	if _, err := SCRAMVerifier("pässword"); !errors.Is(err, ErrPasswordNotASCII) {
		t.Errorf("SCRAMVerifier(non-ASCII) = %v, want ErrPasswordNotASCII", err)
	}
	if _, err := SCRAMVerifier(""); err == nil {
		t.Error("SCRAMVerifier accepted an empty password")
	}
}

func TestVerifierMatches(t *testing.T) {
	v, err := SCRAMVerifier("s3cret-value")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		stored, password string
		want             bool
	}{
		"Same":           {v, "s3cret-value", true},
		"Other":          {v, "other-value", false},
		"MD5":            {"md5a3556571e93b0d20722ba62be61e8c2d", "s3cret-value", false},
		"Empty":          {"", "s3cret-value", false},
		"Malformed":      {"SCRAM-SHA-256$x:y$z", "s3cret-value", false},
		"HugeIterations": {"SCRAM-SHA-256$99999999:c2FsdA==$a:b", "s3cret-value", false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := VerifierMatches(tc.stored, tc.password); got != tc.want {
				t.Errorf("VerifierMatches = %t, want %t", got, tc.want)
			}
		})
	}
}
