// Package lock runs Locks and ClusterLocks: deletion guards for objects of
// the provider's API group. A Lock keeps its name in the target's
// database.ayatori.ddupan.top/locked annotation, which the shipped
// admission policy enforces; where Crossplane's protection API is served it
// also owns a Usage (ClusterUsage for a ClusterLock) that protects the
// target the Crossplane way. A Lock is Active only while the policy is
// installed and a binding of it with validationActions [Deny] covers the
// target.
package lock

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/cluster"
	"github.com/ayatori/provider-postgresql/internal/controller/activation"
	"github.com/ayatori/provider-postgresql/internal/controller/config"
	"github.com/ayatori/provider-postgresql/internal/controller/locked"
)

// Finalizer holds a Lock until its entry is gone from the target and its
// Usage is deleted.
const Finalizer = v1alpha1.Group + "/lock"

// timeout bounds one reconcile.
const timeout = time.Minute

// An object is a Lock or a ClusterLock.
type object interface {
	client.Object
	GetLockSpec() v1alpha1.LockSpec
	GetLockStatus() *v1alpha1.LockStatus
	SetConditions(c ...xpv2.Condition)
	GetCondition(ct xpv2.ConditionType) xpv2.Condition
}

// kind describes Locks or ClusterLocks.
type kind struct {
	name    string
	new     func() object
	cluster bool
	// targets are the provider's own kinds a lock of this kind may
	// protect, watched so that a target appearing later is locked at once.
	targets []client.Object
}

var (
	lockKind = kind{
		name: v1alpha1.LockKind, new: func() object { return &v1alpha1.Lock{} },
		targets: targets(false),
	}
	clusterLockKind = kind{
		name: v1alpha1.ClusterLockKind, new: func() object { return &v1alpha1.ClusterLock{} }, cluster: true,
		targets: targets(true),
	}
)

// targets are the lockable kinds of a scope: a Lock protects namespaced
// kinds, a ClusterLock cluster-scoped ones.
func targets(cluster bool) []client.Object {
	var out []client.Object
	for _, k := range v1alpha1.KindsWhere(func(k v1alpha1.KindInfo) bool { return k.Lockable && k.Cluster == cluster }) {
		out = append(out, k.New())
	}
	return out
}

// Options configure the Lock controllers.
type Options struct {
	// Policy reports whether the admission policy is in place.
	Policy *PolicyChecker
	// Usages says whether Crossplane's protection API is served.
	Usages *UsageAPI
	// Resync is how often a Lock is checked again without an event (the
	// policy or Crossplane may come or go).
	Resync time.Duration
}

// Setup adds the Lock controller to mgr. It checks the policy and
// Crossplane's API again at every poll interval.
func Setup(mgr ctrl.Manager, c config.Config) error { return setup(mgr, c, lockKind) }

// SetupClusterLock adds the ClusterLock controller to mgr.
func SetupClusterLock(mgr ctrl.Manager, c config.Config) error { return setup(mgr, c, clusterLockKind) }

func setup(mgr ctrl.Manager, c config.Config, k kind) error {
	d, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return errors.Wrap(err, "cannot create a discovery client")
	}
	ttl := min(c.PollInterval, 30*time.Second)
	o := Options{
		Policy: &PolicyChecker{Reader: mgr.GetAPIReader(), TTL: ttl},
		Usages: &UsageAPI{Discovery: d, TTL: ttl},
		Resync: c.PollInterval,
	}
	name := strings.ToLower(k.name)
	r := &reconciler{
		kube: mgr.GetClient(), reader: mgr.GetAPIReader(), mapper: mgr.GetRESTMapper(), scheme: mgr.GetScheme(), kind: k, opts: o,
		log:    c.Logger.WithValues("controller", name),
		record: event.NewAPIRecorder(mgr.GetEventRecorderFor(name)), //nolint:staticcheck // crossplane-runtime's recorder takes record.EventRecorder.
	}
	b := ctrl.NewControllerManagedBy(mgr).Named(name).WithOptions(c.ForControllerRuntime()).For(k.new())
	// A target kind that is not active yet is watched once it is.
	var watches []activation.Watch
	for _, t := range k.targets {
		watches = append(watches, activation.Watch{Object: t, Handler: handler.EnqueueRequestsFromMapFunc(r.locksOf), Metadata: true})
	}
	return activation.Complete(mgr, c.Gate, c.Logger.WithValues("controller", name), b, r, watches...)
}

