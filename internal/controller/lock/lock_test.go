package lock_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"time"

	"github.com/google/go-cmp/cmp"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/cluster"
	"github.com/ayatori/provider-postgresql/internal/admission"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/fixture/controlplane"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
	"github.com/ayatori/provider-postgresql/internal/fixture/tier"
	"github.com/ayatori/provider-postgresql/internal/manifest"
)

const (
	ns = "shop"
	// providerIdentity is who the controllers act as, as a provider pinned
	// to the ServiceAccount the README recommends would.
	providerIdentity = "system:serviceaccount:crossplane-system:provider-postgresql"
)

var (
	env  *providertest.Env
	main *v1alpha1.PostgreSQLInstance
)

// suite is the package's environment, started by the first test that
// declares it needs it: Crossplane's Usage CRDs, the garbage collector and
// the lock policy besides the provider.
var suite = tier.NewFixture(5*time.Minute, func(ctx context.Context) (func() error, error) {
	crds, err := controlplane.CrossplaneCRDs(ctx, "protection.crossplane.io_usages.yaml", "protection.crossplane.io_clusterusages.yaml")
	if err != nil {
		return nil, err
	}
	e, err := providertest.Start(ctx, providertest.Options{
		PollInterval: 2 * time.Second, Instance: "main", Namespaces: []string{ns},
		ControllerManager: true, CRDDirs: crds, Identity: providerIdentity,
	})
	if err != nil {
		return nil, err
	}
	env, main = e, e.Main
	if err := installPolicy(ctx); err != nil {
		return nil, errors.Join(err, e.Stop())
	}
	return e.Stop, nil
})

func TestMain(m *testing.M) { os.Exit(suite.Run(m)) }

// installPolicy applies the shipped cluster/lock-policy*.yaml, with the
// parameters naming this environment's provider identity.
func installPolicy(ctx context.Context) error {
	objs, err := admission.Manifests(cluster.LockPolicyFile)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if p, ok := o.(*admissionv1.ValidatingAdmissionPolicy); ok {
			named := false
			for _, v := range p.Spec.Variables {
				named = named || (v.Name == "annotationWriters" && strings.Contains(v.Expression, "'system:serviceaccount:crossplane-system:provider-postgresql'"))
			}
			if !named {
				return fmt.Errorf("the shipped policy's annotationWriters no longer name the provider's ServiceAccount: %v", p.Spec.Variables)
			}
		}
		if err := env.Kube.Create(ctx, o); err != nil {
			return fmt.Errorf("cannot apply %s %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
		}
	}
	// The RBAC manifests must at least be accepted by the API server.
	for _, f := range []string{"rbac.yaml", "rbac-install-lock-policy.yaml"} {
		b, err := cluster.Manifests.ReadFile(f)
		if err != nil {
			return err
		}
		objs, err := manifest.Decode(b)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		for _, u := range objs {
			if err := env.Kube.Create(ctx, u); err != nil {
				return fmt.Errorf("cannot apply %s from %s: %w", u.GetName(), f, err)
			}
		}
	}
	return nil
}

func databaseExists(ctx context.Context, t *testing.T, name string) bool {
	t.Helper()
	var n int
	if err := env.Connect(ctx, t, "postgres").QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

func newDatabase(namespace, name string, mutate ...func(*v1alpha1.PostgreSQLDatabase)) *v1alpha1.PostgreSQLDatabase {
	d := &v1alpha1.PostgreSQLDatabase{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       v1alpha1.PostgreSQLDatabaseSpec{InstanceRef: v1alpha1.InstanceReference{Name: main.Name}},
	}
	for _, m := range mutate {
		m(d)
	}
	return d
}

func newLock(namespace, name, kind, target, reason string) *v1alpha1.Lock {
	return &v1alpha1.Lock{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       v1alpha1.LockSpec{TargetRef: v1alpha1.TargetReference{Kind: kind, Name: target}, Reason: reason},
	}
}

// message is the denial the policy gives for locks.
func message(locks ...string) string {
	return "resource is protected by Lock(s) [" + strings.Join(locks, ", ") + "]; delete the Lock(s) before deleting this resource"
}

func annotation(ctx context.Context, t *testing.T, obj client.Object) string {
	t.Helper()
	if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	return obj.GetAnnotations()[v1alpha1.AnnotationLocked]
}

func usage(ctx context.Context, namespace, name string, cluster bool) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	kind := "Usage"
	if cluster {
		kind = "ClusterUsage"
	}
	u.SetAPIVersion("protection.crossplane.io/v1beta1")
	u.SetKind(kind)
	return u, env.Kube.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u)
}

