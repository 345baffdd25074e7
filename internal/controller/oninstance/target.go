package oninstance

import (
	"cmp"
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
)

// ConnectionTarget returns how to reach database on an Instance's server as
// its admin: endpoint, TLS and the credentials read from the Secret in the
// provider's namespace. Errors name the Secret and key, never a value.
func ConnectionTarget(ctx context.Context, kube client.Reader, namespace string, in *v1alpha1.PostgreSQLInstance, database string) (postgres.Target, error) {
	ref := in.Spec.AdminCredentialRef
	s := &corev1.Secret{}
	if err := kube.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, s); err != nil {
		return postgres.Target{}, errors.Wrapf(err, "cannot read the admin credentials Secret %s/%s", namespace, ref.Name)
	}
	if s.GetLabels()[v1alpha1.LabelAdminCredential] != "true" {
		return postgres.Target{}, errors.Errorf("the Secret %s/%s has not opted in as an admin credential: label it %s=true if it is meant for this Instance. "+
			"Only Secrets that opt in are read, so that no other Secret of the namespace can be sent to a server; nothing was sent",
			namespace, ref.Name, v1alpha1.LabelAdminCredential)
	}
	user, err := SecretKey(s, cmp.Or(ref.UsernameKey, "username"))
	if err != nil {
		return postgres.Target{}, err
	}
	password, err := SecretKey(s, cmp.Or(ref.PasswordKey, "password"))
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
		Credentials:  postgres.Credentials{Username: string(user), Password: string(password)},
		HomeDatabase: database,
	}, nil
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
