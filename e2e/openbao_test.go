package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
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

// openBaoDelivery: a claim's credentials follow its Instance: a claim made
// before the Instance named a credentialVault moves to it without a failed
// login (moveToTheVault); one made after has its credentials written to its Instance's KV v2 engine and projected by
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
	store := func(namespace string) {
		if err := env.Namespace(ctx, namespace); err != nil {
			t.Fatal(err)
		}
		// Each namespace's store reads through a token of its
		// namespace's policy only.
		if err := vault.WritePolicy(ctx, "postgresql-"+namespace, cluster.OpenBaoNamespacePolicyFile, namespace); err != nil {
			t.Fatal(err)
		}
		token, err := vault.Token(ctx, "postgresql-"+namespace)
		if err != nil {
			t.Fatal(err)
		}
		env.Create(ctx, t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "postgresql-store-token"}, Data: map[string][]byte{"token": []byte(token)}})
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
	// The Composition's input names no delivery: tenants' credentials
	// follow the Instance.
	setCompositionInput(ctx, t, map[string]any{"openBao": map[string]any{"secretStoreRef": map[string]any{"name": "postgresql"}, "refreshInterval": "5s", "secretGracePeriod": "5s"}})
	moving := tenantClaim("vshop", "moving", `{"instanceRef": {"name": "main"}}`)
	env.Create(ctx, t, moving)
	waitClaimReady(ctx, t, core, moving)
	if got, _, _ := unstructured.NestedString(moving.Object, "status", "delivery"); got != "Secret" {
		t.Errorf("on an Instance without a credentialVault the claim's status.delivery is %q, want Secret", got)
	}
	watch := watchLogins(ctx, t, "vshop", "main-moving-postgresql")

	in := &v1alpha1.PostgreSQLInstance{ObjectMeta: metav1.ObjectMeta{Name: "main"}}
	providertest.Update(ctx, t, env, in, func(in *v1alpha1.PostgreSQLInstance) {
		in.Spec.CredentialVault = &v1alpha1.CredentialVault{
			Address: vault.Address, CABundleRef: &v1alpha1.CABundleReference{Name: "vault-ca"},
			Auth: v1alpha1.CredentialVaultAuth{TokenSecretRef: &v1alpha1.VaultTokenReference{Name: "vault-token"}},
		}
	})
	moveToTheVault(ctx, t, core, moving, watch)

	claim := tenantClaim("vshop", "ledger", `{"instanceRef": {"name": "main"}}`)
	env.Create(ctx, t, claim)
	waitClaimReady(ctx, t, core, claim)
	// The OpenBao Composition's claims carry their plan as the Secret
	// one's do, and drop it once provisioned.
	noPlanOnceProvisioned(ctx, t, claim)
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

	t.Run("RotationsThroughTheProjectedSecret", func(t *testing.T) {
		// The platform's Composition rotates with two alternating logins
		// (the input PlatformTurnsOnAlternatingRotationTenantAsksForOne
		// set). The tenant asks for three rotations, the second while the
		// vault does not answer for 30 s: a client that reads the
		// projected Secret before each login never fails, the path gets
		// one version per rotation and none per poll, and no third login
		// is ever made.
		logins := []string{string(secret["username"])}
		other := map[string]string{"ledger_a": "ledger_b", "ledger_b": "ledger_a"}
		if other[logins[0]] == "" {
			t.Fatalf("the claim's login is %q, want one of the alternating pair", logins[0])
		}
		before, err := kv.Versions(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 3; i++ {
			if i == 2 {
				if err := vault.Pause(); err != nil {
					t.Fatal(err)
				}
			}
			cur := tenantClaim("vshop", "ledger", "{}")
			providertest.Update(ctx, t, env, cur, func(cur *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(cur.Object, fmt.Sprintf("rotation-%d", i), "spec", "rotateCredentials")
			})
			if i == 2 {
				time.Sleep(30 * time.Second)
				if d, err := env.ConnectionSecret(ctx, "vshop", "main-ledger-postgresql"); err != nil {
					t.Errorf("the projected Secret went while the vault was down: %v", err)
				} else if c, err := providertest.ConnectWithSecret(ctx, d, ""); err != nil {
					t.Errorf("the projected Secret stopped logging in while the vault was down: %v", err)
				} else {
					_ = c.Close(ctx)
				}
				if err := vault.Resume(); err != nil {
					t.Fatal(err)
				}
			}
			next := waitTenantLogin(ctx, t, "vshop", "main-ledger-postgresql", other[logins[len(logins)-1]])
			logins = append(logins, string(next["username"]))
			if c, err := providertest.ConnectWithSecret(ctx, next, ""); err != nil {
				t.Errorf("rotation %d: the projected login %s does not log in: %v", i, next["username"], err)
			} else {
				_ = c.Close(ctx)
			}
		}
		time.Sleep(5 * time.Second) // Two polls of the role, one refresh.
		if after, err := kv.Versions(ctx, path); err != nil || after != before+3 {
			t.Errorf("three rotations took the path from %d to %d versions (%v), want three more", before, after, err)
		}
		var n int
		if err := env.Connect(ctx, t, "postgres").QueryRow(ctx, "SELECT count(*) FROM pg_roles WHERE rolname LIKE 'ledger%' AND rolname NOT LIKE 'ledger\\_owner'").Scan(&n); err != nil || n != 3 {
			t.Errorf("the claim's roles: %d (%v), want the role and its two logins", n, err)
		}
		t.Logf("logins in turn: %v", logins)
	})

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

	t.Run("ACertificateClaimGetsItsKeysProjected", func(t *testing.T) {
		// The platform offers client certificates; a claim asks for one.
		// The projected Secret holds the certificate, both forms of its
		// key (the JDBC one decoded from the path's base64) and no
		// password, and its uri logs in.
		if err := env.ClientCASecret(ctx, "main-client-ca"); err != nil {
			t.Fatal(err)
		}
		providertest.Update(ctx, t, env, in, func(in *v1alpha1.PostgreSQLInstance) {
			in.Spec.ClientCertificateAuthorityRef = &v1alpha1.ClientCertificateAuthorityReference{Name: "main-client-ca"}
		})
		if err := env.Postgres.AddHBA(ctx, "hostssl all certified 127.0.0.1/32 cert"); err != nil {
			t.Fatal(err)
		}
		c := tenantClaim("vshop", "certified", `{"instanceRef": {"name": "main"}, "authentication": "Certificate"}`)
		env.Create(ctx, t, c)
		var d map[string][]byte
		err = providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
			s := &corev1.Secret{}
			err := env.Kube.Get(ctx, client.ObjectKey{Namespace: "vshop", Name: "main-certified-postgresql"}, s)
			d = s.Data
			return err == nil && len(d["tls.crt"]) > 0 && len(d["tls.key.pk8"]) > 0, client.IgnoreNotFound(err)
		})
		if err != nil {
			login := &v1alpha1.PostgreSQLRole{}
			_ = env.Kube.Get(ctx, client.ObjectKey{Namespace: "vshop", Name: "certified-login"}, login)
			es := &unstructured.Unstructured{}
			es.SetAPIVersion("external-secrets.io/v1")
			es.SetKind("ExternalSecret")
			_ = env.Kube.Get(ctx, client.ObjectKey{Namespace: "vshop", Name: "main-certified-postgresql"}, es)
			esStatus, _, _ := unstructured.NestedFieldCopy(es.Object, "status")
			t.Fatalf("the projected Secret holds no certificate: %v; the login role: %v; the ExternalSecret: %v; the operator's log:\n%s",
				err, login.Status.Conditions, esStatus, eso.LogTail())
		}
		waitClaimReady(ctx, t, core, c)
		if _, ok := d["password"]; ok {
			t.Error("the projected Secret of a certificate login holds a password")
		}
		if block, _ := pem.Decode(d["tls.key"]); block == nil || !bytes.Equal(block.Bytes, d["tls.key.pk8"]) {
			t.Error("tls.key.pk8 is not tls.key in DER: the path's base64 was not decoded")
		}
		dir := t.TempDir()
		if err := providertest.MountCredential(d, dir, "tls.crt", "tls.key", "ca.crt"); err != nil {
			t.Fatal(err)
		}
		uri := strings.ReplaceAll(string(d["uri"]), url.QueryEscape(v1alpha1.DefaultCertificateMountPath), url.QueryEscape(dir))
		if user, err := providertest.PsqlLogin(ctx, uri); err != nil || user != "certified" {
			t.Errorf("the projected Secret's uri, mounted: user %q, %v", user, err)
		}
	})

	t.Run("DeletingTheClaim", func(t *testing.T) {
		gcKnowsExternalSecrets(ctx, t)
		// In order: the login goes (dropped, its path destroyed), then
		// the ExternalSecret; never the other way round. A DBA's open
		// transaction holding the login role's catalog row keeps its
		// access from ending for a while: the ExternalSecret must wait.
		tx, err := env.AdminConnect(ctx, t, "postgres").Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "ALTER ROLE ledger CONNECTION LIMIT 7"); err != nil {
			t.Fatal(err)
		}
		if err := env.Kube.Delete(ctx, claim); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Second) // Time for anything that would delete it.
		held := &unstructured.Unstructured{}
		held.SetAPIVersion("external-secrets.io/v1")
		held.SetKind("ExternalSecret")
		if err := env.Kube.Get(ctx, client.ObjectKey{Namespace: "vshop", Name: "main-ledger-postgresql"}, held); err != nil || held.GetDeletionTimestamp() != nil {
			t.Errorf("the ExternalSecret is going while the login role's access could not end (deleting since %v): %v", held.GetDeletionTimestamp(), err)
		}
		if err := env.Kube.Get(ctx, client.ObjectKey{Namespace: "vshop", Name: "ledger-login"}, &v1alpha1.PostgreSQLRole{}); err != nil {
			t.Errorf("the login role went while its access could not end: %v", err)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		early := false
		err = providertest.WaitEvery(ctx, 90*time.Second, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
			roleErr := env.Kube.Get(ctx, client.ObjectKey{Namespace: "vshop", Name: "ledger-login"}, &v1alpha1.PostgreSQLRole{})
			es := &unstructured.Unstructured{}
			es.SetAPIVersion("external-secrets.io/v1")
			es.SetKind("ExternalSecret")
			esErr := env.Kube.Get(ctx, client.ObjectKey{Namespace: "vshop", Name: "main-ledger-postgresql"}, es)
			if roleErr == nil && kerrors.IsNotFound(esErr) {
				early = true
			}
			_, err := kv.Read(ctx, path)
			return errors.Is(err, openbao.ErrNotFound) && kerrors.IsNotFound(esErr) && kerrors.IsNotFound(roleErr), nil
		})
		if err != nil {
			t.Errorf("after the claim went, the login role, the KV path or the ExternalSecret is still there: %v", err)
		}
		if early {
			t.Error("the ExternalSecret went while the login role was still there")
		}
		env.Gone(ctx, t, claim)
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

