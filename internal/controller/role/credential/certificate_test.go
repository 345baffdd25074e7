package credential

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
)

// testCA makes a CA valid from notBefore for validity, as PEM; ca says
// whether it may sign certificates.
func testCA(t *testing.T, notBefore time.Time, validity time.Duration, ca bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tenants CA"},
		NotBefore: notBefore, NotAfter: notBefore.Add(validity),
		BasicConstraintsValid: true, IsCA: ca,
	}
	if ca {
		tmpl.KeyUsage = x509.KeyUsageCertSign
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
}

func authority(t *testing.T, notBefore time.Time, validity time.Duration) *Authority {
	t.Helper()
	a, err := ParseAuthority(testCA(t, notBefore, validity, true))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestParseAuthority(t *testing.T) {
	now := time.Now()
	cert, key := testCA(t, now, time.Hour, true)
	leafCert, leafKey := testCA(t, now, time.Hour, false)
	_, otherKey := testCA(t, now, time.Hour, true)
	cases := map[string]struct {
		cert, key []byte
		want      string
	}{
		"CA":        {cert: cert, key: key},
		"NotACA":    {cert: leafCert, key: leafKey, want: "is not a CA certificate"},
		"WrongKey":  {cert: cert, key: otherKey, want: "not a certificate and its private key"},
		"Empty":     {want: "not a certificate and its private key"},
		"KeyAsCert": {cert: key, key: key, want: "not a certificate and its private key"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseAuthority(tc.cert, tc.key)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("ParseAuthority: %q, want an error containing %q", got, tc.want)
			}
			if strings.Contains(got, "PRIVATE KEY") {
				t.Errorf("the error quotes the key: %s", got)
			}
		})
	}
}

// TestCurrent: the certificate delivered is kept until renewBefore its
// expiry, and replaced when it is another CA's, another role's, expired
// or absent; one that still logs in is handed back while it is due.
func TestCurrent(t *testing.T) {
	now := time.Now()
	ca := authority(t, now.Add(-time.Hour), 365*24*time.Hour)
	other := authority(t, now.Add(-time.Hour), 365*24*time.Hour)
	issued, err := ca.Issue("app", time.Hour, 20*time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := other.Issue("app", time.Hour, 20*time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	data := func(c *IssuedCertificate) map[string][]byte {
		return map[string][]byte{KeyCertificate: c.CertPEM, KeyPrivateKey: c.KeyPEM}
	}
	mismatched := data(issued)
	mismatched[KeyPrivateKey] = theirs.KeyPEM
	cases := map[string]struct {
		data     map[string][]byte
		role     string
		at       time.Time
		kept     bool
		wantDue  bool
		describe string
	}{
		"Fresh":          {data: data(issued), role: "app", at: now.Add(time.Minute), kept: true},
		"JustBeforeDue":  {data: data(issued), role: "app", at: now.Add(39 * time.Minute), kept: true},
		"Due":            {data: data(issued), role: "app", at: now.Add(41 * time.Minute), kept: true, wantDue: true},
		"Expired":        {data: data(issued), role: "app", at: now.Add(61 * time.Minute), wantDue: true},
		"AnotherCA":      {data: data(theirs), role: "app", at: now, wantDue: true},
		"AnotherRole":    {data: data(issued), role: "billing", at: now, wantDue: true},
		"NotItsKey":      {data: mismatched, role: "app", at: now, wantDue: true},
		"NoneDelivered":  {data: map[string][]byte{KeyPassword: []byte("x")}, role: "app", at: now, wantDue: true},
		"NothingAtAll":   {role: "app", at: now, wantDue: true},
		"NotYetValid":    {data: data(issued), role: "app", at: now.Add(-10 * time.Minute), wantDue: true},
		"GarbageInPlace": {data: map[string][]byte{KeyCertificate: []byte("x"), KeyPrivateKey: []byte("y")}, role: "app", at: now, wantDue: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cur, due := ca.Current(tc.data, tc.role, 20*time.Minute, tc.at)
			if diff := cmp.Diff(struct{ Kept, Due bool }{tc.kept, tc.wantDue}, struct{ Kept, Due bool }{cur != nil, due}); diff != "" {
				t.Errorf("Current (-want +got):\n%s", diff)
			}
			if cur != nil && string(cur.KeyDER) != string(issued.KeyDER) {
				t.Error("Current did not hand back the delivered key in PKCS #8 DER")
			}
		})
	}
}

func TestIssue(t *testing.T) {
	now := time.Now()
	t.Run("ForTheRoleAndClientsOnly", func(t *testing.T) {
		ca := authority(t, now.Add(-time.Hour), 24*time.Hour)
		c, err := ca.Issue("app", time.Hour, 20*time.Minute, now)
		if err != nil {
			t.Fatal(err)
		}
		got := struct {
			CN       string
			Usage    []x509.ExtKeyUsage
			NotAfter time.Time
			IsCA     bool
		}{c.Leaf.Subject.CommonName, c.Leaf.ExtKeyUsage, c.Leaf.NotAfter, c.Leaf.IsCA}
		want := got
		want.CN, want.Usage, want.NotAfter, want.IsCA = "app", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, now.Add(time.Hour).Truncate(time.Second), false
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("certificate (-want +got):\n%s", diff)
		}
		if c.Leaf.NotBefore.After(now.Add(-time.Minute)) {
			t.Errorf("notBefore %s leaves no room for a server clock behind the provider's", c.Leaf.NotBefore)
		}
		o := c.Observation(20 * time.Minute)
		if o.RenewAt.Time != c.Leaf.NotAfter.Add(-20*time.Minute) || o.SerialNumber == "" || !strings.Contains(o.Issuer, "tenants CA") {
			t.Errorf("observation %+v", o)
		}
	})
	t.Run("NoLongerThanTheCA", func(t *testing.T) {
		ca := authority(t, now.Add(-time.Hour), 2*time.Hour)
		c, err := ca.Issue("app", 90*24*time.Hour, time.Minute, now)
		if err != nil {
			t.Fatal(err)
		}
		if want := now.Add(time.Hour).Truncate(time.Second); !c.Leaf.NotAfter.Equal(want) {
			t.Errorf("notAfter %s, want the CA's %s", c.Leaf.NotAfter, want)
		}
	})
	t.Run("RefusedWhenTheCAExpiresWithinRenewBefore", func(t *testing.T) {
		ca := authority(t, now.Add(-time.Hour), 2*time.Hour)
		_, err := ca.Issue("app", 90*24*time.Hour, 2*time.Hour, now)
		if err == nil || !strings.Contains(err.Error(), "renew the CA") {
			t.Errorf("Issue: %v, want a refusal saying to renew the CA", err)
		}
	})
}

