// Package openbao writes tenants' credentials to an OpenBao (or Vault) KV
// version 2 secrets engine, where an ExternalSecret in the tenant's
// namespace reads them. It speaks the HTTP API OpenBao and Vault share
// (KV v2 data and metadata, token and Kubernetes auth) with the standard
// library alone: four calls do not earn a client library and its
// dependencies, and every error here is built by this package, so none
// can carry a request body (a password) or a token.
package openbao

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// ErrNotFound is returned by Read for a path that holds no live version.
var ErrNotFound = errors.New("no secret at this path")

// Config says which server and engine to use, and how to log in.
type Config struct {
	// Address is the server's base URL, https://openbao.example:8200.
	Address string
	// CA is a PEM bundle the server's certificate must chain to; empty:
	// the system roots.
	CA []byte
	// Namespace is the server's namespace (OpenBao 2.3+, Vault
	// Enterprise) the engine and the auth method live in; empty: the
	// root namespace.
	Namespace string
	// Mount is the KV v2 engine's mount path, "secret" say.
	Mount string
	// Token, when set, is used as it is (token auth).
	Token string
	// Kubernetes, when set, logs in with a ServiceAccount token.
	Kubernetes *KubernetesAuth
	// Timeout bounds each request; zero: 10 seconds.
	Timeout time.Duration
}

// KubernetesAuth logs in through the Kubernetes auth method with a token
// of the provider's ServiceAccount.
type KubernetesAuth struct {
	// Role is the auth method's role the provider logs in as.
	Role string
	// MountPath is the auth method's mount path; empty: "kubernetes".
	MountPath string
	// Token returns the ServiceAccount token to present, asked at each
	// login: one made for this vault (its audience) that expires soon,
	// not the pod's own, which the API server accepts from anyone who
	// holds it.
	Token func(ctx context.Context) (string, error)
}

// A Client reads and writes KV v2 paths of one engine.
type Client struct {
	cfg  Config
	http *http.Client

	mu      sync.Mutex
	token   string
	expires time.Time
}

// New returns a client for cfg. Nothing is sent until the first call.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.Address)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, errors.Errorf("the OpenBao address %q is not an http(s) URL", cfg.Address)
	}
	if cfg.Mount == "" {
		return nil, errors.New("the OpenBao KV v2 mount is empty")
	}
	if cfg.Token == "" && cfg.Kubernetes == nil {
		return nil, errors.New("no way to log in to OpenBao: set a token or Kubernetes auth")
	}
	cfg.Address = strings.TrimRight(cfg.Address, "/")
	cfg.Mount = strings.Trim(cfg.Mount, "/")
	cfg.Namespace = strings.Trim(cfg.Namespace, "/")
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	t := http.DefaultTransport.(*http.Transport).Clone() //nolint:forcetypeassert // The standard library's default is an *http.Transport.
	t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	if len(cfg.CA) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cfg.CA) {
			return nil, errors.New("the OpenBao CA bundle holds no PEM certificate")
		}
		t.TLSClientConfig.RootCAs = pool
	}
	// Never through a proxy: credentials go to the named server only.
	t.Proxy = nil
	return &Client{cfg: cfg, http: &http.Client{Transport: t, Timeout: cfg.Timeout}, token: cfg.Token}, nil
}

// URL is the API URL of path's data: what a person or a tool reads the
// credential from (with its own token). It carries no authentication. A
// namespace is the first part of its path, which OpenBao and Vault both
// read as the namespace: the URL alone says where the credential is.
func (c *Client) URL(path string) string {
	ns := ""
	if c.cfg.Namespace != "" {
		ns = escape(c.cfg.Namespace) + "/"
	}
	return c.cfg.Address + "/v1/" + ns + c.cfg.Mount + "/data/" + escape(path)
}

// Secret is a path's current version.
type Secret struct {
	Data    map[string]string
	Version int
	// Custom is the path's custom metadata (KV v2 custom_metadata).
	Custom map[string]string
	// Deleted: the current version was deleted; Data is nil (Observe).
	Deleted bool
}

