package lock

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/ayatori/provider-postgresql/cluster"
)

// A PolicyChecker reports whether the Lock admission policy is installed
// and bound, asking the API server at most once per TTL.
type PolicyChecker struct {
	Reader client.Reader
	TTL    time.Duration

	mu      sync.Mutex
	checked time.Time
	ok      bool
	why     string
}

// InPlace reports whether the policy and a binding of it exist, and if not,
// why, in words for a condition message.
func (p *PolicyChecker) InPlace(ctx context.Context) (bool, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.checked) < p.TTL {
		return p.ok, p.why
	}
	p.ok, p.why = p.check(ctx)
	p.checked = time.Now()
	return p.ok, p.why
}

// Forget drops the cached answer, so the next InPlace asks again.
func (p *PolicyChecker) Forget() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.checked = time.Time{}
}

func (p *PolicyChecker) check(ctx context.Context) (bool, string) {
	const apply = "apply cluster/lock-policy.yaml and cluster/lock-policy-params.yaml (or run the provider with --install-lock-policy)"
	vap := &admissionv1.ValidatingAdmissionPolicy{}
	err := p.Reader.Get(ctx, client.ObjectKey{Name: cluster.LockPolicyName}, vap)
	switch {
	case kerrors.IsNotFound(err):
		return false, fmt.Sprintf("the ValidatingAdmissionPolicy %s is not installed; %s", cluster.LockPolicyName, apply)
	case kerrors.IsForbidden(err):
		return false, "the provider may not read ValidatingAdmissionPolicies, so it cannot tell whether deletes are refused; apply cluster/rbac.yaml"
	case err != nil:
		return false, fmt.Sprintf("cannot read the ValidatingAdmissionPolicy %s: %v", cluster.LockPolicyName, err)
	}
	bindings := &admissionv1.ValidatingAdmissionPolicyBindingList{}
	if err := p.Reader.List(ctx, bindings); err != nil {
		return false, fmt.Sprintf("cannot list ValidatingAdmissionPolicyBindings: %v; apply cluster/rbac.yaml", err)
	}
	for _, b := range bindings.Items {
		if b.Spec.PolicyName != cluster.LockPolicyName || b.GetDeletionTimestamp() != nil {
			continue
		}
		for _, a := range b.Spec.ValidationActions {
			if a == admissionv1.Deny {
				return true, ""
			}
		}
	}
	return false, fmt.Sprintf("the ValidatingAdmissionPolicy %s is installed but no binding with validationActions [Deny] uses it; %s", cluster.LockPolicyName, apply)
}

// InstallPolicy creates or updates the Lock admission policy and its
// binding from the shipped manifests, binding it to the parameters in
// namespace. It creates the parameter ConfigMap only when it is absent
// (an admin's values are never overwritten), allowing the provider's own
// identity and Crossplane's ServiceAccount to change the annotation.
func InstallPolicy(ctx context.Context, kube client.Client, namespace string) error {
	objs, err := PolicyManifests()
	if err != nil {
		return err
	}
	for _, o := range objs {
		switch t := o.(type) {
		case *admissionv1.ValidatingAdmissionPolicyBinding:
			t.Spec.ParamRef.Namespace = namespace
		case *corev1.ConfigMap:
			t.Namespace = namespace
			me, err := whoAmI(ctx, kube)
			if err != nil {
				return err
			}
			t.Data["annotationWriters"] = me + ",system:serviceaccount:" + namespace + ":crossplane"
			err = kube.Create(ctx, t)
			if err != nil && !kerrors.IsAlreadyExists(err) {
				return errors.Wrap(err, "cannot create the Lock policy's parameters")
			}
			continue
		}
		if err := createOrUpdate(ctx, kube, o); err != nil {
			return err
		}
	}
	return nil
}

func createOrUpdate(ctx context.Context, kube client.Client, o client.Object) error {
	err := kube.Create(ctx, o)
	if !kerrors.IsAlreadyExists(err) {
		return errors.Wrapf(err, "cannot create %s", o.GetName())
	}
	cur := o.DeepCopyObject().(client.Object) //nolint:forcetypeassert // A copy of a client.Object.
	if err := kube.Get(ctx, client.ObjectKeyFromObject(o), cur); err != nil {
		return errors.Wrapf(err, "cannot get %s", o.GetName())
	}
	o.SetResourceVersion(cur.GetResourceVersion())
	return errors.Wrapf(kube.Update(ctx, o), "cannot update %s", o.GetName())
}

// whoAmI returns the user name the provider acts as.
func whoAmI(ctx context.Context, kube client.Client) (string, error) {
	r := &authnv1.SelfSubjectReview{}
	if err := kube.Create(ctx, r); err != nil {
		return "", errors.Wrap(err, "cannot ask the API server who the provider is (SelfSubjectReview)")
	}
	return r.Status.UserInfo.Username, nil
}

// PolicyManifests returns the shipped policy, binding and parameter
// ConfigMap (cluster/lock-policy*.yaml) as typed objects.
func PolicyManifests() ([]client.Object, error) {
	return manifests(cluster.LockPolicyFile, cluster.LockPolicyParamsFile)
}

// manifests decodes the named files of the cluster package into typed
// objects.
func manifests(files ...string) ([]client.Object, error) {
	var out []client.Object
	for _, f := range files {
		b, err := cluster.Manifests.ReadFile(f)
		if err != nil {
			return nil, err
		}
		dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for {
			raw := map[string]any{}
			if err := dec.Decode(&raw); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, errors.Wrapf(err, "cannot read %s", f)
			}
			kind, _ := raw["kind"].(string)
			var o client.Object
			switch kind {
			case "ValidatingAdmissionPolicy":
				o = &admissionv1.ValidatingAdmissionPolicy{}
			case "ValidatingAdmissionPolicyBinding":
				o = &admissionv1.ValidatingAdmissionPolicyBinding{}
			case "ConfigMap":
				o = &corev1.ConfigMap{}
			case "":
				continue
			default:
				return nil, errors.Errorf("%s: unexpected kind %s", f, kind)
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, o); err != nil {
				return nil, errors.Wrapf(err, "cannot read %s %s", f, kind)
			}
			out = append(out, o)
		}
	}
	return out, nil
}
