package openbao_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ayatori/provider-postgresql/internal/clients/openbao"
	"github.com/ayatori/provider-postgresql/internal/fixture/tier"
	"github.com/ayatori/provider-postgresql/internal/fixture/vaultserver"
)

var server *vaultserver.Server

// suite is the package's KV v2 server, started by the first test that
// declares it needs it.
var suite = tier.NewFixture(2*time.Minute, func(ctx context.Context) (func() error, error) {
	dir, err := os.MkdirTemp("", "openbao-test-")
	if err != nil {
		return nil, err
	}
	if server, err = vaultserver.Start(ctx, dir); err != nil {
		return nil, err
	}
	return func() error { server.Stop(); return os.RemoveAll(dir) }, nil
})

func TestMain(m *testing.M) { os.Exit(suite.Run(m)) }

func TestNewRefusesWhatCannotWork(t *testing.T) {
	cases := map[string]struct {
		reason string
		cfg    openbao.Config
		want   string
	}{
		"NotAURL":  {"The address must be an http(s) URL.", openbao.Config{Address: "openbao:8200", Mount: "secret", Token: "t"}, "not an http(s) URL"},
		"NoMount":  {"The KV v2 mount must be named.", openbao.Config{Address: "https://openbao:8200", Token: "t"}, "mount is empty"},
		"NoLogin":  {"A token or Kubernetes auth is needed.", openbao.Config{Address: "https://openbao:8200", Mount: "secret"}, "no way to log in"},
		"BadCA":    {"A CA bundle must hold a certificate.", openbao.Config{Address: "https://openbao:8200", Mount: "secret", Token: "t", CA: []byte("nope")}, "no PEM certificate"},
		"FileURL":  {"Only http and https are spoken.", openbao.Config{Address: "file:///etc/passwd", Mount: "secret", Token: "t"}, "not an http(s) URL"},
		"NoHost":   {"A URL without a host goes nowhere.", openbao.Config{Address: "https://", Mount: "secret", Token: "t"}, "not an http(s) URL"},
		"Accepted": {"A complete configuration is accepted.", openbao.Config{Address: "https://openbao:8200/", Mount: "/secret/", Token: "t"}, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := openbao.New(tc.cfg)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if (tc.want == "") != (err == nil) || !strings.Contains(got, tc.want) {
				t.Errorf("%s\nNew: %v, want an error containing %q", tc.reason, err, tc.want)
			}
		})
	}
}

// TestURL: the credential's URL is the API URL of its data, path segments
// escaped, and carries no token.
func TestURL(t *testing.T) {
	c, err := openbao.New(openbao.Config{Address: "https://openbao.example:8200/", Mount: "secret", Token: "s.very-secret"})
	if err != nil {
		t.Fatal(err)
	}
	got := c.URL("/postgresql/main/shop/orders db/")
	if diff := cmp.Diff("https://openbao.example:8200/v1/secret/data/postgresql/main/shop/orders%20db", got); diff != "" {
		t.Errorf("URL (-want +got):\n%s", diff)
	}
	if climbed := c.URL("postgresql/../../sys/x"); climbed != "https://openbao.example:8200/v1/secret/data/postgresql/_/_/sys/x" {
		t.Errorf("dot segments: URL %s", climbed)
	}
	if strings.Contains(got, "very-secret") || strings.Contains(c.String(), "very-secret") {
		t.Error("the URL or the description carries the token")
	}
}

// TestVersions: a write is a new version only if the path is still at the
// version the writer read; Destroy removes every version; nothing is an
// error twice.
func TestVersions(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	c, err := server.Client()
	if err != nil {
		t.Fatal(err)
	}
	const path = "postgresql/main/shop/orders"
	if _, err := c.Read(ctx, path); !errors.Is(err, openbao.ErrNotFound) {
		t.Fatalf("reading a path never written: %v, want ErrNotFound", err)
	}
	if n, err := c.Versions(ctx, path); err != nil || n != 0 {
		t.Fatalf("versions of a path never written: %d, %v", n, err)
	}
	v1 := map[string]string{"username": "orders", "password": "first-password-value"}
	// Marked first, before any version exists.
	owner := map[string]string{"owner": "uid-1"}
	if err := c.SetCustom(ctx, path, owner); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Write(ctx, path, v1, 0); err != nil || v != 1 {
		t.Fatalf("first write: version %d, %v", v, err)
	}
	got, err := c.Read(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&openbao.Secret{Data: v1, Version: 1, Custom: owner}, got); diff != "" {
		t.Errorf("read back (-want +got):\n%s", diff)
	}
	v2 := map[string]string{"username": "orders", "password": "second-password-value"}
	// A writer that read nothing (cas 0) loses to the one that wrote v1.
	_, err = c.Write(ctx, path, v2, 0)
	if err == nil {
		t.Fatal("a write at a stale version (0, the path is at 1) was accepted")
	}
	if strings.Contains(err.Error(), "second-password-value") || strings.Contains(err.Error(), server.RootToken) {
		t.Errorf("the refusal carries the password or the token: %v", err)
	}
	if v, err := c.Write(ctx, path, v2, 1); err != nil || v != 2 {
		t.Fatalf("second write at version 1: version %d, %v", v, err)
	}
	if n, err := c.Versions(ctx, path); err != nil || n != 2 {
		t.Errorf("versions after two writes: %d, %v", n, err)
	}
	if err := c.Destroy(ctx, path); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(ctx, path); !errors.Is(err, openbao.ErrNotFound) {
		t.Errorf("reading a destroyed path: %v, want ErrNotFound", err)
	}
	if n, err := c.Versions(ctx, path); err != nil || n != 0 {
		t.Errorf("versions of a destroyed path: %d, %v", n, err)
	}
	if err := c.Destroy(ctx, path); err != nil {
		t.Errorf("destroying a path that is gone: %v", err)
	}
}

// TestRefusals: a server whose certificate does not chain to the CA given,
// and a token the server does not know, are refused, and the errors say so
// without the token or the data.
func TestRefusals(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	data := map[string]string{"password": "never-in-an-error"}
	untrusted, err := openbao.New(openbao.Config{Address: server.Address, Mount: vaultserver.Mount, Token: server.RootToken})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := untrusted.Write(ctx, "postgresql/x", data, 0); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a server whose certificate chains to no CA given: %v, want a certificate error", err)
	}
	stranger, err := openbao.New(openbao.Config{Address: server.Address, CA: server.CA, Mount: vaultserver.Mount, Token: "not-a-token-it-knows"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = stranger.Write(ctx, "postgresql/x", data, 0)
	if err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("an unknown token: %v, want 403", err)
	}
	for _, secret := range []string{"never-in-an-error", "not-a-token-it-knows"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the refusal carries %q: %v", secret, err)
		}
	}
}
