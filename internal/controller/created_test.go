package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

// TestCreatesGoStraightToAvailable: a new object of every kind on an
// Instance goes from no Ready condition to Available without ever
// showing Creating. The status write that recorded each create (a write
// to the API server and a watch event to every watcher, per object) is
// left to the observation that follows it at once in the same worker
// (reconciler/created.go). The create itself is still announced: one
// CreatedExternalResource event per object. Every version the API server
// stores is watched, so a Creating written for a moment is seen.
//
// The same versions show the metadata writes of crossplane-runtime's
// create protocol: the finalizer and the external name are stored by the
// create-pending write, not by a write of their own before it
// (reconciler.Finalizer), and nothing is written after the create (the
// create-succeeded annotation is not, reconciler/created.go).
func TestCreatesGoStraightToAvailable(t *testing.T) {
	suite.Server(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const prefix = "cg"
	dyn, err := dynamic.NewForConfig(env.ControlPlane.Config)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string][]string{}     // kind/name: the Ready reasons of its versions, in order
	metadata := map[string][]string{} // kind/name: the create protocol's records of its versions, in order
	var wg sync.WaitGroup
	for _, res := range []string{"postgresqlroles", "postgresqldatabases", "postgresqlschemas", "postgresqlgrants", "postgresqldefaultprivileges"} {
		w, err := dyn.Resource(schema.GroupVersionResource{Group: v1alpha1.Group, Version: v1alpha1.Version, Resource: res}).Namespace("scale").Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ev := range w.ResultChan() {
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok || !strings.HasPrefix(u.GetName(), prefix) {
					continue
				}
				conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
				reason := "none"
				for _, c := range conds {
					if m, ok := c.(map[string]any); ok && m["type"] == string(xpv2.TypeReady) {
						reason, _ = m["reason"].(string)
					}
				}
				k := res + "/" + u.GetName()
				records := createRecords(u)
				mu.Lock()
				if r := seen[k]; len(r) == 0 || r[len(r)-1] != reason {
					seen[k] = append(seen[k], reason)
				}
				if r := metadata[k]; len(r) == 0 || r[len(r)-1] != records {
					metadata[k] = append(metadata[k], records)
				}
				mu.Unlock()
			}
		}()
	}
	provisionMixed(ctx, t, prefix, 1)
	t.Cleanup(func() { removeMixed(context.Background(), t, prefix) })
	objs, err := mixedObjects(ctx, env.Kube, prefix)
	if err != nil {
		t.Fatal(err)
	}
	// The last versions may still be on their way to the watches.
	time.Sleep(time.Second)
	cancel()
	wg.Wait()

	if len(seen) != len(objs) {
		t.Errorf("watched %d objects, want the %d created", len(seen), len(objs))
	}
	for k, reasons := range seen {
		if diff := cmp.Diff([]string{"none", string(xpv2.ReasonAvailable)}, reasons); diff != "" {
			t.Errorf("%s: Ready reasons of its versions (-want +got):\n%s", k, diff)
		}
	}
	for k, records := range metadata {
		// The create-succeeded annotation is not written after the
		// create (reconciler/created.go).
		want := []string{"", "finalizer external-name create-pending"}
		if strings.HasPrefix(k, "postgresqlgrants/") || strings.HasPrefix(k, "postgresqldefaultprivileges/") {
			// Kinds named by what they grant, without an external name.
			want = []string{"", "finalizer create-pending"}
		}
		if diff := cmp.Diff(want, records); diff != "" {
			t.Errorf("%s: the create protocol's records of its versions (-want +got):\n%s", k, diff)
		}
	}

	// One create event per object, as crossplane-runtime announces it.
	events := &corev1.EventList{}
	if err := env.Kube.List(context.Background(), events, client.InNamespace("scale")); err != nil {
		t.Fatal(err)
	}
	// By UID: events outlive their objects, and the names say nothing of
	// which object of that name an event was for.
	created := map[types.UID]int32{}
	for _, e := range events.Items {
		if e.Reason == "CreatedExternalResource" {
			created[e.InvolvedObject.UID] += e.Count
		}
	}
	var missing []string
	for _, o := range objs {
		gvk, err := env.Kube.GroupVersionKindFor(o)
		if err != nil {
			t.Fatal(err)
		}
		if created[o.GetUID()] != 1 {
			missing = append(missing, gvk.Kind+"/"+o.GetName())
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("objects without exactly one CreatedExternalResource event: %v", missing)
	}
	if t.Failed() {
		// What the objects went through, to tell a failed create from a
		// status written twice.
		for _, e := range events.Items {
			if strings.HasPrefix(e.InvolvedObject.Name, prefix) {
				t.Logf("event %s/%s: %s %s (x%d): %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Type, e.Reason, e.Count, e.Message)
			}
		}
	}
}

// createRecords names what of crossplane-runtime's create protocol u
// carries: its finalizer, the external name, the create-pending and
// create-succeeded annotations.
func createRecords(u *unstructured.Unstructured) string {
	var r []string
	if slices.Contains(u.GetFinalizers(), managed.FinalizerName) {
		r = append(r, "finalizer")
	}
	for _, a := range []struct{ key, name string }{
		{meta.AnnotationKeyExternalName, "external-name"},
		{meta.AnnotationKeyExternalCreatePending, "create-pending"},
		{meta.AnnotationKeyExternalCreateSucceeded, "create-succeeded"},
	} {
		if _, ok := u.GetAnnotations()[a.key]; ok {
			r = append(r, a.name)
		}
	}
	return strings.Join(r, " ")
}

// TestWritesToReady counts every API write the provider makes for a new
// login role with its connection Secret, and for a database that role
// owns, from the test's create to Ready, as docs/performance.md lists
// them: the metadata write before the create (finalizer, external name,
// create-pending), the status, the connection Secret, and the create's
// event. Each version the API server stores of the objects and of the
// Secret is watched, so a write more, or one written twice, fails it.
func TestWritesToReady(t *testing.T) {
	suite.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dyn, err := dynamic.NewForConfig(env.ControlPlane.Config)
	if err != nil {
		t.Fatal(err)
	}
	const owner, db = "wrowner", "wrdb"
	var mu sync.Mutex
	versions := map[string]map[string]bool{} // kind/name: the versions stored after the test's create
	var described []string                   // each version, for a failure
	var wg sync.WaitGroup
	watchCtx, stopWatches := context.WithCancel(ctx)
	defer stopWatches()
	for _, gvr := range []schema.GroupVersionResource{
		{Group: v1alpha1.Group, Version: v1alpha1.Version, Resource: "postgresqlroles"},
		{Group: v1alpha1.Group, Version: v1alpha1.Version, Resource: "postgresqldatabases"},
		{Version: "v1", Resource: "secrets"},
	} {
		w, err := dyn.Resource(gvr).Namespace("scale").Watch(watchCtx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ev := range w.ResultChan() {
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok || !strings.HasPrefix(u.GetName(), "wr") || ev.Type == "DELETED" {
					continue
				}
				k := gvr.Resource + "/" + u.GetName()
				mu.Lock()
				if versions[k] == nil {
					versions[k] = map[string]bool{}
				}
				versions[k][u.GetResourceVersion()] = true
				st, _, _ := unstructured.NestedMap(u.Object, "status")
				described = append(described, fmt.Sprintf("%s@%s: %s %v", k, u.GetResourceVersion(), createRecords(u), st))
				mu.Unlock()
			}
		}()
	}
	on := v1alpha1.InstanceReference{Name: "main"}
	role := &v1alpha1.PostgreSQLRole{ObjectMeta: metav1.ObjectMeta{Name: owner, Namespace: "scale"}, Spec: v1alpha1.PostgreSQLRoleSpec{
		InstanceRef: on, ForProvider: v1alpha1.PostgreSQLRoleParameters{Login: ptr.To(true)},
		WriteConnectionSecretToReference: &xpv2.LocalSecretReference{Name: owner + "-conn"},
	}}
	database := &v1alpha1.PostgreSQLDatabase{ObjectMeta: metav1.ObjectMeta{Name: db, Namespace: "scale"}, Spec: v1alpha1.PostgreSQLDatabaseSpec{
		InstanceRef: on, ForProvider: v1alpha1.PostgreSQLDatabaseParameters{OwnerRef: &v1alpha1.LocalReference{Name: owner}},
	}}
	// The database after its owner is Ready: a database that finds its
	// owner missing waits, and records the wait (docs/performance.md).
	for _, o := range []providertest.Conditioned{role, database} {
		env.CreateForTest(ctx, t, o)
		env.Ready(ctx, t, o, corev1.ConditionTrue, xpv2.ReasonAvailable)
	}
	// Anything written after Ready would come within the observation
	// that follows; none should.
	time.Sleep(2 * time.Second)
	stopWatches()
	wg.Wait()

	events := &corev1.EventList{}
	if err := env.Kube.List(ctx, events, client.InNamespace("scale")); err != nil {
		t.Fatal(err)
	}
	eventWrites := map[types.UID]int32{}
	for _, e := range events.Items {
		// A repeated event is one more write (a patch of its count).
		eventWrites[e.InvolvedObject.UID] += e.Count
	}
	// Versions of the objects: the test's create, then the provider's
	// writes. Of the Secret: the provider's writes alone.
	got := map[string]int{
		"role: metadata and status":     len(versions["postgresqlroles/"+owner]) - 1,
		"role: connection Secret":       len(versions["secrets/"+owner+"-conn"]),
		"role: events":                  int(eventWrites[role.GetUID()]),
		"database: metadata and status": len(versions["postgresqldatabases/"+db]) - 1,
		"database: events":              int(eventWrites[database.GetUID()]),
	}
	want := map[string]int{
		"role: metadata and status":     2,
		"role: connection Secret":       1,
		"role: events":                  1,
		"database: metadata and status": 2,
		"database: events":              1,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("API writes to Ready (-want +got):\n%s", diff)
		for _, d := range described {
			t.Log(d)
		}
		for _, e := range events.Items {
			if strings.HasPrefix(e.InvolvedObject.Name, "wr") {
				t.Logf("event %s/%s: %s %s (x%d): %s", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Type, e.Reason, e.Count, e.Message)
			}
		}
	}
}
