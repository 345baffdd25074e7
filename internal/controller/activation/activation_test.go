package activation_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

const ns = "shop"

var env *providertest.Env

// The cluster activated some kinds only (Crossplane's safe-start with a
// ManagedResourceActivationPolicy listing them): the other CRDs do not
// exist, and the controllers start the way the provider process starts
// them, through the CRD gate.
// suite is the package's environment, started by the first test that
// declares it needs it.
var suite = providertest.Suite(providertest.Options{
	Instance: "main", Namespaces: []string{ns}, Gated: true,
	Kinds: []string{"postgresqlinstances", "postgresqlroles", "postgresqldatabases", "postgresqlgrants", "locks"},
}, func(e *providertest.Env) { env = e })

func TestMain(m *testing.M) { os.Exit(suite.Run(m)) }

// running returns the controllers the manager has started: controller-runtime
// registers a controller's worker gauge when it starts.
func running(t *testing.T) []string {
	t.Helper()
	fams, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range fams {
		if f.GetName() != "controller_runtime_active_workers" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" {
					out = append(out, l.GetValue())
				}
			}
		}
	}
	return out
}

// waitRunning waits until the controllers in want run, then checks that
// none of those in not does.
func waitRunning(ctx context.Context, t *testing.T, want, not []string) {
	t.Helper()
	err := providertest.Wait(ctx, 30*time.Second, func(context.Context) (bool, error) {
		got := running(t)
		for _, w := range want {
			if !slices.Contains(got, w) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("controllers %v do not all run; running: %v (set-up error: %v): %v", want, running(t), env.SetupError(), err)
	}
	for _, n := range not {
		if slices.Contains(running(t), n) {
			t.Errorf("controller %s runs, but its kind is not active", n)
		}
	}
}

const (
	ctrlSchema = "managed/postgresqlschema.database.ayatori.ddupan.top"
	ctrlDP     = "managed/postgresqldefaultprivileges.database.ayatori.ddupan.top"
)

// TestKindsActivatedOneByOne: what runs with some kinds, what a reference
// to (or a Lock on) a kind that is not active says, and that activating it
// later starts its controller and lets what waited on it go on, without a
// restart.
func TestKindsActivatedOneByOne(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	waitRunning(ctx, t, []string{
		"managed/postgresqlinstance.database.ayatori.ddupan.top", "managed/postgresqlrole.database.ayatori.ddupan.top",
		"managed/postgresqldatabase.database.ayatori.ddupan.top", "binding/postgresqldatabase",
		"managed/postgresqlgrant.database.ayatori.ddupan.top", "lock",
	}, []string{ctrlSchema, ctrlDP, "binding/postgresqlbinding", "clusterlock"})

	// Roles and databases work, the binder without the binding kind.
	owner := &v1alpha1.PostgreSQLRole{
		ObjectMeta: metav1.ObjectMeta{Name: "actowner", Namespace: ns},
		Spec:       v1alpha1.PostgreSQLRoleSpec{InstanceRef: v1alpha1.InstanceReference{Name: "main"}},
	}
	reader := owner.DeepCopy()
	reader.Name = "actreader"
	db := &v1alpha1.PostgreSQLDatabase{
		ObjectMeta: metav1.ObjectMeta{Name: "actorders", Namespace: ns},
		Spec: v1alpha1.PostgreSQLDatabaseSpec{InstanceRef: v1alpha1.InstanceReference{Name: "main"}, ForProvider: v1alpha1.PostgreSQLDatabaseParameters{
			OwnerRef: &v1alpha1.LocalReference{Name: owner.Name},
		}, Binding: v1alpha1.DatabaseBindingPolicy{Offered: true}},
	}
	env.Create(ctx, t, owner, reader, db)
	for _, o := range []providertest.Conditioned{owner, reader, db} {
		env.Ready(ctx, t, o, corev1.ConditionTrue, xpv2.ReasonAvailable)
	}
	// The binder decides without bindings: offered, so available.
	// It is a controller of its own that decides once it sees the database
	// observed, so its word may come a moment after Ready.
	err := providertest.Wait(ctx, 10*time.Second, func(ctx context.Context) (bool, error) {
		err := env.Kube.Get(ctx, client.ObjectKeyFromObject(db), db)
		return err == nil && db.Status.Binding.Phase == v1alpha1.PhaseAvailable, err
	})
	if err != nil {
		t.Errorf("without the PostgreSQLBinding kind the offered database's binding is %+v, want phase Available: %v", db.Status.Binding, err)
	}

	// A grant on a schema given by reference, and a Lock on that schema,
	// while schemas are not active: each says so, and the Lock claims no
	// protection.
	grant := &v1alpha1.PostgreSQLGrant{
		ObjectMeta: metav1.ObjectMeta{Name: "act-usage", Namespace: ns},
		Spec: v1alpha1.PostgreSQLGrantSpec{InstanceRef: v1alpha1.InstanceReference{Name: "main"}, ForProvider: v1alpha1.PostgreSQLGrantParameters{
			RoleRef: &v1alpha1.LocalReference{Name: reader.Name}, ObjectType: v1alpha1.GrantObjectSchema,
			DatabaseRef: &v1alpha1.LocalReference{Name: db.Name}, SchemaRef: &v1alpha1.LocalReference{Name: "actsales"},
			Privileges: []v1alpha1.Privilege{"USAGE"},
		}},
	}
	lock := &v1alpha1.Lock{
		ObjectMeta: metav1.ObjectMeta{Name: "act-keep-sales", Namespace: ns},
		Spec:       v1alpha1.LockSpec{TargetRef: v1alpha1.TargetReference{Kind: v1alpha1.PostgreSQLSchemaKind, Name: "actsales"}, Reason: "test"},
	}
	env.Create(ctx, t, grant, lock)
	waitCondition(ctx, t, grant, xpv2.TypeSynced, corev1.ConditionFalse, "spec.forProvider.schemaRef refers to a PostgreSQLSchema, but that kind is not active")
	waitCondition(ctx, t, lock, xpv2.TypeReady, corev1.ConditionFalse, "kind PostgreSQLSchema is not active on this cluster")
	if lock.Status.Active {
		t.Error("a Lock on a kind that is not active says it is active")
	}

	// Activate schemas: their controller starts in the running manager.
	if err := env.Activate(ctx, "postgresqlschemas"); err != nil {
		t.Fatal(err)
	}
	waitRunning(ctx, t, []string{ctrlSchema}, []string{ctrlDP, "clusterlock"})
	schema := &v1alpha1.PostgreSQLSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "actsales", Namespace: ns},
		Spec: v1alpha1.PostgreSQLSchemaSpec{InstanceRef: v1alpha1.InstanceReference{Name: "main"}, ForProvider: v1alpha1.PostgreSQLSchemaParameters{
			DatabaseRef: &v1alpha1.LocalReference{Name: db.Name}, OwnerRef: &v1alpha1.LocalReference{Name: owner.Name},
		}},
	}
	env.Create(ctx, t, schema)
	env.Ready(ctx, t, schema, corev1.ConditionTrue, xpv2.ReasonAvailable)
	env.Ready(ctx, t, grant, corev1.ConditionTrue, xpv2.ReasonAvailable)
	conn := env.AdminConnect(ctx, t, "actorders")
	defer conn.Close(ctx) //nolint:errcheck // Test.
	var usage bool
	if err := conn.QueryRow(ctx, "SELECT has_schema_privilege('actreader', 'actsales', 'USAGE')").Scan(&usage); err != nil || !usage {
		t.Errorf("the grant is Ready but actreader has no USAGE on actsales (%v)", err)
	}

	// The Lock reaches its target through the watch the schema kind got
	// when it appeared: its own resync is the 10-minute poll.
	err = providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(schema), schema); err != nil {
			return false, err
		}
		return slices.Contains(strings.Split(schema.GetAnnotations()[v1alpha1.AnnotationLocked], ","), lock.Name), nil
	})
	if err != nil {
		t.Errorf("the schema never carried the Lock once its kind was active (annotations %v): %v", schema.GetAnnotations(), err)
	}
	if err := env.SetupError(); err != nil {
		t.Errorf("a controller failed to set up: %v", err)
	}
}

// waitCondition waits until obj's condition typ has status and a message
// containing msg.
func waitCondition(ctx context.Context, t *testing.T, obj providertest.Conditioned, typ xpv2.ConditionType, status corev1.ConditionStatus, msg string) {
	t.Helper()
	err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return false, err
		}
		c := obj.GetCondition(typ)
		return c.Status == status && strings.Contains(c.Message, msg), nil
	})
	if err != nil {
		c := obj.GetCondition(typ)
		t.Fatalf("%s: %s never became %s with %q (it is %s: %q): %v", obj.GetName(), typ, status, msg, c.Status, c.Message, err)
	}
}