func TestLocksAccumulateAndRelease(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	db := newDatabase(ns, "ledger")
	b := newLock(ns, "b-audit", v1alpha1.PostgreSQLDatabaseKind, "ledger", "")
	a := newLock(ns, "a-prod", v1alpha1.PostgreSQLDatabaseKind, "ledger", "Production data")
	env.Create(ctx, t, db, b)
	env.Ready(ctx, t, db, corev1.ConditionTrue, xpv2.ReasonAvailable)
	env.Ready(ctx, t, b, corev1.ConditionTrue, v1alpha1.ReasonLockActive)
	env.Create(ctx, t, a)
	env.Ready(ctx, t, a, corev1.ConditionTrue, v1alpha1.ReasonLockActive)
	if !a.Status.Active || a.Status.TargetUID != string(db.UID) {
		t.Errorf("status = %+v", a.Status)
	}
	if got := annotation(ctx, t, db.DeepCopy()); got != "a-prod,b-audit" {
		t.Errorf("annotation = %q, want a-prod,b-audit", got)
	}

	if c := a.GetCondition(xpv2.TypeReady); !strings.Contains(c.Message, "(reason: Production data)") {
		t.Errorf("the Lock's status does not show its reason: %q", c.Message)
	}

	t.Run("DeleteDeniedNamingEveryLockSorted", func(t *testing.T) {
		// The fixed part as the contract writes it, then the reasons.
		env.DeleteDenied(ctx, t, db, message("a-prod", "b-audit")+" (a-prod: Production data)")
		err := env.Kube.Delete(ctx, db)
		if err == nil || !kerrors.IsForbidden(err) || !strings.Contains(err.Error(), message("a-prod", "b-audit")) {
			t.Fatalf("a real delete: %v", err)
		}
		if !databaseExists(ctx, t, "ledger") {
			t.Fatal("the PostgreSQL database is gone")
		}
	})

	t.Run("UsagesMirrorTheLocks", func(t *testing.T) {
		for name, reason := range map[string]string{"a-prod": "Production data", "b-audit": "protected by Lock shop/b-audit"} {
			u, err := usage(ctx, ns, name, false)
			if err != nil {
				t.Fatalf("Usage %s: %v", name, err)
			}
			got, _, _ := unstructured.NestedString(u.Object, "spec", "reason")
			of, _, _ := unstructured.NestedString(u.Object, "spec", "of", "resourceRef", "name")
			kind, _, _ := unstructured.NestedString(u.Object, "spec", "of", "kind")
			if !strings.HasPrefix(got, reason) || of != "ledger" || kind != v1alpha1.PostgreSQLDatabaseKind {
				t.Errorf("Usage %s: reason %q, of %s %s", name, got, kind, of)
			}
		}
	})

	t.Run("StrippingTheAnnotationIsDenied", func(t *testing.T) {
		cur := db.DeepCopy()
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(db), cur); err != nil {
			t.Fatal(err)
		}
		orig := cur.DeepCopy()
		an := cur.GetAnnotations()
		delete(an, v1alpha1.AnnotationLocked)
		cur.SetAnnotations(an)
		err := env.Kube.Patch(ctx, cur, client.MergeFrom(orig))
		if err == nil || !strings.Contains(err.Error(), "is kept by provider-postgresql from Lock objects") {
			t.Fatalf("a plain user removed the annotation: %v", err)
		}
		// Other changes by the same user pass: only the annotation is guarded.
		cur = orig.DeepCopy()
		an = cur.GetAnnotations()
		an["example.com/note"] = "hello"
		cur.SetAnnotations(an)
		if err := env.Kube.Patch(ctx, cur, client.MergeFrom(orig)); err != nil {
			t.Errorf("an unrelated annotation change was refused: %v", err)
		}
	})

	t.Run("LastLockGoneDeletable", func(t *testing.T) {
		if err := env.Kube.Delete(ctx, a); err != nil {
			t.Fatal(err)
		}
		env.Gone(ctx, t, a)
		if _, err := usage(ctx, ns, "a-prod", false); !kerrors.IsNotFound(err) {
			t.Errorf("the Usage of a deleted Lock: %v", err)
		}
		env.DeleteDenied(ctx, t, db, message("b-audit"))
		if err := env.Kube.Delete(ctx, b); err != nil {
			t.Fatal(err)
		}
		env.Gone(ctx, t, b)
		if got := annotation(ctx, t, db.DeepCopy()); got != "" {
			t.Errorf("annotation after the last Lock = %q", got)
		}
		if err := env.Kube.Delete(ctx, db); err != nil {
			t.Fatalf("deleting after the last Lock went: %v", err)
		}
		env.Gone(ctx, t, db)
	})
}