// moveToTheVault: once the claim's Instance names a credentialVault, the
// claim shows both deliveries and until when, then the vault's alone: the
// ExternalSecret owns the claim's Secret, the login role writes it no
// more, the Secret still holds the credential it held (no new password),
// it never went missing and no login with it failed.
func moveToTheVault(ctx context.Context, t *testing.T, core *crossplane.Core, claim *unstructured.Unstructured, watch *loginWatch) {
	t.Helper()
	str := func(path ...string) string {
		v, _, _ := unstructured.NestedString(claim.Object, append([]string{"status"}, path...)...)
		return v
	}
	seen := map[string]bool{}
	err := providertest.Wait(ctx, 3*time.Minute, func(ctx context.Context) (bool, error) {
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(claim), claim); err != nil {
			return false, err
		}
		if d := str("delivery"); d == "SecretAndOpenBao" && str("secretDeliveryEnds") != "" {
			seen["moving"] = true
		}
		return str("delivery") == "OpenBao", nil
	})
	if err != nil {
		t.Fatalf("the claim's delivery is %q, not OpenBao: %v; core's log:\n%s", str("delivery"), err, core.LogTail())
	}
	if !seen["moving"] {
		t.Error("the claim never showed both deliveries (status.delivery SecretAndOpenBao with status.secretDeliveryEnds)")
	}
	waitClaimReady(ctx, t, core, claim)
	sec := &corev1.Secret{}
	err = providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		if err := env.Kube.Get(ctx, client.ObjectKey{Namespace: claim.GetNamespace(), Name: "main-moving-postgresql"}, sec); err != nil {
			return false, err
		}
		c := metav1.GetControllerOf(sec)
		return c != nil && c.Kind == "ExternalSecret" && c.Name == "main-moving-postgresql", nil
	})
	if err != nil {
		t.Errorf("the ExternalSecret did not take the claim's Secret over: %v (owners %+v)", err, sec.GetOwnerReferences())
	}
	r := &v1alpha1.PostgreSQLRole{}
	if err := env.Kube.Get(ctx, client.ObjectKey{Namespace: claim.GetNamespace(), Name: "moving-login"}, r); err != nil {
		t.Fatal(err)
	}
	if r.Spec.WriteConnectionSecretToReference != nil || r.Spec.WriteConnectionDetailsToVault == nil {
		t.Errorf("the login role delivers to Secret %+v and vault %+v, want the vault alone", r.Spec.WriteConnectionSecretToReference, r.Spec.WriteConnectionDetailsToVault)
	}
	db := &v1alpha1.PostgreSQLDatabase{}
	if err := env.Kube.Get(ctx, client.ObjectKey{Namespace: claim.GetNamespace(), Name: "moving"}, db); err != nil {
		t.Fatal(err)
	}
	if str("databaseRef", "name") != db.Name || str("databaseRef", "uid") != string(db.UID) || str("database") != db.Status.AtProvider.Name {
		t.Errorf("the claim's status names database %s (%s), %q; want %s (%s), %q", str("databaseRef", "name"), str("databaseRef", "uid"), str("database"), db.Name, db.UID, db.Status.AtProvider.Name)
	}
	time.Sleep(2 * time.Second) // Logins after the hand-over.
	logins, failures, missing := watch.stop()
	if string(sec.Data["password"]) != watch.first {
		t.Error("the move gave the claim a new password: clients holding the old one would fail")
	}
	if len(failures) > 0 || missing > 0 || logins < 10 {
		t.Errorf("during the move: %d logins with the Secret, %d failed (%v), %d times the Secret was missing; want none failed or missing", logins, len(failures), failures, missing)
	}
	t.Logf("moved to the vault: %d logins with the Secret meanwhile, none failed", logins)
}

