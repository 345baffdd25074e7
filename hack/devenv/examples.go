package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/fixture/pgserver"
	"github.com/ayatori/provider-postgresql/internal/fixture/proc"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// readExamples decodes every object of every YAML file under dir, in path
// order.
func readExamples(dir string) ([]*unstructured.Unstructured, error) {
	var paths []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			paths = append(paths, path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var objs []*unstructured.Unstructured
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		dec := yaml.NewYAMLOrJSONDecoder(f, 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err != nil {
				_ = f.Close()
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, errors.Errorf("%s: %w", p, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			u.SetAnnotations(mergeMaps(u.GetAnnotations(), map[string]string{"devenv/source": p}))
			objs = append(objs, u)
		}
	}
	// Namespaces first, whatever the file order.
	sort.SliceStable(objs, func(i, j int) bool {
		return objs[i].GetKind() == "Namespace" && objs[j].GetKind() != "Namespace"
	})
	return objs, nil
}

func mergeMaps(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// applyExamples creates the examples in the local control plane. The
// Secrets `make dev` created itself (the real admin login and CA) are kept
// instead of the examples' placeholders, and every Instance's endpoint is
// pointed at the local server. It returns the managed resources created.
func applyExamples(ctx context.Context, kube client.Client, dir string, pg *pgserver.Server, say func(string, ...any)) ([]*unstructured.Unstructured, error) {
	objs, err := readExamples(dir)
	if err != nil {
		return nil, err
	}
	var managed []*unstructured.Unstructured
	for _, u := range objs {
		src, _ := filepath.Rel(filepath.Dir(dir), u.GetAnnotations()["devenv/source"])
		if u.GetKind() == "Secret" && u.GetNamespace() == providerNamespace && (u.GetName() == adminSecretName || u.GetName() == caSecretName) {
			say("%s: kept make dev's own Secret %s/%s (real credentials)", src, u.GetNamespace(), u.GetName())
			continue
		}
		if u.GetKind() == v1alpha1.PostgreSQLInstanceKind {
			if err := unstructured.SetNestedMap(u.Object, map[string]any{
				"host": pg.Host, "hostaddr": pg.Hostaddr, "port": int64(pg.Port), "database": "postgres", "sslMode": "verify-full",
			}, "spec", "endpoint"); err != nil {
				return nil, err
			}
		}
		if err := kube.Create(ctx, u); err != nil {
			return nil, errors.Errorf("%s: cannot create %s %s: %w", src, u.GetKind(), u.GetName(), err)
		}
		say("%s: created %s %s", src, u.GetKind(), name(u))
		if u.GroupVersionKind().Group == v1alpha1.Group {
			managed = append(managed, u)
		}
	}
	return managed, nil
}

// waitReady waits until every object reports Ready=True, saying so as each
// does, and explains what is not Ready when time runs out.
func waitReady(ctx context.Context, kube client.Client, objs []*unstructured.Unstructured, provider *proc.Process, say func(string, ...any)) error {
	pending := map[string]*unstructured.Unstructured{}
	for _, u := range objs {
		pending[u.GetKind()+"/"+name(u)] = u
	}
	deadline := time.Now().Add(3 * time.Minute)
	last := map[string]string{}
	for len(pending) > 0 {
		for key, u := range pending {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(u.GroupVersionKind())
			if err := kube.Get(ctx, client.ObjectKeyFromObject(u), got); err != nil {
				last[key] = err.Error()
				continue
			}
			status, reason, msg := readyCondition(got)
			if status == "True" {
				say("%s is Ready", key)
				// Keep what the cluster filled in, such as a claim's
				// status.secretName.
				u.Object = got.Object
				delete(pending, key)
				continue
			}
			last[key] = fmt.Sprintf("Ready=%s %s: %s", status, reason, msg)
		}
		if len(pending) == 0 {
			break
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			for key := range pending {
				fmt.Fprintf(&b, "\n  %s: %s", key, last[key])
			}
			return errors.Errorf("not Ready after 3 minutes:%s", b.String())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-provider.Exited():
			return errors.Errorf("the provider exited; its log:\n%s", provider.LogTail())
		case <-time.After(250 * time.Millisecond):
		}
	}
	return nil
}

func readyCondition(u *unstructured.Unstructured) (status, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != "Ready" {
			continue
		}
		s, _ := m["status"].(string)
		r, _ := m["reason"].(string)
		msg, _ := m["message"].(string)
		return s, r, msg
	}
	return "Unknown", "", "no Ready condition yet"
}

func name(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetName()
	}
	return u.GetNamespace() + "/" + u.GetName()
}

// roleHints tells how to log in with each example role's connection
// Secret. The password is read from the Secret by the command, never
// printed here.
func roleHints(objs []*unstructured.Unstructured, caFile string) string {
	var b strings.Builder
	for _, u := range objs {
		var secret string
		switch u.GetKind() {
		case v1alpha1.PostgreSQLRoleKind:
			secret, _, _ = unstructured.NestedString(u.Object, "spec", "writeConnectionSecretToRef", "name")
		case "PostgreSQLTenant", "Tenant":
			secret, _, _ = unstructured.NestedString(u.Object, "status", "secretName")
		}
		if secret == "" {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\nLog in as an example role or tenant with its connection Secret:\n\n")
		}
		fmt.Fprintf(&b, "  PGSSLROOTCERT=%s psql \"$(kubectl -n %s get secret %s -o jsonpath='{.data.uri}' | base64 -d)\"\n",
			caFile, u.GetNamespace(), secret)
	}
	return b.String()
}
