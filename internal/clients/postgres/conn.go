package postgres

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// ApplicationName is set on every connection the provider opens, so its
// sessions can be counted in pg_stat_activity.
const ApplicationName = "provider-postgresql"

// Server-side limits set on every provider session. A cancelled context
// only closes the socket; these make the server give up too.
//
// lockTimeout is short everywhere the provider works: a lock held on
// purpose (by a database owner, in its own database) fails a statement
// within a second, to be retried with back-off, rather than hold one of
// the few sessions that database's work goes through. In the Instance's
// own database it is shorter still (homeLockTimeout). The provider's own
// statements hold what they lock for milliseconds.
const (
	statementTimeout = 60 * time.Second
	lockTimeout      = time.Second
	connectTimeout   = 10 * time.Second
)

// SSL modes, with libpq's meanings.
const (
	SSLModeDisable    = "disable"
	SSLModeRequire    = "require"
	SSLModeVerifyCA   = "verify-ca"
	SSLModeVerifyFull = "verify-full"
)

// An Endpoint says where a server is and how to protect the connection.
type Endpoint struct {
	// Host is the DNS name the certificate is verified against. It is not
	// resolved.
	Host string
	// Hostaddr is the IP address dialled.
	Hostaddr string
	Port     int
	Database string
	SSLMode  string
	// CAPEM, when set, replaces the system pool of trusted CAs.
	CAPEM []byte
	// AllowPasswordMethods lists the weak password methods the server may
	// ask for: "md5" and "password" (clear text). Any other request for
	// them is refused before the password is sent.
	AllowPasswordMethods []string
}

// Credentials of a role.
type Credentials struct {
	Username string
	Password string
	// Token, when set, gives the password of each new connection instead
	// of Password: a short-lived token (package admintoken).
	Token TokenSource
}

// A TokenSource gives the current password of a login whose password is
// a short-lived token.
type TokenSource interface {
	// Token returns the token to log in with now.
	Token(ctx context.Context) (string, error)
	// Forget drops the token held, which the server refused: the next
	// login asks for a new one.
	Forget()
	// ID identifies the source, never the token: pools that log in with
	// one source are one pool (poolKey).
	ID() string
}

// password returns the password c logs in with now.
func (c Credentials) password(ctx context.Context) (string, error) {
	if c.Token == nil {
		return c.Password, nil
	}
	tok, err := c.Token.Token(ctx)
	if err != nil {
		return "", errors.Wrap(err, "cannot get the admin token")
	}
	return tok, nil
}

// Sentinel errors for the ways TLS verification fails, so a condition can
// say which one happened.
var (
	// ErrUnknownCA: the server certificate does not chain to a trusted CA.
	ErrUnknownCA = errors.New("the server certificate is not signed by a trusted CA")
	// ErrHostNotInDNSSAN: no DNS SAN of the certificate matches the host.
	ErrHostNotInDNSSAN = errors.New("the server certificate has no DNS SAN matching endpoint.host")
	// ErrHostaddrNotInIPSAN: no IP SAN of the certificate is the hostaddr.
	ErrHostaddrNotInIPSAN = errors.New("the server certificate has no IP SAN matching endpoint.hostaddr")
	// ErrTLSRefused: TLS is required but the server does not offer it.
	ErrTLSRefused = errors.New("TLS is required by endpoint.sslMode but the server refused it")
	// ErrInvalidCABundle: the CA bundle holds no usable certificate.
	ErrInvalidCABundle = errors.New("the CA bundle holds no PEM certificate")
	// ErrWeakPasswordMethod: the server asked for the password in clear
	// text or as MD5, which the Instance does not allow; it was not sent.
	ErrWeakPasswordMethod = errors.New("the server asked for a password method the Instance does not allow (clear-text password or MD5); the password was not sent. " +
		"Switch the server's pg_hba.conf entry to scram-sha-256 (and re-set the password under password_encryption = scram-sha-256), or accept the risk in the Instance's spec.endpoint.allowPasswordMethods")
	// ErrPasswordRejected: the server refused the login's password.
	ErrPasswordRejected = errors.New("the server rejected the password")
)