type reconciler struct {
	kube   client.Client
	reader client.Reader
	mapper apimeta.RESTMapper
	// scheme knows the provider's own kinds, served or not.
	scheme *runtime.Scheme
	kind   kind
	opts   Options
	log    logging.Logger
	record event.Recorder
}

// locksOf maps a target to the locks of this kind that name it.
func (r *reconciler) locksOf(ctx context.Context, obj client.Object) []reconcile.Request {
	gvk := obj.GetObjectKind().GroupVersionKind()
	var list client.ObjectList = &v1alpha1.LockList{}
	if r.kind.cluster {
		list = &v1alpha1.ClusterLockList{}
	}
	if err := r.kube.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	items, _ := apimeta.ExtractList(list)
	var reqs []reconcile.Request
	for _, i := range items {
		l, ok := i.(object)
		if !ok {
			continue
		}
		t := l.GetLockSpec().TargetRef
		if t.Name == obj.GetName() && (gvk.Kind == "" || t.Kind == gvk.Kind) {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: l.GetNamespace(), Name: l.GetName()}})
		}
	}
	return reqs
}

func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	l := r.kind.new()
	if err := r.kube.Get(ctx, req.NamespacedName, l); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !l.GetDeletionTimestamp().IsZero() {
		return r.release(ctx, l)
	}
	if !controllerutil.ContainsFinalizer(l, Finalizer) {
		orig := l.DeepCopyObject().(client.Object) //nolint:forcetypeassert // A copy of a client.Object.
		controllerutil.AddFinalizer(l, Finalizer)
		if err := r.kube.Patch(ctx, l, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return reconcile.Result{}, errors.Wrap(err, "cannot add the Lock's finalizer")
		}
	}
	res, err := r.protect(ctx, l)
	if err != nil {
		l.SetConditions(xpv2.ReconcileError(err))
	} else {
		l.SetConditions(xpv2.ReconcileSuccess())
	}
	l.GetLockStatus().Stamp(l.GetGeneration())
	// The status is this controller's alone: a merge patch of all of it
	// never loses to a reconcile that read a stale copy.
	patch, serr := json.Marshal(map[string]any{"status": l.GetLockStatus()})
	if serr == nil {
		serr = r.kube.Status().Patch(ctx, l, client.RawPatch(types.MergePatchType, patch))
	}
	if serr != nil {
		return reconcile.Result{}, errors.Wrap(errors.Join(err, serr), "cannot update the Lock's status")
	}
	return res, err
}

