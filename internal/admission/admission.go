// Package admission installs the ValidatingAdmissionPolicies the provider
// ships in cluster/ (a provider package cannot carry them): the provider
// creates each policy and its binding at start-up, or brings installed
// ones in line with its version.
package admission

import (
	"bytes"
	"context"
	"io"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/ayatori/provider-postgresql/cluster"
)

// Install creates or updates the policy and binding of the shipped file
// (a name in cluster.Manifests). prepare, when set, is given the policy
// first, to carry over what an admin set in the installed one.
func Install(ctx context.Context, kube client.Client, file string, prepare func(*admissionv1.ValidatingAdmissionPolicy) error) error {
	objs, err := Manifests(file)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if p, ok := o.(*admissionv1.ValidatingAdmissionPolicy); ok && prepare != nil {
			if err := prepare(p); err != nil {
				return err
			}
		}
		if err := createOrUpdate(ctx, kube, o, file); err != nil {
			return err
		}
	}
	return nil
}

// createOrUpdate updates o where it exists (the provider's RBAC allows
// that by name) and creates it otherwise, which needs rights RBAC cannot
// limit to a name.
func createOrUpdate(ctx context.Context, kube client.Client, o client.Object, file string) error {
	cur := o.DeepCopyObject().(client.Object) //nolint:forcetypeassert // A copy of a client.Object.
	err := kube.Get(ctx, client.ObjectKeyFromObject(o), cur)
	switch {
	case err == nil:
		o.SetResourceVersion(cur.GetResourceVersion())
		return errors.Wrapf(kube.Update(ctx, o), "cannot update %s", o.GetName())
	case !kerrors.IsNotFound(err):
		return errors.Wrapf(err, "cannot get %s", o.GetName())
	}
	err = kube.Create(ctx, o)
	if kerrors.IsForbidden(err) {
		return errors.Wrapf(err, "%s is not installed and the provider may not create admission policies (bind cluster/rbac-install-lock-policy.yaml, "+
			"or apply cluster/%s once: the provider then keeps it up to date)", o.GetName(), file)
	}
	return errors.Wrapf(err, "cannot create %s", o.GetName())
}

// Manifests decodes the named files of the cluster package into typed
// policies and bindings.
func Manifests(files ...string) ([]client.Object, error) {
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
