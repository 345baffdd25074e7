// Package secretmemo reads Secrets (and ConfigMaps) the provider does not
// cache whole, once per version: the Instances' admin credentials and CA
// bundles, and login roles' connection Secrets. The cache watches their
// metadata only, so no credential of another application sits in the
// provider's memory; a read reaches the API server only when the object
// changed.
package secretmemo

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

// InstanceSecrets returns the reader every controller resolves an
// Instance's admin credentials and CA bundle with: the Secrets and
// ConfigMaps of the provider's namespace.
//
// Every reconcile of every managed resource connects, so reading them
// afresh cost an API request or two per reconcile: at 2,000 objects and a
// one-minute poll, 33 to 66 a second, each a quorum read in etcd, against
// the provider's own client rate limit. The manager's cache already
// watches every Secret and ConfigMap as metadata only (manager.MetadataCache), so
// it knows, without a request, whether one has changed since it was last
// read: the reader keeps what it last read of each, and reads again only
// when the resourceVersion differs. No new watch of Secret data is opened,
// and nothing is kept but what the provider sends to servers anyway: the
// Secrets and ConfigMaps Instances name, in the provider's namespace only.
// A reader served from memory gets the labels and data, no annotations.
func InstanceSecrets(mgr ctrl.Manager, namespace string) (client.Reader, error) {
	return newMemo(mgr, []string{"Secret", "ConfigMap"}, func(_ string, key client.ObjectKey) bool { return key.Namespace == namespace }, nil)
}

// ConnectionSecrets returns the client the role controller reads and
// writes login roles' connection Secrets with: a Secret whose controller
// is a PostgreSQLRole is read once per version, as in InstanceSecrets;
// every other Secret (a passwordSecretRef's, written by its tenant) and
// every other kind go to c.
//
// A login role's poll read its connection Secret twice (for the password
// it checks, and again in crossplane-runtime's publisher, which compares
// before it writes): two quorum reads per role per poll, 166 a second at
// 5,000 roles and a one-minute poll. What is kept is what the provider
// wrote itself: a Secret a tenant wrote is never kept in memory. A write
// through the client forgets what was read of that Secret, so that a
// password the provider has just written is never answered by the
// version before it while the metadata cache has not yet seen the write.
func ConnectionSecrets(mgr ctrl.Manager, c client.Client) (client.Client, error) {
	m, err := newMemo(mgr, []string{"Secret"}, func(kind string, _ client.ObjectKey) bool { return kind == "Secret" }, controlledByARole)
	if err != nil {
		return nil, err
	}
	return &memoClient{Client: c, memo: m}, nil
}

type memoKey struct {
	kind string
	key  client.ObjectKey
}

// controlledByARole: obj's controller is a PostgreSQLRole, which wrote it.
func controlledByARole(obj client.Object) bool {
	c := metav1.GetControllerOf(obj)
	gvk := v1alpha1.PostgreSQLRoleGroupVersionKind
	return c != nil && c.Kind == gvk.Kind && c.APIVersion == gvk.GroupVersion().String()
}

// A memo reads the Secrets and ConfigMaps that keeps says it keeps from
// api once per version, as meta (a cache of their metadata) sees versions,
// and of those only what kept (when set) says to keep once read.
// Everything else it reads from api. What it read of one that is deleted
// is dropped when meta sees the deletion.
type memo struct {
	keeps func(kind string, key client.ObjectKey) bool
	kept  func(client.Object) bool
	meta  client.Reader
	api   client.Reader

	mu   sync.Mutex
	read map[memoKey]client.Object
}

// newMemo returns a memo of the objects of kinds (Secret, ConfigMap) that
// keeps and kept say it keeps.
func newMemo(mgr ctrl.Manager, kinds []string, keeps func(kind string, key client.ObjectKey) bool, kept func(client.Object) bool) (*memo, error) {
	m := &memo{keeps: keeps, kept: kept, meta: mgr.GetCache(), api: mgr.GetAPIReader(), read: map[memoKey]client.Object{}}
	// Without this, what was read of every Secret ever deleted (every
	// deleted role's) would stay in memory.
	err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		return m.evict(ctx, mgr.GetCache(), kinds)
	}))
	return m, errors.Wrap(err, "cannot add the Secret memo's eviction")
}

