package oninstance_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/oninstance"
)

// TestExternalNameInitializer holds the initializer to one write per new
// object: the name goes with crossplane-runtime's finalizer write when the
// finalizer is still to come, and is written at once only when it is not.
// Which writes happen is this function's own logic, so a recording client
// stands in for the API server; role_test checks the name on a real one.
func TestExternalNameInitializer(t *testing.T) {
	role := func(annotation string, finalizers ...string) *v1alpha1.PostgreSQLRole {
		r := &v1alpha1.PostgreSQLRole{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "team-a", Finalizers: finalizers}}
		if annotation != "" {
			meta.SetExternalName(r, annotation)
		}
		return r
	}
	cases := map[string]struct {
		reason  string
		mg      *v1alpha1.PostgreSQLRole
		want    string
		written []string
	}{
		"NewObject": {
			reason: "A new object's name waits for the finalizer's write in the same reconcile: no write of its own.",
			mg:     role(""),
			want:   "app",
		},
		"FinalizerAlreadyOn": {
			reason:  "An object past its first reconcile (its annotation removed, or older than the initializer) has no finalizer write to come: the name is written at once.",
			mg:      role("", managed.FinalizerName),
			want:    "app",
			written: []string{"app"},
		},
		"AnotherFinalizerOnly": {
			reason: "Another controller's finalizer is not crossplane-runtime's: its write is still to come.",
			mg:     role("", v1alpha1.Group+"/binding"),
			want:   "app",
		},
		"NamedAlready": {
			reason: "An object with an external name is left as it is, even a different one (Observe refuses that as a Conflict).",
			mg:     role("other", managed.FinalizerName),
			want:   "other",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var written []string
			kube := &test.MockClient{MockUpdate: func(_ context.Context, obj client.Object, _ ...client.UpdateOption) error {
				written = append(written, meta.GetExternalName(obj))
				return nil
			}}
			init := oninstance.ExternalNameInitializer(kube, (*v1alpha1.PostgreSQLRole).RoleName)
			if err := init.Initialize(context.Background(), tc.mg); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, meta.GetExternalName(tc.mg)); diff != "" {
				t.Errorf("%s\nexternal name: -want +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.written, written); diff != "" {
				t.Errorf("%s\nwrites (the name each carried): -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}
