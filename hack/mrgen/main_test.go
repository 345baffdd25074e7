package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestGenerate(t *testing.T) {
	cases := map[string]struct {
		reason  string
		dir     string
		golden  string
		wantErr string
	}{
		"Valid": {
			reason: "Marked types get method sets; a publishing kind forwards its secret reference, a silent one returns nil, one that delivers its own Secret returns nil and keeps the setter; lists get GetItems.",
			dir:    "testdata/valid",
			golden: "testdata/valid.golden",
		},
		"MissingManagementPolicies": {
			reason:  "A marked type whose spec lacks ManagementPolicies fails generation with a message naming it.",
			dir:     "testdata/nopolicies",
			wantErr: "BrokenSpec has no ManagementPolicies field",
		},
		"OwnSecretWithoutOne": {
			reason:  "A type marked to deliver its own Secret must have one in its spec.",
			dir:     "testdata/ownnosecret",
			wantErr: "Thing is marked +mrgen:delivers-own-secret but its spec has no WriteConnectionSecretToReference",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Generate(tc.dir)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("%s\nGenerate: got error %v, want %q", tc.reason, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s\nGenerate: %v", tc.reason, err)
			}
			if *update {
				if err := os.WriteFile(tc.golden, got, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(tc.golden)
			if err != nil {
				t.Fatalf("%v (run go test ./hack/mrgen -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("%s\nGenerate (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestGenerateUnmarkedRemovesOutput(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "types.go"), []byte("package x\n\ntype T struct{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, outputFile)
	if err := os.WriteFile(stale, []byte("package x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := generate(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("a package without marked types kept its stale %s", outputFile)
	}
}
