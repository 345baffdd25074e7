package openbao_test

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ayatori/provider-postgresql/internal/clients/openbao"
)

// TestNamespace: with a namespace, every request the client sends, the
// Kubernetes login included, carries it in X-Vault-Namespace, except the
// server's health check; without one, none does; and the credential's URL
// names it. The KV v2 server the other tests run (Vault without
// Enterprise) has no namespaces, so this is checked on the requests sent.
func TestNamespace(t *testing.T) {
	for name, tc := range map[string]struct {
		namespace string
		wantNS    string
		wantURL   string
	}{
		"Root":   {"", "", "/v1/secret/data/postgresql/main/shop/orders"},
		"Nested": {"/team-a/prod/", "team-a/prod", "/v1/team-a/prod/secret/data/postgresql/main/shop/orders"},
	} {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			got := map[string]string{}
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				got[r.Method+" "+r.URL.Path] = r.Header.Get("X-Vault-Namespace")
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				switch {
				case strings.HasSuffix(r.URL.Path, "/login"):
					_, _ = w.Write([]byte(`{"auth": {"client_token": "t", "lease_duration": 600}}`))
				case r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/data/"):
					_, _ = w.Write([]byte(`{"data": {"data": {"username": "orders"}, "metadata": {"version": 1}}}`))
				case r.Method == http.MethodPost && strings.Contains(r.URL.Path, "/data/"):
					_, _ = w.Write([]byte(`{"data": {"version": 2}}`))
				default:
					w.WriteHeader(http.StatusNoContent)
				}
			}))
			defer srv.Close()
			ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
			c, err := openbao.New(openbao.Config{Address: srv.URL, CA: ca, Namespace: tc.namespace, Mount: "secret",
				Kubernetes: &openbao.KubernetesAuth{Role: "provider", Token: func(context.Context) (string, error) { return "jwt", nil }}})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			const path = "postgresql/main/shop/orders"
			if err := c.Health(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Read(ctx, path); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Write(ctx, path, map[string]string{"password": "p"}, 1); err != nil {
				t.Fatal(err)
			}
			if err := c.SetCustom(ctx, path, map[string]string{"owner": "x"}); err != nil {
				t.Fatal(err)
			}
			if err := c.Destroy(ctx, path); err != nil {
				t.Fatal(err)
			}
			want := map[string]string{
				"GET /v1/sys/health":                 "",
				"POST /v1/auth/kubernetes/login":     tc.wantNS,
				"GET /v1/secret/data/" + path:        tc.wantNS,
				"POST /v1/secret/data/" + path:       tc.wantNS,
				"POST /v1/secret/metadata/" + path:   tc.wantNS,
				"DELETE /v1/secret/metadata/" + path: tc.wantNS,
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("X-Vault-Namespace of each request (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(srv.URL+tc.wantURL, c.URL(path)); diff != "" {
				t.Errorf("URL (-want +got):\n%s", diff)
			}
		})
	}
}