// protect annotates the target, mirrors the Lock as a Usage and reports
// whether deletes are really refused.
func (r *reconciler) protect(ctx context.Context, l object) (reconcile.Result, error) {
	st := l.GetLockStatus()
	st.Active = false
	gvk, resource, err := r.target(l)
	if err != nil {
		l.SetConditions(v1alpha1.NotReady(v1alpha1.ReasonInvalidTarget, err.Error()))
		// An unknown kind may be defined later (the tenant XRD).
		return reconcile.Result{RequeueAfter: r.opts.Resync}, nil
	}
	ref := l.GetLockSpec().TargetRef
	t, err := r.annotate(ctx, l, gvk, true)
	if kerrors.IsNotFound(err) {
		l.SetConditions(v1alpha1.NotReady(v1alpha1.ReasonMissingReference,
			fmt.Sprintf("%s %s does not exist (yet); it is protected as soon as it does", ref.Kind, r.describe(l, ref.Name))))
		return reconcile.Result{RequeueAfter: r.opts.Resync}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	uid := string(t.GetUID())
	if st.TargetUID != uid {
		r.record.Event(l, event.Normal("Protected", fmt.Sprintf("%s %s carries this Lock in its %s annotation", ref.Kind, r.describe(l, ref.Name), v1alpha1.AnnotationLocked)))
	}
	st.TargetUID = uid
	note, err := r.ensureUsage(ctx, l, gvk)
	if err != nil {
		return reconcile.Result{}, err
	}
	ok, why := r.opts.Policy.Covers(ctx, Target{
		Group: gvk.Group, Version: gvk.Version, Resource: resource,
		Namespace: t.GetNamespace(), Name: t.GetName(), Labels: t.GetLabels(),
	})
	if !ok {
		l.SetConditions(v1alpha1.NotReady(v1alpha1.ReasonPolicyMissing,
			fmt.Sprintf("%s %s is annotated, but deletes are NOT refused: %s", ref.Kind, r.describe(l, ref.Name), why)))
		// Checked again sooner than a protected Lock: a missing guard
		// is worth noticing as soon as it is in place (the policy is
		// read at most once per its TTL anyway).
		return reconcile.Result{RequeueAfter: min(r.opts.Resync, 15*time.Second)}, nil
	}
	st.Active = true
	msg := fmt.Sprintf("deleting %s %s is refused while this Lock exists", ref.Kind, r.describe(l, ref.Name))
	if reason := l.GetLockSpec().Reason; reason != "" {
		msg += " (reason: " + oneLine(reason) + ")"
	}
	if st.Usage != "" {
		msg += "; Crossplane Usage " + st.Usage + " protects it too"
	}
	if note != "" {
		msg += "; " + note
	}
	l.SetConditions(xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionTrue, Reason: v1alpha1.ReasonLockActive, Message: msg, LastTransitionTime: metav1.Now()})
	return reconcile.Result{RequeueAfter: r.opts.Resync}, nil
}

// release removes the Lock's entry from its target and its Usage, then
// lets the Lock go.
func (r *reconciler) release(ctx context.Context, l object) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(l, Finalizer) {
		return reconcile.Result{}, nil
	}
	if gvk, _, err := r.target(l); err == nil {
		if _, err := r.annotate(ctx, l, gvk, false); err != nil && !kerrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		ref := l.GetLockSpec().TargetRef
		r.record.Event(l, event.Normal("Released", fmt.Sprintf("%s %s no longer carries this Lock", ref.Kind, r.describe(l, ref.Name))))
	}
	gone, err := r.deleteUsage(ctx, l)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !gone {
		// Crossplane removes a Usage's finalizer once it let go of the
		// target; until then the target is not deletable through
		// Crossplane, so the Lock waits too.
		return reconcile.Result{RequeueAfter: 2 * time.Second}, nil
	}
	orig := l.DeepCopyObject().(client.Object) //nolint:forcetypeassert // A copy of a client.Object.
	controllerutil.RemoveFinalizer(l, Finalizer)
	return reconcile.Result{}, errors.Wrap(client.IgnoreNotFound(r.kube.Patch(ctx, l, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))), "cannot remove the Lock's finalizer")
}

