package cluster_test

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ayatori/provider-postgresql/cluster"
	"github.com/ayatori/provider-postgresql/internal/manifest"
)

// TestRBACNamesWhatItGrants: the ClusterRoles shipped for the provider
// name their resources and verbs; a wildcard would hand the provider every
// kind a later XRD defines in its group, or every verb.
func TestRBACNamesWhatItGrants(t *testing.T) {
	for _, f := range []string{"rbac.yaml", "rbac-install-lock-policy.yaml"} {
		b, err := cluster.Manifests.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := manifest.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		roles := 0
		for _, u := range objs {
			if u.GetKind() != "ClusterRole" {
				continue
			}
			roles++
			rules, _, err := unstructured.NestedSlice(u.Object, "rules")
			if err != nil || len(rules) == 0 {
				t.Fatalf("%s: ClusterRole %s has no rules (%v)", f, u.GetName(), err)
			}
			for i, r := range rules {
				m, _ := r.(map[string]any)
				for _, field := range []string{"resources", "verbs", "apiGroups"} {
					list, _, _ := unstructured.NestedStringSlice(m, field)
					if slices.Contains(list, "*") {
						t.Errorf("%s: ClusterRole %s rule %d grants %s [\"*\"]", f, u.GetName(), i, field)
					}
				}
			}
		}
		if roles == 0 {
			t.Errorf("%s holds no ClusterRole", f)
		}
	}
}

// TestInstallRoleIsLimitedToItsNames: the role that lets the provider
// install and update its admission policies reads and changes admission policies
// only by name; the one thing RBAC cannot limit to a name, create, is
// granted alone (docs/install.md weighs it), and nothing deletes or lists
// them.
func TestInstallRoleIsLimitedToItsNames(t *testing.T) {
	b, err := cluster.Manifests.ReadFile("rbac-install-lock-policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := manifest.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	own := []string{cluster.LockPolicyName, cluster.TenantPolicyName, cluster.InUsePolicyName}
	creates := false
	for _, u := range objs {
		if u.GetKind() != "ClusterRole" {
			continue
		}
		rules, _, _ := unstructured.NestedSlice(u.Object, "rules")
		for i, r := range rules {
			m, _ := r.(map[string]any)
			groups, _, _ := unstructured.NestedStringSlice(m, "apiGroups")
			if !slices.Contains(groups, "admissionregistration.k8s.io") {
				continue
			}
			verbs, _, _ := unstructured.NestedStringSlice(m, "verbs")
			names, _, _ := unstructured.NestedStringSlice(m, "resourceNames")
			switch {
			case slices.Equal(verbs, []string{"create"}) && len(names) == 0:
				creates = true
			case slices.Equal(names, own) && !slices.ContainsFunc(verbs, func(v string) bool { return !slices.Contains([]string{"get", "update", "patch"}, v) }):
			default:
				t.Errorf("rule %d on admission policies: verbs %v, resourceNames %v; want get/update/patch of %v only, or create alone", i, verbs, names, own)
			}
		}
	}
	if !creates {
		t.Error("the role cannot create the policy: the default install (--install-lock-policy) would leave Locks unenforced")
	}
}
