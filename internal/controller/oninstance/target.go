package oninstance

import (
	"cmp"
	"context"
	"os"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/admintoken"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
)

// ConnectionTarget returns how to reach database on an Instance's server as
// its admin: endpoint, TLS and the credentials, read from the Secret in the
// provider's namespace or given by the Instance's token source (one of
// tokens, nil where no token source may be used). Errors name the Secret
// and key, never a value.
func ConnectionTarget(ctx context.Context, kube client.Reader, namespace string, tokens *admintoken.Sources, in *v1alpha1.PostgreSQLInstance, database string) (postgres.Target, error) {
	cred, err := adminCredentials(ctx, kube, namespace, tokens, in)
	if err != nil {
		return postgres.Target{}, err
	}
	var ca []byte
	if b := in.Spec.CABundleRef; b != nil {
		if ca, err = CABundle(ctx, kube, namespace, b); err != nil {
			return postgres.Target{}, err
		}
	}
	ep := in.Spec.Endpoint
	return postgres.Target{
		InstanceUID:  string(in.GetUID()),
		InstanceName: in.GetName(),
		Endpoint: postgres.Endpoint{
			Host: ep.Host, Hostaddr: ep.Hostaddr, Port: int(cmp.Or(ep.Port, 5432)), Database: database,
			SSLMode: string(cmp.Or(ep.SSLMode, v1alpha1.SSLModeVerifyFull)), CAPEM: ca,
			AllowPasswordMethods: passwordMethods(ep.AllowPasswordMethods),
		},
		Credentials:  cred,
		HomeDatabase: database,
	}, nil
}

// AdminSecrets are the names of the Secrets of the provider's namespace
// an Instance's admin login reads.
func AdminSecrets(in *v1alpha1.PostgreSQLInstance) []string {
	var out []string
	if ref := in.Spec.AdminCredentialRef; ref != nil {
		out = append(out, ref.Name)
	}
	if ts := in.Spec.AdminTokenSource; ts != nil && ts.Exec != nil && ts.Exec.EnvFromSecretRef != nil {
		out = append(out, ts.Exec.EnvFromSecretRef.Name)
	}
	return out
}

// adminCredentials are the admin login of in.
func adminCredentials(ctx context.Context, kube client.Reader, namespace string, tokens *admintoken.Sources, in *v1alpha1.PostgreSQLInstance) (postgres.Credentials, error) {
	if ts := in.Spec.AdminTokenSource; ts != nil {
		src, err := tokenSource(ctx, kube, namespace, tokens, ts)
		if err != nil {
			return postgres.Credentials{}, err
		}
		return postgres.Credentials{Username: ts.Username, Token: src}, nil
	}
	ref := in.Spec.AdminCredentialRef
	if ref == nil {
		// The CRD refuses an Instance with neither.
		return postgres.Credentials{}, errors.New("the Instance names no admin credential: set spec.adminCredentialRef or spec.adminTokenSource")
	}
	s, err := adminSecret(ctx, kube, namespace, ref.Name, "admin credentials")
	if err != nil {
		return postgres.Credentials{}, err
	}
	user, err := SecretKey(s, cmp.Or(ref.UsernameKey, "username"))
	if err != nil {
		return postgres.Credentials{}, err
	}
	password, err := SecretKey(s, cmp.Or(ref.PasswordKey, "password"))
	if err != nil {
		return postgres.Credentials{}, err
	}
	return postgres.Credentials{Username: string(user), Password: string(password)}, nil
}

// adminSecret reads the Secret name of the provider's namespace, which
// must have opted in as an admin credential; what says what it is for.
func adminSecret(ctx context.Context, kube client.Reader, namespace, name, what string) (*corev1.Secret, error) {
	return OptedInSecret(ctx, kube, namespace, name, what, v1alpha1.LabelAdminCredential, "an admin credential",
		"so that no other Secret of the namespace can be sent to a server; nothing was sent")
}