func TestWithCertificate(t *testing.T) {
	now := time.Now()
	ca := authority(t, now.Add(-time.Hour), 24*time.Hour)
	c, err := ca.Issue("app", time.Hour, 20*time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	ep := postgres.Endpoint{Host: "db.example", Hostaddr: "10.0.0.1", Port: 5432, Database: "postgres", SSLMode: "verify-full", CAPEM: []byte("ca")}
	d, err := WithCertificate(Details(ep, "app", "app", ""), c, "/mnt/pg creds")
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(string(d["uri"]))
	if err != nil {
		t.Fatal(err)
	}
	_, jq, _ := strings.Cut(string(d["jdbc-url"]), "?")
	j, err := url.ParseQuery(jq)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{
		"uri user": u.User.String(), "uri sslcert": u.Query().Get("sslcert"), "uri sslkey": u.Query().Get("sslkey"),
		"uri sslrootcert": u.Query().Get("sslrootcert"), "uri hostaddr": u.Query().Get("hostaddr"),
		"jdbc user": j.Get("user"), "jdbc password": j.Get("password"), "jdbc sslcert": j.Get("sslcert"), "jdbc sslkey": j.Get("sslkey"),
		"jdbc sslrootcert": j.Get("sslrootcert"), "jdbc sslmode": j.Get("sslmode"),
	}
	want := map[string]string{
		"uri user": "app", "uri sslcert": "/mnt/pg creds/tls.crt", "uri sslkey": "/mnt/pg creds/tls.key",
		"uri sslrootcert": "/mnt/pg creds/ca.crt", "uri hostaddr": "10.0.0.1",
		"jdbc user": "app", "jdbc password": "", "jdbc sslcert": "/mnt/pg creds/tls.crt", "jdbc sslkey": "/mnt/pg creds/tls.key.pk8",
		"jdbc sslrootcert": "/mnt/pg creds/ca.crt", "jdbc sslmode": "verify-full",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("connection strings (-want +got):\n%s", diff)
	}
	if _, ok := d[KeyPassword]; ok {
		t.Error("a certificate login's details have a password")
	}
	if string(d[KeyCertificate]) != string(c.CertPEM) || string(d[KeyPrivateKey]) != string(c.KeyPEM) || string(d[KeyPrivateDER]) != string(c.KeyDER) {
		t.Error("the certificate and key are not delivered as issued")
	}
}

func TestWithoutPassword(t *testing.T) {
	cases := map[string]struct {
		published map[string][]byte
		want      managed.ConnectionDetails
	}{
		"StillThere": {published: map[string][]byte{KeyPassword: []byte("pw"), "pgpass": []byte("line"), "host": []byte("h")},
			want: managed.ConnectionDetails{"host": []byte("h"), KeyPassword: nil, "pgpass": nil}},
		"GoneAlready": {published: map[string][]byte{"host": []byte("h")}, want: managed.ConnectionDetails{"host": []byte("h")}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := managed.ConnectionDetails{"host": []byte("h")}
			WithoutPassword(d, tc.published)
			if diff := cmp.Diff(tc.want, d); diff != "" {
				t.Errorf("details (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLifetime(t *testing.T) {
	d := func(s string) *metav1.Duration { v, _ := time.ParseDuration(s); return &metav1.Duration{Duration: v} }
	cases := map[string]struct {
		c                *v1alpha1.ClientCertificate
		duration, before time.Duration
		mount            string
	}{
		"Defaults":        {duration: 90 * 24 * time.Hour, before: 30 * 24 * time.Hour, mount: "/etc/postgresql-credentials"},
		"DurationOnly":    {c: &v1alpha1.ClientCertificate{Duration: d("3h")}, duration: 3 * time.Hour, before: time.Hour, mount: "/etc/postgresql-credentials"},
		"AllSet":          {c: &v1alpha1.ClientCertificate{Duration: d("3h"), RenewBefore: d("10m"), MountPath: "/creds"}, duration: 3 * time.Hour, before: 10 * time.Minute, mount: "/creds"},
		"RenewBeforeOnly": {c: &v1alpha1.ClientCertificate{RenewBefore: d("24h")}, duration: 90 * 24 * time.Hour, before: 24 * time.Hour, mount: "/etc/postgresql-credentials"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			mg := &v1alpha1.PostgreSQLRole{Spec: v1alpha1.PostgreSQLRoleSpec{ClientCertificate: tc.c}}
			duration, before := Lifetime(mg)
			if diff := cmp.Diff([]any{tc.duration, tc.before, tc.mount}, []any{duration, before, MountPath(mg)}); diff != "" {
				t.Errorf("Lifetime, MountPath (-want +got):\n%s", diff)
			}
		})
	}
}
