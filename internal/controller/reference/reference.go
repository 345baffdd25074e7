// Package reference resolves the references between managed resources of
// one namespace: a role, database or schema named directly or through the
// managed resource that manages it.
package reference

import (
	"context"
	"slices"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/activation"
	"github.com/ayatori/provider-postgresql/internal/controller/index"
)

// A Resolver resolves references of resources in namespace, living on the
// Instance named instance.
type Resolver struct {
	Kube      client.Reader
	Namespace string
	Instance  string
	// Previewing resolves for a plan that is only shown (a resource with
	// managementPolicies [Observe]): a referenced PostgreSQLRole that
	// does not exist yet but plans its own creation resolves to the name
	// it would create, so a preview of a role and of the database it is to
	// own plans both, in order, instead of the database waiting for a
	// role that a preview never creates.
	Previewing bool
}

// Role returns the PostgreSQL name of the role given by name or ref (what
// says which field, for messages). A referenced PostgreSQLRole must be on
// the same Instance and exist.
func (r Resolver) Role(ctx context.Context, what string, name *string, ref *v1alpha1.LocalReference) (string, error) {
	if name != nil {
		return *name, nil
	}
	if ref == nil {
		return "", nil
	}
	role := &v1alpha1.PostgreSQLRole{}
	if err := r.get(ctx, what, ref.Name, role); err != nil {
		return "", err
	}
	observed := role.Status.AtProvider.Name
	if p := role.GetPlan(); observed == "" && r.Previewing && p != nil && p.Action == v1alpha1.PlanCreate {
		observed = role.RoleName()
	}
	return r.check(ctx, what, role, role.Spec.InstanceRef.Name, observed)
}

// Database returns the PostgreSQL name of the database given by name or ref.
func (r Resolver) Database(ctx context.Context, what string, name *string, ref *v1alpha1.LocalReference) (string, error) {
	if name != nil {
		return *name, nil
	}
	if ref == nil {
		return "", nil
	}
	db := &v1alpha1.PostgreSQLDatabase{}
	if err := r.get(ctx, what, ref.Name, db); err != nil {
		return "", err
	}
	return r.check(ctx, what, db, db.Spec.InstanceRef.Name, db.Status.AtProvider.Name)
}

// Schema returns the PostgreSQL name of the schema given by name or ref; a
// referenced PostgreSQLSchema must be in database.
func (r Resolver) Schema(ctx context.Context, what, database string, name *string, ref *v1alpha1.LocalReference) (string, error) {
	if name != nil {
		return *name, nil
	}
	if ref == nil {
		return "", nil
	}
	s := &v1alpha1.PostgreSQLSchema{}
	if err := r.get(ctx, what, ref.Name, s); err != nil {
		return "", err
	}
	n, err := r.check(ctx, what, s, s.Spec.InstanceRef.Name, s.Status.AtProvider.Name)
	if err != nil {
		return "", err
	}
	if s.Status.AtProvider.Database != database {
		return "", errors.Errorf("%s: PostgreSQLSchema %s/%s is in database %q, not %q", what, r.Namespace, ref.Name, s.Status.AtProvider.Database, database)
	}
	return n, nil
}

// AwaitTarget waits, before anything else is resolved, for the
// PostgreSQLSchema schemaRef names or, without one, the PostgreSQLDatabase
// databaseRef names, to be created and to observe its object. A grant or
// default privileges created together with what they refer to (one apply)
// would otherwise wait for each reference in turn, the roles, then the
// database, then the schema in it, with a status write and an event for
// each new message. The schema, which needs its database, and the
// database, which usually needs its owner, appear last: waited for first,
// that is the one reference waited for, with one message.
func (r Resolver) AwaitTarget(ctx context.Context, databaseRef, schemaRef *v1alpha1.LocalReference) error {
	what, ref, obj := "spec.forProvider.databaseRef", databaseRef, client.Object(&v1alpha1.PostgreSQLDatabase{})
	if schemaRef != nil {
		what, ref, obj = "spec.forProvider.schemaRef", schemaRef, &v1alpha1.PostgreSQLSchema{}
	}
	if ref == nil {
		return nil
	}
	if err := r.get(ctx, what, ref.Name, obj); err != nil {
		return err
	}
	var instance string
	switch o := obj.(type) {
	case *v1alpha1.PostgreSQLDatabase:
		instance = o.Spec.InstanceRef.Name
	case *v1alpha1.PostgreSQLSchema:
		instance = o.Spec.InstanceRef.Name
	}
	_, err := r.check(ctx, what, obj, instance, Observed(obj))
	return err
}

