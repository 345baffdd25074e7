// Package index adds field indexes of namespaced kinds to the manager's
// cache, each object keyed once: within its namespace (Field), or, for a
// value unique in the cluster such as a UID, across namespaces (Unique).
//
// controller-runtime's IndexField keys every object twice, once in its
// namespace and once across all namespaces, so that a list of every
// namespace can match the field too. The provider looks a field up either
// within one namespace (a tenant's references never cross it) or, for a
// UID, across all of them, never both ways, and the second key cost as
// much memory as the first: the indexes were a sixth of
// the live heap at 5,000 objects (docs/performance.md, Memory).
package index

import (
	"context"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Field adds to informers an index of obj's kind, a namespaced one, by
// field, whose values of an object extract returns. The cache reads it for
// a list in one namespace that matches the field
// (client.InNamespace(ns), client.MatchingFields{field: value}), exactly
// as it reads an index of IndexField: under the index name "field:"+field,
// by the key namespace+"/"+value. A list across namespaces matching field
// finds nothing; TestNamespacedIndex holds both halves to that.
func Field(ctx context.Context, informers cache.Informers, obj client.Object, field string, extract func(client.Object) []string) error {
	return add(ctx, informers, obj, field, extract, func(o client.Object) string { return o.GetNamespace() })
}

// allNamespaces is how controller-runtime's cache keys an index for a
// list across namespaces (its KeyToNamespacedKey of "").
const allNamespaces = "__all_namespaces"

// Unique adds to informers an index of obj's kind by a field whose values
// are unique in the whole cluster (a UID), keyed once, across namespaces
// only: a list matching the field without a namespace finds the object
// wherever it is (client.MatchingFields{field: value}), and a caller that
// wants it only within one namespace compares the namespace of what it
// found. One key per object, as Field has.
func Unique(ctx context.Context, informers cache.Informers, obj client.Object, field string, extract func(client.Object) []string) error {
	return add(ctx, informers, obj, field, extract, func(client.Object) string { return allNamespaces })
}

func add(ctx context.Context, informers cache.Informers, obj client.Object, field string, extract func(client.Object) []string, scope func(client.Object) string) error {
	inf, err := informers.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return errors.Wrapf(err, "cannot index by %s", field)
	}
	err = inf.AddIndexers(toolscache.Indexers{"field:" + field: func(raw any) ([]string, error) {
		o, ok := raw.(client.Object)
		if !ok {
			return nil, errors.Errorf("cannot index a %T by %s: not an object", raw, field)
		}
		values := extract(o)
		keys := make([]string, len(values))
		for i, v := range values {
			keys[i] = scope(o) + "/" + v
		}
		return keys, nil
	}})
	return errors.Wrapf(err, "cannot index by %s", field)
}