func TestLockInvalidTargets(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	other := newLock(ns, "other-group", "ConfigMap", "settings", "")
	other.Spec.TargetRef.APIVersion = "v1"
	cases := map[*v1alpha1.Lock]string{
		other: "is not in group database.ayatori.ddupan.top",
		newLock(ns, "lock-on-lock", v1alpha1.LockKind, "other-group", ""):          "a Lock cannot target a Lock",
		newLock(ns, "unknown-kind", "PostgreSQLTable", "orders", ""):               "kind PostgreSQLTable is not served",
		newLock(ns, "wrong-scope", v1alpha1.PostgreSQLInstanceKind, main.Name, ""): "protect it with a ClusterLock",
	}
	for l := range cases {
		env.Create(ctx, t, l)
	}
	for l, want := range cases {
		env.Ready(ctx, t, l, corev1.ConditionFalse, v1alpha1.ReasonInvalidTarget)
		if l.Status.Active || !strings.Contains(l.GetCondition(xpv2.TypeReady).Message, want) {
			t.Errorf("%s: active %t, message %q, want %q", l.Name, l.Status.Active, l.GetCondition(xpv2.TypeReady).Message, want)
		}
	}
	for l := range cases {
		if err := env.Kube.Delete(ctx, l); err != nil {
			t.Fatal(err)
		}
		env.Gone(ctx, t, l)
	}
}

func TestLockTargetAppearingLater(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	l := newLock(ns, "early", v1alpha1.PostgreSQLRoleKind, "latecomer", "")
	env.Create(ctx, t, l)
	env.Ready(ctx, t, l, corev1.ConditionFalse, v1alpha1.ReasonMissingReference)
	if l.Status.Active {
		t.Error("active without a target")
	}
	r := &v1alpha1.PostgreSQLRole{
		ObjectMeta: metav1.ObjectMeta{Name: "latecomer", Namespace: ns},
		Spec:       v1alpha1.PostgreSQLRoleSpec{InstanceRef: v1alpha1.InstanceReference{Name: main.Name}},
	}
	env.Create(ctx, t, r)
	env.Ready(ctx, t, l, corev1.ConditionTrue, v1alpha1.ReasonLockActive)
	env.DeleteDenied(ctx, t, r, message("early"))

	t.Run("TargetRecreatedWithANewUID", func(t *testing.T) {
		// Lift the lock on the first object by force, as a cluster admin
		// removing the policy's guard would, then recreate the target.
		if err := env.Kube.Delete(ctx, l); err != nil {
			t.Fatal(err)
		}
		env.Gone(ctx, t, l)
		if err := env.Kube.Delete(ctx, r); err != nil {
			t.Fatal(err)
		}
		env.Gone(ctx, t, r)
		l = newLock(ns, "early", v1alpha1.PostgreSQLRoleKind, "latecomer", "")
		env.Create(ctx, t, l)
		env.Ready(ctx, t, l, corev1.ConditionFalse, v1alpha1.ReasonMissingReference)
		r2 := r.DeepCopy()
		r2.ResourceVersion, r2.UID = "", ""
		env.Create(ctx, t, r2)
		env.Ready(ctx, t, l, corev1.ConditionTrue, v1alpha1.ReasonLockActive)
		if l.Status.TargetUID != string(r2.UID) {
			t.Errorf("targetUID %s, want the new object's %s", l.Status.TargetUID, r2.UID)
		}
		env.DeleteDenied(ctx, t, r2, message("early"))
	})
}