func (r Resolver) get(ctx context.Context, what, name string, obj client.Object) error {
	err := r.Kube.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: name}, obj)
	if activation.NotServed(err) {
		return activation.NotActive(what, kindOf(obj))
	}
	if kerrors.IsNotFound(err) {
		// Created later, it wakes this resource once it is observed.
		return Awaited(ctx, errors.Errorf("%s: waiting for %s %s/%s to be created", what, kindOf(obj), r.Namespace, name))
	}
	return errors.Wrapf(err, "%s: cannot get %s/%s", what, r.Namespace, name)
}

// check refuses a referenced resource on another Instance, and waits for
// one that has not observed its object yet (observed is "").
func (r Resolver) check(ctx context.Context, what string, obj client.Object, instance, observed string) (string, error) {
	kind := kindOf(obj)
	if instance != r.Instance {
		return "", errors.Errorf("%s: %s %s/%s is on PostgreSQLInstance %q, not %q", what, kind, r.Namespace, obj.GetName(), instance, r.Instance)
	}
	if observed == "" {
		return "", Awaited(ctx, errors.Errorf("%s: waiting for %s %s/%s to exist", what, kind, r.Namespace, obj.GetName()))
	}
	return observed, nil
}

func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *v1alpha1.PostgreSQLRole:
		return v1alpha1.PostgreSQLRoleKind
	case *v1alpha1.PostgreSQLDatabase:
		return v1alpha1.PostgreSQLDatabaseKind
	case *v1alpha1.PostgreSQLSchema:
		return v1alpha1.PostgreSQLSchemaKind
	}
	return "resource"
}

// SelectRole resolves sel into *ref when *ref is not set yet: the first
// PostgreSQLRole of the namespace, by name, on the Instance, whose labels
// match. It reports whether it set *ref; once set, a reference stays put
// (the CRD refuses changing it), so a later role with the same labels
// never re-points a grant.
func (r Resolver) SelectRole(ctx context.Context, what string, sel *v1alpha1.RoleSelector, ref **v1alpha1.LocalReference) (bool, error) {
	if sel == nil || *ref != nil {
		return false, nil
	}
	l := &v1alpha1.PostgreSQLRoleList{}
	if err := r.Kube.List(ctx, l, client.InNamespace(r.Namespace), client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(sel.MatchLabels)}); err != nil {
		if activation.NotServed(err) {
			return false, activation.NotActive(what, v1alpha1.PostgreSQLRoleKind)
		}
		return false, errors.Wrapf(err, "%s: cannot list PostgreSQLRoles", what)
	}
	var names []string
	for _, role := range l.Items {
		if role.Spec.InstanceRef.Name == r.Instance {
			names = append(names, role.GetName())
		}
	}
	if len(names) == 0 {
		return false, errors.Errorf("%s: no PostgreSQLRole in namespace %s on PostgreSQLInstance %q matches labels %v", what, r.Namespace, r.Instance, sel.MatchLabels)
	}
	slices.Sort(names)
	*ref = &v1alpha1.LocalReference{Name: names[0]}
	return true, nil
}

// SelectorResolver returns a reference resolver (run by the managed
// reconciler before it connects) that records what a role selector picks,
// through sel, and persists it.
func SelectorResolver[T resource.Managed](kube client.Client, sel func(T) (namespace, instance string, selector *v1alpha1.RoleSelector, ref **v1alpha1.LocalReference)) func(context.Context, resource.Managed) error {
	return func(ctx context.Context, mg resource.Managed) error {
		t, ok := mg.(T)
		if !ok {
			return nil
		}
		ns, in, s, ref := sel(t)
		changed, err := Resolver{Kube: kube, Namespace: ns, Instance: in}.SelectRole(ctx, "spec.forProvider.roleSelector", s, ref)
		if err != nil || !changed {
			return err
		}
		return errors.Wrap(kube.Update(ctx, mg), "cannot record the selected role in spec.forProvider.roleRef")
	}
}

// Appeared passes the updates in which a referenced resource first shows
// the PostgreSQL object it manages (observed turns non-empty): the moment
// the resources that wait for it can proceed. Paired with a map to those
// resources, they are reconciled at once rather than at their next
// back-off retry, which after a minute of waiting is a minute away.
func Appeared(observed func(client.Object) string) predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return observed(e.ObjectOld) == "" && observed(e.ObjectNew) != ""
		},
	}
}