// target returns the kind of object l protects and its resource (plural)
// name, refusing what a Lock of this kind cannot protect.
func (r *reconciler) target(l object) (schema.GroupVersionKind, string, error) {
	// The CRD defaults apiVersion to this group's version, on every
	// Lock read from the API server.
	ref := l.GetLockSpec().TargetRef
	av := ref.APIVersion
	gv, err := schema.ParseGroupVersion(av)
	if err != nil {
		return schema.GroupVersionKind{}, "", errors.Wrapf(err, "targetRef.apiVersion %q is not valid", av)
	}
	gvk := gv.WithKind(ref.Kind)
	switch {
	case gv.Group != v1alpha1.Group:
		return gvk, "", errors.Errorf("targetRef.apiVersion %q is not in group %s: the admission policy only guards that group, so this Lock could not protect it", av, v1alpha1.Group)
	case ref.Kind == v1alpha1.LockKind || ref.Kind == v1alpha1.ClusterLockKind:
		return gvk, "", errors.Errorf("a Lock cannot target a %s: delete the Lock you mean to keep deliberately instead", ref.Kind)
	}
	m, err := r.mapper.RESTMapping(gvk.GroupKind(), gv.Version)
	if activation.NotServed(err) && r.scheme.Recognizes(gvk) {
		return gvk, "", errors.Errorf("kind %s is not active on this cluster: add it to a ManagedResourceActivationPolicy (see docs/install.md); "+
			"the target is protected as soon as it is", ref.Kind)
	}
	if err != nil {
		return gvk, "", errors.Errorf("kind %s is not served in %s (%v)", ref.Kind, av, err)
	}
	namespaced := m.Scope.Name() == apimeta.RESTScopeNameNamespace
	switch {
	case namespaced && r.kind.cluster:
		return gvk, "", errors.Errorf("%s is namespaced: protect it with a Lock in its namespace, not a ClusterLock", ref.Kind)
	case !namespaced && !r.kind.cluster:
		return gvk, "", errors.Errorf("%s is cluster-scoped: protect it with a ClusterLock, not a Lock", ref.Kind)
	}
	return gvk, m.Resource.Resource, nil
}

// annotate adds (or removes) the Lock's name in the target's annotation,
// retrying on conflicts so that concurrent Locks never lose an entry, and
// returns the target's metadata.
func (r *reconciler) annotate(ctx context.Context, l object, gvk schema.GroupVersionKind, add bool) (*metav1.PartialObjectMetadata, error) {
	key := types.NamespacedName{Namespace: l.GetNamespace(), Name: l.GetLockSpec().TargetRef.Name}
	t := &metav1.PartialObjectMetadata{}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		t.SetGroupVersionKind(gvk)
		// Read from the API server: the cache may be behind, and an
		// update from a stale copy would conflict anyway.
		if err := r.reader.Get(ctx, key, t); err != nil {
			return err
		}
		names := locked.Names(t.GetAnnotations()[v1alpha1.AnnotationLocked])
		reasons := locked.Reasons(t.GetAnnotations()[v1alpha1.AnnotationLockReasons])
		has := slices.Contains(names, l.GetName())
		reason := oneLine(l.GetLockSpec().Reason)
		if !add {
			reason = ""
		}
		if has == add && reasons[l.GetName()] == reason {
			return nil
		}
		if add && !has {
			names = append(names, l.GetName())
		} else if !add {
			names = slices.DeleteFunc(names, func(n string) bool { return n == l.GetName() })
		}
		if reason == "" {
			delete(reasons, l.GetName())
		} else {
			reasons[l.GetName()] = reason
		}
		orig := t.DeepCopy()
		a := t.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		if len(names) == 0 {
			delete(a, v1alpha1.AnnotationLocked)
		} else {
			a[v1alpha1.AnnotationLocked] = locked.Format(names)
		}
		if r := locked.FormatReasons(names, reasons); r == "" {
			delete(a, v1alpha1.AnnotationLockReasons)
		} else {
			a[v1alpha1.AnnotationLockReasons] = r
		}
		t.SetAnnotations(a)
		return r.kube.Patch(ctx, t, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	})
	if kerrors.IsForbidden(err) {
		return nil, errors.Wrapf(err, "the API server refused the provider's own change to the %s annotation of %s %s: add the provider's ServiceAccount to the annotationWriters variable of the ValidatingAdmissionPolicy %s",
			v1alpha1.AnnotationLocked, gvk.Kind, key.Name, cluster.LockPolicyName)
	}
	if err != nil && !kerrors.IsNotFound(err) {
		return nil, errors.Wrapf(err, "cannot update the %s annotation of %s %s", v1alpha1.AnnotationLocked, gvk.Kind, key.Name)
	}
	return t, err
}

// oneLine keeps a reason on one line of the annotation.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func (r *reconciler) describe(l object, name string) string {
	if r.kind.cluster {
		return name
	}
	return l.GetNamespace() + "/" + name
}
