// Package openbao tests the delivery of login credentials to an OpenBao
// (here Vault, dev mode) KV v2 engine end to end: the provider's
// controllers, a real PostgreSQL, a real API server and a real KV v2
// server over TLS.
package openbao

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/cluster"
	"github.com/ayatori/provider-postgresql/internal/clients/openbao"
	"github.com/ayatori/provider-postgresql/internal/fixture/pki"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
	"github.com/ayatori/provider-postgresql/internal/fixture/vaultserver"
)

const ns = "shop"

var (
	env   *providertest.Env
	vault *vaultserver.Server
	kv    *openbao.Client
)

// suite is the package's environment: the provider's controllers against
// a real API server and PostgreSQL, and a KV v2 server.
var suite = providertest.Suite(providertest.Options{
	PollInterval: 2 * time.Second, Namespaces: []string{ns},
	ServiceAccountTokenFile: tokenFile,
}, func(e *providertest.Env) {
	env = e
})

// tokenFile is where the test puts the ServiceAccount token the provider
// logs in to the vault with, as kubelet mounts one in a pod.
var tokenFile = filepath.Join(os.TempDir(), fmt.Sprintf("openbao-e2e-%d.token", os.Getpid()))

func TestMain(m *testing.M) { os.Exit(suite.Run(m)) }

// vaultedInstance starts the KV v2 server and registers an Instance that
// delivers to it, authenticated with a token Secret that opted in.
func vaultedInstance(ctx context.Context, t *testing.T) *v1alpha1.PostgreSQLInstance {
	t.Helper()
	var err error
	if vault, err = vaultserver.Start(ctx, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(vault.Stop)
	if kv, err = vault.Client(); err != nil {
		t.Fatal(err)
	}
	in, err := env.Instance(ctx, "vaulted")
	if err != nil {
		t.Fatal(err)
	}
	env.Create(ctx, t,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: providertest.Namespace, Name: "vault-token", Labels: map[string]string{v1alpha1.LabelVaultCredential: "true"}},
			Data: map[string][]byte{"token": []byte(vault.RootToken)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: providertest.Namespace, Name: "vault-ca"}, Data: map[string][]byte{"ca.crt": vault.CA}},
	)
	providertest.Update(ctx, t, env, in, func(in *v1alpha1.PostgreSQLInstance) {
		in.Spec.CredentialVault = &v1alpha1.CredentialVault{
			Address: vault.Address, CABundleRef: &v1alpha1.CABundleReference{Name: "vault-ca"},
			Auth: v1alpha1.CredentialVaultAuth{TokenSecretRef: &v1alpha1.VaultTokenReference{Name: "vault-token"}},
		}
	})
	return in
}

func vaultRole(in *v1alpha1.PostgreSQLInstance, name, path string, mutate ...func(*v1alpha1.PostgreSQLRole)) *v1alpha1.PostgreSQLRole {
	r := &v1alpha1.PostgreSQLRole{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.PostgreSQLRoleSpec{
			ManagementPolicies:            xpv2.ManagementPolicies{xpv2.ManagementActionAll},
			InstanceRef:                   v1alpha1.InstanceReference{Name: in.Name},
			ForProvider:                   v1alpha1.PostgreSQLRoleParameters{Login: ptr.To(true)},
			WriteConnectionDetailsToVault: &v1alpha1.VaultPath{Name: path},
		},
	}
	for _, m := range mutate {
		m(r)
	}
	return r
}

// Paths of the roles' credentials.
const (
	ordersPath = "postgresql/vaulted/" + ns + "/orders"
	ledgerPath = "postgresql/vaulted/" + ns + "/ledger"
)

// credential reads a KV path, waiting up to 30 s until ok says it is the
// one expected.
func credential(ctx context.Context, t *testing.T, path string, ok func(map[string][]byte) bool) map[string][]byte {
	t.Helper()
	var got map[string][]byte
	err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		s, err := kv.Read(ctx, path)
		if errors.Is(err, openbao.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		got = map[string][]byte{}
		for k, v := range s.Data {
			got[k] = []byte(v)
		}
		return ok(got), nil
	})
	if err != nil {
		t.Fatalf("the credential at %s: %v (keys %d)", path, err, len(got))
	}
	return got
}