// TestReleasedLockStaysReleased: a Lock deleted while its target's first
// create is in flight stays deleted. The target's managed reconciler read
// the target while it carried the Lock; if it wrote that copy's
// annotations back after its create, the target would refuse every delete
// in the name of a Lock that no longer exists, and no tenant could ever
// delete it. The provider's own lock on the role's name, held by the test,
// holds the create, so the release falls into that window every time.
func TestReleasedLockStaysReleased(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	r := &v1alpha1.PostgreSQLRole{
		// Paused until the Lock is on it, so that the reconcile that
		// creates the role starts from a copy carrying the Lock.
		ObjectMeta: metav1.ObjectMeta{Name: "inflight", Namespace: ns, Annotations: map[string]string{meta.AnnotationKeyReconciliationPaused: "true"}},
		Spec:       v1alpha1.PostgreSQLRoleSpec{InstanceRef: v1alpha1.InstanceReference{Name: main.Name}},
	}
	l := newLock(ns, "fleeting", v1alpha1.PostgreSQLRoleKind, r.Name, "")
	env.Create(ctx, t, r, l)
	env.Ready(ctx, t, l, corev1.ConditionTrue, v1alpha1.ReasonLockActive)
	// Also proves the policy is in force, so that the delete at the end
	// means something.
	env.DeleteDenied(ctx, t, r, message(l.Name))

	server := postgres.Target{Endpoint: postgres.Endpoint{Hostaddr: env.Postgres.Hostaddr, Port: env.Postgres.Port}}
	release, err := env.Pools.LockRoleNames(ctx, server, []string{"inflight"})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	unpause := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+meta.AnnotationKeyReconciliationPaused+`":null}}}`))
	if err := env.Kube.Patch(ctx, r.DeepCopy(), unpause); err != nil {
		t.Fatal(err)
	}
	// crossplane-runtime records a create as pending just before it calls
	// Create, which then waits for the name.
	err = providertest.Wait(ctx, 10*time.Second, func(ctx context.Context) (bool, error) {
		got := &v1alpha1.PostgreSQLRole{}
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), got); err != nil {
			return false, err
		}
		return got.GetAnnotations()[meta.AnnotationKeyExternalCreatePending] != "", nil
	})
	if err != nil {
		t.Fatalf("the role's create never started: %v", err)
	}
	if err := env.Kube.Delete(ctx, l); err != nil {
		t.Fatal(err)
	}
	env.Gone(ctx, t, l)
	release()
	env.Ready(ctx, t, r, corev1.ConditionTrue, xpv2.ReasonAvailable)
	if got := annotation(ctx, t, r.DeepCopy()); got != "" {
		t.Errorf("the target carries %s %q after its only Lock was deleted", v1alpha1.AnnotationLocked, got)
	}
	if err := env.Kube.Delete(ctx, r); err != nil {
		t.Fatalf("deleting the target after its only Lock went: %v", err)
	}
	env.Gone(ctx, t, r)
}

func TestConcurrentLocksLoseNoEntry(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	r := &v1alpha1.PostgreSQLRole{
		ObjectMeta: metav1.ObjectMeta{Name: "busy", Namespace: ns},
		Spec:       v1alpha1.PostgreSQLRoleSpec{InstanceRef: v1alpha1.InstanceReference{Name: main.Name}},
	}
	env.Create(ctx, t, r)
	var names []string
	for i := range 8 {
		l := newLock(ns, fmt.Sprintf("busy-%d", i), v1alpha1.PostgreSQLRoleKind, "busy", "")
		names = append(names, l.Name)
		env.Create(ctx, t, l)
	}
	want := strings.Join(names, ",")
	err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		return annotation(ctx, t, r.DeepCopy()) == want, nil
	})
	if err != nil {
		t.Fatalf("annotation %q, want %q: %v", annotation(ctx, t, r.DeepCopy()), want, err)
	}
	env.DeleteDenied(ctx, t, r, message(names...))
}

func TestClusterLockProtectsAnInstance(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	spare, err := env.Instance(ctx, "spare")
	if err != nil {
		t.Fatal(err)
	}
	cl := &v1alpha1.ClusterLock{
		ObjectMeta: metav1.ObjectMeta{Name: "keep-spare"},
		Spec: v1alpha1.LockSpec{TargetRef: v1alpha1.TargetReference{Kind: v1alpha1.PostgreSQLInstanceKind, Name: "spare"},
			Reason: "Shared server registration"},
	}
	env.Create(ctx, t, cl)
	env.Ready(ctx, t, cl, corev1.ConditionTrue, v1alpha1.ReasonLockActive)
	env.DeleteDenied(ctx, t, spare, message("keep-spare"))
	u, err := usage(ctx, "", "keep-spare", true)
	if err != nil {
		t.Fatalf("ClusterUsage: %v", err)
	}
	if reason, _, _ := unstructured.NestedString(u.Object, "spec", "reason"); reason != "Shared server registration" {
		t.Errorf("ClusterUsage reason %q", reason)
	}
	if err := env.Kube.Delete(ctx, cl); err != nil {
		t.Fatal(err)
	}
	env.Gone(ctx, t, cl)
	if _, err := usage(ctx, "", "keep-spare", true); !kerrors.IsNotFound(err) {
		t.Errorf("the ClusterUsage of a deleted ClusterLock: %v", err)
	}
	if err := env.Kube.Delete(ctx, spare); err != nil {
		t.Fatalf("deleting the Instance after its ClusterLock went: %v", err)
	}
	env.Gone(ctx, t, spare)
}