// Observed is the PostgreSQL name a PostgreSQLRole, PostgreSQLDatabase or
// PostgreSQLSchema has observed ("" before it has, or for another kind).
// A role that plans its creation counts (a previewing resolver resolves
// it), so a database previewed with it is woken.
func Observed(o client.Object) string {
	switch r := o.(type) {
	case *v1alpha1.PostgreSQLRole:
		if p := r.GetPlan(); r.Status.AtProvider.Name == "" && p != nil && p.Action == v1alpha1.PlanCreate {
			return r.RoleName()
		}
		return r.Status.AtProvider.Name
	case *v1alpha1.PostgreSQLDatabase:
		return r.Status.AtProvider.Name
	case *v1alpha1.PostgreSQLSchema:
		return r.Status.AtProvider.Name
	}
	return ""
}

// A Ref is a reference from one managed resource to another of its
// namespace: the referenced kind and its name, or (PG) the name of the
// PostgreSQL object it manages, for a field that names the object directly.
type Ref struct {
	Kind string
	Name string
	PG   bool
}

// NamedAs returns the Ref a field naming a PostgreSQL object of kind
// directly makes, if it is set.
func NamedAs(kind string, name *string) []Ref {
	if name == nil {
		return nil
	}
	return []Ref{{Kind: kind, Name: *name, PG: true}}
}

// RefTo returns the Ref a LocalReference to a resource of kind makes, if
// it is set.
func RefTo(kind string, r *v1alpha1.LocalReference) []Ref {
	if r == nil {
		return nil
	}
	return []Ref{{Kind: kind, Name: r.Name}}
}

// Collect joins the references of a resource's fields into one list.
func Collect(groups ...[]Ref) []Ref {
	var out []Ref
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

// refsIndex is the cache's field index of a controller's own kind by what
// its resources refer to (Ref.key).
const refsIndex = "reference.refs"

// key is r as a refsIndex value.
func (r Ref) key() string {
	if r.PG {
		return r.Kind + "/pg/" + r.Name
	}
	return r.Kind + "/name/" + r.Name
}

// A Referrer is a controller's kind as WakeWaiting sees it.
type Referrer struct {
	// Object is an empty object of the kind.
	Object client.Object
	// List makes an empty list of the kind.
	List func() client.ObjectList
	// Refs returns what one of its resources refers to.
	Refs func(client.Object) []Ref
}

// WakeWaiting returns the watches that make a controller reconcile, at
// once, the resources of its kind (of) that refer to a PostgreSQLRole,
// PostgreSQLDatabase or PostgreSQLSchema (of the kinds in referenced), or
// name the object it manages, when it first shows its PostgreSQL object,
// rather than at their next back-off retry. The controller runs without
// them (see package activation).
//
// The referring resources are found through a field index of the cache
// (added to informers), not by listing the namespace: in a wave of thousands
// of resources every role, database and schema appears once, and a list of
// the namespace each time cost the provider a quarter of its CPU at 5,000
// objects (docs/performance.md).
func WakeWaiting(informers cache.Informers, kube client.Reader, of Referrer, referenced ...client.Object) ([]activation.Watch, error) {
	err := index.Field(context.Background(), informers, of.Object, refsIndex, func(o client.Object) []string {
		refs := of.Refs(o)
		keys := make([]string, 0, len(refs))
		for _, r := range refs {
			keys = append(keys, r.key())
		}
		return keys
	})
	if err != nil {
		return nil, errors.Wrap(err, "cannot index resources by what they refer to")
	}
	var out []activation.Watch
	for _, r := range referenced {
		out = append(out, activation.Watch{Object: r, Handler: handler.EnqueueRequestsFromMapFunc(waiting(kube, of.List)), Predicates: []predicate.Predicate{Appeared(Observed)}})
	}
	return out, nil
}

// waiting maps a referenced resource to the resources of its namespace
// (listed by newList) that refer to it, by name or by the name of the
// PostgreSQL object it manages.
func waiting(kube client.Reader, newList func() client.ObjectList) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		kind := kindOf(obj)
		var reqs []reconcile.Request
		for _, r := range []Ref{{Kind: kind, Name: obj.GetName()}, {Kind: kind, Name: Observed(obj), PG: true}} {
			l := newList()
			// Only names are read: no copy of the cached objects.
			if err := kube.List(ctx, l, client.InNamespace(obj.GetNamespace()), client.MatchingFields{refsIndex: r.key()}, client.UnsafeDisableDeepCopy); err != nil {
				return nil
			}
			items, err := meta.ExtractList(l)
			if err != nil {
				return nil
			}
			for _, it := range items {
				o, ok := it.(client.Object)
				if !ok {
					continue
				}
				req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)}
				if !slices.Contains(reqs, req) {
					reqs = append(reqs, req)
				}
			}
		}
		return reqs
	}
}