// loginWatch logs in with whatever a Secret holds, every 200 ms, from
// start to stop: a client that reads its credentials before each login.
type loginWatch struct {
	first  string
	done   chan struct{}
	result chan watched
}

// watched is what a loginWatch saw.
type watched struct {
	logins, missing int
	failures        []string
}

func watchLogins(ctx context.Context, t *testing.T, namespace, name string) *loginWatch {
	t.Helper()
	first, err := env.ConnectionSecret(ctx, namespace, name)
	if err != nil {
		t.Fatal(err)
	}
	w := &loginWatch{first: string(first["password"]), done: make(chan struct{}), result: make(chan watched, 1)}
	go func() {
		var r watched
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-w.done:
				w.result <- r
				return
			case <-tick.C:
			}
			s := &corev1.Secret{}
			if err := env.Kube.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, s); err != nil {
				r.missing++
				continue
			}
			r.logins++
			c, err := providertest.ConnectWithSecret(ctx, s.Data, "")
			if err != nil {
				r.failures = append(r.failures, err.Error())
				continue
			}
			_ = c.Close(ctx)
		}
	}()
	t.Cleanup(func() {
		select {
		case <-w.done:
		default:
			close(w.done)
		}
	})
	return w
}

// stop ends the watch: how many logins it tried, which failed, and how
// many times the Secret was missing.
func (w *loginWatch) stop() (logins int, failures []string, missing int) {
	close(w.done)
	r := <-w.result
	return r.logins, r.failures, r.missing
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

// gcKnowsExternalSecrets waits until the garbage collector deletes
// ExternalSecrets whose owner is gone: it learns of a new kind at its next
// discovery, up to half a minute after the kind's CRD appears, and until
// then a claim's deletion would leave its ExternalSecret alone whatever
// orders it.
func gcKnowsExternalSecrets(ctx context.Context, t *testing.T) {
	t.Helper()
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "vshop", Name: "gc-probe"}}
	env.Create(ctx, t, owner)
	probe := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
		"metadata": map[string]any{"namespace": "vshop", "name": "gc-probe", "ownerReferences": []any{map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "name": owner.Name, "uid": string(owner.UID),
		}}},
		"spec": map[string]any{
			"secretStoreRef": map[string]any{"name": "postgresql", "kind": "SecretStore"},
			"target":         map[string]any{"name": "gc-probe"},
			"dataFrom":       []any{map[string]any{"extract": map[string]any{"key": "postgresql/none"}}},
		},
	}}
	env.Create(ctx, t, probe)
	if err := env.Kube.Delete(ctx, owner); err != nil {
		t.Fatal(err)
	}
	err := providertest.Wait(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
		err := env.Kube.Get(ctx, client.ObjectKeyFromObject(probe), probe)
		return kerrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("the garbage collector does not delete ExternalSecrets: %v", err)
	}
}
