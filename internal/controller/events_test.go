package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

// TestStatusWritesDoNotReconcile holds every managed controller to
// reconciling an object when what it asks for changes, not when its status
// does. The status is the controller's own output: before the filter
// (reconciler.OwnChanges), each of its own condition changes woke it once more,
// for another round trip to the server, and anyone allowed to write the
// status subresource could keep a controller observing in a loop. A label,
// the control, must still wake it at once.
//
// It runs first in the package (file order), before anything could leave
// objects retrying behind, and with a poll far beyond its length, so that
// every reconcile it counts is one an event caused. It deletes the
// objects it made (the shared Instance keeps its test label).
func TestStatusWritesDoNotReconcile(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	if err := env.RestartWith(ctx, func(o *providertest.Options) { o.PollInterval = time.Hour }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.RestartWith(ctx, func(o *providertest.Options) { o.PollInterval = scalePoll }); err != nil {
			t.Error(err)
		}
	})
	provisionMixed(ctx, t, "st", 1)
	t.Cleanup(func() { removeMixed(ctx, t, "st") })

	type target struct {
		obj        providertest.Conditioned
		controller string
	}
	targets := []target{{obj: &v1alpha1.PostgreSQLInstance{ObjectMeta: metav1.ObjectMeta{Name: "main"}}, controller: managed.ControllerName(v1alpha1.PostgreSQLInstanceGroupKind)}}
	objs, err := mixedObjects(ctx, env.Kube, "st")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		gvk, err := env.Kube.GroupVersionKindFor(o)
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, target{obj: o, controller: managed.ControllerName(gvk.GroupKind().String())})
	}
	// The instance and one object of each kind in mixedKinds, the reader
	// role being a second role.
	if len(targets) != 1+objectsPerUnit+1 {
		t.Fatalf("found %d objects to write to, want %d", len(targets), 1+objectsPerUnit+1)
	}
	counts := func() map[string]float64 {
		out := map[string]float64{}
		for _, tg := range targets {
			out[tg.controller] = reconcilesOf(t, func(c string) bool { return c == tg.controller })
		}
		return out
	}
	settle(ctx, t, counts)

	// What anyone with access to the status subresource can write: a
	// condition of their own, one object after the other. The object's own
	// controller must stay asleep, and so must the Instance's, which wakes
	// for a user that goes, not for its status. Other controllers follow
	// some objects' status on purpose (the roles on an Instance rewrite
	// their connection Secrets when it changes) and are not held to it.
	now := time.Now().UTC().Format(time.RFC3339)
	probe := fmt.Sprintf(`[{"op":"add","path":"/status/conditions/-","value":{"type":"Probe","status":"True","reason":"StatusWrite","lastTransitionTime":%q}}]`, now)
	instanceController := targets[0].controller
	for _, tg := range targets {
		asleep := []string{tg.controller}
		if tg.controller != instanceController {
			asleep = append(asleep, instanceController)
		}
		before := counts()
		if err := env.Kube.Status().Patch(ctx, tg.obj, client.RawPatch(types.JSONPatchType, []byte(probe))); err != nil {
			t.Fatalf("cannot write the status of %s: %v", tg.obj.GetName(), err)
		}
		// A woken controller reconciles within milliseconds: its queue
		// is empty. A second is a thousand times that.
		time.Sleep(time.Second)
		after := counts()
		for _, c := range asleep {
			if after[c] != before[c] {
				t.Errorf("a status write to %s woke %s: %v reconciles", tg.obj.GetName(), c, after[c]-before[c])
			}
		}
	}

	// A status that looks like the record of a create (Ready Creating,
	// Synced True), written by anyone with access to the status: the
	// observation after a create runs inside the create's own reconcile
	// (reconciler/created.go), so no status, this one included, wakes a
	// controller. Otherwise a user could flip it back after each
	// observation and keep the controller observing in a loop.
	created := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":"False","reason":"Creating","lastTransitionTime":%[1]q},{"type":"Synced","status":"True","reason":"ReconcileSuccess","lastTransitionTime":%[1]q}]}}`, now)
	for _, tg := range targets[1:] {
		before := counts()[tg.controller]
		if err := env.Kube.Status().Patch(ctx, tg.obj, client.RawPatch(types.MergePatchType, []byte(created))); err != nil {
			t.Fatalf("cannot write the status of %s: %v", tg.obj.GetName(), err)
		}
		time.Sleep(time.Second)
		if after := counts()[tg.controller]; after != before {
			t.Errorf("a status recording a create, written to %s, woke %s: %v reconciles", tg.obj.GetName(), tg.controller, after-before)
		}
	}

	// The one part of a status another controller writes for the managed
	// controller to act on: a database's binding (a Bound database's
	// deletion goes on once the binder records its release).
	for _, tg := range targets {
		db, ok := tg.obj.(*v1alpha1.PostgreSQLDatabase)
		if !ok {
			continue
		}
		before := counts()[tg.controller]
		p := `{"status":{"binding":{"message":"recorded by the binder"}}}`
		if err := env.Kube.Status().Patch(ctx, db, client.RawPatch(types.MergePatchType, []byte(p))); err != nil {
			t.Fatalf("cannot write the binding of %s: %v", db.GetName(), err)
		}
		err := providertest.Wait(ctx, 10*time.Second, func(context.Context) (bool, error) { return counts()[tg.controller] > before, nil })
		if err != nil {
			t.Errorf("a changed binding did not wake %s", tg.controller)
		}
	}

	// The control: the same objects, labelled, are reconciled at once. A
	// test whose counter never moves would pass above for nothing.
	afterStatus := counts()
	for _, tg := range targets {
		p := `{"metadata":{"labels":{"provider-postgresql.test/touched":"yes"}}}`
		if err := env.Kube.Patch(ctx, tg.obj, client.RawPatch(types.MergePatchType, []byte(p))); err != nil {
			t.Fatalf("cannot label %s: %v", tg.obj.GetName(), err)
		}
	}
	var woke map[string]float64
	err = providertest.Wait(ctx, 30*time.Second, func(context.Context) (bool, error) {
		woke = counts()
		for c, n := range woke {
			if n == afterStatus[c] {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		for c, n := range woke {
			if n == afterStatus[c] {
				t.Errorf("a label did not wake %s", c)
			}
		}
	}
	// Nothing was lost: every object is still Ready.
	for _, tg := range targets {
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(tg.obj), tg.obj); err != nil {
			t.Fatal(err)
		}
		if s := tg.obj.GetCondition(xpv2.TypeReady).Status; s != corev1.ConditionTrue {
			t.Errorf("%s is no longer Ready: %s", tg.obj.GetName(), s)
		}
	}
}

// settle waits until counts stays the same for two seconds, so that the
// work left from provisioning is done.
func settle(ctx context.Context, t *testing.T, counts func() map[string]float64) {
	t.Helper()
	last, since := counts(), time.Now()
	err := providertest.Wait(ctx, time.Minute, func(context.Context) (bool, error) {
		now := counts()
		for c, n := range now {
			if last[c] != n {
				last, since = now, time.Now()
				return false, nil
			}
		}
		return time.Since(since) >= 2*time.Second, nil
	})
	if err != nil {
		t.Fatalf("the controllers kept reconciling after provisioning: %v", err)
	}
}
