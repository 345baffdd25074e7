package reference_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

const ns = "waits"

var env *providertest.Env

// The default poll interval of the harness (10 minutes) makes a waiting
// resource's fallback requeue a minute away (config.Config.waits): what
// these tests see within seconds is the wake-up, nothing else.
// suite is the package's environment, started by the first test that
// declares it needs it.
var suite = providertest.Suite(providertest.Options{Instance: "main", Namespaces: []string{ns}}, func(e *providertest.Env) { env = e })

func TestMain(m *testing.M) { os.Exit(suite.Run(m)) }

// TestWaitingIsWokenNotRetried: resources created before what they refer
// to wait without retrying (no error back-off: 1 s, 2 s, 4 s, … would be
// a failed reconcile, status write and event at each step), and go on
// within seconds of it appearing. It covers each way of waiting: a
// reference to a resource not created yet (the database's ownerRef), to
// one created but not observed yet (the schema's databaseRef), and a
// PostgreSQL object named directly that is not on the server yet (the
// grant's database, then its role; a database's owner given by name,
// which is never tried on the server before the role exists).
func TestWaitingIsWokenNotRetried(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	in := v1alpha1.InstanceReference{Name: env.Main.Name}
	logFrom := env.ServerLogLen(t)
	named := &v1alpha1.PostgreSQLDatabase{
		ObjectMeta: metav1.ObjectMeta{Name: "w-named", Namespace: ns},
		Spec: v1alpha1.PostgreSQLDatabaseSpec{InstanceRef: in, ForProvider: v1alpha1.PostgreSQLDatabaseParameters{
			Name: ptr.To("w_named"), Owner: ptr.To("w_named_owner"),
		}},
	}
	db := &v1alpha1.PostgreSQLDatabase{
		ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: ns},
		Spec: v1alpha1.PostgreSQLDatabaseSpec{InstanceRef: in, ForProvider: v1alpha1.PostgreSQLDatabaseParameters{
			OwnerRef: &v1alpha1.LocalReference{Name: "w-owner"},
		}},
	}
	s := &v1alpha1.PostgreSQLSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "w-data", Namespace: ns},
		Spec: v1alpha1.PostgreSQLSchemaSpec{InstanceRef: in, ForProvider: v1alpha1.PostgreSQLSchemaParameters{
			// Owned by the database's owner: a managed service's admin may
			// create a schema only in a database it acts as the owner of.
			Name: ptr.To("w_data"), DatabaseRef: &v1alpha1.LocalReference{Name: "w"}, OwnerRef: &v1alpha1.LocalReference{Name: "w-owner"},
		}},
	}
	g := &v1alpha1.PostgreSQLGrant{
		ObjectMeta: metav1.ObjectMeta{Name: "w-connect", Namespace: ns},
		Spec: v1alpha1.PostgreSQLGrantSpec{InstanceRef: in, ForProvider: v1alpha1.PostgreSQLGrantParameters{
			Role: ptr.To("w_reader"), ObjectType: v1alpha1.GrantObjectDatabase, Database: ptr.To("w"),
			Privileges: []v1alpha1.Privilege{"CONNECT"},
		}},
	}
	env.Create(ctx, t, db, s, g, named)

	// Failed reconciles, as their aggregated Warning events count them.
	// The first few seconds bring one or more: the first reconcile and
	// those its own writes (and the binder's) trigger, as they happen to
	// coalesce. After that a waiting resource is left alone until woken;
	// the error back-off would retry it at 7 s (and 15 s): a quiet window
	// up to 12 s holds the first retry with room to spare.
	const settle, quiet = 5 * time.Second, 7 * time.Second
	waiters := []string{db.Name, s.Name, g.Name, named.Name}
	time.Sleep(settle)
	first := map[string]int32{}
	for _, name := range waiters {
		first[name] = env.Warnings(ctx, t, ns, name, "waiting for")
		if first[name] == 0 {
			t.Errorf("%s: no warning in %s; it is not waiting", name, settle)
		}
	}
	time.Sleep(quiet)
	for _, name := range waiters {
		n := env.Warnings(ctx, t, ns, name, "waiting for")
		t.Logf("%s: %d failed reconciles in the first %s of waiting, %d in the %s after", name, first[name], settle, n-first[name], quiet)
		if n != first[name] {
			t.Errorf("%s: %d failed reconciles in %s of waiting after the first %s; want none (it is retried, not woken)", name, n-first[name], quiet, settle)
		}
	}

	newRole := func(name, pg string) *v1alpha1.PostgreSQLRole {
		return &v1alpha1.PostgreSQLRole{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec:       v1alpha1.PostgreSQLRoleSpec{InstanceRef: in, ForProvider: v1alpha1.PostgreSQLRoleParameters{Name: ptr.To(pg)}},
		}
	}
	// Each waiter goes on within seconds of what it waits for; its
	// fallback requeue is a minute away.
	const woken = 10 * time.Second
	owner := newRole("w-owner", "w_owner")
	env.Create(ctx, t, owner)
	env.Ready(ctx, t, owner, corev1.ConditionTrue, xpv2.ReasonAvailable)
	for _, o := range []providertest.Conditioned{db, s} {
		if err := env.WaitForReady(ctx, o, corev1.ConditionTrue, xpv2.ReasonAvailable, woken); err != nil {
			t.Fatalf("%s did not go on within %s of what it waits for: %v", o.GetName(), woken, err)
		}
	}
	// A PostgreSQLRole creating the named owner wakes that database too.
	namedOwner := newRole("w-named-owner", "w_named_owner")
	env.Create(ctx, t, namedOwner)
	env.Ready(ctx, t, namedOwner, corev1.ConditionTrue, xpv2.ReasonAvailable)
	if err := env.WaitForReady(ctx, named, corev1.ConditionTrue, xpv2.ReasonAvailable, woken); err != nil {
		t.Fatalf("%s did not go on within %s of its owner role: %v", named.Name, woken, err)
	}
	// While it waited, CREATE DATABASE was never sent for an owner the
	// server does not have: each failed try was two writes of the object
	// and a retry with back-off.
	if log := env.ServerLog(t, logFrom); strings.Contains(log, `role "w_named_owner" does not exist`) {
		t.Errorf("CREATE DATABASE was tried before its owner role existed:\n%s", log)
	}
	// The grant now waits for its role alone.
	err := providertest.Wait(ctx, woken, func(ctx context.Context) (bool, error) {
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(g), g); err != nil {
			return false, err
		}
		return strings.Contains(g.GetCondition(xpv2.TypeSynced).Message, `waiting for role "w_reader"`), nil
	})
	if err != nil {
		t.Fatalf("the grant did not go on to wait for its role within %s of its database: %v (Synced: %q)", woken, err, g.GetCondition(xpv2.TypeSynced).Message)
	}
	reader := newRole("w-reader", "w_reader")
	env.Create(ctx, t, reader)
	env.Ready(ctx, t, reader, corev1.ConditionTrue, xpv2.ReasonAvailable)
	if err := env.WaitForReady(ctx, g, corev1.ConditionTrue, xpv2.ReasonAvailable, woken); err != nil {
		t.Fatalf("the grant did not go on within %s of its role: %v", woken, err)
	}
}

