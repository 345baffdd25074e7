package admission

import (
	"context"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	authnv1 "k8s.io/api/authentication/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/ayatori/provider-postgresql/cluster"
)

// InstallLockPolicy creates or updates the Lock admission policy and its
// binding from the shipped manifests. A new policy lets the provider's own
// identity and Crossplane's ServiceAccount (in namespace) change the
// annotation; an existing policy keeps its lists of identities, so an
// admin's values are never overwritten.
func InstallLockPolicy(ctx context.Context, kube client.Client, namespace string) error {
	return Install(ctx, kube, cluster.LockPolicyFile, func(p *admissionv1.ValidatingAdmissionPolicy) error {
		return identities(ctx, kube, p, namespace)
	})
}

// Variables of the policy that name identities.
const (
	varAnnotationWriters = "annotationWriters"
	varSystemDeleters    = "systemDeleters"
)

// identities fills the policy's identity lists: those of the installed
// policy if there is one, otherwise the provider and Crossplane as writers.
func identities(ctx context.Context, kube client.Client, p *admissionv1.ValidatingAdmissionPolicy, namespace string) error {
	cur := &admissionv1.ValidatingAdmissionPolicy{}
	err := kube.Get(ctx, client.ObjectKeyFromObject(p), cur)
	switch {
	case err == nil:
		for _, v := range cur.Spec.Variables {
			if v.Name == varAnnotationWriters || v.Name == varSystemDeleters {
				setVariable(p, v.Name, v.Expression)
			}
		}
		return nil
	case !kerrors.IsNotFound(err):
		return errors.Wrap(err, "cannot read the installed Lock policy")
	}
	me, err := whoAmI(ctx, kube)
	if err != nil {
		return err
	}
	setVariable(p, varAnnotationWriters, celList(me, "system:serviceaccount:"+namespace+":crossplane"))
	return nil
}

func setVariable(p *admissionv1.ValidatingAdmissionPolicy, name, expression string) {
	for i := range p.Spec.Variables {
		if p.Spec.Variables[i].Name == name {
			p.Spec.Variables[i].Expression = expression
		}
	}
}

// celList is a CEL list literal of strings.
func celList(items ...string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// whoAmI returns the user name the provider acts as.
func whoAmI(ctx context.Context, kube client.Client) (string, error) {
	r := &authnv1.SelfSubjectReview{}
	if err := kube.Create(ctx, r); err != nil {
		return "", errors.Wrap(err, "cannot ask the API server who the provider is (SelfSubjectReview)")
	}
	return r.Status.UserInfo.Username, nil
}
