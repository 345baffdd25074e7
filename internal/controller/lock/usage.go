package lock

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	protectionv1beta1 "github.com/crossplane/crossplane/apis/v2/protection/v1beta1"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/cluster"
	"github.com/ayatori/provider-postgresql/internal/version"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// UsageAPI says whether Crossplane's protection API is served, asking the
// API server's discovery at most once per TTL: Crossplane may be installed
// (or removed) while the provider runs.
type UsageAPI struct {
	Discovery discovery.DiscoveryInterface
	TTL       time.Duration

	mu      sync.Mutex
	checked time.Time
	served  bool
}

// Served reports whether Usages and ClusterUsages are served.
func (u *UsageAPI) Served() bool {
	if u == nil || u.Discovery == nil {
		return false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if time.Since(u.checked) < u.TTL {
		return u.served
	}
	u.checked = time.Now()
	l, err := u.Discovery.ServerResourcesForGroupVersion(protectionv1beta1.SchemeGroupVersion.String())
	u.served = false
	if err == nil {
		var names []string
		for _, r := range l.APIResources {
			names = append(names, r.Name)
		}
		u.served = slices.Contains(names, "usages") && slices.Contains(names, "clusterusages")
	}
	return u.served
}

// usageFor returns the Usage (ClusterUsage for a ClusterLock) that mirrors
// l, as an unstructured object: the provider does not depend on
// Crossplane's CRDs being installed.
func (r *reconciler) usageFor(l object, target schema.GroupVersionKind) (*unstructured.Unstructured, error) {
	spec := l.GetLockSpec()
	reason := spec.Reason
	if reason == "" {
		// A Usage needs a reason to block deletion on its own.
		reason = fmt.Sprintf("protected by %s %s (provider-postgresql); delete the %s to lift the protection", r.kind.name, r.describe(l, l.GetName()), r.kind.name)
	}
	meta := metav1.ObjectMeta{
		Name: l.GetName(), Namespace: l.GetNamespace(),
		Labels: map[string]string{"app.kubernetes.io/managed-by": "provider-postgresql"},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: r.kind.name, Name: l.GetName(), UID: l.GetUID(), Controller: ptr.To(true),
		}},
	}
	var obj any
	gvk := protectionv1beta1.SchemeGroupVersion.WithKind(protectionv1beta1.UsageKind)
	if r.kind.cluster {
		gvk = protectionv1beta1.SchemeGroupVersion.WithKind(protectionv1beta1.ClusterUsageKind)
		obj = &protectionv1beta1.ClusterUsage{ObjectMeta: meta, Spec: protectionv1beta1.ClusterUsageSpec{
			Of:     protectionv1beta1.Resource{APIVersion: target.GroupVersion().String(), Kind: target.Kind, ResourceRef: &protectionv1beta1.ResourceRef{Name: spec.TargetRef.Name}},
			Reason: &reason,
		}}
	} else {
		obj = &protectionv1beta1.Usage{ObjectMeta: meta, Spec: protectionv1beta1.UsageSpec{
			Of:     protectionv1beta1.NamespacedResource{APIVersion: target.GroupVersion().String(), Kind: target.Kind, ResourceRef: &protectionv1beta1.NamespacedResourceRef{Name: spec.TargetRef.Name}},
			Reason: &reason,
		}}
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, errors.Wrap(err, "cannot build the Usage")
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}

// ensureUsage creates or updates the Usage mirroring l, when Crossplane's
// protection API is served, and records its name in status.
func (r *reconciler) ensureUsage(ctx context.Context, l object, target schema.GroupVersionKind) (string, error) {
	st := l.GetLockStatus()
	if !r.opts.Usages.Served() {
		st.Usage = ""
		return "", nil
	}
	want, err := r.usageFor(l, target)
	if err != nil {
		return "", err
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(want.GroupVersionKind())
	// Read through the API server, not the cache: a provider that may not
	// read Usages (a plain package install) hears so at once, where a
	// cache would wait for an informer that never syncs.
	err = r.reader.Get(ctx, client.ObjectKeyFromObject(want), got)
	if kerrors.IsForbidden(err) {
		st.Usage = ""
		return "no Crossplane " + want.GetKind() + " mirrors it: the provider may not read or write " + want.GetKind() + "s; " + cluster.GrantCommand(version.Version) + " grants it", nil
	}
	switch {
	case kerrors.IsNotFound(err):
		if err := r.kube.Create(ctx, want); err != nil {
			return "", errors.Wrapf(err, "cannot create the Crossplane %s", want.GetKind())
		}
	case err != nil:
		return "", errors.Wrapf(err, "cannot get the Crossplane %s", want.GetKind())
	default:
		if !metav1.IsControlledBy(got, l) {
			return "", errors.Errorf("a Crossplane %s named %s exists and does not belong to this %s; rename one of them", want.GetKind(), want.GetName(), r.kind.name)
		}
		if !equalSpec(got, want) {
			got.Object["spec"] = want.Object["spec"]
			if err := r.kube.Update(ctx, got); err != nil {
				return "", errors.Wrapf(err, "cannot update the Crossplane %s", want.GetKind())
			}
		}
	}
	st.Usage = want.GetName()
	return "", nil
}

// deleteUsage deletes the Usage mirroring l and reports whether it is gone.
func (r *reconciler) deleteUsage(ctx context.Context, l object) (bool, error) {
	if !r.opts.Usages.Served() {
		return true, nil
	}
	u := &unstructured.Unstructured{}
	kind := protectionv1beta1.UsageKind
	if r.kind.cluster {
		kind = protectionv1beta1.ClusterUsageKind
	}
	u.SetGroupVersionKind(protectionv1beta1.SchemeGroupVersion.WithKind(kind))
	err := r.kube.Get(ctx, client.ObjectKey{Namespace: l.GetNamespace(), Name: l.GetName()}, u)
	if kerrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, errors.Wrapf(err, "cannot get the Crossplane %s", kind)
	}
	if !metav1.IsControlledBy(u, l) {
		return true, nil
	}
	if u.GetDeletionTimestamp() == nil {
		if err := r.kube.Delete(ctx, u); err != nil && !kerrors.IsNotFound(err) {
			return false, errors.Wrapf(err, "cannot delete the Crossplane %s", kind)
		}
	}
	return false, nil
}

// equalSpec compares what the provider sets of a Usage's spec, so that
// fields the API server or Crossplane default never cause an update.
func equalSpec(a, b *unstructured.Unstructured) bool {
	for _, f := range []string{"of", "reason"} {
		x, _, _ := unstructured.NestedFieldNoCopy(a.Object, "spec", f)
		y, _, _ := unstructured.NestedFieldNoCopy(b.Object, "spec", f)
		if !equality.Semantic.DeepEqual(x, y) {
			return false
		}
	}
	return true
}