func versions(ctx context.Context, t *testing.T, path string) int {
	t.Helper()
	n, err := kv.Versions(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// rotated waits until the role reports the rotation request handled, Synced
// and Ready. With
// InPlace rotation the new password reaches the path before the server
// (so that a provider stopped in between finds it there), so a credential
// read from the path logs in once the rotation has been handled, not as
// soon as it appears.
func rotated(ctx context.Context, t *testing.T, r *v1alpha1.PostgreSQLRole, request string) {
	t.Helper()
	err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), r)
		return err == nil && r.Status.AtProvider.PasswordRotation == request &&
			r.GetCondition(xpv2.TypeSynced).Status == corev1.ConditionTrue && r.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue, err
	})
	if err != nil {
		t.Fatalf("the role did not handle rotation request %q and stay Ready: %v (status %q, Synced %+v, Ready %+v)",
			request, err, r.Status.AtProvider.PasswordRotation, r.GetCondition(xpv2.TypeSynced), r.GetCondition(xpv2.TypeReady))
	}
}

func logsIn(ctx context.Context, d map[string][]byte) error {
	c, err := providertest.ConnectWithSecret(ctx, d, "")
	if err != nil {
		return err
	}
	return c.Close(ctx)
}

// TestVaultDelivery: a login role delivering to the vault writes every key
// a connection Secret holds to its path, one version per change and none
// per poll; no Secret holds the password; an on-demand rotation is one new
// version that logs in; a path someone else wrote is refused and left as
// it was; a vault that does not answer mid-rotation changes nothing until
// it answers again; the path goes with the role.
func TestVaultDelivery(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	in := vaultedInstance(ctx, t)
	r := vaultRole(in, "orders-login", "orders", func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.Name = ptr.To("orders") })
	env.Create(ctx, t, r)
	env.Ready(ctx, t, r, corev1.ConditionTrue, xpv2.ReasonAvailable)
	first := credential(ctx, t, ordersPath, func(d map[string][]byte) bool { return len(d["password"]) > 0 })

	t.Run("EveryKeyAndItLogsIn", func(t *testing.T) {
		for _, k := range []string{"username", "password", "host", "hostaddr", "port", "database", "sslmode", "uri", "jdbc-url", "pgpass", "pg_service.conf", "ca.crt"} {
			if len(first[k]) == 0 {
				t.Errorf("the credential has no %s", k)
			}
		}
		if err := logsIn(ctx, first); err != nil {
			t.Errorf("its uri does not log in: %v", err)
		}
		got := &v1alpha1.PostgreSQLRole{}
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), got); err != nil {
			t.Fatal(err)
		}
		want := &v1alpha1.VaultDelivery{Path: ordersPath, URL: kv.URL(ordersPath)}
		if v := got.Status.AtProvider.Vault; v == nil || v.Since == nil || v.Since.After(time.Now()) {
			t.Errorf("status.atProvider.vault does not say since when the path holds the credential: %+v", v)
		} else {
			want.Since = v.Since
		}
		if diff := cmp.Diff(want, got.Status.AtProvider.Vault); diff != "" {
			t.Errorf("status.atProvider.vault (-want +got):\n%s", diff)
		}
		if v := got.Status.AtProvider.Vault; v != nil && strings.Contains(v.URL, vault.RootToken) {
			t.Error("the credential's URL carries the token")
		}
	})

	t.Run("NoSecretHoldsThePassword", func(t *testing.T) {
		l := &corev1.SecretList{}
		if err := env.Kube.List(ctx, l); err != nil {
			t.Fatal(err)
		}
		for _, s := range l.Items {
			for k, v := range s.Data {
				if strings.Contains(string(v), string(first["password"])) {
					t.Errorf("Secret %s/%s key %s holds the password", s.Namespace, s.Name, k)
				}
			}
		}
	})

	t.Run("NoVersionPerPoll", func(t *testing.T) {
		before := versions(ctx, t, ordersPath)
		time.Sleep(5 * time.Second) // Two polls.
		if after := versions(ctx, t, ordersPath); after != before {
			t.Errorf("versions went from %d to %d over two polls with nothing changed", before, after)
		}
	})

	t.Run("RotationIsOneVersion", func(t *testing.T) {
		before := versions(ctx, t, ordersPath)
		providertest.Update(ctx, t, env, r, func(r *v1alpha1.PostgreSQLRole) {
			meta.AddAnnotations(r, map[string]string{v1alpha1.AnnotationRotatePassword: "1"})
		})
		next := credential(ctx, t, ordersPath, func(d map[string][]byte) bool { return string(d["password"]) != string(first["password"]) })
		rotated(ctx, t, r, "1")
		if err := logsIn(ctx, next); err != nil {
			t.Errorf("the rotated credential does not log in: %v", err)
		}
		time.Sleep(5 * time.Second)
		if after := versions(ctx, t, ordersPath); after != before+1 {
			t.Errorf("a rotation took the path from %d to %d versions, want one more", before, after)
		}
	})

	t.Run("ACertificateLoginTradesItsPassword", func(t *testing.T) {
		// A role delivering to the vault moves from a password to a
		// client certificate: the path's next version holds the
		// certificate and no password, and it logs in.
		const journalPath = "postgresql/vaulted/" + ns + "/journal"
		if err := env.ClientCASecret(ctx, "client-ca"); err != nil {
			t.Fatal(err)
		}
		providertest.Update(ctx, t, env, in, func(in *v1alpha1.PostgreSQLInstance) {
			in.Spec.ClientCertificateAuthorityRef = &v1alpha1.ClientCertificateAuthorityReference{Name: "client-ca"}
		})
		if err := env.Postgres.AddHBA(ctx, "hostssl all journal 127.0.0.1/32 cert"); err != nil {
			t.Fatal(err)
		}
		c := vaultRole(in, "journal-login", "journal", func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.Name = ptr.To("journal") })
		env.Create(ctx, t, c)
		env.Ready(ctx, t, c, corev1.ConditionTrue, xpv2.ReasonAvailable)
		credential(ctx, t, journalPath, func(d map[string][]byte) bool { return len(d["password"]) > 0 })
		dir := t.TempDir()
		providertest.Update(ctx, t, env, c, func(r *v1alpha1.PostgreSQLRole) {
			r.Spec.ForProvider.Authentication = v1alpha1.AuthenticationCertificate
			r.Spec.ClientCertificate = &v1alpha1.ClientCertificate{Duration: &metav1.Duration{Duration: 24 * time.Hour}, MountPath: dir}
		})
		d := credential(ctx, t, journalPath, func(d map[string][]byte) bool { _, pw := d["password"]; return len(d["tls.crt"]) > 0 && !pw })
		if _, ok := d["pgpass"]; ok {
			t.Error("the path still holds a pgpass line")
		}
		// The JDBC key is binary: the path holds it in base64, and it is
		// the PEM key's.
		der, err := base64.StdEncoding.DecodeString(string(d["tls.key.pk8.base64"]))
		block, _ := pem.Decode(d["tls.key"])
		if err != nil || block == nil || !bytes.Equal(der, block.Bytes) {
			t.Errorf("tls.key.pk8.base64 is not tls.key in base64 DER (%v)", err)
		}
		if _, ok := d["tls.key.pk8"]; ok {
			t.Error("the path holds the binary key, which a KV value cannot")
		}
		if err := providertest.MountCredential(d, dir, "tls.crt", "tls.key", "ca.crt"); err != nil {
			t.Fatal(err)
		}
		if user, err := providertest.PsqlLogin(ctx, string(d["uri"])); err != nil || user != "journal" {
			t.Errorf("the path's uri: user %q, %v", user, err)
		}
		before := versions(ctx, t, journalPath)
		time.Sleep(5 * time.Second) // Two polls.
		if after := versions(ctx, t, journalPath); after != before {
			t.Errorf("versions went from %d to %d over two polls with nothing changed", before, after)
		}
	})

	t.Run("AMoveFromASecretKeepsTheCredential", func(t *testing.T) {
		moveFromASecret(ctx, t, in)
	})

	t.Run("APathSomeoneElseWroteIsRefused", func(t *testing.T) {
		planted := map[string]string{"username": "planted", "password": "chosen-by-someone-else"}
		if _, err := kv.Write(ctx, "postgresql/vaulted/"+ns+"/planted", planted, 0); err != nil {
			t.Fatal(err)
		}
		p := vaultRole(in, "planted-login", "planted", func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.Name = ptr.To("planted") })
		env.Create(ctx, t, p)
		env.Ready(ctx, t, p, corev1.ConditionFalse, v1alpha1.ReasonConflict)
		if m := p.GetCondition(xpv2.TypeReady).Message; !strings.Contains(m, "did not write") || strings.Contains(m, "chosen-by-someone-else") {
			t.Errorf("the Conflict does not say whose the path is, or quotes its password: %q", m)
		}
		if env.Holds(ctx, t, "EXISTS (SELECT FROM pg_roles WHERE rolname = 'planted')") {
			t.Error("the role was created with a planted credential at its path")
		}
		s, err := kv.Read(ctx, "postgresql/vaulted/"+ns+"/planted")
		if err != nil || s.Version != 1 || s.Data["password"] != "chosen-by-someone-else" {
			t.Errorf("the planted path was changed: %+v, %v", s, err)
		}
	})

	t.Run("ASoftDeletedPathIsNeitherTakenNorLeftReadable", func(t *testing.T) {
		// Someone deletes the latest version of a role's path (a soft
		// delete: older versions stay readable). Another role naming the
		// path does not take it over; the role writes its next version
		// after the deleted one; once the role goes, every version goes.
		const path = "postgresql/vaulted/" + ns + "/soft"
		a := vaultRole(in, "soft-a", "soft", func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.Name = ptr.To("soft_a") })
		env.Create(ctx, t, a)
		env.Ready(ctx, t, a, corev1.ConditionTrue, xpv2.ReasonAvailable)
		credential(ctx, t, path, func(d map[string][]byte) bool { return len(d["password"]) > 0 })
		if _, err := vault.Admin(ctx, "DELETE", "/v1/"+vaultserver.Mount+"/data/"+path, nil); err != nil {
			t.Fatal(err)
		}
		b := vaultRole(in, "soft-b", "soft", func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.Name = ptr.To("soft_b") })
		env.Create(ctx, t, b)
		env.Ready(ctx, t, b, corev1.ConditionFalse, v1alpha1.ReasonConflict)
		if env.Holds(ctx, t, "EXISTS (SELECT FROM pg_roles WHERE rolname = 'soft_b')") {
			t.Error("another role was created to deliver to a path whose latest version was deleted")
		}
		// a's next version follows the deleted one and logs in; b's
		// attempt left a's mark alone. The path is written before the
		// server (so a provider stopped in between finds the password
		// there), so the version logs in once a has applied it, not as
		// soon as it appears.
		err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
			d := credential(ctx, t, path, func(d map[string][]byte) bool { return len(d["password"]) > 0 })
			err := logsIn(ctx, d)
			return err == nil, err
		})
		if err != nil {
			t.Errorf("the version written after the deleted one does not log in: %v", err)
		}
		if got, err := kv.Observe(ctx, path); err != nil || got == nil || got.Custom["provider-postgresql-owner"] != string(a.GetUID()) {
			mark := ""
			if got != nil {
				mark = got.Custom["provider-postgresql-owner"]
			}
			t.Errorf("the path's owner mark is %q (%v), want soft-a's UID", mark, err)
		}
		if _, err := vault.Admin(ctx, "DELETE", "/v1/"+vaultserver.Mount+"/data/"+path, nil); err != nil {
			t.Fatal(err)
		}
		if err := env.Kube.Delete(ctx, a); err != nil {
			t.Fatal(err)
		}
		env.Gone(ctx, t, a)
		if n := versions(ctx, t, path); n != 0 {
			t.Errorf("the path keeps %d versions, readable, after its role went while its latest version was deleted", n)
		}
	})

	t.Run("ANestedPathPrefixIsRefused", func(t *testing.T) {
		// Two Instances on one KV engine whose path prefixes nest: a
		// namespace named like the inner Instance could read its
		// credentials through a store that reads the outer one's paths.
		// The inner one delivers nothing.
		nested, err := env.Instance(ctx, "nested")
		if err != nil {
			t.Fatal(err)
		}
		providertest.Update(ctx, t, env, nested, func(n *v1alpha1.PostgreSQLInstance) {
			n.Spec.CredentialVault = in.Spec.CredentialVault.DeepCopy()
			n.Spec.CredentialVault.PathPrefix = "postgresql/eu"
		})
		r := vaultRole(nested, "eu-login", "eu", func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.Name = ptr.To("eu") })
		env.Create(ctx, t, r)
		err = providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
			err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), r)
			return err == nil && strings.Contains(r.GetCondition(xpv2.TypeSynced).Message, `pathPrefix "postgresql/eu" lies within PostgreSQLInstance "vaulted"'s "postgresql"`), err
		})
		if err != nil {
			t.Errorf("the role on the nested prefix does not say why it delivers nothing: %v (Synced %+v)", err, r.GetCondition(xpv2.TypeSynced))
		}
		if got, err := kv.Observe(ctx, "postgresql/eu/nested/"+ns+"/eu"); err != nil || got != nil {
			// Never the version itself: it holds a password.
			t.Errorf("something was written below the nested prefix (%t), or the path could not be read (%v)", got != nil, err)
		}
		if env.Holds(ctx, t, "EXISTS (SELECT FROM pg_roles WHERE rolname = 'eu')") {
			t.Error("the role was created although its credential could not be delivered")
		}
	})

	t.Run("VaultNotAnsweringMidRotation", func(t *testing.T) {
		cur := credential(ctx, t, ordersPath, func(map[string][]byte) bool { return true })
		before := versions(ctx, t, ordersPath)
		if err := vault.Pause(); err != nil {
			t.Fatal(err)
		}
		providertest.Update(ctx, t, env, r, func(r *v1alpha1.PostgreSQLRole) {
			meta.AddAnnotations(r, map[string]string{v1alpha1.AnnotationRotatePassword: "2"})
		})
		err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
			err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), r)
			s := r.GetCondition(xpv2.TypeSynced)
			return err == nil && s.Status == corev1.ConditionFalse && strings.Contains(s.Message, "credentialVault"), err
		})
		if err != nil {
			t.Errorf("the role does not say the vault is not answering: %v (Synced %+v)", err, r.GetCondition(xpv2.TypeSynced))
		}
		if err := logsIn(ctx, cur); err != nil {
			t.Errorf("the delivered credential stopped working while the vault was down: %v", err)
		}
		if err := vault.Resume(); err != nil {
			t.Fatal(err)
		}
		next := credential(ctx, t, ordersPath, func(d map[string][]byte) bool { return string(d["password"]) != string(cur["password"]) })
		rotated(ctx, t, r, "2")
		if err := logsIn(ctx, next); err != nil {
			t.Errorf("after the vault came back, the rotated credential does not log in: %v", err)
		}
		if after := versions(ctx, t, ordersPath); after != before+1 {
			t.Errorf("the rotation across the outage took the path from %d to %d versions, want one more", before, after)
		}
	})

	t.Run("AlternatingRotations", func(t *testing.T) {
		// Two logins take turns: each rotation is one new version, written
		// before the previous login's grace period starts, and a client
		// that reads the path before it logs in never fails.
		l := vaultRole(in, "ledger-login", "ledger", func(r *v1alpha1.PostgreSQLRole) {
			r.Spec.ForProvider.Name = ptr.To("ledger")
			// Short, so that three rotations take seconds: a rotation
			// waits until its target login's grace period is over.
			r.Spec.PasswordRotation = &v1alpha1.PasswordRotation{Mode: v1alpha1.RotationAlternating, GracePeriod: &metav1.Duration{Duration: 3 * time.Second}}
		})
		env.Create(ctx, t, l)
		env.Ready(ctx, t, l, corev1.ConditionTrue, xpv2.ReasonAvailable)
		t.Cleanup(func() { _ = env.Kube.Delete(context.WithoutCancel(ctx), l) })
		cur := credential(ctx, t, ledgerPath, func(d map[string][]byte) bool { return len(d["password"]) > 0 })
		firstLogin := cur["username"]
		start := versions(ctx, t, ledgerPath)
		for i := 1; i <= 3; i++ {
			providertest.Update(ctx, t, env, l, func(r *v1alpha1.PostgreSQLRole) {
				meta.AddAnnotations(r, map[string]string{v1alpha1.AnnotationRotatePassword: strconv.Itoa(i)})
			})
			prev := cur
			cur = credential(ctx, t, ledgerPath, func(d map[string][]byte) bool { return string(d["username"]) != string(prev["username"]) })
			if i%2 == 0 && string(cur["username"]) != string(firstLogin) {
				t.Errorf("rotation %d: login %s, want %s back: the two logins take turns", i, cur["username"], firstLogin)
			}
			if err := logsIn(ctx, cur); err != nil {
				t.Errorf("rotation %d: the new login %s does not log in: %v", i, cur["username"], err)
			}
			if err := logsIn(ctx, prev); err != nil {
				t.Errorf("rotation %d: the previous login %s failed within its grace period: %v", i, prev["username"], err)
			}
		}
		time.Sleep(5 * time.Second) // Two polls.
		if n := versions(ctx, t, ledgerPath); n != start+3 {
			t.Errorf("three rotations took the path from %d to %d versions, want three more", start, n)
		}
	})

	t.Run("KubernetesAuthAndIsolation", func(t *testing.T) {
		kubernetesAuthAndIsolation(ctx, t)
	})

	t.Run("DeletionWaitsForTheVault", func(t *testing.T) {
		// The platform removed the Instance's credentialVault: a role
		// delivering there cannot destroy its path, so its deletion waits
		// and says how it goes on, instead of leaving the credential.
		h := vaultRole(in, "held-login", "held", func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.Name = ptr.To("held") })
		env.Create(ctx, t, h)
		env.Ready(ctx, t, h, corev1.ConditionTrue, xpv2.ReasonAvailable)
		credential(ctx, t, "postgresql/vaulted/"+ns+"/held", func(d map[string][]byte) bool { return len(d["password"]) > 0 })
		var saved *v1alpha1.CredentialVault
		providertest.Update(ctx, t, env, in, func(in *v1alpha1.PostgreSQLInstance) {
			saved, in.Spec.CredentialVault = in.Spec.CredentialVault, nil
		})
		if err := env.Kube.Delete(ctx, h); err != nil {
			t.Fatal(err)
		}
		err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
			err := env.Kube.Get(ctx, client.ObjectKeyFromObject(h), h)
			return err == nil && strings.Contains(h.GetCondition(xpv2.TypeSynced).Message, "restore the Instance's spec.credentialVault"), err
		})
		if err != nil {
			t.Errorf("the held deletion does not say how it goes on: %v (Synced %+v)", err, h.GetCondition(xpv2.TypeSynced))
		}
		providertest.Update(ctx, t, env, in, func(in *v1alpha1.PostgreSQLInstance) { in.Spec.CredentialVault = saved })
		env.Gone(ctx, t, h)
		if n, err := kv.Versions(ctx, "postgresql/vaulted/"+ns+"/held"); err != nil || n != 0 {
			t.Errorf("the path keeps %d versions once the deletion went on (%v)", n, err)
		}
	})

	t.Run("ThePathGoesWithTheRole", func(t *testing.T) {
		last := credential(ctx, t, ordersPath, func(map[string][]byte) bool { return true })
		if err := env.Kube.Delete(ctx, r); err != nil {
			t.Fatal(err)
		}
		env.Gone(ctx, t, r)
		if n := versions(ctx, t, ordersPath); n != 0 {
			t.Errorf("the path keeps %d versions after its role is gone", n)
		}
		if err := logsIn(ctx, last); err == nil {
			t.Error("the last delivered credential still logs in after the role was dropped")
		}
	})
}

