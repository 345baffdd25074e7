package reconciler

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/fixture/tier"
)

// TestCriticalAnnotationsOverAConflict: when the write of a create's
// annotations meets a newer version of the object, only the critical
// annotations are carried over to it: an annotation another controller
// removed meanwhile (the Lock controller releasing its lock) is not put
// back, and one it added is kept. crossplane-runtime's own updater carries
// every annotation of the stale copy; a change there fails this test.
func TestCriticalAnnotationsOverAConflict(t *testing.T) {
	tier.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cp, s := startControlPlane(ctx, t)
	api := apiClient(t, cp, s)
	role := createRole(ctx, t, cp, s, "critical")
	meta.AddAnnotations(role, map[string]string{v1alpha1.AnnotationLocked: "keep-it"})
	if err := api.Update(ctx, role); err != nil {
		t.Fatal(err)
	}
	// The reconcile's copy: read before the lock went, then annotated by
	// the create.
	stale := role.DeepCopy()
	meta.SetExternalName(stale, "critical")
	meta.SetExternalCreateSucceeded(stale, time.Now())
	// Meanwhile the Lock is released and someone else annotates.
	delete(role.Annotations, v1alpha1.AnnotationLocked)
	meta.AddAnnotations(role, map[string]string{"team": "shop"})
	if err := api.Update(ctx, role); err != nil {
		t.Fatal(err)
	}

	if err := CriticalAnnotationUpdater(api, api).UpdateCriticalAnnotations(ctx, stale); err != nil {
		t.Fatal(err)
	}
	got := &v1alpha1.PostgreSQLRole{}
	if err := api.Get(ctx, client.ObjectKeyFromObject(role), got); err != nil {
		t.Fatal(err)
	}
	a := got.GetAnnotations()
	want := map[string]string{
		meta.AnnotationKeyExternalName: "critical",
		"team":                         "shop",
	}
	if _, ok := a[meta.AnnotationKeyExternalCreateSucceeded]; !ok {
		t.Errorf("the create-succeeded annotation was not written: %v", a)
	}
	delete(a, meta.AnnotationKeyExternalCreateSucceeded)
	if diff := cmp.Diff(want, a); diff != "" {
		t.Errorf("annotations after the conflict (-want +got):\n%s", diff)
	}
}
