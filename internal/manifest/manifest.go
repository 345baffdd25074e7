// Package manifest reads multi-document YAML (or JSON) into unstructured
// objects: the form in which package files, cluster manifests and rendered
// compositions arrive.
package manifest

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"

	xperrors "github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Decode returns the objects of b in order, skipping empty documents.
func Decode(b []byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// KindsIn counts the objects of each kind in the YAML files under dir:
// what a folder of examples holds.
func KindsIn(dir string) (map[string]int, error) {
	n := map[string]int{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		b, err := os.ReadFile(path) //nolint:gosec // A file under the folder the caller names.
		if err != nil {
			return err
		}
		objs, err := Decode(b)
		if err != nil {
			return xperrors.Wrap(err, path)
		}
		for _, o := range objs {
			n[o.GetKind()]++
		}
		return nil
	})
	return n, err
}