// Read returns path's current version, ErrNotFound when it has none (never
// written, deleted or destroyed).
func (c *Client) Read(ctx context.Context, path string) (*Secret, error) {
	var out struct {
		Data struct {
			Data     map[string]string `json:"data"`
			Metadata struct {
				Version        int               `json:"version"`
				CustomMetadata map[string]string `json:"custom_metadata"`
			} `json:"metadata"`
		} `json:"data"`
	}
	if err := c.do(ctx, http.MethodGet, "/v1/"+c.cfg.Mount+"/data/"+escape(path), nil, &out); err != nil {
		return nil, err
	}
	if out.Data.Data == nil {
		// A deleted version answers 404 on most servers, and data: null on
		// some.
		return nil, ErrNotFound
	}
	return &Secret{Data: out.Data.Data, Version: out.Data.Metadata.Version, Custom: out.Data.Metadata.CustomMetadata}, nil
}

// Observe returns path's metadata with its current version: nil when the
// path has no metadata at all. A path whose current version was deleted
// (a soft delete: older versions stay readable) is returned with Deleted
// set and no Data: it is not free for anyone to take, and its owner's
// next version follows the current one.
func (c *Client) Observe(ctx context.Context, path string) (*Secret, error) {
	s, err := c.Read(ctx, path)
	if !errors.Is(err, ErrNotFound) {
		return s, err
	}
	var out struct {
		Data struct {
			CurrentVersion int               `json:"current_version"`
			CustomMetadata map[string]string `json:"custom_metadata"`
		} `json:"data"`
	}
	err = c.do(ctx, http.MethodGet, "/v1/"+c.cfg.Mount+"/metadata/"+escape(path), nil, &out)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &Secret{Version: out.Data.CurrentVersion, Custom: out.Data.CustomMetadata, Deleted: true}, nil
}

// SetCustom replaces path's custom metadata (creating the path's metadata,
// with no version, if it has none).
func (c *Client) SetCustom(ctx context.Context, path string, custom map[string]string) error {
	return c.do(ctx, http.MethodPost, "/v1/"+c.cfg.Mount+"/metadata/"+escape(path), map[string]any{"custom_metadata": custom}, nil)
}

// Write stores data as a new version of path, only if path's current
// version is still cas (0: path holds none yet), and returns the new
// version. A lost race is an error: the caller reads again.
func (c *Client) Write(ctx context.Context, path string, data map[string]string, cas int) (int, error) {
	body := map[string]any{"data": data, "options": map[string]any{"cas": cas}}
	var out struct {
		Data struct {
			Version int `json:"version"`
		} `json:"data"`
	}
	if err := c.do(ctx, http.MethodPost, "/v1/"+c.cfg.Mount+"/data/"+escape(path), body, &out); err != nil {
		return 0, err
	}
	return out.Data.Version, nil
}