func TestDeleteCollectionRefusesTheLockedOne(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	const batch = "batch"
	if err := env.Namespace(ctx, batch); err != nil {
		t.Fatal(err)
	}
	locked := newDatabase(batch, "kept")
	l := newLock(batch, "keep", v1alpha1.PostgreSQLDatabaseKind, "kept", "")
	env.Create(ctx, t, locked, l)
	env.Ready(ctx, t, l, corev1.ConditionTrue, v1alpha1.ReasonLockActive)
	env.DeleteDenied(ctx, t, locked, message("keep"))
	err := env.Kube.DeleteAllOf(ctx, &v1alpha1.PostgreSQLDatabase{}, client.InNamespace(batch))
	if err == nil || !strings.Contains(err.Error(), message("keep")) {
		t.Fatalf("DeleteCollection: %v", err)
	}
	if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(locked), locked); err != nil || locked.GetDeletionTimestamp() != nil {
		t.Errorf("the locked database after a DeleteCollection: %v, deleting %v", err, locked.GetDeletionTimestamp())
	}
}

func TestPolicyMissingIsVisible(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{}
	if err := env.Kube.Get(ctx, client.ObjectKey{Name: "provider-postgresql-lock"}, binding); err != nil {
		t.Fatal(err)
	}
	r := &v1alpha1.PostgreSQLRole{
		ObjectMeta: metav1.ObjectMeta{Name: "unguarded", Namespace: ns},
		Spec:       v1alpha1.PostgreSQLRoleSpec{InstanceRef: v1alpha1.InstanceReference{Name: main.Name}},
	}
	l := newLock(ns, "guard", v1alpha1.PostgreSQLRoleKind, "unguarded", "")
	env.Create(ctx, t, r, l)
	env.Ready(ctx, t, l, corev1.ConditionTrue, v1alpha1.ReasonLockActive)

	if err := env.Kube.Delete(ctx, binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b := binding.DeepCopy()
		b.ResourceVersion, b.UID = "", ""
		if err := env.Kube.Create(context.Background(), b); err != nil {
			t.Errorf("cannot restore the binding: %v", err)
		}
	})
	env.Ready(ctx, t, l, corev1.ConditionFalse, v1alpha1.ReasonPolicyMissing)
	if msg := l.GetCondition(xpv2.TypeReady).Message; l.Status.Active || !strings.Contains(msg, "deletes are NOT refused") {
		t.Errorf("without the binding: active %t, message %q", l.Status.Active, msg)
	}
}

func TestGarbageCollectorCannotDeleteALockedDependent(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: ns}}
	env.Create(ctx, t, owner)
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}
	// Both would be dropped in PostgreSQL if deleted: Delete is allowed.
	dependent := func(name string) *v1alpha1.PostgreSQLDatabase {
		return newDatabase(ns, name, func(d *v1alpha1.PostgreSQLDatabase) {
			d.OwnerReferences = []metav1.OwnerReference{ref}
			d.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
		})
	}
	locked, free := dependent("gc_locked"), dependent("gc_free")
	locked.Name, free.Name = "gc-locked", "gc-free"
	locked.Spec.ForProvider.Name, free.Spec.ForProvider.Name = ptr.To("gc_locked"), ptr.To("gc_free")
	l := newLock(ns, "keep-gc", v1alpha1.PostgreSQLDatabaseKind, "gc-locked", "")
	env.Create(ctx, t, locked, free, l)
	env.Ready(ctx, t, locked, corev1.ConditionTrue, xpv2.ReasonAvailable)
	env.Ready(ctx, t, free, corev1.ConditionTrue, xpv2.ReasonAvailable)
	env.Ready(ctx, t, l, corev1.ConditionTrue, v1alpha1.ReasonLockActive)
	env.DeleteDenied(ctx, t, locked, message("keep-gc"))

	if err := env.Kube.Delete(ctx, owner); err != nil {
		t.Fatal(err)
	}
	// The garbage collector has acted once the unlocked dependent is gone
	// (from the API server and from PostgreSQL).
	env.Gone(ctx, t, free)
	if databaseExists(ctx, t, "gc_free") {
		t.Error("the unlocked dependent's database was not dropped: the test proves nothing")
	}
	if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(locked), locked); err != nil || locked.GetDeletionTimestamp() != nil {
		t.Fatalf("the locked dependent: %v, deleting %v", err, locked.GetDeletionTimestamp())
	}
	if !databaseExists(ctx, t, "gc_locked") {
		t.Error("the PostgreSQL database behind the locked dependent is gone")
	}
	// And the garbage collector did try, and was refused.
	log := filepath.Join(env.ControlPlane.Dir, "kube-controller-manager.log")
	err := providertest.Wait(ctx, 30*time.Second, func(context.Context) (bool, error) {
		b, err := os.ReadFile(log)
		return strings.Contains(string(b), message("keep-gc")), err
	})
	if err != nil {
		t.Errorf("the garbage collector's log does not show its delete refused: %v", err)
	}
}