// ConnConfig returns a pgx connection configuration for the endpoint.
//
// pgx has no hostaddr: it dials whatever its LookupFunc returns for Host, so
// Host carries the name (for the certificate check) and LookupFunc returns
// the address. Fallbacks are cleared so that no retry without TLS (libpq's
// "prefer") can happen, and nothing is taken from PG* environment variables.
func ConnConfig(ep Endpoint, cred Credentials) (*pgx.ConnConfig, error) {
	// ParseConfig is the only supported way to get a valid config; an
	// explicit empty-ish connection string keeps environment defaults out
	// of everything we then set.
	cfg, err := pgx.ParseConfig("sslmode=disable")
	if err != nil {
		return nil, errors.Wrap(err, "cannot build connection configuration")
	}
	if err := applyEndpoint(&cfg.Config, ep, cred); err != nil {
		return nil, err
	}
	return cfg, nil
}

// applyEndpoint fills a pgconn configuration in place, so pool
// configurations (which embed a pgx.ConnConfig) get the same treatment.
func applyEndpoint(c *pgconn.Config, ep Endpoint, cred Credentials) error {
	addr := net.ParseIP(ep.Hostaddr)
	if addr == nil {
		return errors.Errorf("endpoint.hostaddr %q is not an IP address", ep.Hostaddr)
	}
	if ep.Port < 1 || ep.Port > 65535 {
		return errors.Errorf("endpoint.port %d is out of range", ep.Port)
	}
	tlsCfg, err := TLSConfig(ep)
	if err != nil {
		return err
	}

	c.Host = ep.Host
	c.Port = uint16(ep.Port)
	c.Database = ep.Database
	c.User = cred.Username
	c.Password = cred.Password
	c.TLSConfig = tlsCfg
	c.Fallbacks = nil
	c.ConnectTimeout = connectTimeout
	c.RequireAuth = requireAuth(allowedPasswordMethods(ep, cred))
	hostaddr := addr.String()
	c.LookupFunc = func(context.Context, string) ([]string, error) { return []string{hostaddr}, nil }
	c.RuntimeParams = map[string]string{
		"application_name":  ApplicationName,
		"statement_timeout": strconv.FormatInt(statementTimeout.Milliseconds(), 10),
		"lock_timeout":      strconv.FormatInt(lockTimeout.Milliseconds(), 10),
	}
	return nil
}

// longerTimeout returns, in milliseconds, the time left until ctx's
// deadline when that is longer than the sessions' statement_timeout: an
// operation given a longer deadline (a template copy, REASSIGN OWNED in a
// large database) must not be killed by the server before it, nor run on
// after the client gave up. It leaves a second for the cancel to travel.
func longerTimeout(ctx context.Context) (string, bool) {
	d, ok := ctx.Deadline()
	if !ok {
		return "", false
	}
	left := time.Until(d) - time.Second
	if left <= statementTimeout {
		return "", false
	}
	return strconv.FormatInt(left.Milliseconds(), 10), true
}

// allowedPasswordMethods are the weak password methods a login may answer:
// the endpoint's, and clear text for a token over a verified connection.
// Managed services check IAM tokens that way (RDS, Cloud SQL and Azure all
// ask for the password in clear inside TLS, as they cannot check a token
// they never saw), and the token is short-lived and goes only to a server
// whose certificate was verified; a token over an unverified connection
// (require, disable) keeps the endpoint's rule.
func allowedPasswordMethods(ep Endpoint, cred Credentials) []string {
	verified := ep.SSLMode == SSLModeVerifyFull || ep.SSLMode == SSLModeVerifyCA
	if cred.Token == nil || !verified || slices.Contains(ep.AllowPasswordMethods, "password") {
		return ep.AllowPasswordMethods
	}
	return append(slices.Clone(ep.AllowPasswordMethods), "password")
}