// OptedInSecret reads the Secret name of the provider's namespace, which
// must carry label with the value "true" (it opted in as role, for the
// reason why); what says what it is read for.
func OptedInSecret(ctx context.Context, kube client.Reader, namespace, name, what, label, role, why string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	if err := kube.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, s); err != nil {
		return nil, errors.Wrapf(err, "cannot read the %s Secret %s/%s", what, namespace, name)
	}
	if s.GetLabels()[label] != "true" {
		return nil, errors.Errorf("the Secret %s/%s has not opted in as %s: label it %s=true if it is meant for this Instance. "+
			"Only Secrets that opt in are read, %s", namespace, name, role, label, why)
	}
	return s, nil
}

// tokenSource is the Source of ts: the same one, with the token it holds,
// for as long as the command, its arguments and environment (the
// Secret's values included) stay the same.
func tokenSource(ctx context.Context, kube client.Reader, namespace string, tokens *admintoken.Sources, ts *v1alpha1.AdminTokenSource) (*admintoken.Source, error) {
	if f := ts.File; f != nil {
		return tokens.File(admintoken.File{Path: f.Path})
	}
	e := ts.Exec
	env := map[string]string{}
	for _, k := range []string{"PATH", "HOME"} {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	var redact []string
	if ref := e.EnvFromSecretRef; ref != nil {
		s, err := adminSecret(ctx, kube, namespace, ref.Name, "admin token command's environment")
		if err != nil {
			return nil, err
		}
		for k, v := range s.Data {
			env[k] = string(v)
			redact = append(redact, string(v))
		}
	}
	for _, v := range e.Env {
		env[v.Name] = v.Value
	}
	vars := make([]string, 0, len(env))
	for k, v := range env {
		vars = append(vars, k+"="+v)
	}
	// In one order: the Source's identity is a digest of them.
	slices.Sort(vars)
	var lifetime time.Duration
	if e.Lifetime != nil {
		lifetime = e.Lifetime.Duration
	}
	return tokens.Exec(admintoken.Exec{Command: e.Command, Args: e.Args, Env: vars, Redact: redact, Lifetime: lifetime})
}

// passwordMethods maps the API's names of weak password methods to
// require_auth's.
func passwordMethods(in []v1alpha1.PasswordMethod) []string {
	out := make([]string, 0, len(in))
	for _, m := range in {
		switch m {
		case v1alpha1.PasswordMethodMD5:
			out = append(out, "md5")
		case v1alpha1.PasswordMethodPassword:
			out = append(out, "password")
		}
	}
	return out
}

// CABundle reads the PEM bundle ref names in namespace (a Secret or a
// ConfigMap).
func CABundle(ctx context.Context, kube client.Reader, namespace string, ref *v1alpha1.CABundleReference) ([]byte, error) {
	key := cmp.Or(ref.Key, "ca.crt")
	nn := types.NamespacedName{Namespace: namespace, Name: ref.Name}
	if CABundleKind(ref) == v1alpha1.CABundleKindConfigMap {
		cm := &corev1.ConfigMap{}
		if err := kube.Get(ctx, nn, cm); err != nil {
			return nil, errors.Wrapf(err, "cannot read the CA bundle ConfigMap %s", nn)
		}
		if v, ok := cm.Data[key]; ok {
			return []byte(v), nil
		}
		if v, ok := cm.BinaryData[key]; ok {
			return v, nil
		}
		return nil, errors.Errorf("the CA bundle ConfigMap %s has no key %q", nn, key)
	}
	s := &corev1.Secret{}
	if err := kube.Get(ctx, nn, s); err != nil {
		return nil, errors.Wrapf(err, "cannot read the CA bundle Secret %s", nn)
	}
	return SecretKey(s, key)
}

// SecretKey is the non-empty value of s's key.
func SecretKey(s *corev1.Secret, key string) ([]byte, error) {
	v, ok := s.Data[key]
	if !ok || len(v) == 0 {
		return nil, errors.Errorf("the Secret %s/%s has no key %q, or it is empty", s.Namespace, s.Name, key)
	}
	return v, nil
}

// CABundleKind is the kind of object ref names (a Secret unless it says
// otherwise).
func CABundleKind(ref *v1alpha1.CABundleReference) v1alpha1.CABundleKind {
	if ref.Kind == "" {
		return v1alpha1.CABundleKindSecret
	}
	return ref.Kind
}