func TestNamespaceDeletionWaitsForAPerson(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	const vault = "vault"
	if err := env.Namespace(ctx, vault); err != nil {
		t.Fatal(err)
	}
	db := newDatabase(vault, "vault_data")
	db.Name = "vault-data"
	db.Spec.ForProvider.Name = ptr.To("vault_data")
	l := newLock(vault, "keep-vault", v1alpha1.PostgreSQLDatabaseKind, "vault-data", "Customer data")
	env.Create(ctx, t, db, l)
	env.Ready(ctx, t, db, corev1.ConditionTrue, xpv2.ReasonAvailable)
	env.Ready(ctx, t, l, corev1.ConditionTrue, v1alpha1.ReasonLockActive)
	env.DeleteDenied(ctx, t, db, message("keep-vault"))

	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: vault}}
	if err := env.Kube.Delete(ctx, nsObj); err != nil {
		t.Fatal(err)
	}
	var cause string
	err := providertest.Wait(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
		if err := env.Kube.Get(ctx, client.ObjectKey{Name: vault}, nsObj); err != nil {
			return false, err
		}
		for _, c := range nsObj.Status.Conditions {
			if c.Status == corev1.ConditionTrue && strings.Contains(c.Message, message("keep-vault")) {
				cause = string(c.Type) + ": " + c.Message
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the Terminating namespace does not name the Lock as the cause: %v (%+v)", err, nsObj.Status)
	}
	t.Logf("namespace condition: %s", cause)
	if nsObj.Status.Phase != corev1.NamespaceTerminating {
		t.Errorf("namespace phase %s", nsObj.Status.Phase)
	}
	// The namespace controller may not delete the Lock itself.
	if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(l), l); err != nil || l.GetDeletionTimestamp() != nil {
		t.Fatalf("the Lock during namespace deletion: %v, deleting %v", err, l.GetDeletionTimestamp())
	}
	if !databaseExists(ctx, t, "vault_data") {
		t.Fatal("the PostgreSQL database is gone")
	}

	// A person deletes the Lock: the namespace completes.
	if err := env.Kube.Delete(ctx, l); err != nil {
		t.Fatal(err)
	}
	err = providertest.Wait(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
		err := env.Kube.Get(ctx, client.ObjectKey{Name: vault}, nsObj)
		return kerrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("the namespace did not complete after the Lock was deleted: %v (%+v)", err, nsObj.Status)
	}
	if !databaseExists(ctx, t, "vault_data") {
		t.Error("the retained database was dropped with its namespace")
	}
}

// TestForgedLockedAnnotationRefused: an object created already carrying a
// locked annotation could never be deleted (no Lock would ever release
// it); whoever is not an annotation writer cannot create one. An empty
// annotation locks nothing and is let through.
func TestForgedLockedAnnotationRefused(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	forged := &v1alpha1.PostgreSQLRole{
		ObjectMeta: metav1.ObjectMeta{Name: "forged", Namespace: ns, Annotations: map[string]string{v1alpha1.AnnotationLocked: "nobody"}},
		Spec:       v1alpha1.PostgreSQLRoleSpec{InstanceRef: v1alpha1.InstanceReference{Name: main.Name}},
	}
	err := env.Kube.Create(ctx, forged)
	if err == nil || !strings.Contains(err.Error(), "cannot be created carrying the "+v1alpha1.AnnotationLocked+" annotation") {
		t.Fatalf("creating an object with a forged locked annotation: %v, want a refusal", err)
	}
	empty := forged.DeepCopy()
	empty.Name, empty.Annotations = "unforged", map[string]string{v1alpha1.AnnotationLocked: ""}
	env.Create(ctx, t, empty)
	if err := env.Kube.Delete(ctx, empty); err != nil {
		t.Errorf("an object created with an empty locked annotation cannot be deleted: %v", err)
	}
}