// TestWaitsForTheTargetFirst: a grant and default privileges created
// before everything they refer to wait for the schema they act in, the
// reference that appears last, from the start, not for each reference
// in turn (the grantee, the owner, the database, then the schema): each
// new message was a status write and an event, in a large apply several
// an object. What they refer to is then created one at a time, each
// Ready before the next, so that a resource that waited for the others
// in turn would say so.
func TestWaitsForTheTargetFirst(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	in := v1alpha1.InstanceReference{Name: env.Main.Name}
	ref := func(n string) *v1alpha1.LocalReference { return &v1alpha1.LocalReference{Name: n} }
	g := &v1alpha1.PostgreSQLGrant{
		ObjectMeta: metav1.ObjectMeta{Name: "t-usage", Namespace: ns},
		Spec: v1alpha1.PostgreSQLGrantSpec{InstanceRef: in, ForProvider: v1alpha1.PostgreSQLGrantParameters{
			RoleRef: ref("t-reader"), ObjectType: v1alpha1.GrantObjectSchema, DatabaseRef: ref("t"), SchemaRef: ref("t-data"),
			Privileges: []v1alpha1.Privilege{"USAGE"},
		}},
	}
	p := &v1alpha1.PostgreSQLDefaultPrivileges{
		ObjectMeta: metav1.ObjectMeta{Name: "t-tables", Namespace: ns},
		Spec: v1alpha1.PostgreSQLDefaultPrivilegesSpec{InstanceRef: in, ForProvider: v1alpha1.PostgreSQLDefaultPrivilegesParameters{
			RoleRef: ref("t-reader"), OwnerRef: ref("t-owner"), DatabaseRef: ref("t"), SchemaRef: ref("t-data"),
			ObjectType: v1alpha1.DefaultPrivilegesTables, Privileges: []v1alpha1.Privilege{"SELECT"},
		}},
	}
	env.Create(ctx, t, g, p)
	for _, o := range []providertest.Conditioned{
		&v1alpha1.PostgreSQLRole{
			ObjectMeta: metav1.ObjectMeta{Name: "t-reader", Namespace: ns},
			Spec:       v1alpha1.PostgreSQLRoleSpec{InstanceRef: in, ForProvider: v1alpha1.PostgreSQLRoleParameters{Name: ptr.To("t_reader")}},
		},
		&v1alpha1.PostgreSQLRole{
			ObjectMeta: metav1.ObjectMeta{Name: "t-owner", Namespace: ns},
			Spec:       v1alpha1.PostgreSQLRoleSpec{InstanceRef: in, ForProvider: v1alpha1.PostgreSQLRoleParameters{Name: ptr.To("t_owner")}},
		},
		&v1alpha1.PostgreSQLDatabase{
			ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: ns},
			Spec:       v1alpha1.PostgreSQLDatabaseSpec{InstanceRef: in, ForProvider: v1alpha1.PostgreSQLDatabaseParameters{OwnerRef: ref("t-owner")}},
		},
		&v1alpha1.PostgreSQLSchema{
			ObjectMeta: metav1.ObjectMeta{Name: "t-data", Namespace: ns},
			Spec: v1alpha1.PostgreSQLSchemaSpec{InstanceRef: in, ForProvider: v1alpha1.PostgreSQLSchemaParameters{
				Name: ptr.To("t_data"), DatabaseRef: ref("t"), OwnerRef: ref("t-owner"),
			}},
		},
	} {
		// Both have waited at least once before the first one appears.
		if err := providertest.Wait(ctx, 10*time.Second, func(ctx context.Context) (bool, error) {
			return env.Warnings(ctx, t, ns, g.Name, "waiting for") > 0 && env.Warnings(ctx, t, ns, p.Name, "waiting for") > 0, nil
		}); err != nil {
			t.Fatalf("the grant and the default privileges do not wait: %v", err)
		}
		env.Create(ctx, t, o)
		env.Ready(ctx, t, o, corev1.ConditionTrue, xpv2.ReasonAvailable)
	}
	for _, o := range []providertest.Conditioned{g, p} {
		env.Ready(ctx, t, o, corev1.ConditionTrue, xpv2.ReasonAvailable)
		var waits []string
		for _, m := range env.Events(ctx, t, ns, o.GetName(), "CannotObserveExternalResource") {
			if strings.Contains(m, "waiting for") {
				waits = append(waits, m)
			}
		}
		if len(waits) == 0 {
			t.Errorf("%s: no waiting event; the test no longer shows what it waited for", o.GetName())
		}
		for _, m := range waits {
			if !strings.Contains(m, "spec.forProvider.schemaRef: waiting for PostgreSQLSchema "+ns+"/t-data") {
				t.Errorf("%s waited for something other than its schema: %q", o.GetName(), m)
			}
		}
	}
}