// evict forgets what was read of each object of kinds that informers see
// deleted, until ctx ends.
func (m *memo) evict(ctx context.Context, informers cache.Informers, kinds []string) error {
	for _, kind := range kinds {
		i, err := informers.GetInformer(ctx, metadataOf(kind))
		if ctx.Err() != nil {
			// Stopped before the informer synced (a provider shut down
			// right after it started): nothing is wrong, and an error
			// here was logged as one on every such shutdown.
			return nil
		}
		if err != nil {
			return errors.Wrapf(err, "cannot watch %ss for deletions", kind)
		}
		if _, err := i.AddEventHandler(toolscache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) { m.deleted(kind, obj) }}); err != nil {
			return errors.Wrapf(err, "cannot watch %ss for deletions", kind)
		}
	}
	<-ctx.Done()
	return nil
}

// metadataOf is an empty metadata-only object of kind, a core v1 kind.
func metadataOf(kind string) *metav1.PartialObjectMetadata {
	o := &metav1.PartialObjectMetadata{}
	o.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: kind})
	return o
}

// deleted drops what was read of obj, deleted, of kind.
func (m *memo) deleted(kind string, obj any) {
	var key client.ObjectKey
	switch o := obj.(type) {
	case client.Object:
		key = client.ObjectKeyFromObject(o)
	case toolscache.DeletedFinalStateUnknown:
		ns, name, err := toolscache.SplitMetaNamespaceKey(o.Key)
		if err != nil {
			return
		}
		key = client.ObjectKey{Namespace: ns, Name: name}
	default:
		return
	}
	m.forget(kind, key)
}

func (m *memo) forget(kind string, key client.ObjectKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.read, memoKey{kind: kind, key: key})
}

// kindOf is the memo's name of obj's kind, "" for a kind it never keeps.
func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *corev1.Secret:
		return "Secret"
	case *corev1.ConfigMap:
		return "ConfigMap"
	}
	return ""
}

// Get implements client.Reader.
func (m *memo) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	kind := kindOf(obj)
	if kind == "" || !m.keeps(kind, key) {
		return m.api.Get(ctx, key, obj, opts...)
	}
	k := memoKey{kind: kind, key: key}
	current := metadataOf(kind)
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
	case err == nil && m.kept != nil && !m.kept(obj):
		delete(m.read, k)
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

// A memoClient reads what its memo keeps through it, everything else
// through Client, and forgets what it writes.
type memoClient struct {
	client.Client
	memo *memo
}

// Get implements client.Reader.
func (c *memoClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if kind := kindOf(obj); kind != "" && c.memo.keeps(kind, key) {
		return c.memo.Get(ctx, key, obj, opts...)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// wrote forgets obj once it is written: the next read is the API
// server's, whatever the metadata cache has seen by then.
func (c *memoClient) wrote(obj client.Object, err error) error {
	if kind := kindOf(obj); kind != "" {
		c.memo.forget(kind, client.ObjectKeyFromObject(obj))
	}
	return err
}

// Create implements client.Writer.
func (c *memoClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return c.wrote(obj, c.Client.Create(ctx, obj, opts...))
}

// Update implements client.Writer.
func (c *memoClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return c.wrote(obj, c.Client.Update(ctx, obj, opts...))
}

// Patch implements client.Writer.
func (c *memoClient) Patch(ctx context.Context, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
	return c.wrote(obj, c.Client.Patch(ctx, obj, p, opts...))
}

// Delete implements client.Writer.
func (c *memoClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return c.wrote(obj, c.Client.Delete(ctx, obj, opts...))
}
