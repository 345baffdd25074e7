// Package kubetoken asks the API server for short-lived tokens of the
// provider's own ServiceAccount, each for one audience (TokenRequest): the
// token a vault's Kubernetes auth receives is good for that vault alone,
// and for minutes, where the pod's mounted token is good for the API
// server itself, for as long as the pod lives.
package kubetoken

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// DefaultFile is where a pod's ServiceAccount token is mounted: read only
// to learn which ServiceAccount the provider runs as.
const DefaultFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"

// Lifetime is how long a token asked for lives: the shortest the API
// server grants.
const Lifetime = 10 * time.Minute

// A Source gives tokens of one ServiceAccount.
type Source struct {
	kube client.Client
	// file holds a token of the ServiceAccount, whose subject names it.
	file string

	mu     sync.Mutex
	tokens map[string]token
}

type token struct {
	value   string
	renewAt time.Time
}

// New returns the Source of the ServiceAccount whose token is in file
// (empty: DefaultFile), asking through kube.
func New(kube client.Client, file string) *Source {
	if file == "" {
		file = DefaultFile
	}
	return &Source{kube: kube, file: file, tokens: map[string]token{}}
}

// Token returns a token for audience, asked afresh once the one given
// before is past four fifths of its life.
func (s *Source) Token(ctx context.Context, audience string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tokens[audience]; ok && time.Now().Before(t.renewAt) {
		return t.value, nil
	}
	ns, name, err := s.identity()
	if err != nil {
		return "", err
	}
	tr := &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{Audiences: []string{audience}, ExpirationSeconds: ptr.To(int64(Lifetime / time.Second))}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := s.kube.SubResource("token").Create(ctx, sa, tr); err != nil {
		return "", errors.Wrapf(err, "cannot ask the API server for a token of ServiceAccount %s/%s for audience %q", ns, name, audience)
	}
	life := time.Until(tr.Status.ExpirationTimestamp.Time)
	s.tokens[audience] = token{value: tr.Status.Token, renewAt: time.Now().Add(life - life/5)}
	return tr.Status.Token, nil
}

// identity is the namespace and name of the ServiceAccount the token in
// the file was issued to. The token's signature is not checked: it is the
// provider's own, read only for its subject.
func (s *Source) identity() (string, string, error) {
	b, err := os.ReadFile(s.file)
	if err != nil {
		return "", "", errors.Wrap(err, "cannot read the ServiceAccount token to learn which ServiceAccount the provider runs as")
	}
	parts := strings.Split(strings.TrimSpace(string(b)), ".")
	if len(parts) != 3 {
		return "", "", errors.Errorf("%s does not hold a ServiceAccount token (a JWT)", s.file)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", "", errors.Wrapf(err, "%s does not hold a ServiceAccount token (a JWT)", s.file)
	}
	var claims struct {
		Subject string `json:"sub"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return "", "", errors.Wrapf(err, "%s does not hold a ServiceAccount token (a JWT)", s.file)
	}
	rest, ok := strings.CutPrefix(claims.Subject, "system:serviceaccount:")
	ns, name, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 || ns == "" || name == "" {
		return "", "", errors.Errorf("the token in %s is not a ServiceAccount's (its subject is %q)", s.file, claims.Subject)
	}
	return ns, name, nil
}
