package kubetoken

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestIdentity(t *testing.T) {
	jwt := func(payload string) string {
		return "eyJhbGciOiJSUzI1NiJ9." + base64.RawURLEncoding.EncodeToString([]byte(payload)) + ".c2ln"
	}
	cases := map[string]struct {
		reason  string
		token   string
		want    []string
		wantErr string
	}{
		"ServiceAccount": {
			reason: "A ServiceAccount token's subject names its namespace and name.",
			token:  jwt(`{"sub":"system:serviceaccount:crossplane-system:provider-postgresql","aud":["https://kubernetes.default.svc"]}`) + "\n",
			want:   []string{"crossplane-system", "provider-postgresql"},
		},
		"AUser": {
			reason:  "A token of anyone but a ServiceAccount names none.",
			token:   jwt(`{"sub":"alice"}`),
			wantErr: `its subject is "alice"`,
		},
		"NotAJWT": {
			reason:  "A file that holds no JWT is said to.",
			token:   "not-a-token",
			wantErr: "does not hold a ServiceAccount token",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "token")
			if err := os.WriteFile(file, []byte(tc.token), 0o600); err != nil {
				t.Fatal(err)
			}
			ns, sa, err := New(nil, file).identity()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("%s\nidentity() error %v, want one saying %q", tc.reason, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s\nidentity(): %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, []string{ns, sa}); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
