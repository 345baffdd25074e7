package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/cluster"
	"github.com/ayatori/provider-postgresql/internal/clients/openbao"
	"github.com/ayatori/provider-postgresql/internal/fixture/crossplane"
	"github.com/ayatori/provider-postgresql/internal/fixture/externalsecrets"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
	"github.com/ayatori/provider-postgresql/internal/fixture/vaultserver"
)

// openBaoDelivery: with the Composition's delivery: OpenBao, a claim's
// credentials are written to its Instance's KV v2 engine and projected by
// the External Secrets Operator into the claim's namespace through that
// namespace's store; the claim is Ready once the ExternalSecret synced and
// shows the credential's URL; another namespace's store reads nothing of
// it; deleting the claim ends the login, destroys the path and removes the
// ExternalSecret and its Secret, and the database is Released.
func openBaoDelivery(ctx context.Context, t *testing.T, core *crossplane.Core) {
	dir := t.TempDir()
	vault, err := vaultserver.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(vault.Stop)
	eso, err := externalsecrets.Start(ctx, env.ControlPlane.Config, env.ControlPlane.Kubeconfig, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eso.Stop)
	policy := func(namespace string) string {
		b, err := cluster.Manifests.ReadFile(cluster.OpenBaoNamespacePolicyFile)
		if err != nil {
			t.Fatal(err)
		}
		return strings.NewReplacer("<mount>", vaultserver.Mount, "<prefix>", "postgresql", "<namespace>", namespace).Replace(string(b))
	}
	// Each namespace's store reads through a token of its namespace's
	// policy only.
	storeToken := func(namespace string) string {
		if _, err := vault.Admin(ctx, "POST", "/v1/sys/policies/acl/postgresql-"+namespace, map[string]any{"policy": policy(namespace)}); err != nil {
			t.Fatal(err)
		}
		b, err := vault.Admin(ctx, "POST", "/v1/auth/token/create", map[string]any{"policies": []string{"postgresql-" + namespace}, "ttl": "1h"})
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Auth struct {
				ClientToken string `json:"client_token"`
			} `json:"auth"`
		}
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		return out.Auth.ClientToken
	}
	store := func(namespace string) {
		if err := env.Namespace(ctx, namespace); err != nil {
			t.Fatal(err)
		}
		env.Create(ctx, t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "postgresql-store-token"}, Data: map[string][]byte{"token": []byte(storeToken(namespace))}})
		s := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "external-secrets.io/v1", "kind": "SecretStore",
			"metadata": map[string]any{"namespace": namespace, "name": "postgresql"},
			"spec": map[string]any{"provider": map[string]any{"vault": map[string]any{
				"server": vault.Address, "path": vaultserver.Mount, "version": "v2",
				"caBundle": base64.StdEncoding.EncodeToString(vault.CA),
				"auth":     map[string]any{"tokenSecretRef": map[string]any{"name": "postgresql-store-token", "key": "token"}},
			}}},
		}}
		env.Create(ctx, t, s)
	}
	store("vshop")
	store("vother")

	// The provider writes with its own token (the root token here: the
	// provider's policy is TestVaultDelivery's).
	env.Create(ctx, t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: providertest.Namespace, Name: "vault-token", Labels: map[string]string{v1alpha1.LabelVaultCredential: "true"}},
		Data: map[string][]byte{"token": []byte(vault.RootToken)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: providertest.Namespace, Name: "vault-ca"}, Data: map[string][]byte{"ca.crt": vault.CA}})
	in := &v1alpha1.PostgreSQLInstance{ObjectMeta: metav1.ObjectMeta{Name: "main"}}
	providertest.Update(ctx, t, env, in, func(in *v1alpha1.PostgreSQLInstance) {
		in.Spec.CredentialVault = &v1alpha1.CredentialVault{
			Address: vault.Address, CABundleRef: &v1alpha1.CABundleReference{Name: "vault-ca"},
			Auth: v1alpha1.CredentialVaultAuth{TokenSecretRef: &v1alpha1.VaultTokenReference{Name: "vault-token"}},
		}
	})
	setCompositionInput(ctx, t, map[string]any{"delivery": "OpenBao", "openBao": map[string]any{"secretStoreRef": map[string]any{"name": "postgresql"}, "refreshInterval": "5s"}})

	claim := tenantClaim("vshop", "ledger", `{"instanceRef": {"name": "main"}}`)
	env.Create(ctx, t, claim)
	waitClaimReady(ctx, t, core, claim)
	const path = "postgresql/main/vshop/ledger"
	kv, err := vault.Client()
	if err != nil {
		t.Fatal(err)
	}
	secret, err := env.ConnectionSecret(ctx, "vshop", "main-ledger-postgresql")
	if err != nil {
		t.Fatalf("the projected Secret: %v; the operator's log:\n%s", err, eso.LogTail())
	}
	if c, err := providertest.ConnectWithSecret(ctx, secret, ""); err != nil {
		t.Errorf("the projected Secret's uri does not log in: %v", err)
	} else {
		_ = c.Close(ctx)
	}
	if got, _, _ := unstructured.NestedString(claim.Object, "status", "credentialURL"); got != kv.URL(path) || strings.Contains(got, vault.RootToken) {
		t.Errorf("the claim's status.credentialURL is %q, want %q (and no token)", got, kv.URL(path))
	}
	// The provider wrote no Secret of its own: the projected one alone
	// holds the password.
	l := &corev1.SecretList{}
	if err := env.Kube.List(ctx, l); err != nil {
		t.Fatal(err)
	}
	for _, s := range l.Items {
		if string(s.Data["password"]) == string(secret["password"]) && (s.Namespace != "vshop" || s.Name != "main-ledger-postgresql") {
			t.Errorf("Secret %s/%s holds the tenant's password too", s.Namespace, s.Name)
		}
	}

	t.Run("AnotherNamespaceReadsNothing", func(t *testing.T) {
		es := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
			"metadata": map[string]any{"namespace": "vother", "name": "stolen"},
			"spec": map[string]any{
				"refreshInterval": "5s",
				"secretStoreRef":  map[string]any{"name": "postgresql", "kind": "SecretStore"},
				"target":          map[string]any{"name": "stolen"},
				"dataFrom":        []any{map[string]any{"extract": map[string]any{"key": path}}},
			},
		}}
		env.Create(ctx, t, es)
		var msg string
		err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
			if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(es), es); err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(es.Object, "status", "conditions")
			for _, c := range conds {
				if m, ok := c.(map[string]any); ok && m["type"] == "Ready" && m["status"] == "False" {
					msg, _ = m["message"].(string)
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("the other namespace's ExternalSecret does not say it failed: %v", err)
		}
		t.Logf("the other namespace's ExternalSecret: %s", msg)
		if err := env.Kube.Get(ctx, client.ObjectKey{Namespace: "vother", Name: "stolen"}, &corev1.Secret{}); !kerrors.IsNotFound(err) {
			t.Errorf("a Secret was made in another namespace from the tenant's path: %v", err)
		}
	})

	t.Run("DeletingTheClaim", func(t *testing.T) {
		if err := env.Kube.Delete(ctx, claim); err != nil {
			t.Fatal(err)
		}
		env.Gone(ctx, t, claim)
		err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
			_, err := kv.Read(ctx, path)
			gone := errors.Is(err, openbao.ErrNotFound)
			es := &unstructured.Unstructured{}
			es.SetAPIVersion("external-secrets.io/v1")
			es.SetKind("ExternalSecret")
			esErr := env.Kube.Get(ctx, client.ObjectKey{Namespace: "vshop", Name: "main-ledger-postgresql"}, es)
			return gone && kerrors.IsNotFound(esErr), nil
		})
		if err != nil {
			t.Errorf("after the claim went, the KV path or the ExternalSecret is still there: %v", err)
		}
		if n, err := kv.Versions(ctx, path); err != nil || n != 0 {
			t.Errorf("the KV path keeps %d versions: %v", n, err)
		}
		if c, err := providertest.ConnectWithSecret(ctx, secret, ""); err == nil {
			_ = c.Close(ctx)
			t.Error("the claim's last credential still logs in")
		}
		db := &v1alpha1.PostgreSQLDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: "vshop", Name: "ledger"}}
		err = providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
			err := env.Kube.Get(ctx, client.ObjectKeyFromObject(db), db)
			return err == nil && db.Status.Binding.Phase == v1alpha1.PhaseReleased, err
		})
		if err != nil {
			t.Errorf("the database is not Released: %v (%+v)", err, db.Status.Binding)
		}
	})
}

// setCompositionInput merges fields into the input of the tenant
// Composition's first step, as a platform adapting it would.
func setCompositionInput(ctx context.Context, t *testing.T, fields map[string]any) {
	t.Helper()
	comp := &unstructured.Unstructured{}
	comp.SetAPIVersion("apiextensions.crossplane.io/v1")
	comp.SetKind("Composition")
	if err := env.Kube.Get(ctx, client.ObjectKey{Name: "postgresqltenant"}, comp); err != nil {
		t.Fatal(err)
	}
	steps, _, _ := unstructured.NestedSlice(comp.Object, "spec", "pipeline")
	step, ok := steps[0].(map[string]any)
	if !ok {
		t.Fatalf("the Composition's first step is a %T", steps[0])
	}
	in, _, _ := unstructured.NestedMap(step, "input")
	for k, v := range fields {
		in[k] = v
	}
	if err := unstructured.SetNestedMap(step, in, "input"); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedSlice(comp.Object, steps, "spec", "pipeline"); err != nil {
		t.Fatal(err)
	}
	if err := env.Kube.Update(ctx, comp); err != nil {
		t.Fatal(err)
	}
}