// requireAuth is the pgconn require_auth value refusing the weak password
// methods not allowed: "!password,!md5" by default. Methods that send no
// password (trust, certificates) and SCRAM stay allowed.
func requireAuth(allowed []string) string {
	var refused []string
	for _, m := range []string{"password", "md5"} {
		if !slices.Contains(allowed, m) {
			refused = append(refused, "!"+m)
		}
	}
	return strings.Join(refused, ",")
}

// TLSConfig returns the TLS configuration for an endpoint, or nil for
// sslMode disable.
//
// Verification is done in VerifyConnection rather than by crypto/tls so that
// each failure has its own error: an unknown CA, a host missing from the
// DNS SANs and a hostaddr missing from the IP SANs are different problems
// with different fixes. With a CA bundle, require verifies the chain as
// verify-ca does, as libpq does when a root certificate is present.
func TLSConfig(ep Endpoint) (*tls.Config, error) {
	if ep.SSLMode == SSLModeDisable {
		return nil, nil
	}
	var rootPool *x509.CertPool
	if len(ep.CAPEM) > 0 {
		if rootPool = roots.get(ep.CAPEM); rootPool == nil {
			return nil, ErrInvalidCABundle
		}
	}

	verifyChain, verifyNames := false, false
	switch ep.SSLMode {
	case SSLModeRequire:
		verifyChain = rootPool != nil
	case SSLModeVerifyCA:
		verifyChain = true
	case SSLModeVerifyFull:
		verifyChain, verifyNames = true, true
	default:
		return nil, errors.Errorf("unknown sslMode %q", ep.SSLMode)
	}

	host, hostaddr := ep.Host, net.ParseIP(ep.Hostaddr)
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		ServerName: host,
		// Verified below, in VerifyConnection.
		InsecureSkipVerify: true, //nolint:gosec // Verified in VerifyConnection, as sslMode asks.
		VerifyConnection: func(cs tls.ConnectionState) error {
			if !verifyChain {
				return nil
			}
			if len(cs.PeerCertificates) == 0 {
				return ErrUnknownCA
			}
			leaf := cs.PeerCertificates[0]
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: rootPool, Intermediates: inter}); err != nil {
				return errors.Errorf("%w: %s", ErrUnknownCA, verifyDetail(err))
			}
			if !verifyNames {
				return nil
			}
			if err := leaf.VerifyHostname(host); err != nil {
				return errors.Errorf("%w: host %q, certificate DNS SANs %v", ErrHostNotInDNSSAN, host, leaf.DNSNames)
			}
			for _, ip := range leaf.IPAddresses {
				if ip.Equal(hostaddr) {
					return nil
				}
			}
			return errors.Errorf("%w: hostaddr %s, certificate IP SANs %v", ErrHostaddrNotInIPSAN, hostaddr, leaf.IPAddresses)
		},
	}, nil
}

// verifyDetail keeps the useful part of an x509 verification error.
func verifyDetail(err error) string {
	var ua x509.UnknownAuthorityError
	if errors.As(err, &ua) {
		return "signed by an unknown authority"
	}
	var inv x509.CertificateInvalidError
	if errors.As(err, &inv) {
		return inv.Error()
	}
	return err.Error()
}

// ClassifyConnectError maps a connection error to one of the sentinel
// errors of this package where it is one, so callers can use errors.Is. It
// returns err unchanged otherwise.
func ClassifyConnectError(err error) error {
	if err == nil {
		return nil
	}
	// pgconn reports a refused SSLRequest with a plain error string.
	if strings.Contains(err.Error(), "server refused TLS connection") {
		return errors.Errorf("%w (%w)", ErrTLSRefused, err)
	}
	if strings.Contains(err.Error(), "require_auth check failed") {
		return errors.Errorf("%w (%w)", ErrWeakPasswordMethod, err)
	}
	return err
}