// TestLockActiveOnlyWhereABindingCovers: a Deny binding whose
// matchResources leave the target out (here, a namespace selector its
// namespace does not match) refuses nothing for it, so the Lock says it is
// not Active, and says which binding leaves it out.
func TestLockActiveOnlyWhereABindingCovers(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	r := &v1alpha1.PostgreSQLRole{
		ObjectMeta: metav1.ObjectMeta{Name: "uncovered", Namespace: ns},
		Spec:       v1alpha1.PostgreSQLRoleSpec{InstanceRef: v1alpha1.InstanceReference{Name: main.Name}},
	}
	l := newLock(ns, "cover", v1alpha1.PostgreSQLRoleKind, "uncovered", "")
	env.Create(ctx, t, r, l)
	env.Ready(ctx, t, l, corev1.ConditionTrue, v1alpha1.ReasonLockActive)

	binding := &admissionv1.ValidatingAdmissionPolicyBinding{}
	if err := env.Kube.Get(ctx, client.ObjectKey{Name: "provider-postgresql-lock"}, binding); err != nil {
		t.Fatal(err)
	}
	orig := binding.Spec.MatchResources.DeepCopy()
	binding.Spec.MatchResources = &admissionv1.MatchResources{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"locks.example.org/guarded": "yes"}},
	}
	if err := env.Kube.Update(ctx, binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b := &admissionv1.ValidatingAdmissionPolicyBinding{}
		if err := env.Kube.Get(context.Background(), client.ObjectKey{Name: "provider-postgresql-lock"}, b); err != nil {
			t.Errorf("cannot restore the binding: %v", err)
			return
		}
		b.Spec.MatchResources = orig
		if err := env.Kube.Update(context.Background(), b); err != nil {
			t.Errorf("cannot restore the binding: %v", err)
		}
	})
	env.Ready(ctx, t, l, corev1.ConditionFalse, v1alpha1.ReasonPolicyMissing)
	if msg := l.GetCondition(xpv2.TypeReady).Message; l.Status.Active || !strings.Contains(msg, "namespaceSelector does not select namespace "+ns) {
		t.Errorf("with a binding that leaves the target out: active %t, message %q", l.Status.Active, msg)
	}
	// What the Lock says is true: the delete is not refused. The API
	// server's admission plugin reads bindings through an informer of its
	// own, so it may still enforce the old binding for a moment after the
	// provider's cache saw the new one (a CI run caught that window):
	// allow it the same 30 s the refusals get, no more.
	var last error
	err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		last = env.Kube.Delete(ctx, r, client.DryRunAll)
		return last == nil, nil
	})
	if err != nil {
		t.Errorf("the uncovered target's delete was still refused after 30 s: %v", last)
	}
}

// TestDestructiveOptionsRefusedInALockedDatabase: a Lock guards the data
// in a database, not only the object: deleting a role with
// ownedObjectsOnDelete Drop, or a schema with cascadeOnDelete, would drop
// tables inside it, so both wait (nothing dropped, a message naming the
// Lock) until the Lock goes.
func TestDestructiveOptionsRefusedInALockedDatabase(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	db := newDatabase(ns, "vault")
	l := newLock(ns, "vault-guard", v1alpha1.PostgreSQLDatabaseKind, "vault", "")
	r := &v1alpha1.PostgreSQLRole{
		ObjectMeta: metav1.ObjectMeta{Name: "vault-writer", Namespace: ns},
		Spec: v1alpha1.PostgreSQLRoleSpec{
			ManagementPolicies:   xpv2.ManagementPolicies{xpv2.ManagementActionAll},
			InstanceRef:          v1alpha1.InstanceReference{Name: main.Name},
			ForProvider:          v1alpha1.PostgreSQLRoleParameters{Name: ptr.To("vault_writer")},
			OwnedObjectsOnDelete: v1alpha1.OwnedObjectsDrop,
		},
	}
	s := &v1alpha1.PostgreSQLSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "vault-data", Namespace: ns},
		Spec: v1alpha1.PostgreSQLSchemaSpec{
			ManagementPolicies: xpv2.ManagementPolicies{xpv2.ManagementActionAll},
			InstanceRef:        v1alpha1.InstanceReference{Name: main.Name},
			ForProvider: v1alpha1.PostgreSQLSchemaParameters{
				Name: ptr.To("vault_data"), Database: ptr.To("vault"), CascadeOnDelete: true,
			},
		},
	}
	// What the held deletions will send is in their plans; the server
	// logs it once they go through.
	env.LogStatements(ctx, t)
	// A locked database where the role owns nothing does not hold it up.
	other := newDatabase(ns, "elsewhere")
	otherLock := newLock(ns, "elsewhere-guard", v1alpha1.PostgreSQLDatabaseKind, "elsewhere", "")
	env.Create(ctx, t, db, l, r, other, otherLock)
	env.Ready(ctx, t, db, corev1.ConditionTrue, xpv2.ReasonAvailable)
	env.Ready(ctx, t, otherLock, corev1.ConditionTrue, v1alpha1.ReasonLockActive)
	env.Create(ctx, t, s)
	env.Ready(ctx, t, l, corev1.ConditionTrue, v1alpha1.ReasonLockActive)
	env.Ready(ctx, t, r, corev1.ConditionTrue, xpv2.ReasonAvailable)
	env.Ready(ctx, t, s, corev1.ConditionTrue, xpv2.ReasonAvailable)
	vault := env.Connect(ctx, t, "vault")
	for _, stmt := range []string{
		"CREATE TABLE public.owned_by_writer (id int)", "ALTER TABLE public.owned_by_writer OWNER TO vault_writer",
		"CREATE TABLE vault_data.kept (id int)",
	} {
		if _, err := vault.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	tables := func() int {
		var n int
		if err := vault.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename IN ('owned_by_writer', 'kept')").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	for _, o := range []client.Object{r, s} {
		if err := env.Kube.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range []providertest.Conditioned{r, s} {
		err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
			if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
				return false, err
			}
			return strings.Contains(o.GetCondition(xpv2.TypeSynced).Message, "Lock(s) [vault-guard] protect"), nil
		})
		if err != nil {
			t.Fatalf("deleting %s was not held by the database's Lock: %v (Synced: %q)", o.GetName(), err, o.GetCondition(xpv2.TypeSynced).Message)
		}
	}
	time.Sleep(3 * time.Second) // A poll later.
	if n := tables(); n != 2 {
		t.Fatalf("%d of 2 tables left in the locked database", n)
	}

	rPlan, sPlan := env.WaitPlan(ctx, t, r, v1alpha1.PlanDelete), env.WaitPlan(ctx, t, s, v1alpha1.PlanDelete)
	if diff := cmp.Diff([]string{`DROP OWNED BY "vault_writer"`, `DROP ROLE IF EXISTS "vault_writer"`}, rPlan); diff != "" {
		t.Errorf("the role's deletion plan (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{`DROP SCHEMA IF EXISTS "vault_data" CASCADE`}, sPlan); diff != "" {
		t.Errorf("the schema's deletion plan (-want +got):\n%s", diff)
	}
	from := env.ServerLogLen(t)

	// The Lock goes: the deletions proceed as asked, although another
	// database (where the role owns nothing) stays locked.
	if err := env.Kube.Delete(ctx, l); err != nil {
		t.Fatal(err)
	}
	env.Gone(ctx, t, r)
	env.Gone(ctx, t, s)
	env.SentAsPlanned(t, from, "vault_writer", rPlan)
	env.SentAsPlanned(t, from, "vault_data", sPlan)
	if n := tables(); n != 0 {
		t.Errorf("%d table(s) left once the Lock was gone", n)
	}
}

