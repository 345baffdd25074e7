package credential

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

// TestPublished is the read step of the lifecycle: which delivery holds a
// role's credential, for each state of its Secret and its vault path.
func TestPublished(t *testing.T) {
	role := func(secret, vault bool) *v1alpha1.PostgreSQLRole {
		r := &v1alpha1.PostgreSQLRole{}
		if secret {
			r.Spec.WriteConnectionSecretToReference = &xpv2.LocalSecretReference{Name: "app"}
		}
		if vault {
			r.Spec.WriteConnectionDetailsToVault = &v1alpha1.VaultPath{Name: "app"}
		}
		return r
	}
	inSecret := map[string][]byte{KeyPassword: []byte("from-secret")}
	inVault := map[string][]byte{KeyPassword: []byte("from-vault")}
	cases := map[string]struct {
		reason        string
		r             *v1alpha1.PostgreSQLRole
		secret, vault map[string][]byte
		want          map[string][]byte
	}{
		"SecretOnly":          {reason: "A role that writes a Secret reads its credential there.", r: role(true, false), secret: inSecret, want: inSecret},
		"SecretNotYetWritten": {reason: "Before the first delivery: nothing, not nil (a generated password follows).", r: role(true, false), want: map[string][]byte{}},
		"VaultOnly":           {reason: "A role that delivers to the vault alone reads the vault.", r: role(false, true), vault: inVault, want: inVault},
		"VaultNotYetWritten":  {reason: "Nothing in the vault yet: nothing.", r: role(false, true), want: map[string][]byte{}},
		"MovingVaultEmpty": {
			reason: "A role moving from its Secret to the vault reads the Secret until the vault holds the credential: the first vault delivery copies it, no new password.",
			r:      role(true, true), secret: inSecret, want: inSecret,
		},
		"MovingVaultHolds": {
			reason: "Once the vault holds the credential it is the source, the Secret its projection.",
			r:      role(true, true), secret: inSecret, vault: inVault, want: inVault,
		},
		"NowhereToDeliver": {reason: "A role that delivers nowhere has nothing published.", r: role(false, false)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, published(tc.r, tc.secret, tc.vault)); diff != "" {
				t.Errorf("%s\npublished (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
