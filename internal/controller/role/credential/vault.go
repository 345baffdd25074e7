package credential

import (
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xperrors "github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/kubetoken"
	"github.com/ayatori/provider-postgresql/internal/clients/openbao"
	"github.com/ayatori/provider-postgresql/internal/controller/conflict"
	"github.com/ayatori/provider-postgresql/internal/controller/oninstance"
)

// ownerKey is the custom metadata key of a KV path that names the
// PostgreSQLRole (by UID) whose credentials it holds: a path written by
// anyone else is never read as a credential nor overwritten.
const ownerKey = "provider-postgresql-owner"

// Vaults reach the credentialVault of each Instance: a client per
// configuration, built again when the address, CA, mount or credentials
// change.
type Vaults struct {
	// kube reads Instances; secrets the token and CA, in namespace.
	kube, secrets client.Reader
	namespace     string
	// tokens are the ServiceAccount tokens Kubernetes auth logs in with,
	// one per vault audience.
	tokens *kubetoken.Source

	mu      sync.Mutex
	clients map[string]*openbao.Client
}

// NewVaults returns the vaults of the Instances kube reads: their token
// and CA Secrets are read through secrets, in namespace (the provider's);
// Kubernetes auth presents tokens from tokens.
func NewVaults(kube, secrets client.Reader, namespace string, tokens *kubetoken.Source) *Vaults {
	return &Vaults{kube: kube, secrets: secrets, namespace: namespace, tokens: tokens}
}

// vault returns the credentialVault of r's Instance.
func (v *Vaults) vault(ctx context.Context, r *v1alpha1.PostgreSQLRole) (*v1alpha1.PostgreSQLInstance, *v1alpha1.CredentialVault, error) {
	in := &v1alpha1.PostgreSQLInstance{}
	if err := v.kube.Get(ctx, types.NamespacedName{Name: r.Spec.InstanceRef.Name}, in); err != nil {
		return nil, nil, xperrors.Wrapf(err, "cannot read PostgreSQLInstance %q for its credentialVault", r.Spec.InstanceRef.Name)
	}
	cv := in.Spec.CredentialVault
	if cv == nil {
		return nil, nil, xperrors.Errorf("PostgreSQLInstance %q has no spec.credentialVault", in.GetName())
	}
	return in, cv, nil
}

// nested refuses in's credentialVault when another Instance's path prefix
// on the same engine holds in's: a policy that lets a namespace read
// <prefix>/<any instance>/<namespace>/ of the outer prefix would let a
// namespace named like in read every credential in's prefix holds.
func (v *Vaults) nested(ctx context.Context, in *v1alpha1.PostgreSQLInstance) error {
	l := &v1alpha1.PostgreSQLInstanceList{}
	if err := v.kube.List(ctx, l); err != nil {
		return xperrors.Wrap(err, "cannot list PostgreSQLInstances to check that no other credentialVault path prefix holds this one's")
	}
	mine := in.Spec.CredentialVault
	for i := range l.Items {
		o := &l.Items[i]
		cv := o.Spec.CredentialVault
		if o.GetUID() == in.GetUID() || cv == nil || !sameEngine(cv, mine) {
			continue
		}
		outer, inner := cmp.Or(cv.PathPrefix, "postgresql"), cmp.Or(mine.PathPrefix, "postgresql")
		if strings.HasPrefix(inner+"/", outer+"/") && inner != outer {
			return xperrors.Errorf("PostgreSQLInstance %q's credentialVault pathPrefix %q lies within PostgreSQLInstance %q's %q on the same KV engine: "+
				"a namespace named like this Instance could read its credentials through a store that reads the other's paths. Nothing was delivered: "+
				"give the two Instances prefixes neither of which holds the other (postgresql-eu, not postgresql/eu)", in.GetName(), inner, o.GetName(), outer)
		}
	}
	return nil
}

// sameEngine: a and b name the same KV engine of the same server.
func sameEngine(a, b *v1alpha1.CredentialVault) bool {
	return strings.TrimRight(a.Address, "/") == strings.TrimRight(b.Address, "/") && strings.Trim(a.Namespace, "/") == strings.Trim(b.Namespace, "/") &&
		cmp.Or(a.Mount, "secret") == cmp.Or(b.Mount, "secret")
}