// TestInstallPolicyWithItsOwnRole: with only cluster/rbac-install-lock-policy.yaml
// (and rbac.yaml), the provider's identity keeps the installed policy and
// binding up to date, keeping their identity lists, and installs a missing
// one: Locks are enforced with the default install.
func TestInstallPolicyWithItsOwnRole(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	cfg := rest.CopyConfig(env.ControlPlane.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: providerIdentity, Groups: []string{"system:authenticated"}}
	sa, err := client.New(cfg, client.Options{Scheme: env.Kube.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := admission.InstallLockPolicy(ctx, sa, "crossplane-system"); err != nil {
		t.Fatalf("updating the installed policy with the install role: %v", err)
	}
	vap := &admissionv1.ValidatingAdmissionPolicy{}
	if err := env.Kube.Get(ctx, client.ObjectKey{Name: cluster.LockPolicyName}, vap); err != nil {
		t.Fatal(err)
	}
	writers := ""
	for _, v := range vap.Spec.Variables {
		if v.Name == "annotationWriters" {
			writers = v.Expression
		}
	}
	if !strings.Contains(writers, "system:serviceaccount:crossplane-system:crossplane") {
		t.Errorf("the update lost the installed identity lists: annotationWriters = %s", writers)
	}

	binding := &admissionv1.ValidatingAdmissionPolicyBinding{}
	if err := env.Kube.Get(ctx, client.ObjectKey{Name: cluster.LockPolicyName}, binding); err != nil {
		t.Fatal(err)
	}
	if err := env.Kube.Delete(ctx, binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The test's own identity may create admission policies.
		if err := admission.InstallLockPolicy(context.Background(), env.Kube, "crossplane-system"); err != nil {
			t.Errorf("cannot restore the binding: %v", err)
		}
	})
	if err := admission.InstallLockPolicy(ctx, sa, "crossplane-system"); err != nil {
		t.Fatalf("installing a missing binding with the install role: %v", err)
	}
	if err := env.Kube.Get(ctx, client.ObjectKey{Name: cluster.LockPolicyName}, binding); err != nil {
		t.Errorf("the binding was not installed again: %v", err)
	}
}
