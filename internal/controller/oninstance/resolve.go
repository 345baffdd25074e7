package oninstance

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/conflict"
)

// ErrConflict marks errors after which the provider must not act: the
// Instance a resource was bound to has been replaced, or an object exists
// that the provider did not create.
var ErrConflict = errors.New("conflict")

// Resolve returns the Instance a namespaced resource refers to, refusing
// one it may not use: a replaced Instance (its UID differs from boundUID,
// the one recorded at first connect), or, for new work (anything but
// letting go of a resource being deleted), one whose namespace selector
// does not select the resource's namespace.
//
// The selector never holds up a deletion: a namespace whose label was
// removed, or an Instance recreated with a narrower selector, must not make
// the resources already made there undeletable and hang the namespace's
// own deletion.
func Resolve(ctx context.Context, kube client.Reader, ref v1alpha1.InstanceReference, boundUID, namespace string, newWork bool) (*v1alpha1.PostgreSQLInstance, error) {
	in := &v1alpha1.PostgreSQLInstance{}
	if err := kube.Get(ctx, types.NamespacedName{Name: ref.Name}, in); err != nil {
		return nil, errors.Wrapf(err, "cannot get PostgreSQLInstance %q", ref.Name)
	}
	if boundUID != "" && string(in.GetUID()) != boundUID {
		return nil, errors.Errorf("%w: %s", ErrConflict, conflict.Message{
			Target:    fmt.Sprintf("PostgreSQLInstance %q", ref.Name),
			Found:     fmt.Sprintf("was deleted and created again: its UID is %s, not %s, the one this resource was bound to", in.GetUID(), boundUID),
			Step:      "connect, before anything is observed",
			Confirmed: "the name now refers to a new object",
			Uncertain: "whether it points at the same server",
			Check:     fmt.Sprintf("kubectl get pginstance %s -o jsonpath='{.spec.endpoint} {.status.systemIdentifier}'", ref.Name),
			Next:      "Nothing is adopted or migrated: recreate this resource to bind it to the new Instance",
		})
	}
	if newWork {
		if err := checkSelects(ctx, kube, in, namespace); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// checkSelects refuses namespace when in's namespaceSelector does not
// select it, reading the namespace through kube.
func checkSelects(ctx context.Context, kube client.Reader, in *v1alpha1.PostgreSQLInstance, namespace string) error {
	sel := in.Spec.NamespaceSelector
	if sel == nil {
		return nil
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return errors.Wrapf(err, "PostgreSQLInstance %q has an invalid namespaceSelector", in.GetName())
	}
	ns := &corev1.Namespace{}
	if err := kube.Get(ctx, types.NamespacedName{Name: namespace}, ns); err != nil {
		return errors.Wrapf(err, "cannot get namespace %q to check PostgreSQLInstance %q's namespaceSelector", namespace, in.GetName())
	}
	if !s.Matches(labels.Set(ns.GetLabels())) {
		return errors.Errorf("namespace %q may not use PostgreSQLInstance %q: its namespaceSelector does not select it; no SQL was run. The selector applies to new work only: deleting resources here still works", namespace, in.GetName())
	}
	return nil
}

// AdmitCreate is the last check before anything is created on in's server
// for a resource of namespace, against the API server's truth of this
// moment (fresh reads through the API server, never the cache): the
// Instance is still the one connected to and not being deleted, and its
// namespaceSelector (as it stands now) still selects the namespace (as
// labelled now). Observe checked both from the cache, which a withdrawal
// made a moment ago may not have reached yet.
func AdmitCreate(ctx context.Context, fresh client.Reader, connected *v1alpha1.PostgreSQLInstance, namespace string) error {
	in := &v1alpha1.PostgreSQLInstance{}
	if err := fresh.Get(ctx, types.NamespacedName{Name: connected.GetName()}, in); err != nil {
		return errors.Wrapf(err, "cannot get PostgreSQLInstance %q before creating anything on it", connected.GetName())
	}
	if in.GetUID() != connected.GetUID() {
		return errors.Errorf("%w: %s", ErrConflict, conflict.Message{
			Target:    fmt.Sprintf("PostgreSQLInstance %q", connected.GetName()),
			Found:     "was deleted and created again while this resource was being reconciled",
			Step:      "create",
			Confirmed: "the name now refers to a new object",
			Uncertain: "whether it points at the same server",
			Next:      "The next reconcile looks again",
		})
	}
	if err := CheckProvisioning(in); err != nil {
		return err
	}
	return checkSelects(ctx, fresh, in, namespace)
}

// CheckProvisioning refuses new provisioning on an Instance being deleted.
func CheckProvisioning(in *v1alpha1.PostgreSQLInstance) error {
	if meta.WasDeleted(in) {
		return errors.Errorf("PostgreSQLInstance %q is being deleted: nothing new is provisioned on it", in.GetName())
	}
	return nil
}

// CheckSameServer refuses to act when the server a resource's Instance now
// reaches (system identifier now, read in the same round trip as the
// observation) is not the one the resource was bound to: the endpoint
// moved, and nothing is adopted or migrated.
func CheckSameServer(instanceName, now, bound string) error {
	if bound == "" || now == bound {
		return nil
	}
	return errors.Errorf("%w: %s", ErrConflict, conflict.Message{
		Target:    fmt.Sprintf("PostgreSQLInstance %q", instanceName),
		Found:     fmt.Sprintf("now reaches a server with system identifier %s, but this resource was bound to the server with system identifier %s", now, bound),
		Step:      conflict.StepObserve,
		Confirmed: "the Instance's endpoint leads to a different server",
		Uncertain: "whether the object exists there, and what became of it on the old server",
		Check:     "SELECT system_identifier FROM pg_control_system() on each server",
		Next:      "Nothing is adopted or migrated: point the Instance back, or recreate this resource",
	})
}

// Bind checks that the server an observation reached (its system
// identifier) is the one a resource is bound to, setting a Conflict
// condition when it is not, and binds the resource to the Instance and the
// server on first sight, before anything is created, so that a create can
// never land on another server later.
func Bind(mg resource.Managed, in *v1alpha1.PostgreSQLInstance, system string, instanceUID, systemIdentifier *string) error {
	if err := CheckSameServer(in.GetName(), system, *systemIdentifier); err != nil {
		mg.SetConditions(v1alpha1.Conflict(err.Error()))
		return err
	}
	if *instanceUID == "" || *systemIdentifier == "" {
		*instanceUID, *systemIdentifier = string(in.GetUID()), system
	}
	return nil
}
