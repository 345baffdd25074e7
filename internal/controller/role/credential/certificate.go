package credential

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/oninstance"
)

// Keys of the connection details of a role that logs in with a
// certificate: the certificate and its key in PEM (what libpq's sslcert
// and sslkey read) and the key again in PKCS #8 DER, which the PostgreSQL
// JDBC driver reads.
const (
	KeyCertificate = "tls.crt"
	KeyPrivateKey  = "tls.key"
	KeyPrivateDER  = "tls.key.pk8"
	// KeyPrivateDERBase64 is KeyPrivateDER in a vault path, whose values
	// are text: the DER key in standard base64.
	KeyPrivateDERBase64 = "tls.key.pk8.base64"
)

// Certificate lifetimes when spec.clientCertificate leaves them out.
const (
	DefaultCertificateDuration = 90 * 24 * time.Hour
	// backdate is how far before its issue a certificate is valid from:
	// the server checks notBefore against its own clock, which may be
	// behind the provider's.
	backdate = 5 * time.Minute
)

// Certificate reports whether mg logs in with a client certificate.
func Certificate(mg *v1alpha1.PostgreSQLRole) bool {
	return Login(mg) && mg.Spec.ForProvider.Authentication == v1alpha1.AuthenticationCertificate
}

// Lifetime is how long mg's certificates are valid, and how long before
// one expires the next is issued.
func Lifetime(mg *v1alpha1.PostgreSQLRole) (duration, renewBefore time.Duration) {
	duration = DefaultCertificateDuration
	c := mg.Spec.ClientCertificate
	if c != nil && c.Duration != nil {
		duration = c.Duration.Duration
	}
	renewBefore = duration / 3
	if c != nil && c.RenewBefore != nil {
		renewBefore = c.RenewBefore.Duration
	}
	return duration, renewBefore
}

// MountPath is where mg's clients mount its connection details.
func MountPath(mg *v1alpha1.PostgreSQLRole) string {
	if c := mg.Spec.ClientCertificate; c != nil && c.MountPath != "" {
		return c.MountPath
	}
	return v1alpha1.DefaultCertificateMountPath
}

// An Authority signs client certificates: an Instance's
// clientCertificateAuthorityRef.
type Authority struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// ParseAuthority reads a CA from its certificate and key in PEM. Errors
// say what is wrong with them, never what the key holds.
func ParseAuthority(certPEM, keyPEM []byte) (*Authority, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// The standard library's message names no key material.
		return nil, errors.Wrap(err, "tls.crt and tls.key are not a certificate and its private key in PEM")
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, errors.Wrap(err, "cannot parse tls.crt")
	}
	if !cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, errors.Errorf("tls.crt (%s) is not a CA certificate: it needs basicConstraints CA:TRUE and the keyCertSign key usage", cert.Subject)
	}
	key, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, errors.New("tls.key cannot sign")
	}
	return &Authority{cert: cert, key: key}, nil
}

// Subject is the CA's subject, as status shows it.
func (a *Authority) Subject() string { return a.cert.Subject.String() }

// An IssuedCertificate is a client certificate with its key.
type IssuedCertificate struct {
	CertPEM, KeyPEM, KeyDER []byte
	Leaf                    *x509.Certificate
}

// Current is the certificate data holds (a role's published connection
// details) when it still logs role in at now: issued by a for role, with
// its key, and not expired; nil when there is none such (none yet,
// another CA's after the platform replaced the CA, another role's,
// expired). due says a new one is to be issued: there is none, or it is
// within renewBefore of its expiry.
func (a *Authority) Current(data map[string][]byte, role string, renewBefore time.Duration, now time.Time) (cur *IssuedCertificate, due bool) {
	certPEM, keyPEM := data[KeyCertificate], data[KeyPrivateKey]
	if len(certPEM) == 0 || len(keyPEM) == 0 {
		return nil, true
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, true
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil || leaf.Subject.CommonName != role {
		return nil, true
	}
	roots := x509.NewCertPool()
	roots.AddCert(a.cert)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return nil, true
	}
	der, err := x509.MarshalPKCS8PrivateKey(pair.PrivateKey)
	if err != nil {
		return nil, true
	}
	return &IssuedCertificate{CertPEM: certPEM, KeyPEM: keyPEM, KeyDER: der, Leaf: leaf}, !now.Before(RenewAt(leaf, renewBefore))
}

// RenewAt is when the certificate after leaf is issued.
func RenewAt(leaf *x509.Certificate, renewBefore time.Duration) time.Time {
	return leaf.NotAfter.Add(-renewBefore)
}

// Issue signs a new certificate for role, valid for duration from now (no
// longer than the CA itself), with a new P-256 key. It refuses when the
// CA expires within renewBefore: each certificate would be due for
// renewal as soon as it was issued.
func (a *Authority) Issue(role string, duration, renewBefore time.Duration, now time.Time) (*IssuedCertificate, error) {
	notAfter := now.Add(duration)
	if a.cert.NotAfter.Before(notAfter) {
		notAfter = a.cert.NotAfter
	}
	if !now.Before(notAfter.Add(-renewBefore)) {
		return nil, errors.Errorf("the client certificate authority %s expires at %s, within the certificates' renewBefore (%s): renew the CA, or shorten spec.clientCertificate.renewBefore",
			a.cert.Subject, a.cert.NotAfter.UTC().Format(time.RFC3339), renewBefore)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, errors.Wrap(err, "cannot generate a key")
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, errors.Wrap(err, "cannot choose a serial number")
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		// The server matches the common name against the role it logs in
		// as (pg_hba.conf's cert method).
		Subject:     pkix.Name{CommonName: role},
		NotBefore:   now.Add(-backdate),
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, key.Public(), a.key)
	if err != nil {
		return nil, errors.Wrap(err, "cannot sign the client certificate")
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, errors.Wrap(err, "cannot parse the client certificate")
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, errors.Wrap(err, "cannot encode the key")
	}
	return &IssuedCertificate{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		KeyDER:  keyDER,
		Leaf:    leaf,
	}, nil
}

