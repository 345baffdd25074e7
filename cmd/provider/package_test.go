package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
	"sigs.k8s.io/yaml"

	pkgmetav1 "github.com/crossplane/crossplane/apis/v2/pkg/meta/v1"
)

// iconPrefix is where the packages' iconURI points: a file of this
// repository on its main branch.
const iconPrefix = "https://raw.githubusercontent.com/ayatori/provider-postgresql/main/"

// TestPackageMeta checks the metadata of the three packages: the current
// meta.pkg.crossplane.io/v1 kinds, decoded strictly, with every annotation
// a package registry shows, a maintainer with a contact, an icon that
// exists in the repository, and a Crossplane constraint admitting v2 only.
func TestPackageMeta(t *testing.T) {
	for _, tc := range []struct {
		file string
		kind string
		meta pkgmetav1.Pkg
	}{
		{"package/crossplane.yaml", "Provider", &pkgmetav1.Provider{}},
		{"cmd/function-tenant/package/crossplane.yaml", "Function", &pkgmetav1.Function{}},
		{"configuration/crossplane.yaml", "Configuration", &pkgmetav1.Configuration{}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			root := filepath.Join("..", "..")
			b, err := os.ReadFile(filepath.Join(root, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			p := tc.meta
			if err := yaml.UnmarshalStrict(b, p); err != nil {
				t.Fatalf("%s is not a valid %s: %v", tc.file, tc.kind, err)
			}
			if gvk := p.GetObjectKind().GroupVersionKind(); gvk != pkgmetav1.SchemeGroupVersion.WithKind(tc.kind) {
				t.Errorf("%s is a %s, want %s", tc.file, gvk, pkgmetav1.SchemeGroupVersion.WithKind(tc.kind))
			}
			a := p.GetAnnotations()
			for _, k := range []string{
				"meta.crossplane.io/description", "meta.crossplane.io/readme", "meta.crossplane.io/iconURI",
				"meta.crossplane.io/source", "meta.crossplane.io/license", "meta.crossplane.io/maintainer",
			} {
				if strings.TrimSpace(a[k]) == "" {
					t.Errorf("%s: annotation %s is missing or empty", tc.file, k)
				}
			}
			if m := a["meta.crossplane.io/maintainer"]; !strings.Contains(m, "<") || !strings.HasSuffix(m, ">") {
				t.Errorf("%s: maintainer %q has no <contact>", tc.file, m)
			}
			if icon := a["meta.crossplane.io/iconURI"]; !strings.HasPrefix(icon, iconPrefix) {
				t.Errorf("%s: iconURI %q is not a file of this repository (%s…)", tc.file, icon, iconPrefix)
			} else if _, err := os.Stat(filepath.Join(root, strings.TrimPrefix(icon, iconPrefix))); err != nil {
				t.Errorf("%s: iconURI %q: %v", tc.file, icon, err)
			}
			if strings.Contains(a["meta.crossplane.io/readme"], "for the cluster admin to apply") {
				t.Errorf("%s: the readme leaves the admission policy to the admin, which the provider installs itself", tc.file)
			}
			cc := p.GetCrossplaneConstraints()
			if cc == nil {
				t.Fatalf("%s: spec.crossplane.version is missing", tc.file)
			}
			c, err := semver.NewConstraint(cc.Version)
			if err != nil {
				t.Fatalf("%s: spec.crossplane.version %q: %v", tc.file, cc.Version, err)
			}
			for v, want := range map[string]bool{"v2.0.0": true, "v2.3.4": true, "v2.9.0-rc.1": true, "v1.20.0": false, "v3.0.0": false} {
				if got := c.Check(semver.MustParse(v)); got != want {
					t.Errorf("%s: Crossplane %s admitted = %t, want %t (constraint %q)", tc.file, v, got, want, cc.Version)
				}
			}
		})
	}
}
