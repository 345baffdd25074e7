package cluster_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/ayatori/provider-postgresql/internal/fixture/controlplane"
	"github.com/ayatori/provider-postgresql/internal/fixture/tier"
	"github.com/ayatori/provider-postgresql/internal/manifest"
)

// prometheusOperator is the module whose CRDs the monitoring manifests
// are applied against, at the version tools/prometheus-operator pins.
const prometheusOperator = "github.com/prometheus-operator/prometheus-operator"

// TestMonitoringManifests applies cluster/monitoring's PodMonitor and
// PrometheusRule to a real API server serving the Prometheus Operator's
// CRDs, with strict field validation, and checks the rules the
// PrometheusRule carries with promtool: they are alerts.yaml's, which
// promtool passes as a rule file too. (That the PodMonitor selects the
// provider's pods and port is checked against the Deployment Crossplane
// makes, in e2e/install.)
func TestMonitoringManifests(t *testing.T) {
	tier.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	v, err := controlplane.ToolVersion("prometheus-operator", prometheusOperator)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := controlplane.ModuleDir(ctx, prometheusOperator+"@"+v)
	if err != nil {
		t.Fatal(err)
	}
	cp := controlplane.StartT(ctx, t, controlplane.Options{NoCRDs: true})
	crds := filepath.Join(mod, "example", "prometheus-operator-crd")
	if _, err := envtest.InstallCRDs(cp.Config, envtest.CRDInstallOptions{
		Paths:              []string{filepath.Join(crds, "monitoring.coreos.com_podmonitors.yaml"), filepath.Join(crds, "monitoring.coreos.com_prometheusrules.yaml")},
		ErrorIfPathMissing: true,
	}); err != nil {
		t.Fatalf("cannot install the Prometheus Operator's CRDs: %v", err)
	}
	kube := cp.CoreClient(t)
	if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "crossplane-system"}}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "cluster", "monitoring")
	var rule *unstructured.Unstructured
	for _, f := range []string{"podmonitor.yaml", "prometheusrule.yaml"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		objs, err := manifest.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if len(objs) != 1 {
			t.Fatalf("%s holds %d objects, want 1", f, len(objs))
		}
		if err := kube.Create(ctx, objs[0], client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
			t.Fatalf("the API server refuses %s: %v", f, err)
		}
		if objs[0].GetKind() == "PrometheusRule" {
			rule = objs[0]
		}
	}
	if rule == nil {
		t.Fatal("prometheusrule.yaml holds no PrometheusRule")
	}

	// What the API server stored is what Prometheus would load.
	stored := &unstructured.Unstructured{}
	stored.SetGroupVersionKind(rule.GroupVersionKind())
	if err := kube.Get(ctx, client.ObjectKeyFromObject(rule), stored); err != nil {
		t.Fatal(err)
	}
	groups, _, err := unstructured.NestedSlice(stored.Object, "spec", "groups")
	if err != nil {
		t.Fatal(err)
	}
	alerts, err := os.ReadFile(filepath.Join(dir, "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []any `json:"groups"`
	}
	if err := yaml.Unmarshal(alerts, &file); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(file.Groups, groups); diff != "" {
		t.Errorf("the PrometheusRule's groups are not alerts.yaml's (run make generate) (-alerts.yaml +PrometheusRule):\n%s", diff)
	}
	b, err := yaml.Marshal(map[string]any{"groups": groups})
	if err != nil {
		t.Fatal(err)
	}
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(rules, b, 0o600); err != nil {
		t.Fatal(err)
	}
	promtool, err := exec.Command(filepath.Join(root, "hack", "ensure-promtool.sh")).Output()
	if err != nil {
		t.Fatalf("promtool is missing (hack/ensure-promtool.sh: %v); make test provides it", err)
	}
	out, err := exec.CommandContext(ctx, strings.TrimSpace(string(promtool)), "check", "rules", rules).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "SUCCESS") {
		t.Errorf("promtool check rules on the PrometheusRule's groups: %v\n%s", err, out)
	}
}
