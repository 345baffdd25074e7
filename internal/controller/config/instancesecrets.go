package config

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
)

// InstanceSecrets returns the reader every controller resolves an
// Instance's admin credentials and CA bundle with: the Secrets and
// ConfigMaps of the provider's namespace.
//
// Every reconcile of every managed resource connects, so reading them
// afresh cost an API request or two per reconcile: at 2,000 objects and a
// one-minute poll, 33 to 66 a second, each a quorum read in etcd, against
// the provider's own client rate limit. The manager's cache already
// watches every Secret and ConfigMap as metadata only (MetadataCache), so
// it knows, without a request, whether one has changed since it was last
// read: the reader keeps what it last read of each, and reads again only
// when the resourceVersion differs. No new watch of Secret data is opened,
// and nothing is kept but what the provider sends to servers anyway: the
// Secrets and ConfigMaps Instances name, in the provider's namespace only.
// A reader served from memory gets the labels and data, no annotations.
func InstanceSecrets(mgr ctrl.Manager, namespace string) client.Reader {
	return &memo{namespace: namespace, meta: mgr.GetCache(), api: mgr.GetAPIReader(), read: map[memoKey]client.Object{}}
}

type memoKey struct {
	kind string
	key  client.ObjectKey
}

// A memo reads the Secrets and ConfigMaps of namespace from api once per
// version, as meta (a cache of their metadata) sees versions. Everything
// else, and those of other namespaces (a tenant's), it reads from api.
type memo struct {
	namespace string
	meta      client.Reader
	api       client.Reader

	mu   sync.Mutex
	read map[memoKey]client.Object
}

// Get implements client.Reader.
func (m *memo) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	kind := ""
	switch obj.(type) {
	case *corev1.Secret:
		kind = "Secret"
	case *corev1.ConfigMap:
		kind = "ConfigMap"
	}
	if kind == "" || key.Namespace != m.namespace {
		return m.api.Get(ctx, key, obj, opts...)
	}
	k := memoKey{kind: kind, key: key}
	current := &metav1.PartialObjectMetadata{}
	current.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: kind})
	if err := m.meta.Get(ctx, key, current); err == nil {
		m.mu.Lock()
		last, ok := m.read[k]
		m.mu.Unlock()
		if ok && last.GetResourceVersion() == current.GetResourceVersion() {
			copyInto(last, obj)
			return nil
		}
	}
	// Changed, new, or gone: the API server says.
	err := m.api.Get(ctx, key, obj, opts...)
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case err == nil:
		// Kept without what is never read: a kubectl-applied Secret's
		// last-applied-configuration annotation holds its data again.
		c := obj.DeepCopyObject().(client.Object) //nolint:forcetypeassert // A copy of a client.Object is one.
		c.SetAnnotations(nil)
		c.SetManagedFields(nil)
		m.read[k] = c
	case resource.IgnoreNotFound(err) == nil:
		delete(m.read, k)
	}
	return err
}

// copyInto copies from, a Secret or ConfigMap kept by the memo, into to,
// of the same kind.
func copyInto(from, to client.Object) {
	switch f := from.(type) {
	case *corev1.Secret:
		f.DeepCopyInto(to.(*corev1.Secret)) //nolint:forcetypeassert // The memo is keyed by kind.
	case *corev1.ConfigMap:
		f.DeepCopyInto(to.(*corev1.ConfigMap)) //nolint:forcetypeassert // As above.
	}
}

// List implements client.Reader, from the API server.
func (m *memo) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return m.api.List(ctx, list, opts...)
}
