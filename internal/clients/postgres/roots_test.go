package postgres

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"testing"

	"github.com/ayatori/provider-postgresql/internal/fixture/pki"
)

// Pools of the same bundle share one parsed CertPool; a different bundle
// (a rotated CA) never gets another's; a bundle without a certificate is
// refused and not kept; and the kept set stays bounded.
func TestRootsParsedOncePerBundle(t *testing.T) {
	a, err := pki.NewCA("a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := pki.NewCA("b")
	if err != nil {
		t.Fatal(err)
	}
	c := &rootsCache{pools: map[[sha256.Size]byte]*x509.CertPool{}}

	pa := c.get(a.CertPEM)
	if pa == nil {
		t.Fatal("a valid bundle was refused")
	}
	if again := c.get(append([]byte(nil), a.CertPEM...)); again != pa {
		t.Error("the same bundle (another copy of its bytes) was parsed again")
	}
	pb := c.get(b.CertPEM)
	if pb == nil || pb == pa {
		t.Fatalf("another CA's bundle got pool %p, the first CA's is %p", pb, pa)
	}
	// Each pool trusts its own CA only.
	ca, err := x509.ParseCertificate(pemBlock(t, b.CertPEM))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.Verify(x509.VerifyOptions{Roots: pa}); err == nil {
		t.Error("CA b verifies against the pool of CA a")
	}
	if _, err := ca.Verify(x509.VerifyOptions{Roots: pb}); err != nil {
		t.Errorf("CA b does not verify against its own pool: %v", err)
	}

	if p := c.get([]byte("not a certificate")); p != nil {
		t.Error("a bundle without a certificate gave a pool")
	}
	if len(c.pools) != 2 {
		t.Errorf("%d bundles kept, want 2 (the refused one is not kept)", len(c.pools))
	}

	for i := range maxRoots + 5 {
		ca, err := pki.NewCA("rotated")
		if err != nil {
			t.Fatal(err)
		}
		if c.get(ca.CertPEM) == nil {
			t.Fatalf("bundle %d refused", i)
		}
		if len(c.pools) > maxRoots {
			t.Fatalf("%d bundles kept, more than %d", len(c.pools), maxRoots)
		}
	}
}

func pemBlock(t *testing.T, b []byte) []byte {
	t.Helper()
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatal("no PEM block")
	}
	return blk.Bytes
}