// Destroy deletes path's metadata and every version of it. A path that
// does not exist is not an error.
func (c *Client) Destroy(ctx context.Context, path string) error {
	err := c.do(ctx, http.MethodDelete, "/v1/"+c.cfg.Mount+"/metadata/"+escape(path), nil, nil)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// Versions returns how many versions path's metadata records (0 when the
// path does not exist).
func (c *Client) Versions(ctx context.Context, path string) (int, error) {
	var out struct {
		Data struct {
			CurrentVersion int            `json:"current_version"`
			Versions       map[string]any `json:"versions"`
		} `json:"data"`
	}
	err := c.do(ctx, http.MethodGet, "/v1/"+c.cfg.Mount+"/metadata/"+escape(path), nil, &out)
	if errors.Is(err, ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return len(out.Data.Versions), nil
}

// Health reports whether the server is initialized, unsealed and active
// (sys/health answers 200).
func (c *Client) Health(ctx context.Context) error {
	_, err := c.send(ctx, http.MethodGet, healthPath, "", nil, nil)
	return err
}

// healthPath is the server's health check.
const healthPath = "/v1/sys/health"

// do sends one request with the current token, logging in again once if
// the server refuses the token (expired, revoked).
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	tok, err := c.login(ctx, false)
	if err != nil {
		return err
	}
	status, err := c.send(ctx, method, path, tok, body, out)
	if status == http.StatusForbidden && c.cfg.Kubernetes != nil {
		if tok, err = c.login(ctx, true); err != nil {
			return err
		}
		_, err = c.send(ctx, method, path, tok, body, out)
	}
	return err
}

// send makes one request and decodes its answer into out. Errors name the
// method, the path and the server's own error messages, never a body sent.
func (c *Client) send(ctx context.Context, method, path, token string, body, out any) (int, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, errors.Wrap(err, "cannot encode the request")
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.cfg.Address+path, r)
	if err != nil {
		return 0, errors.Wrapf(err, "cannot build %s %s", method, path)
	}
	if token != "" {
		req.Header.Set("X-Vault-Token", token)
	}
	// The health check is the server's, answered in the root namespace.
	if c.cfg.Namespace != "" && path != healthPath {
		req.Header.Set("X-Vault-Namespace", c.cfg.Namespace)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	rsp, err := c.http.Do(req)
	if err != nil {
		// url.Error names the URL, which holds no secret.
		return 0, errors.Wrapf(err, "OpenBao %s %s", method, path)
	}
	defer rsp.Body.Close() //nolint:errcheck // A read body.
	b, err := io.ReadAll(io.LimitReader(rsp.Body, 1<<20))
	if err != nil {
		return rsp.StatusCode, errors.Wrapf(err, "OpenBao %s %s: cannot read the answer", method, path)
	}
	switch {
	case rsp.StatusCode == http.StatusNotFound:
		return rsp.StatusCode, ErrNotFound
	case rsp.StatusCode >= 300:
		return rsp.StatusCode, errors.Errorf("OpenBao %s %s: %s%s", method, path, rsp.Status, serverErrors(b))
	case out == nil || len(b) == 0:
		return rsp.StatusCode, nil
	}
	return rsp.StatusCode, errors.Wrapf(json.Unmarshal(b, out), "OpenBao %s %s: cannot decode the answer", method, path)
}

// serverErrors are the messages of an error answer ({"errors": [...]}),
// which name what went wrong, never a secret's value.
func serverErrors(b []byte) string {
	var e struct {
		Errors []string `json:"errors"`
	}
	if json.Unmarshal(b, &e) != nil || len(e.Errors) == 0 {
		return ""
	}
	return ": " + strings.Join(e.Errors, "; ")
}

// login returns a token: the configured one, or one from the Kubernetes
// auth method, kept until shortly before it expires or until again asks
// for a new one.
func (c *Client) login(ctx context.Context, again bool) (string, error) {
	k := c.cfg.Kubernetes
	if k == nil {
		return c.cfg.Token, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !again && c.token != "" && time.Now().Before(c.expires) {
		return c.token, nil
	}
	if k.Token == nil {
		return "", errors.New("no ServiceAccount token for OpenBao's Kubernetes auth")
	}
	jwt, err := k.Token(ctx)
	if err != nil {
		return "", errors.Wrap(err, "cannot get a ServiceAccount token for OpenBao's Kubernetes auth")
	}
	mount := k.MountPath
	if mount == "" {
		mount = "kubernetes"
	}
	var out struct {
		Auth struct {
			ClientToken   string `json:"client_token"`
			LeaseDuration int    `json:"lease_duration"`
		} `json:"auth"`
	}
	path := "/v1/auth/" + strings.Trim(mount, "/") + "/login"
	body := map[string]string{"role": k.Role, "jwt": strings.TrimSpace(jwt)}
	if _, err := c.send(ctx, http.MethodPost, path, "", body, &out); err != nil {
		return "", errors.Wrapf(err, "cannot log in to OpenBao as role %q", k.Role)
	}
	if out.Auth.ClientToken == "" {
		return "", errors.Errorf("OpenBao's Kubernetes auth (%s) gave no token for role %q", mount, k.Role)
	}
	c.token = out.Auth.ClientToken
	// Renewed by logging in again, a tenth of its life before it ends.
	life := time.Duration(out.Auth.LeaseDuration) * time.Second
	if life <= 0 {
		// A token without a TTL; a refusal still logs in again.
		life = 24 * time.Hour
	}
	c.expires = time.Now().Add(life - life/10)
	return c.token, nil
}

// escape escapes each segment of a KV path. A segment that is empty, "."
// or ".." becomes "_": a path never climbs out of where it was meant to
// be, whatever a server makes of dot segments.
func escape(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i, p := range parts {
		if p == "" || p == "." || p == ".." {
			p = "_"
		}
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// String describes the client without its token.
func (c *Client) String() string {
	return fmt.Sprintf("OpenBao %s, KV v2 engine %s", c.cfg.Address, c.cfg.Mount)
}