// kubernetesAuthAndIsolation: the provider logs in with a token of its
// ServiceAccount through the vault's Kubernetes auth method, holding only
// the shipped provider policy, and delivers; the token the vault receives
// (seen by a proxy in front of it) is made for the vault's audience, not
// the API server's, and expires within ten minutes; a namespace's store
// policy, rendered from the shipped template, reads its own namespace's
// paths and nothing of another's.
func kubernetesAuthAndIsolation(ctx context.Context, t *testing.T) {
	kc, err := kubernetes.NewForConfig(env.ControlPlane.Config)
	if err != nil {
		t.Fatal(err)
	}
	const sa, reviewer = "provider-postgresql", "vault-reviewer"
	env.Create(ctx, t,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: providertest.Namespace, Name: sa}},
		// The vault reviews the tokens it receives with a credential of
		// its own (token_reviewer_jwt, or its pod's ServiceAccount in a
		// cluster): the provider's tokens are made for the vault, and the
		// API server takes none of them as a login.
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: providertest.Namespace, Name: reviewer}},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: reviewer + "-auth-delegator"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:auth-delegator"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: providertest.Namespace, Name: reviewer}},
		})
	token := func(name string) string {
		tr, err := kc.CoreV1().ServiceAccounts(providertest.Namespace).CreateToken(ctx, name, &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	// What a pod has mounted: the provider reads it only to learn which
	// ServiceAccount it runs as.
	if err := os.WriteFile(tokenFile, []byte(token(sa)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(tokenFile) })
	cfg := env.ControlPlane.Config
	for _, step := range []struct {
		path string
		body any
	}{
		{"/v1/sys/auth/kubernetes", map[string]any{"type": "kubernetes"}},
		{"/v1/auth/kubernetes/config", map[string]any{"kubernetes_host": cfg.Host, "kubernetes_ca_cert": string(cfg.CAData), "disable_local_ca_jwt": true, "token_reviewer_jwt": token(reviewer)}},
		{"/v1/auth/kubernetes/role/provider-postgresql", map[string]any{
			"bound_service_account_names": []string{sa}, "bound_service_account_namespaces": []string{providertest.Namespace},
			"token_policies": []string{"provider-postgresql"}, "token_ttl": "1h", "audience": audience,
		}},
	} {
		if _, err := vault.Admin(ctx, "POST", step.path, step.body); err != nil {
			t.Fatal(err)
		}
	}
	for name, p := range map[string][2]string{
		"provider-postgresql": {cluster.OpenBaoProviderPolicyFile, ""},
		"postgresql-shop":     {cluster.OpenBaoNamespacePolicyFile, ns},
		"postgresql-other":    {cluster.OpenBaoNamespacePolicyFile, "other"},
	} {
		if err := vault.WritePolicy(ctx, name, p[0], p[1]); err != nil {
			t.Fatal(err)
		}
	}

	in, err := env.Instance(ctx, "kauth")
	if err != nil {
		t.Fatal(err)
	}
	proxy := newLoginRecorder(ctx, t)
	providertest.Update(ctx, t, env, in, func(in *v1alpha1.PostgreSQLInstance) {
		in.Spec.CredentialVault = &v1alpha1.CredentialVault{
			Address: proxy.address, CABundleRef: &v1alpha1.CABundleReference{Name: proxy.caSecret},
			Auth: v1alpha1.CredentialVaultAuth{Kubernetes: &v1alpha1.VaultKubernetesAuth{Role: "provider-postgresql", Audience: audience}},
		}
	})
	r := vaultRole(in, "kube-login", "kube", func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.Name = ptr.To("kube") })
	env.Create(ctx, t, r)
	t.Cleanup(func() { _ = env.Kube.Delete(context.WithoutCancel(ctx), r) })
	env.Ready(ctx, t, r, corev1.ConditionTrue, xpv2.ReasonAvailable)
	const path = "postgresql/kauth/" + ns + "/kube"
	d := credential(ctx, t, path, func(d map[string][]byte) bool { return len(d["password"]) > 0 })
	if err := logsIn(ctx, d); err != nil {
		t.Errorf("the credential delivered with Kubernetes auth does not log in: %v", err)
	}
	logins := proxy.tokens()
	if len(logins) == 0 {
		t.Fatal("the vault received no Kubernetes auth login")
	}
	for _, c := range logins {
		if !slices.Equal(c.Audience, []string{audience}) {
			t.Errorf("the vault received a token for audience %v, want %q alone: the pod's own token is good for the API server", c.Audience, audience)
		}
		if life := time.Unix(c.Expires, 0).Sub(time.Unix(c.Issued, 0)); life <= 0 || life > 10*time.Minute {
			t.Errorf("the vault received a token that lives %s, want at most ten minutes", life)
		}
		if c.Subject != "system:serviceaccount:"+providertest.Namespace+":"+sa {
			t.Errorf("the vault received a token of %q, want the provider's ServiceAccount", c.Subject)
		}
	}

	reader := func(namespace string) *openbao.Client {
		token, err := vault.Token(ctx, "postgresql-"+namespace)
		if err != nil {
			t.Fatal(err)
		}
		c, err := openbao.New(openbao.Config{Address: vault.Address, CA: vault.CA, Mount: vaultserver.Mount, Token: token})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if s, err := reader(ns).Read(ctx, path); err != nil || s.Data["password"] != string(d["password"]) {
		t.Errorf("the %s namespace's store cannot read its own credential: %v", ns, err)
	}
	_, err = reader("other").Read(ctx, path)
	if err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("another namespace's store read the %s credential: %v, want 403", ns, err)
	}

	// A platform that retains paths keeps a dropped login's credential
	// (which no longer logs in).
	providertest.Update(ctx, t, env, in, func(in *v1alpha1.PostgreSQLInstance) {
		in.Spec.CredentialVault.DeletionPolicy = v1alpha1.VaultPathRetain
	})
	if err := env.Kube.Delete(ctx, r); err != nil {
		t.Fatal(err)
	}
	env.Gone(ctx, t, r)
	if n, err := kv.Versions(ctx, path); err != nil || n == 0 {
		t.Errorf("deletionPolicy Retain: the path keeps %d versions (%v), want it kept", n, err)
	}
	if err := logsIn(ctx, d); err == nil {
		t.Error("the retained credential of a dropped login still logs in")
	}
}