// Observation is what status shows of c: never its key.
func (c *IssuedCertificate) Observation(renewBefore time.Duration) *v1alpha1.CertificateObservation {
	return &v1alpha1.CertificateObservation{
		SerialNumber: fmt.Sprintf("%x", c.Leaf.SerialNumber),
		NotAfter:     metav1.NewTime(c.Leaf.NotAfter),
		RenewAt:      metav1.NewTime(RenewAt(c.Leaf, renewBefore)),
		Issuer:       c.Leaf.Issuer.String(),
	}
}

// WithCertificate adds c to d, the connection details of a role without a
// password, and has its uri and jdbc-url name the files clients find
// under mountPath: the certificate, its key and (when d has one) the
// server's CA bundle.
func WithCertificate(d managed.ConnectionDetails, c *IssuedCertificate, mountPath string) (managed.ConnectionDetails, error) {
	d[KeyCertificate] = c.CertPEM
	d[KeyPrivateKey] = c.KeyPEM
	d[KeyPrivateDER] = c.KeyDER
	files := func(key string) string { return path.Join(mountPath, key) }
	u, err := url.Parse(string(d["uri"]))
	if err != nil {
		return nil, errors.Wrap(err, "cannot parse the uri")
	}
	q := u.Query()
	q.Set("sslcert", files(KeyCertificate))
	q.Set("sslkey", files(KeyPrivateKey))
	if len(d["ca.crt"]) > 0 {
		q.Set("sslrootcert", files("ca.crt"))
	}
	u.RawQuery = q.Encode()
	d["uri"] = []byte(u.String())
	jdbc, query, _ := strings.Cut(string(d["jdbc-url"]), "?")
	jq, err := url.ParseQuery(query)
	if err != nil {
		return nil, errors.Wrap(err, "cannot parse the jdbc-url")
	}
	jq.Set("sslcert", files(KeyCertificate))
	jq.Set("sslkey", files(KeyPrivateDER))
	if len(d["ca.crt"]) > 0 {
		jq.Set("sslrootcert", files("ca.crt"))
	}
	d["jdbc-url"] = []byte(jdbc + "?" + jq.Encode())
	return d, nil
}

// Authorities read the client certificate authorities Instances name, in
// the provider's namespace, through secrets (the reader of Instances'
// admin Secrets), and keep each parsed for as long as its Secret's
// version stays the same.
type Authorities struct {
	secrets   client.Reader
	namespace string

	mu     sync.Mutex
	parsed map[string]parsedAuthority
}

type parsedAuthority struct {
	version string
	ca      *Authority
}

// NewAuthorities reads CAs in namespace through secrets.
func NewAuthorities(secrets client.Reader, namespace string) *Authorities {
	return &Authorities{secrets: secrets, namespace: namespace, parsed: map[string]parsedAuthority{}}
}

// Of is the CA in signs client certificates with; an error says why there
// is none (the Instance offers none, the Secret has not opted in, it holds
// no CA).
func (a *Authorities) Of(ctx context.Context, in *v1alpha1.PostgreSQLInstance) (*Authority, error) {
	ref := in.Spec.ClientCertificateAuthorityRef
	if ref == nil {
		return nil, errors.Errorf("PostgreSQLInstance %s offers no client certificates (it has no spec.clientCertificateAuthorityRef): "+
			"ask its admin for one, or log in with a password (forProvider.authentication Password)", in.GetName())
	}
	s, err := oninstance.OptedInSecret(ctx, a.secrets, a.namespace, ref.Name, "client certificate authority",
		v1alpha1.LabelClientCertificateAuthority, "a client certificate authority", "so that no other key of the namespace signs a login; nothing was signed")
	if err != nil {
		return nil, err
	}
	version := string(s.GetUID()) + "/" + s.GetResourceVersion()
	a.mu.Lock()
	p, ok := a.parsed[ref.Name]
	a.mu.Unlock()
	if ok && p.version == version {
		return p.ca, nil
	}
	ca, err := ParseAuthority(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, errors.Wrapf(err, "the client certificate authority Secret %s/%s", a.namespace, ref.Name)
	}
	a.mu.Lock()
	a.parsed[ref.Name] = parsedAuthority{version: version, ca: ca}
	a.mu.Unlock()
	return ca, nil
}

// WithoutPassword has d take out of the connection Secret and vault path
// the password keys that published (what was delivered) still holds: a
// role that moved to a certificate has no password, and a stale one
// would only mislead. A nil value is a key to remove (the Secret's merge
// patch and the vault's publish drop it); once gone, nothing is added, so
// that an unchanged credential is never written again.
func WithoutPassword(d managed.ConnectionDetails, published map[string][]byte) {
	for _, k := range []string{KeyPassword, "pgpass"} {
		if _, ok := published[k]; ok {
			d[k] = nil
		}
	}
}
