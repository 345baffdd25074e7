// Package index adds field indexes of namespaced kinds to the manager's
// cache, keyed within their namespace only.
//
// controller-runtime's IndexField keys every object twice, once in its
// namespace and once across all namespaces, so that a list of every
// namespace can match the field too. The provider only ever looks a field
// up within one namespace (a tenant's references never cross it), and the
// second key cost as much memory as the first: the indexes were a sixth of
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
			keys[i] = o.GetNamespace() + "/" + v
		}
		return keys, nil
	}})
	return errors.Wrapf(err, "cannot index by %s", field)
}