// audience is what the vault's Kubernetes auth role accepts.
const audience = "openbao-e2e"

// claims are what a login's ServiceAccount token says of itself.
type claims struct {
	Audience []string `json:"aud"`
	Subject  string   `json:"sub"`
	Issued   int64    `json:"iat"`
	Expires  int64    `json:"exp"`
}

// loginRecorder stands in front of the vault, over TLS with a CA of its
// own, passes everything on, and keeps the claims of the ServiceAccount
// tokens logins present: what the vault receives.
type loginRecorder struct {
	address, caSecret string

	mu   sync.Mutex
	seen []claims
}

func newLoginRecorder(ctx context.Context, t *testing.T) *loginRecorder {
	t.Helper()
	ca, err := pki.NewCA("login-recorder")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue("127.0.0.1", []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	upstream, err := url.Parse(vault.Address)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(vault.CA)
	r := &loginRecorder{caSecret: "login-recorder-ca"}
	fwd := httputil.NewSingleHostReverseProxy(upstream)
	fwd.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasSuffix(req.URL.Path, "/login") {
			body, _ := io.ReadAll(req.Body)
			req.Body = io.NopCloser(bytes.NewReader(body))
			var login struct {
				JWT string `json:"jwt"`
			}
			if json.Unmarshal(body, &login) == nil {
				if parts := strings.Split(login.JWT, "."); len(parts) == 3 {
					if payload, err := base64.RawURLEncoding.DecodeString(parts[1]); err == nil {
						var c claims
						if json.Unmarshal(payload, &c) == nil {
							r.mu.Lock()
							r.seen = append(r.seen, c)
							r.mu.Unlock()
						}
					}
				}
			}
		}
		fwd.ServeHTTP(w, req)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	r.address = srv.URL
	env.Create(ctx, t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: providertest.Namespace, Name: r.caSecret}, Data: map[string][]byte{"ca.crt": ca.CertPEM}})
	return r
}

