package lock

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/ayatori/provider-postgresql/cluster"
	"github.com/ayatori/provider-postgresql/internal/admission"
)

// A PolicyChecker reports whether the Lock admission policy refuses the
// deletion of a given target: the policy is installed and a binding with
// validationActions [Deny] covers the target. It reads the policy and its
// bindings from the API server at most once per TTL.
type PolicyChecker struct {
	Reader client.Reader
	TTL    time.Duration

	mu       sync.Mutex
	checked  time.Time
	policy   *admissionv1.ValidatingAdmissionPolicy
	bindings []admissionv1.ValidatingAdmissionPolicyBinding
	why      string
}

// A Target is an object a Lock protects, as the admission policy sees a
// request to delete it.
type Target struct {
	Group, Version, Resource string
	Namespace, Name          string
	Labels                   map[string]string
}

// Covers reports whether deleting t is refused by the policy, and if not,
// why, in words for a condition message. A binding whose matchResources
// leave t out (a namespace or object selector, resource rules, exclusions)
// does not count: a Lock is Active only where a delete is really refused.
func (p *PolicyChecker) Covers(ctx context.Context, t Target) (bool, string) {
	policy, bindings, why := p.load(ctx)
	if policy == nil {
		return false, why
	}
	nsLabels := map[string]string{}
	if t.Namespace != "" {
		ns := &corev1.Namespace{}
		if err := p.Reader.Get(ctx, client.ObjectKey{Name: t.Namespace}, ns); err != nil {
			return false, fmt.Sprintf("cannot read namespace %s to tell whether the policy's bindings select it: %v", t.Namespace, err)
		}
		nsLabels = ns.GetLabels()
	}
	if ok, reason := covers(policy.Spec.MatchConstraints, t, nsLabels); !ok {
		return false, fmt.Sprintf("the ValidatingAdmissionPolicy %s does not match this object (%s); restore its matchConstraints from cluster/lock-policy.yaml", cluster.LockPolicyName, reason)
	}
	var reasons []string
	for _, b := range bindings {
		ok, reason := covers(b.Spec.MatchResources, t, nsLabels)
		if ok {
			return true, ""
		}
		reasons = append(reasons, "binding "+b.GetName()+": "+reason)
	}
	return false, fmt.Sprintf("no [Deny] binding of the ValidatingAdmissionPolicy %s covers this object (%s); bind the policy to it, as cluster/lock-policy.yaml does",
		cluster.LockPolicyName, strings.Join(reasons, "; "))
}

// load returns the policy and its Deny bindings, read at most once per TTL,
// or nil and why they are not in place.
func (p *PolicyChecker) load(ctx context.Context) (*admissionv1.ValidatingAdmissionPolicy, []admissionv1.ValidatingAdmissionPolicyBinding, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.checked) >= p.TTL {
		p.policy, p.bindings, p.why = p.read(ctx)
		p.checked = time.Now()
	}
	return p.policy, p.bindings, p.why
}

func (p *PolicyChecker) read(ctx context.Context) (*admissionv1.ValidatingAdmissionPolicy, []admissionv1.ValidatingAdmissionPolicyBinding, string) {
	const apply = "bind cluster/rbac-install-lock-policy.yaml to the provider and restart it (it installs the policy at start-up), or apply cluster/lock-policy.yaml yourself"
	vap := &admissionv1.ValidatingAdmissionPolicy{}
	err := p.Reader.Get(ctx, client.ObjectKey{Name: cluster.LockPolicyName}, vap)
	switch {
	case kerrors.IsNotFound(err):
		return nil, nil, fmt.Sprintf("the ValidatingAdmissionPolicy %s is not installed; %s", cluster.LockPolicyName, apply)
	case kerrors.IsForbidden(err):
		return nil, nil, "the provider may not read ValidatingAdmissionPolicies, so it cannot tell whether deletes are refused; apply cluster/rbac.yaml"
	case err != nil:
		return nil, nil, fmt.Sprintf("cannot read the ValidatingAdmissionPolicy %s: %v", cluster.LockPolicyName, err)
	}
	list := &admissionv1.ValidatingAdmissionPolicyBindingList{}
	if err := p.Reader.List(ctx, list); err != nil {
		return nil, nil, fmt.Sprintf("cannot list ValidatingAdmissionPolicyBindings: %v; apply cluster/rbac.yaml", err)
	}
	var deny []admissionv1.ValidatingAdmissionPolicyBinding
	for _, b := range list.Items {
		if b.Spec.PolicyName == cluster.LockPolicyName && b.GetDeletionTimestamp() == nil && slices.Contains(b.Spec.ValidationActions, admissionv1.Deny) {
			deny = append(deny, b)
		}
	}
	if len(deny) == 0 {
		return nil, nil, fmt.Sprintf("the ValidatingAdmissionPolicy %s is installed but no binding with validationActions [Deny] uses it; %s", cluster.LockPolicyName, apply)
	}
	return vap, deny, ""
}

// covers reports whether match resources m let a DELETE of t through to
// the policy, and if not, which part leaves it out. A nil m (a binding
// without matchResources) matches whatever the policy matches.
func covers(m *admissionv1.MatchResources, t Target, nsLabels map[string]string) (bool, string) {
	if m == nil {
		return true, ""
	}
	// A namespaceSelector never leaves out a cluster-scoped object.
	if t.Namespace != "" && !selects(m.NamespaceSelector, nsLabels) {
		return false, "its namespaceSelector does not select namespace " + t.Namespace
	}
	if !selects(m.ObjectSelector, t.Labels) {
		return false, "its objectSelector does not select the object's labels"
	}
	for _, r := range m.ExcludeResourceRules {
		if ruleMatches(r, t) {
			return false, "its excludeResourceRules leave out " + t.Resource
		}
	}
	if len(m.ResourceRules) == 0 {
		return true, ""
	}
	for _, r := range m.ResourceRules {
		if ruleMatches(r, t) {
			return true, ""
		}
	}
	return false, "its resourceRules do not include deleting " + t.Resource
}

func selects(s *metav1.LabelSelector, l map[string]string) bool {
	if s == nil {
		return true
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	return err == nil && sel.Matches(labels.Set(l))
}

func ruleMatches(r admissionv1.NamedRuleWithOperations, t Target) bool {
	any := func(list []string, v string) bool { return slices.Contains(list, "*") || slices.Contains(list, v) }
	ops := make([]string, len(r.Operations))
	for i, o := range r.Operations {
		ops[i] = string(o)
	}
	scope := admissionv1.AllScopes
	if r.Scope != nil {
		scope = *r.Scope
	}
	scoped := scope == admissionv1.AllScopes ||
		(scope == admissionv1.NamespacedScope) == (t.Namespace != "")
	return any(r.APIGroups, t.Group) && any(r.APIVersions, t.Version) && any(r.Resources, t.Resource) &&
		any(ops, string(admissionv1.Delete)) && scoped &&
		(len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, t.Name))
}

// InstallPolicy creates or updates the Lock admission policy and its
// binding from the shipped manifests. A new policy lets the provider's own
// identity and Crossplane's ServiceAccount (in namespace) change the
// annotation; an existing policy keeps its lists of identities, so an
// admin's values are never overwritten.
func InstallPolicy(ctx context.Context, kube client.Client, namespace string) error {
	return admission.Install(ctx, kube, cluster.LockPolicyFile, func(p *admissionv1.ValidatingAdmissionPolicy) error {
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

// PolicyManifests returns the shipped policy and binding
// (cluster/lock-policy.yaml) as typed objects.
func PolicyManifests() ([]client.Object, error) {
	return admission.Manifests(cluster.LockPolicyFile)
}
