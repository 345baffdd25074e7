package main

import (
	"os"
	"testing"

	"github.com/Masterminds/semver/v3"
	"sigs.k8s.io/yaml"

	pkgmetav1 "github.com/crossplane/crossplane/apis/v2/pkg/meta/v1"
)

// TestProviderMeta checks the package metadata that ships this binary.
func TestProviderMeta(t *testing.T) {
	b, err := os.ReadFile("../../package/crossplane.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := &pkgmetav1.Provider{}
	if err := yaml.UnmarshalStrict(b, p); err != nil {
		t.Fatalf("crossplane.yaml is not a valid Provider: %v", err)
	}
	if p.APIVersion != "meta.pkg.crossplane.io/v1" || p.Kind != "Provider" {
		t.Errorf("apiVersion/kind = %s/%s, want meta.pkg.crossplane.io/v1/Provider", p.APIVersion, p.Kind)
	}
	for _, a := range []string{
		"meta.crossplane.io/description", "meta.crossplane.io/readme",
		"meta.crossplane.io/source", "meta.crossplane.io/license", "meta.crossplane.io/maintainer",
	} {
		if p.GetAnnotations()[a] == "" {
			t.Errorf("annotation %s is missing or empty", a)
		}
	}
	if p.Spec.Crossplane == nil {
		t.Fatal("spec.crossplane.version is missing")
	}
	c, err := semver.NewConstraint(p.Spec.Crossplane.Version)
	if err != nil {
		t.Fatalf("spec.crossplane.version %q: %v", p.Spec.Crossplane.Version, err)
	}
	for v, want := range map[string]bool{"v2.0.0": true, "v2.3.4": true, "v2.9.0-rc.1": true, "v1.20.0": false, "v3.0.0": false} {
		if got := c.Check(semver.MustParse(v)); got != want {
			t.Errorf("Crossplane %s admitted = %t, want %t (constraint %q)", v, got, want, p.Spec.Crossplane.Version)
		}
	}
}