// tokens are the claims of the tokens logins presented so far.
func (r *loginRecorder) tokens() []claims {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

// moveFromASecret: a login role that writes a connection Secret and is
// given a vault path delivers to both: the path gets the Secret's
// credential, not a new one, and a rotation reaches both alike. With the
// Secret reference removed the role lets go of the Secret: it keeps its
// data and the role as an owner (it still goes with the role), with no
// controller, so an ExternalSecret may take it over.
func moveFromASecret(ctx context.Context, t *testing.T, in *v1alpha1.PostgreSQLInstance) {
	const path = "postgresql/vaulted/" + ns + "/moving"
	r := vaultRole(in, "moving-login", "moving", func(r *v1alpha1.PostgreSQLRole) {
		r.Spec.ForProvider.Name = ptr.To("moving")
		r.Spec.WriteConnectionDetailsToVault = nil
		r.Spec.WriteConnectionSecretToReference = &xpv2.LocalSecretReference{Name: "moving-conn"}
	})
	env.Create(ctx, t, r)
	env.Ready(ctx, t, r, corev1.ConditionTrue, xpv2.ReasonAvailable)
	before, err := env.ConnectionSecret(ctx, ns, "moving-conn")
	if err != nil {
		t.Fatal(err)
	}

	providertest.Update(ctx, t, env, r, func(r *v1alpha1.PostgreSQLRole) {
		r.Spec.WriteConnectionDetailsToVault = &v1alpha1.VaultPath{Name: "moving"}
	})
	moved := credential(ctx, t, path, func(d map[string][]byte) bool { return len(d["password"]) > 0 })
	if string(moved["password"]) != string(before["password"]) || string(moved["username"]) != string(before["username"]) {
		t.Errorf("the vault got login %s with another password than the Secret's: the move made a new credential", moved["username"])
	}
	if err := logsIn(ctx, moved); err != nil {
		t.Errorf("the moved credential does not log in: %v", err)
	}
	err = providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), r)
		v := r.Status.AtProvider.Vault
		return err == nil && v != nil && v.Since != nil && r.Status.AtProvider.ConnectionSecret == "moving-conn", err
	})
	if err != nil {
		t.Errorf("the role's status does not show both deliveries: vault %+v, connectionSecret %q: %v", r.Status.AtProvider.Vault, r.Status.AtProvider.ConnectionSecret, err)
	}

	providertest.Update(ctx, t, env, r, func(r *v1alpha1.PostgreSQLRole) {
		meta.AddAnnotations(r, map[string]string{v1alpha1.AnnotationRotatePassword: "moving-1"})
	})
	rotated(ctx, t, r, "moving-1")
	next := credential(ctx, t, path, func(d map[string][]byte) bool { return string(d["password"]) != string(before["password"]) })
	if s, err := env.ConnectionSecret(ctx, ns, "moving-conn"); err != nil || string(s["password"]) != string(next["password"]) {
		t.Errorf("after a rotation the Secret and the vault differ (%v)", err)
	}

	providertest.Update(ctx, t, env, r, func(r *v1alpha1.PostgreSQLRole) { r.Spec.WriteConnectionSecretToReference = nil })
	sec := &corev1.Secret{}
	err = providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		if err := env.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "moving-conn"}, sec); err != nil {
			return false, err
		}
		return metav1.GetControllerOf(sec) == nil, nil
	})
	if err != nil {
		t.Fatalf("the role keeps controlling the Secret it no longer writes: %v (owners %+v)", err, sec.GetOwnerReferences())
	}
	if !slices.ContainsFunc(sec.GetOwnerReferences(), func(o metav1.OwnerReference) bool { return o.UID == r.GetUID() }) {
		t.Errorf("the released Secret lost the role as an owner, so it would outlive it: %+v", sec.GetOwnerReferences())
	}
	if string(sec.Data["password"]) != string(next["password"]) {
		t.Error("letting go of the Secret changed its credential")
	}
	if err := logsIn(ctx, sec.Data); err != nil {
		t.Errorf("the released Secret's credential does not log in: %v", err)
	}
	// The Secret is let go of first, and the reconcile that did it writes
	// the status at its end.
	err = providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), r)
		return err == nil && r.Status.AtProvider.ConnectionSecret == "", err
	})
	if err != nil {
		t.Errorf("status.atProvider.connectionSecret is %q once released (%v), want empty", r.Status.AtProvider.ConnectionSecret, err)
	}
}
