package credential

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

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

// TestSameData: the comparison that decides whether a connection Secret
// is written holds what crossplane-runtime's did (cmp.Equal with
// EquateEmpty): absent and empty are the same, any byte or key differs.
func TestSameData(t *testing.T) {
	full := func() map[string][]byte {
		return map[string][]byte{"username": []byte("orders"), "password": []byte("pw"), "ca.crt": []byte("-----BEGIN CERTIFICATE-----")}
	}
	changed := full()
	changed["password"] = []byte("pX")
	extra := full()
	extra["sslmode"] = []byte("verify-full")
	emptyValue := full()
	emptyValue["password"] = nil
	for name, tc := range map[string]struct {
		a, b map[string][]byte
		want bool
	}{
		"Same":              {a: full(), b: full(), want: true},
		"NilAndEmpty":       {a: nil, b: map[string][]byte{}, want: true},
		"OneByte":           {a: full(), b: changed, want: false},
		"AKeyMore":          {a: full(), b: extra, want: false},
		"NilValueAndEmpty":  {a: map[string][]byte{"k": nil}, b: map[string][]byte{"k": {}}, want: true},
		"EmptiedValue":      {a: full(), b: emptyValue, want: false},
		"SomethingAndEmpty": {a: full(), b: nil, want: false},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, SameData(tc.a, tc.b)); diff != "" {
				t.Errorf("SameData (-want +got):\n%s", diff)
			}
			if got := cmp.Equal(tc.a, tc.b, cmpopts.EquateEmpty()); got != tc.want {
				t.Errorf("crossplane-runtime's comparison says %v: the two must agree", got)
			}
		})
	}
}

// BenchmarkSecretComparison: a login role's connection Secret compared
// with what it should hold, at every poll, by crossplane-runtime's
// comparison and by SameData; it reports how many times slower the first
// is.
func BenchmarkSecretComparison(b *testing.B) {
	ca := bytes.Repeat([]byte("MIIBkTCB+wIJAKHBfpegPjMCMA0GCSqGSIb3DQEBCwUAMBExDzANBgNVBAMMBnVu\n"), 18) // A CA bundle's size.
	data := func() map[string][]byte {
		return map[string][]byte{"username": []byte("orders_login"), "password": bytes.Repeat([]byte("p"), 32), "endpoint": []byte("orders.db.internal"),
			"port": []byte("5432"), "database": []byte("orders"), "uri": bytes.Repeat([]byte("u"), 180), "ca.crt": ca}
	}
	x, y := data(), data()
	// 200 comparisons an iteration: make bench runs each benchmark once.
	const n = 200
	measure := func(equal func() bool) time.Duration {
		start := time.Now()
		for range b.N * n {
			if !equal() {
				b.Fatal("the same data compared unequal")
			}
		}
		return time.Since(start) / time.Duration(b.N*n)
	}
	reflection := measure(func() bool { return cmp.Equal(x, y, cmpopts.EquateEmpty()) })
	direct := measure(func() bool { return SameData(x, y) })
	b.ReportMetric(float64(reflection.Microseconds()), "µs-reflection")
	b.ReportMetric(float64(direct.Nanoseconds()), "ns-bytes")
	b.ReportMetric(float64(reflection)/float64(max(direct, 1)), "x-slower-by-reflection")
}

// TestCrossplaneRuntimeSeesNoSecret: crossplane-runtime is told a role
// has no connection Secret, so its publisher (which compares by
// reflection) is never asked; the spec keeps the reference the role
// controller writes to.
func TestCrossplaneRuntimeSeesNoSecret(t *testing.T) {
	r := &v1alpha1.PostgreSQLRole{}
	r.SetWriteConnectionSecretToReference(&xpv2.LocalSecretReference{Name: "orders-conn"})
	if got := r.GetWriteConnectionSecretToReference(); got != nil {
		t.Errorf("GetWriteConnectionSecretToReference() = %+v, want nil: crossplane-runtime would publish the Secret again", got)
	}
	if diff := cmp.Diff(&xpv2.LocalSecretReference{Name: "orders-conn"}, r.Spec.WriteConnectionSecretToReference); diff != "" {
		t.Errorf("spec.writeConnectionSecretToRef (-want +got):\n%s", diff)
	}
}
