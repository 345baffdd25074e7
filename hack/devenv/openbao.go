package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/cluster"
	"github.com/ayatori/provider-postgresql/internal/fixture/externalsecrets"
	"github.com/ayatori/provider-postgresql/internal/fixture/vaultserver"
)

// Delivery modes of make dev (DELIVERY=secret|openbao).
const (
	deliverySecret  = "secret"
	deliveryOpenBao = "openbao"
)

// tenantNamespace is the example claim's namespace: its store reads the
// credentials delivered there.
const tenantNamespace = "shop"

// openBao is make dev's OpenBao delivery: a KV v2 server, the External
// Secrets Operator, and what the platform sets up around them.
type openBao struct {
	vault *vaultserver.Server
	eso   *externalsecrets.Operator
}

// startOpenBao starts the KV v2 server and the operator, writes the
// shipped policies, gives the provider a token of its policy, and switches
// the tenant Composition to OpenBao delivery, before any claim exists.
func (s *session) startOpenBao(ctx context.Context, kube client.Client) (*openBao, error) {
	dir := filepath.Join(s.state, "openbao")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	v, err := vaultserver.Start(ctx, dir)
	if err != nil {
		return nil, err
	}
	o := &openBao{vault: v}
	if o.eso, err = externalsecrets.Start(ctx, s.cp.Config, s.cp.Kubeconfig, dir); err != nil {
		v.Stop()
		return nil, err
	}
	if err := o.setUp(ctx, kube); err != nil {
		o.stop()
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(s.state, "openbao-ca.crt"), v.CA, 0o600); err != nil {
		o.stop()
		return nil, err
	}
	s.say("KV v2 server at %s (root token in %s), External Secrets Operator running", v.Address, filepath.Join(dir, "root-token"))
	return o, os.WriteFile(filepath.Join(dir, "root-token"), []byte(v.RootToken), 0o600)
}

func (o *openBao) setUp(ctx context.Context, kube client.Client) error {
	if err := o.vault.WritePolicy(ctx, "provider-postgresql", cluster.OpenBaoProviderPolicyFile, ""); err != nil {
		return err
	}
	if err := o.vault.WritePolicy(ctx, "postgresql-"+tenantNamespace, cluster.OpenBaoNamespacePolicyFile, tenantNamespace); err != nil {
		return err
	}
	token, err := o.vault.Token(ctx, "provider-postgresql")
	if err != nil {
		return err
	}
	for _, sec := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: providerNamespace, Name: "openbao-token", Labels: map[string]string{v1alpha1.LabelVaultCredential: "true"}},
			Data: map[string][]byte{"token": []byte(token)}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: providerNamespace, Name: "openbao-ca"}, Data: map[string][]byte{"ca.crt": o.vault.CA}},
	} {
		if err := kube.Create(ctx, sec); err != nil {
			return errors.Wrapf(err, "cannot create Secret %s", sec.Name)
		}
	}
	return setDelivery(ctx, kube)
}

// setDelivery sets the tenant Composition's input to OpenBao delivery
// through each namespace's SecretStore "postgresql". Unset, delivery
// follows the Instance; it is set here because the example claim is
// applied together with the example Instance, before the Instance gets
// its credentialVault, and would start with a Secret and move to the vault
// only after the grace period.
func setDelivery(ctx context.Context, kube client.Client) error {
	comp := &unstructured.Unstructured{}
	comp.SetAPIVersion("apiextensions.crossplane.io/v1")
	comp.SetKind("Composition")
	if err := kube.Get(ctx, client.ObjectKey{Name: "postgresqltenant"}, comp); err != nil {
		return err
	}
	steps, _, _ := unstructured.NestedSlice(comp.Object, "spec", "pipeline")
	step, ok := steps[0].(map[string]any)
	if !ok {
		return errors.Errorf("the tenant Composition's first step is a %T", steps[0])
	}
	in, _, _ := unstructured.NestedMap(step, "input")
	in["delivery"] = "OpenBao"
	in["openBao"] = map[string]any{"secretStoreRef": map[string]any{"name": "postgresql"}, "refreshInterval": "10s"}
	if err := unstructured.SetNestedMap(step, in, "input"); err != nil {
		return err
	}
	if err := unstructured.SetNestedSlice(comp.Object, steps, "spec", "pipeline"); err != nil {
		return err
	}
	return kube.Update(ctx, comp)
}

// platform gives the example Instance its credentialVault and the tenant
// namespace its store, once the examples (the Instance, the namespace)
// exist: what a platform team sets up once.
func (o *openBao) platform(ctx context.Context, kube client.Client) error {
	// A merge patch: the provider writes the Instance meanwhile (its
	// finalizer, its status), and an update from the version read here
	// would conflict with it.
	cv := map[string]any{
		"address": o.vault.Address, "caBundleRef": map[string]any{"name": "openbao-ca"},
		"auth": map[string]any{"tokenSecretRef": map[string]any{"name": "openbao-token"}},
	}
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"credentialVault": cv}})
	if err != nil {
		return err
	}
	in := &unstructured.Unstructured{}
	in.SetAPIVersion(v1alpha1.SchemeGroupVersion.String())
	in.SetKind(v1alpha1.PostgreSQLInstanceKind)
	in.SetName("main")
	if err := kube.Patch(ctx, in, client.RawPatch(types.MergePatchType, body)); err != nil {
		return errors.Wrap(err, "cannot give the example Instance its credentialVault")
	}
	token, err := o.vault.Token(ctx, "postgresql-"+tenantNamespace)
	if err != nil {
		return err
	}
	if err := kube.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNamespace, Name: "postgresql-store-token"},
		Data: map[string][]byte{"token": []byte(token)}}); err != nil {
		return err
	}
	store := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "external-secrets.io/v1", "kind": "SecretStore",
		"metadata": map[string]any{"namespace": tenantNamespace, "name": "postgresql"},
		"spec": map[string]any{"provider": map[string]any{"vault": map[string]any{
			"server": o.vault.Address, "path": vaultserver.Mount, "version": "v2",
			"caBundle": base64.StdEncoding.EncodeToString(o.vault.CA),
			"auth":     map[string]any{"tokenSecretRef": map[string]any{"name": "postgresql-store-token", "key": "token"}},
		}}},
	}}
	return kube.Create(ctx, store)
}

func (o *openBao) stop() {
	if o.eso != nil {
		o.eso.Stop()
	}
	o.vault.Stop()
}

// hints tells how to read the tenant's credential in the vault and its
// projected Secret.
func (o *openBao) hints(state string) string {
	bin, _ := vaultserver.Binary()
	return fmt.Sprintf(`
OpenBao delivery: the example claim's credentials are in the KV v2 server,
projected by an ExternalSecret into Secret %[1]s/main-inventory-postgresql:

  VAULT_ADDR=%[2]s VAULT_CACERT=%[3]s VAULT_TOKEN=$(cat %[4]s) \
    %[5]s kv get -mount=%[6]s postgresql/main/%[1]s/inventory
  kubectl -n %[1]s get externalsecret,secret main-inventory-postgresql
`, tenantNamespace, o.vault.Address, filepath.Join(state, "openbao-ca.crt"), filepath.Join(state, "openbao", "root-token"), bin, vaultserver.Mount)
}