// target returns the client and the path of r's credential.
func (v *Vaults) target(ctx context.Context, r *v1alpha1.PostgreSQLRole) (*openbao.Client, string, error) {
	in, cv, err := v.vault(ctx, r)
	if err != nil {
		return nil, "", xperrors.Wrap(err, "spec.writeConnectionDetailsToVault: nothing was delivered")
	}
	if err := v.nested(ctx, in); err != nil {
		return nil, "", err
	}
	cfg := openbao.Config{Address: cv.Address, Namespace: cv.Namespace, Mount: cmp.Or(cv.Mount, "secret")}
	audienceKey := ""
	if cv.CABundleRef != nil {
		ca, err := oninstance.CABundle(ctx, v.secrets, v.namespace, cv.CABundleRef)
		if err != nil {
			return nil, "", xperrors.Wrap(err, "cannot read the credentialVault's CA bundle")
		}
		cfg.CA = ca
	}
	switch a := cv.Auth; {
	case a.Kubernetes != nil:
		audience := cmp.Or(a.Kubernetes.Audience, cv.Address)
		cfg.Kubernetes = &openbao.KubernetesAuth{Role: a.Kubernetes.Role, MountPath: a.Kubernetes.MountPath,
			Token: func(ctx context.Context) (string, error) { return v.tokens.Token(ctx, audience) }}
		audienceKey = audience
	case a.TokenSecretRef != nil:
		s := &corev1.Secret{}
		nn := types.NamespacedName{Namespace: v.namespace, Name: a.TokenSecretRef.Name}
		if err := v.secrets.Get(ctx, nn, s); err != nil {
			return nil, "", xperrors.Wrapf(err, "cannot read the credentialVault token Secret %s", nn)
		}
		if s.GetLabels()[v1alpha1.LabelVaultCredential] != "true" {
			return nil, "", xperrors.Errorf("the Secret %s has not opted in as a vault token: label it %s=true if it is meant for PostgreSQLInstance %q's credentialVault; nothing was sent",
				nn, v1alpha1.LabelVaultCredential, in.GetName())
		}
		tok, err := oninstance.SecretKey(s, cmp.Or(a.TokenSecretRef.Key, "token"))
		if err != nil {
			return nil, "", err
		}
		cfg.Token = string(tok)
	}
	c, err := v.client(cfg, audienceKey)
	if err != nil {
		return nil, "", xperrors.Wrapf(err, "PostgreSQLInstance %q spec.credentialVault", in.GetName())
	}
	return c, strings.Join([]string{cmp.Or(cv.PathPrefix, "postgresql"), in.GetName(), r.GetNamespace(), r.Spec.WriteConnectionDetailsToVault.Name}, "/"), nil
}

