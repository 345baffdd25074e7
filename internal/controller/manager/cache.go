package manager

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kinds the provider never caches whole: Secrets (and ConfigMaps) of the
// entire cluster would sit in its memory, credentials of every other
// application included. They are read from the API server when needed and
// watched as metadata only.
var uncached = []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}}

// ClientOptions are the manager client's options: reads of the uncached
// kinds go to the API server.
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{DisableFor: uncached}}
}

// MetadataCache adds to byObject what the metadata-only watches of the
// uncached kinds keep: names, namespaces and labels, without annotations
// (kubectl's last-applied-configuration of a Secret holds its data) or
// managed fields.
func MetadataCache(byObject map[client.Object]cache.ByObject) map[client.Object]cache.ByObject {
	if byObject == nil {
		byObject = map[client.Object]cache.ByObject{}
	}
	for _, o := range []string{"Secret", "ConfigMap"} {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(o))
		byObject[m] = cache.ByObject{Transform: stripMetadata}
	}
	return byObject
}

func stripMetadata(in any) (any, error) {
	if m, ok := in.(*metav1.PartialObjectMetadata); ok {
		m.SetAnnotations(nil)
		m.SetManagedFields(nil)
	}
	return in, nil
}
