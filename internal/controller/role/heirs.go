package role

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/index"
	"github.com/ayatori/provider-postgresql/internal/controller/management"
	"github.com/ayatori/provider-postgresql/internal/controller/reference"
	"github.com/ayatori/provider-postgresql/internal/controller/role/credential"
)

// holdForHeirs keeps a role's resource while another resource of its
// namespace still has to hand its objects to it on delete
// (ownedObjectsOnDelete Reassign, reassignOwnedTo this role). That hand-over
// is held to the privilege boundary when it runs, and the boundary knows a
// role as the namespace's only while its resource exists: deleted first,
// the heir would leave the other role undeletable. A tenant's claim deletes
// both at once, in no order.
func (e *external) holdForHeirs(ctx context.Context, mg *v1alpha1.PostgreSQLRole) error {
	return reference.Wait(ctx, heldFor(ctx, e.kube, mg))
}

// heldFor returns why mg's deletion is held (see holdForHeirs), nil when
// it is not.
func heldFor(ctx context.Context, kube client.Reader, mg *v1alpha1.PostgreSQLRole) error {
	l := &v1alpha1.PostgreSQLRoleList{}
	// Through an index, read only: every role's deletion asks, and a list
	// of the namespace each time made deleting a namespace's roles cost
	// the square of their number.
	if err := kube.List(ctx, l, client.InNamespace(mg.GetNamespace()), client.MatchingFields{reassignIndex: mg.RoleName()}, client.UnsafeDisableDeepCopy); err != nil {
		return errors.Wrap(err, "cannot list the roles that may hand their objects to this one")
	}
	for i := range l.Items {
		if d := &l.Items[i]; handsTo(d, mg) && !handsTo(mg, d) {
			return errors.Errorf("deletion held: PostgreSQLRole %s hands what it owns to role %q when it is deleted (spec.reassignOwnedTo); "+
				"this resource stays until that one is gone", d.GetName(), mg.RoleName())
		}
	}
	return nil
}

// reassignIndex is the cache's field index of PostgreSQLRoles by the role
// they hand their objects to on delete (spec.reassignOwnedTo, with
// ownedObjectsOnDelete Reassign); heldIndex of the roles being deleted by
// their PostgreSQL names. Few roles have either key, so neither index
// costs memory for the many that have not.
const (
	reassignIndex = "spec.reassignOwnedTo"
	heldIndex     = "deleting.roleName"
)

// indexHeirs adds reassignIndex and heldIndex to informers.
func indexHeirs(informers cache.Informers) error {
	err := index.Field(context.Background(), informers, &v1alpha1.PostgreSQLRole{}, reassignIndex, func(o client.Object) []string {
		if r, ok := o.(*v1alpha1.PostgreSQLRole); ok && r.Spec.OwnedObjectsOnDelete == v1alpha1.OwnedObjectsReassign && r.Spec.ReassignOwnedTo != "" {
			return []string{r.Spec.ReassignOwnedTo}
		}
		return nil
	})
	if err != nil {
		return errors.Wrap(err, "cannot index PostgreSQLRoles by the role they hand their objects to")
	}
	err = index.Field(context.Background(), informers, &v1alpha1.PostgreSQLRole{}, heldIndex, func(o client.Object) []string {
		if r, ok := o.(*v1alpha1.PostgreSQLRole); ok && meta.WasDeleted(r) {
			return []string{r.RoleName()}
		}
		return nil
	})
	return errors.Wrap(err, "cannot index the PostgreSQLRoles being deleted by their names")
}

// heirFinalizer holds the finalizer of a role another still hands its
// objects to. A retained role's deletion (no Delete in its management
// policies) never reaches Observe: crossplane-runtime removes its finalizer
// at once, so the hold must be here too.
type heirFinalizer struct {
	resource.Finalizer
	kube client.Reader
	// vaults destroys a departing role's vault path, whatever its
	// policies: a connection Secret goes with its role (garbage
	// collection), and so does the path.
	vaults *credential.Vaults
}

func (f heirFinalizer) RemoveFinalizer(ctx context.Context, obj resource.Object) error {
	if mg, ok := obj.(*v1alpha1.PostgreSQLRole); ok {
		if err := heldFor(ctx, f.kube, mg); err != nil {
			return err
		}
		if mg.Spec.WriteConnectionDetailsToVault != nil && !management.ObserveOnly(mg) {
			// After the role is dropped (Delete ran first): no credential
			// stays readable for a login that is gone.
			if err := f.vaults.Destroy(ctx, mg); err != nil {
				return err
			}
		}
	}
	return f.Finalizer.RemoveFinalizer(ctx, obj)
}

// handsTo reports whether deleting d runs REASSIGN OWNED to heir's role.
func handsTo(d, heir *v1alpha1.PostgreSQLRole) bool {
	return d.GetUID() != heir.GetUID() && d.Spec.InstanceRef.Name == heir.Spec.InstanceRef.Name &&
		d.Spec.OwnedObjectsOnDelete == v1alpha1.OwnedObjectsReassign && d.Spec.ReassignOwnedTo == heir.RoleName() && management.Deletes(d)
}

// heirsOf maps a role to the roles of its namespace it hands its objects
// to that are being deleted, held until it is gone: its own deletion wakes
// them.
func heirsOf(kube client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		// Only a role on its way out wakes its heir: the others' events
		// (a wave of thousands) cost no list.
		d, ok := obj.(*v1alpha1.PostgreSQLRole)
		if !ok || d.Spec.ReassignOwnedTo == "" || !meta.WasDeleted(d) {
			return nil
		}
		l := &v1alpha1.PostgreSQLRoleList{}
		if err := kube.List(ctx, l, client.InNamespace(d.GetNamespace()), client.MatchingFields{heldIndex: d.Spec.ReassignOwnedTo}, client.UnsafeDisableDeepCopy); err != nil {
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(l.Items))
		for _, r := range l.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: r.GetNamespace(), Name: r.GetName()}})
		}
		return reqs
	}
}