// client returns the client of cfg, the same one while cfg (with the
// audience of its Kubernetes auth) is unchanged: it keeps its login.
func (v *Vaults) client(cfg openbao.Config, audience string) (*openbao.Client, error) {
	key := fmt.Sprintf("%s\x00%s\x00%s\x00%x\x00%s", cfg.Address, cfg.Namespace, cfg.Mount, cfg.CA, cfg.Token)
	if cfg.Kubernetes != nil {
		key += "\x00" + cfg.Kubernetes.Role + "\x00" + cfg.Kubernetes.MountPath + "\x00" + audience
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if c, ok := v.clients[key]; ok {
		return c, nil
	}
	c, err := openbao.New(cfg)
	if err != nil {
		return nil, err
	}
	if v.clients == nil {
		v.clients = map[string]*openbao.Client{}
	}
	// One configuration per Instance at a time: forget the others.
	if len(v.clients) > 64 {
		clear(v.clients)
	}
	v.clients[key] = c
	return c, nil
}

// vaultPath is a role's vault path as one reconcile read it: the client,
// the path, and its current version (nil: none yet).
type vaultPath struct {
	c    *openbao.Client
	path string
	s    *openbao.Secret
}

// current reads r's path. A path holding a credential that another
// resource wrote (or someone by hand) is a Conflict: never read, never
// overwritten.
func (v *Vaults) current(ctx context.Context, r *v1alpha1.PostgreSQLRole) (*vaultPath, error) {
	c, path, err := v.target(ctx, r)
	if err != nil {
		return nil, err
	}
	d := &v1alpha1.VaultDelivery{Path: path, URL: c.URL(path)}
	if was := r.Status.AtProvider.Vault; was != nil && was.Path == path {
		d.Since = was.Since
	}
	r.Status.AtProvider.Vault = d
	// A path whose latest version was deleted (its older ones still
	// readable) is still whoever's its metadata says.
	s, err := c.Observe(ctx, path)
	if err != nil {
		return nil, xperrors.Wrapf(err, "cannot read the credential from the Instance's credentialVault at %s", c.URL(path))
	}
	if s == nil {
		return &vaultPath{c: c, path: path}, nil
	}
	if s.Custom[ownerKey] != string(r.GetUID()) {
		whose := "no owner: someone wrote it by hand or with another tool"
		if o := s.Custom[ownerKey]; o != "" {
			whose = "the resource of UID " + o
		}
		msg := conflict.Message{
			Target:    "The vault path " + c.URL(path),
			Found:     fmt.Sprintf("holds a credential this PostgreSQLRole did not write (its %s custom metadata names %s)", ownerKey, whose),
			Step:      "observe, before the role's credentials are read or published",
			Confirmed: "nothing was read from the path and nothing was written to it or to the server; a credential the provider did not write is never taken as a password nor overwritten",
			Uncertain: "who wrote it and who reads it",
			Check:     "bao kv metadata get -mount=<mount> " + strings.SplitN(path, "/", 2)[0] + "/…",
			Next:      "An admin destroys that path (bao kv metadata delete), or the role names another spec.writeConnectionDetailsToVault.name",
		}.String()
		r.SetConditions(v1alpha1.Conflict(msg))
		return nil, xperrors.Errorf("%w: %s", oninstance.ErrConflict, msg)
	}
	w := &vaultPath{c: c, path: path, s: s}
	w.held(r)
	return w, nil
}

// held notes in r's status when its path first held its credentials.
func (w *vaultPath) held(r *v1alpha1.PostgreSQLRole) {
	if d := r.Status.AtProvider.Vault; d != nil && d.Since == nil && w.s != nil && !w.s.Deleted {
		d.Since = ptr.To(metav1.Now())
	}
}

// data is the view's published connection details (none yet, or the
// latest version deleted: empty).
func (w *vaultPath) data() map[string][]byte {
	out := map[string][]byte{}
	if w.s != nil && !w.s.Deleted {
		for k, d := range w.s.Data {
			out[k] = []byte(d)
		}
	}
	return out
}

// publish writes details as a new version of the view's path, unless the
// path holds them already, and keeps the view current. Keys are merged,
// as in a Secret: what details leave out stays. A version written since
// the view was read makes the write fail (check-and-set): the next
// reconcile reads again.
func (w *vaultPath) publish(ctx context.Context, r *v1alpha1.PostgreSQLRole, details managed.ConnectionDetails) error {
	if len(details) == 0 {
		return nil
	}
	want := map[string]string{}
	version := 0
	if w.s != nil {
		// After a deleted version, the next one follows it: check-and-set
		// counts every version, deleted or not.
		maps.Copy(want, w.s.Data)
		version = w.s.Version
	}
	for k, d := range details {
		if k == KeyPrivateDER && d != nil {
			// A KV value is a JSON string: binary is not one.
			k, d = KeyPrivateDERBase64, []byte(base64.StdEncoding.EncodeToString(d))
		}
		if d == nil {
			// Taken out (WithoutPassword).
			delete(want, k)
			continue
		}
		want[k] = string(d)
	}
	if w.s != nil && !w.s.Deleted && maps.Equal(want, w.s.Data) {
		return nil
	}
	if w.s == nil {
		// Marked before its first version, so that a crash in between
		// leaves a path this role recognises.
		if err := w.c.SetCustom(ctx, w.path, map[string]string{ownerKey: string(r.GetUID())}); err != nil {
			return xperrors.Wrapf(err, "cannot mark %s as this role's", w.c.URL(w.path))
		}
	}
	v, err := w.c.Write(ctx, w.path, want, version)
	if err != nil {
		return xperrors.Wrapf(err, "cannot write the credential to the Instance's credentialVault at %s", w.c.URL(w.path))
	}
	w.s = &openbao.Secret{Data: want, Version: v, Custom: map[string]string{ownerKey: string(r.GetUID())}}
	w.held(r)
	return nil
}

// Destroy deletes r's path, every version of it, once the role is gone,
// unless the credentialVault retains paths. A path another resource wrote
// is left alone.
func (v *Vaults) Destroy(ctx context.Context, r *v1alpha1.PostgreSQLRole) error {
	_, cv, err := v.vault(ctx, r)
	if err != nil {
		return xperrors.Wrap(err, "cannot destroy this role's vault path, which may still hold its credential; "+
			"restore the Instance's spec.credentialVault (with deletionPolicy Retain to keep the path) and the deletion goes on")
	}
	if cv.DeletionPolicy == v1alpha1.VaultPathRetain {
		return nil
	}
	// A path whose latest version was deleted still holds the older ones:
	// it is destroyed too.
	w, err := v.current(ctx, r)
	if err != nil || w.s == nil {
		return err
	}
	return xperrors.Wrapf(w.c.Destroy(ctx, w.path), "cannot destroy the credential at %s", w.c.URL(w.path))
}
