package lock

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ayatori/provider-postgresql/cluster"
	"github.com/ayatori/provider-postgresql/internal/version"
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
	// A provider package cannot ask for this RBAC (Crossplane v2's
	// packages have no permission requests): the message gives the one
	// command that grants it, and the provider, which keeps trying to
	// install the policy, turns the Lock Active without a restart.
	grant := cluster.GrantCommand(version.Version)
	apply := "grant the provider what a package cannot ask for: " + grant + " (it then installs the policy itself within minutes, no restart), or apply cluster/lock-policy.yaml yourself"
	vap := &admissionv1.ValidatingAdmissionPolicy{}
	err := p.Reader.Get(ctx, client.ObjectKey{Name: cluster.LockPolicyName}, vap)
	switch {
	case kerrors.IsNotFound(err):
		return nil, nil, fmt.Sprintf("the ValidatingAdmissionPolicy %s is not installed; %s", cluster.LockPolicyName, apply)
	case kerrors.IsForbidden(err):
		return nil, nil, "the provider may not read ValidatingAdmissionPolicies, so it cannot tell whether deletes are refused; " + apply
	case err != nil:
		return nil, nil, fmt.Sprintf("cannot read the ValidatingAdmissionPolicy %s: %v", cluster.LockPolicyName, err)
	}
	list := &admissionv1.ValidatingAdmissionPolicyBindingList{}
	if err := p.Reader.List(ctx, list); err != nil {
		return nil, nil, fmt.Sprintf("cannot list ValidatingAdmissionPolicyBindings: %v; %s", err, apply)
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
