package pgctl

import (
	"context"
	"fmt"
	"strings"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

// TenantKind is the tenant claim's kind (the tenant Configuration's XRD).
const TenantKind = "PostgreSQLTenant"

// NamespacedTenantKind is the namespaced composite that asks for the same
// (the Crossplane v2 way): it is its own claim and composite.
const NamespacedTenantKind = "Tenant"

// externalSecret is the kind that projects a vault path into a Secret.
var externalSecret = schema.GroupVersionKind{Group: "external-secrets.io", Version: "v1", Kind: "ExternalSecret"}

// A Link is one object on the way from a claim to its credential.
type Link struct {
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Ready   string `json:"ready"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Note says what the object is to the claim.
	Note string `json:"note,omitempty"`
}

// trace prints the objects from a tenant claim to its credential.
func (c *CLI) trace(ctx context.Context, arg string) error {
	kind, name, ok := strings.Cut(arg, "/")
	word := strings.TrimSuffix(strings.ToLower(kind), "s")
	if !ok || word != "tenant" && word != "postgresqltenant" {
		return errors.Errorf("kubectl pg trace takes tenant/NAME (a %s claim or a namespaced %s)", TenantKind, NamespacedTenantKind)
	}
	// A claim of that name, else a namespaced Tenant (which composes under
	// its own name); tenant/NAME names either.
	kinds := []string{TenantKind, NamespacedTenantKind}
	if word == "postgresqltenant" {
		kinds = kinds[:1]
	}
	var (
		links     []Link
		composite string
	)
	for i, k := range kinds {
		t := &unstructured.Unstructured{}
		t.SetGroupVersionKind(v1alpha1.SchemeGroupVersion.WithKind(k))
		err := c.Kube.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, t)
		if err != nil && (i == len(kinds)-1 || !notFound(err)) {
			return errors.Wrapf(err, "cannot get %s %s/%s", k, c.Namespace, name)
		}
		if err != nil {
			continue
		}
		if k == TenantKind {
			links = []Link{linkOfUnstructured(t, "the claim")}
			composite, _, _ = unstructured.NestedString(t.Object, "spec", "resourceRef", "name")
		} else {
			links = []Link{linkOfUnstructured(t, "the tenant (a namespaced composite)")}
			composite = t.GetName()
		}
		break
	}
	composed := client.MatchingLabels{"crossplane.io/composite": composite}

	more, err := c.provisioned(ctx, composed)
	if err != nil {
		return err
	}
	links = append(links, more...)
	if more, err = c.delivered(ctx, composed); err != nil {
		return err
	}
	links = append(links, more...)
	return c.print(links, func() [][]string {
		rows := [][]string{{"KIND", "NAME", "READY", "REASON", "WHAT"}}
		for i, l := range links {
			indent := strings.Repeat("  ", min(i, 1))
			what := l.Note
			if l.Ready == "False" && l.Message != "" {
				what += ": " + l.Message
			}
			rows = append(rows, []string{indent + l.Kind, l.Name, l.Ready, l.Reason, what})
		}
		return rows
	})
}

func linkOf(kind string, o interface {
	v1alpha1.Object
	conditioned
}, note string,
) Link {
	r := o.GetCondition(xpv2.TypeReady)
	return Link{Kind: kind, Name: o.GetName(), Ready: string(r.Status), Reason: string(r.Reason), Message: r.Message, Note: note}
}

func linkOfUnstructured(u *unstructured.Unstructured, note string) Link {
	l := Link{Kind: u.GetKind(), Name: u.GetName(), Ready: "Unknown", Note: note}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			l.Ready, _ = m["status"].(string)
			l.Reason, _ = m["reason"].(string)
			l.Message, _ = m["message"].(string)
		}
	}
	return l
}

// provisioned links the claim's binding, its database and the database's
// owner role.
func (c *CLI) provisioned(ctx context.Context, composed client.MatchingLabels) ([]Link, error) {
	var links []Link
	bindings := &v1alpha1.PostgreSQLBindingList{}
	if err := c.Kube.List(ctx, bindings, client.InNamespace(c.Namespace), composed); err != nil {
		return nil, errors.Wrap(err, "cannot list the claim's bindings")
	}
	var db string
	for i := range bindings.Items {
		b := &bindings.Items[i]
		links = append(links, linkOf(v1alpha1.PostgreSQLBindingKind, b, "asks for database "+b.Spec.DatabaseRef.Name))
		db = b.Spec.DatabaseRef.Name
	}
	if db == "" {
		return links, nil
	}
	d := &v1alpha1.PostgreSQLDatabase{}
	if err := c.Kube.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: db}, d); err != nil {
		return append(links, Link{Kind: v1alpha1.PostgreSQLDatabaseKind, Name: db, Ready: "-", Note: "not there (yet)"}), nil
	}
	phase := strings.ToLower(string(d.Status.Binding.Phase))
	if phase == "" {
		// The binder has not seen the binding that names it yet.
		phase = "no binding phase yet"
	}
	links = append(links, linkOf(v1alpha1.PostgreSQLDatabaseKind, d, fmt.Sprintf("database %q on PostgreSQLInstance %q, %s", d.DatabaseName(), d.Spec.InstanceRef.Name, phase)))
	if ref := d.Spec.ForProvider.OwnerRef; ref != nil {
		r := &v1alpha1.PostgreSQLRole{}
		if err := c.Kube.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: ref.Name}, r); err == nil {
			links = append(links, linkOf(v1alpha1.PostgreSQLRoleKind, r, fmt.Sprintf("owner role %q (NOLOGIN)", r.RoleName())))
		}
	}
	return links, nil
}

// delivered links the claim's login role and where its credential goes:
// its Secret, its vault path, the ExternalSecret projecting the path.
func (c *CLI) delivered(ctx context.Context, composed client.MatchingLabels) ([]Link, error) {
	var links []Link
	roles := &v1alpha1.PostgreSQLRoleList{}
	if err := c.Kube.List(ctx, roles, client.InNamespace(c.Namespace), composed); err != nil {
		return nil, errors.Wrap(err, "cannot list the claim's roles")
	}
	for i := range roles.Items {
		r := &roles.Items[i]
		links = append(links, linkOf(v1alpha1.PostgreSQLRoleKind, r, fmt.Sprintf("login role %q", r.RoleName())))
		if ref := r.Spec.WriteConnectionSecretToReference; ref != nil {
			links = append(links, Link{Kind: "Secret", Name: ref.Name, Ready: "-", Note: "connection Secret, written by the provider"})
		}
		if v := r.Status.AtProvider.Vault; v != nil {
			links = append(links, Link{Kind: "vault path", Name: v.Path, Ready: "-", Note: v.URL})
		}
	}
	es := &unstructured.UnstructuredList{}
	es.SetGroupVersionKind(externalSecret.GroupVersion().WithKind(externalSecret.Kind + "List"))
	// The External Secrets Operator may not be installed: no ExternalSecret.
	if err := c.Kube.List(ctx, es, client.InNamespace(c.Namespace), composed); err == nil {
		for i := range es.Items {
			target, _, _ := unstructured.NestedString(es.Items[i].Object, "spec", "target", "name")
			links = append(links, linkOfUnstructured(&es.Items[i], "projects the vault path into Secret "+target))
		}
	}
	return links, nil
}

// notFound: the kind is not served, or has no object of that name.
func notFound(err error) bool {
	return kerrors.IsNotFound(err) || meta.IsNoMatchError(err)
}
