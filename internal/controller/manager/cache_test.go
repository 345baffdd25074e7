package manager

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"

	"github.com/ayatori/provider-postgresql/internal/controller/reconciler"
)

// TestNoSecretDataCached: the manager reads Secrets and ConfigMaps from the
// API server (never from a cluster-wide cache of their data), and the
// metadata its watches keep loses annotations (a kubectl-applied Secret's
// last-applied-configuration holds its data) and managed fields.
func TestNoSecretDataCached(t *testing.T) {
	var kinds []string
	for _, o := range ClientOptions().Cache.DisableFor {
		switch o.(type) {
		case *corev1.Secret:
			kinds = append(kinds, "Secret")
		case *corev1.ConfigMap:
			kinds = append(kinds, "ConfigMap")
		}
	}
	if diff := cmp.Diff([]string{"Secret", "ConfigMap"}, kinds); diff != "" {
		t.Errorf("uncached kinds (-want +got):\n%s", diff)
	}

	byObject := MetadataCache(nil)
	for _, kind := range []string{"Secret", "ConfigMap"} {
		var transform func(any) (any, error)
		for o, b := range byObject {
			if m, ok := o.(*metav1.PartialObjectMetadata); ok && m.GetObjectKind().GroupVersionKind().Kind == kind {
				transform = b.Transform
			}
		}
		if transform == nil {
			t.Fatalf("no metadata cache entry for %s", kind)
		}
		m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Name: "s", Labels: map[string]string{"l": "v"},
			Annotations:   map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"data":{"password":"c2VjcmV0"}}`},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		}}
		out, err := transform(m)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := out.(client.Object)
		if !ok {
			t.Fatalf("transform returned %T", out)
		}
		if got.GetAnnotations() != nil || got.GetManagedFields() != nil || got.GetLabels()["l"] != "v" {
			t.Errorf("%s metadata kept: annotations %v, managed fields %v, labels %v", kind, got.GetAnnotations(), got.GetManagedFields(), got.GetLabels())
		}
	}
}

// TestManagedFieldsNotCached: the provider's own objects are cached
// without their managed fields (they would be a third of its memory at
// thousands of objects), and nothing else of them is lost.
func TestManagedFieldsNotCached(t *testing.T) {
	transform := Options(nil, nil).Cache.DefaultTransform
	if transform == nil {
		t.Fatal("the manager's cache keeps every object whole")
	}
	in := &v1alpha1.PostgreSQLRole{ObjectMeta: metav1.ObjectMeta{
		Name: "r", Namespace: "shop", Labels: map[string]string{"l": "v"}, Annotations: map[string]string{"a": "b"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
	}}
	want := in.DeepCopy()
	want.ManagedFields = nil
	out, err := transform(in)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("cached role (-want +got):\n%s", diff)
	}
}

// TestOtherControllersGetThePlainQueue: a controller set up without
// Config's options (crossplane-runtime's CRD gate) gets client-go's work
// queue, not the bare priority queue that can deadlock at shutdown.
func TestOtherControllersGetThePlainQueue(t *testing.T) {
	o := Options(nil, nil)
	if o.Controller.UsePriorityQueue == nil || *o.Controller.UsePriorityQueue {
		t.Errorf("the manager's default controllers use the priority queue (UsePriorityQueue %v)", o.Controller.UsePriorityQueue)
	}
}

// TestManagerClientNotesConflicts: the manager's client is the one that
// notes its writes' conflicts and skips status writes that change nothing
// (reconciler.NewClient).
func TestManagerClientNotesConflicts(t *testing.T) {
	o := Options(nil, nil)
	if o.NewClient == nil || reflect.ValueOf(o.NewClient).Pointer() != reflect.ValueOf(reconciler.NewClient).Pointer() {
		t.Error("Options leaves the manager's client to controller-runtime: its conflicts go unnoted")
	}
}
