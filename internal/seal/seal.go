// Package seal signs the ownership markers the provider writes on the
// server, so that a resource brought back from a backup is recognised as
// the one a marker names, and no other resource is.
//
// A marker names the UID of the resource that manages the object. A backup
// restored, or a manifest re-applied, makes a resource of the same kind,
// namespace and name with a new UID: the marker then names a resource that
// no longer exists. The seal is a MAC, under a key only the provider holds,
// of the marker's UID and the identity of the resource it was written for.
// A resource whose own identity reproduces the seal of a marker naming a
// vanished UID is that resource's successor; a resource anywhere else (a
// namespace admin's in another namespace, a name chosen to match) cannot
// produce it, and a login that reads the comment learns nothing of the
// namespace or name from it.
package seal

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// SecretName is the Secret, in the provider's namespace, that holds the
// key. Back it up with the Instances' admin credentials: restored without
// it, resources are not recognised and each needs an admin's hand-over.
const SecretName = "provider-postgresql-marker-seal"

// SecretKey is the Secret's data key.
const SecretKey = "key"

// keySize is the size of a key the provider makes, and the least it
// accepts: a MAC's strength is its key's.
const keySize = 32

// sealSize is how much of the MAC a seal keeps: 96 bits, beyond guessing,
// short enough for a comment.
const sealSize = 12

// A Key seals markers. A nil Key seals nothing and recognises nothing.
type Key struct{ secret []byte }

// NewKey returns a Key of secret, which must be at least keySize bytes.
func NewKey(secret []byte) (*Key, error) {
	if len(secret) < keySize {
		return nil, errors.Errorf("a marker seal key has at least %d bytes, this one %d", keySize, len(secret))
	}
	return &Key{secret: append([]byte(nil), secret...)}, nil
}

// An Identity is what a seal binds a marker's UID to: the resource's kind,
// namespace and name, the object on the server it manages (a schema's
// database beside its name), and its origin.
type Identity struct {
	Kind, Namespace, Name string
	Database, Object      string
	// Origin tells apart resources the provider makes for a tenant that
	// reuse a name: the UID of the binding a database and its owner role
	// were provisioned for, which a restore brings back in their spec. A
	// new tenant of the same name is another origin, and never succeeds
	// to a released tenant's data.
	Origin string
}

// Of returns the seal of a marker naming uid, written for id; "" for a
// nil Key.
func (k *Key) Of(id Identity, uid string) string {
	if k == nil {
		return ""
	}
	m := hmac.New(sha256.New, k.secret)
	// Each field is length-prefixed, so that no two different identities
	// write the same bytes.
	for _, f := range []string{id.Kind, id.Namespace, id.Name, id.Database, id.Object, id.Origin, uid} {
		m.Write([]byte(strconv.Itoa(len(f)) + ":" + f))
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:sealSize])
}

// Verify reports whether seal is the one id would have written in a marker
// naming uid. A nil Key, or an empty seal (a marker written before seals),
// verifies nothing.
func (k *Key) Verify(seal string, id Identity, uid string) bool {
	if k == nil || seal == "" {
		return false
	}
	return hmac.Equal([]byte(seal), []byte(k.Of(id, uid)))
}

// Ensure returns the key kept in Secret SecretName of namespace, making the
// Secret with a new random key when there is none. Replicas starting
// together agree: the one whose create loses reads the winner's.
func Ensure(ctx context.Context, c client.Client, namespace string) (*Key, error) {
	s := &corev1.Secret{}
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: SecretName}, s)
	if kerrors.IsNotFound(err) {
		secret := make([]byte, keySize)
		if _, err := rand.Read(secret); err != nil {
			return nil, errors.Wrap(err, "cannot make a marker seal key")
		}
		s = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: SecretName, Labels: map[string]string{"app.kubernetes.io/part-of": "provider-postgresql"}},
			Data:       map[string][]byte{SecretKey: secret},
		}
		err = c.Create(ctx, s)
		if kerrors.IsAlreadyExists(err) {
			err = c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: SecretName}, s)
		}
	}
	if err != nil {
		return nil, errors.Wrapf(err, "cannot read or make the marker seal key, Secret %s/%s", namespace, SecretName)
	}
	k, err := NewKey(s.Data[SecretKey])
	return k, errors.Wrapf(err, "Secret %s/%s, key %q", namespace, SecretName, SecretKey)
}
