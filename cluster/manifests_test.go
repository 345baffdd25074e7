package cluster

import "testing"

// TestGrantCommand: a release's command applies that tag's manifests; a
// development build's, main's.
func TestGrantCommand(t *testing.T) {
	for version, ref := range map[string]string{
		"v0.2.0": "v0.2.0", "v1.0.0-rc.1": "v1.0.0-rc.1",
		"v0.0.0-dev": "main", "v0.1.0-3-gabcdef0": "main", "": "main",
	} {
		want := "kubectl apply -f " + Source + "/" + ref + "/cluster/rbac.yaml -f " + Source + "/" + ref + "/cluster/rbac-install-lock-policy.yaml"
		if got := GrantCommand(version); got != want {
			t.Errorf("GrantCommand(%q) = %q, want %q", version, got, want)
		}
	}
}
