package binding_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

var env *providertest.Env

// suite is the package's environment, started by the first test that
// declares it needs it.
var suite = providertest.Suite(providertest.Options{PollInterval: 2 * time.Second, Instance: "main", Namespaces: []string{"shop", "rival", "race", "imports", "restore"}}, func(e *providertest.Env) {
	env = e
})

func TestMain(m *testing.M) { os.Exit(suite.Run(m)) }

// dynamic is a binding that provisions database db on the test Instance,
// as the tenant Composition composes it for a dynamic claim.
func dynamic(ns, name, db string) *v1alpha1.PostgreSQLBinding {
	return &v1alpha1.PostgreSQLBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.PostgreSQLBindingSpec{
			Tenant: name, DatabaseRef: v1alpha1.LocalReference{Name: name},
			Provision: &v1alpha1.BindingProvision{InstanceRef: v1alpha1.InstanceReference{Name: "main"}, Database: db},
		},
	}
}

// explicit is a binding that asks for the registered PostgreSQLDatabase db.
func explicit(ns, name, db string) *v1alpha1.PostgreSQLBinding {
	return &v1alpha1.PostgreSQLBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.PostgreSQLBindingSpec{Tenant: name, DatabaseRef: v1alpha1.LocalReference{Name: db}},
	}
}

// refsOf is b's spec.crossplane.resourceRefs.
func refsOf(b *v1alpha1.PostgreSQLBinding) []v1alpha1.ResourceRef {
	if b.Spec.Crossplane == nil {
		return nil
	}
	return b.Spec.Crossplane.ResourceRefs
}

// registered creates what an admin registers for tenants: a NOLOGIN owner
// role and a database it owns, offered to one tenant of the namespace.
func registered(ctx context.Context, t *testing.T, ns, name string) *v1alpha1.PostgreSQLDatabase {
	t.Helper()
	owner := &v1alpha1.PostgreSQLRole{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: strings.ReplaceAll(name, "_", "-") + "-owner"},
		Spec: v1alpha1.PostgreSQLRoleSpec{
			InstanceRef: v1alpha1.InstanceReference{Name: "main"},
			ForProvider: v1alpha1.PostgreSQLRoleParameters{Name: ptr.To(name + "_owner"), Login: ptr.To(false)},
		},
	}
	db := &v1alpha1.PostgreSQLDatabase{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: strings.ReplaceAll(name, "_", "-")},
		Spec: v1alpha1.PostgreSQLDatabaseSpec{
			InstanceRef: v1alpha1.InstanceReference{Name: "main"},
			ForProvider: v1alpha1.PostgreSQLDatabaseParameters{Name: ptr.To(name), OwnerRef: &v1alpha1.LocalReference{Name: owner.Name}},
			Binding:     v1alpha1.DatabaseBindingPolicy{Offered: true},
		},
	}
	env.Create(ctx, t, owner, db)
	return db
}

// phase waits until db's binding phase is want and returns db as read.
func phase(ctx context.Context, t *testing.T, db *v1alpha1.PostgreSQLDatabase, want v1alpha1.DatabasePhase) *v1alpha1.PostgreSQLDatabase {
	t.Helper()
	got := &v1alpha1.PostgreSQLDatabase{}
	err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		err := env.Kube.Get(ctx, client.ObjectKeyFromObject(db), got)
		return err == nil && got.Status.Binding.Phase == want, err
	})
	if err != nil {
		t.Fatalf("PostgreSQLDatabase %s/%s never reached phase %s: %v (binding %+v, Ready %+v)", db.Namespace, db.Name, want, err, got.Status.Binding, got.GetCondition(xpv2.TypeReady))
	}
	return got
}

// bindingReady waits until b's Ready condition has status and reason.
func bindingReady(ctx context.Context, t *testing.T, b *v1alpha1.PostgreSQLBinding, status corev1.ConditionStatus, reason xpv2.ConditionReason) *v1alpha1.PostgreSQLBinding {
	t.Helper()
	got := &v1alpha1.PostgreSQLBinding{}
	err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		err := env.Kube.Get(ctx, client.ObjectKeyFromObject(b), got)
		c := got.GetCondition(xpv2.TypeReady)
		return err == nil && c.Status == status && c.Reason == reason, err
	})
	if err != nil {
		c := got.GetCondition(xpv2.TypeReady)
		t.Fatalf("PostgreSQLBinding %s/%s never became %s/%s: %v (now %s/%s %q)", b.Namespace, b.Name, status, reason, err, c.Status, c.Reason, c.Message)
	}
	return got
}

func deleteAndWait(ctx context.Context, t *testing.T, o client.Object) {
	t.Helper()
	if err := env.Kube.Delete(ctx, o); err != nil && !kerrors.IsNotFound(err) {
		t.Fatal(err)
	}
	env.Gone(ctx, t, o)
}

// pgCount counts rows of a catalog query run as the admin.
func pgCount(ctx context.Context, t *testing.T, query string) int {
	t.Helper()
	var n int
	if err := env.Connect(ctx, t, "postgres").QueryRow(ctx, query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestProvisionBindRelease follows a dynamic tenant's database through
// every phase: provisioned and reserved for its binding, Bound, Released
// with its data when the tenant goes, never bound by a new tenant of the
// same name, and bound again only after an admin re-opens it.
func TestProvisionBindRelease(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	b := dynamic("shop", "orders", "orders")
	env.Create(ctx, t, b)
	got := bindingReady(ctx, t, b, corev1.ConditionTrue, v1alpha1.ReasonBound)
	want := v1alpha1.BoundDatabase{Name: "orders", Instance: "main", Database: "orders", Owner: "orders_owner"}
	if d := got.Status.Database; d == nil || d.Name != want.Name || d.Instance != want.Instance || d.Database != want.Database || d.Owner != want.Owner || d.UID == "" {
		t.Fatalf("binding delivers %+v, want %+v", d, want)
	}
	// What crossplane resource trace follows from the binding: the
	// database and its owner role.
	api := v1alpha1.SchemeGroupVersion.String()
	wantRefs := []v1alpha1.ResourceRef{{APIVersion: api, Kind: "PostgreSQLDatabase", Name: "orders"}, {APIVersion: api, Kind: "PostgreSQLRole", Name: "orders-owner"}}
	if diff := cmp.Diff(wantRefs, refsOf(got)); diff != "" {
		t.Errorf("spec.crossplane.resourceRefs of a Bound binding (-want +got):\n%s", diff)
	}
	db := &v1alpha1.PostgreSQLDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders"}}
	bound := phase(ctx, t, db, v1alpha1.PhaseBound)
	if r := bound.Status.Binding.BoundTo; r == nil || r.UID != string(got.UID) || r.Tenant != "shop/orders" || bound.Status.Binding.Origin != v1alpha1.OriginProvisioned {
		t.Fatalf("database binding %+v, want bound to %s", bound.Status.Binding, got.UID)
	}
	if len(bound.GetOwnerReferences()) != 0 {
		t.Errorf("the provisioned database is owned by %v: it must outlive its tenant", bound.GetOwnerReferences())
	}
	if !slices.Contains(bound.GetFinalizers(), v1alpha1.FinalizerBinding) {
		t.Errorf("a Bound database lacks the binding finalizer: %v", bound.GetFinalizers())
	}
	admin := env.Connect(ctx, t, "orders")
	if _, err := admin.Exec(ctx, "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('old rows')"); err != nil {
		t.Fatal(err)
	}

	t.Run("ManagementPoliciesFrozenWhileBound", func(t *testing.T) {
		// Read afresh, and again after a controller's write in between: a
		// conflict is not the refusal this is about.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := &v1alpha1.PostgreSQLDatabase{}
			if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(bound), cur); err != nil {
				return err
			}
			cur.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
			return env.Kube.Update(ctx, cur)
		})
		if err == nil || !strings.Contains(err.Error(), "frozen while the database is Bound") {
			t.Errorf("widening the reclaim policy of a Bound database: %v", err)
		}
	})

	t.Run("DeletionHeldWhileBound", func(t *testing.T) {
		if err := env.Kube.Delete(ctx, db); err != nil {
			t.Fatal(err)
		}
		held := &v1alpha1.PostgreSQLDatabase{}
		err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
			err := env.Kube.Get(ctx, client.ObjectKeyFromObject(db), held)
			return err == nil && strings.Contains(held.Status.Binding.Message, "deletion held") && strings.Contains(held.Status.Binding.Message, "shop/orders"), err
		})
		if err != nil {
			t.Fatalf("a Bound database's deletion does not say it is held by its tenant: %v (%+v)", err, held.Status.Binding)
		}
		if held.Status.Binding.Phase != v1alpha1.PhaseBound {
			t.Errorf("phase %s while its tenant lives", held.Status.Binding.Phase)
		}
		// The tenant still has its binding.
		bindingReady(ctx, t, b, corev1.ConditionTrue, v1alpha1.ReasonBound)
	})

	// The tenant goes: the database is Released, its record (deleted above
	// by the admin) goes only now, and the data stays (Retain).
	deleteAndWait(ctx, t, b)
	env.Gone(ctx, t, db)
	if n := pgCount(ctx, t, "SELECT count(*) FROM pg_database WHERE datname = 'orders'"); n != 1 {
		t.Fatal("the retained database was dropped")
	}

	// The admin registers it again (as it would after a restore); a new
	// tenant of the same name is not bound to a database provisioned for
	// another.
	t.Run("ReleasedIsNotBoundByANewTenantOfTheSameName", func(t *testing.T) {
		b2 := dynamic("shop", "keep", "keep")
		env.Create(ctx, t, b2)
		bindingReady(ctx, t, b2, corev1.ConditionTrue, v1alpha1.ReasonBound)
		kdb := &v1alpha1.PostgreSQLDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "keep"}}
		first := phase(ctx, t, kdb, v1alpha1.PhaseBound).Status.Binding.BoundTo.UID
		k := env.Connect(ctx, t, "keep")
		if _, err := k.Exec(ctx, "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('old rows')"); err != nil {
			t.Fatal(err)
		}
		deleteAndWait(ctx, t, b2)
		released := phase(ctx, t, kdb, v1alpha1.PhaseReleased)
		if released.Status.Binding.BoundTo == nil || released.Status.Binding.BoundTo.UID != first {
			t.Fatalf("Released lost the old identity: %+v", released.Status.Binding)
		}

		again := dynamic("shop", "keep", "keep")
		env.Create(ctx, t, again)
		st := bindingReady(ctx, t, again, corev1.ConditionFalse, v1alpha1.ReasonReleased)
		if !strings.Contains(st.GetCondition(xpv2.TypeReady).Message, "re-opens") {
			t.Errorf("the Released condition does not say how it is re-opened: %q", st.GetCondition(xpv2.TypeReady).Message)
		}
		// Stays so: a poll later nothing changed.
		time.Sleep(3 * time.Second)
		st = bindingReady(ctx, t, again, corev1.ConditionFalse, v1alpha1.ReasonReleased)
		// Another tenant's database is not this binding's to show.
		if refs := refsOf(st); refs != nil {
			t.Errorf("a binding refused a Released database lists %v in spec.crossplane.resourceRefs", refs)
		}

		// The admin re-opens it: the next tenant binds and reads the old rows.
		cur := &v1alpha1.PostgreSQLDatabase{}
		cur.SetNamespace(kdb.GetNamespace())
		cur.SetName(kdb.GetName())
		providertest.Update(ctx, t, env, cur, func(cur *v1alpha1.PostgreSQLDatabase) {
			cur.Spec.Binding.Reopen, cur.Spec.Binding.Offered = first, true
		})
		now := bindingReady(ctx, t, again, corev1.ConditionTrue, v1alpha1.ReasonBound)
		if r := phase(ctx, t, kdb, v1alpha1.PhaseBound).Status.Binding.BoundTo; r.UID != string(now.UID) {
			t.Errorf("bound to %s, want the new binding %s", r.UID, now.UID)
		}
		var v string
		if err := env.Connect(ctx, t, "keep").QueryRow(ctx, "SELECT v FROM kept").Scan(&v); err != nil || v != "old rows" {
			t.Errorf("the re-opened database's rows: %q, %v", v, err)
		}
		deleteAndWait(ctx, t, again)
	})
}

// TestTakeoverByName is a hostile tenant in another namespace asking for
// a database name that another tenant has: nothing is bound, no role is
// created on the server, and the other tenant keeps its database.
func TestTakeoverByName(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	victim := dynamic("shop", "ledger", "ledger")
	env.Create(ctx, t, victim)
	bindingReady(ctx, t, victim, corev1.ConditionTrue, v1alpha1.ReasonBound)
	roles := pgCount(ctx, t, "SELECT count(*) FROM pg_roles")

	attacker := dynamic("rival", "ledger", "ledger")
	env.Create(ctx, t, attacker)
	got := bindingReady(ctx, t, attacker, corev1.ConditionFalse, v1alpha1.ReasonConflict)
	if got.Status.Database != nil || got.Status.Phase == v1alpha1.BindingBound {
		t.Fatalf("the attacker's binding delivers %+v", got.Status.Database)
	}
	if msg := got.GetCondition(xpv2.TypeReady).Message; !strings.Contains(msg, "cannot be delivered") {
		t.Errorf("the attacker's condition does not say why: %q", msg)
	}
	if n := pgCount(ctx, t, "SELECT count(*) FROM pg_roles"); n != roles {
		t.Errorf("the attacker's binding changed the server's roles: %d, was %d", n, roles)
	}
	var comment string
	if err := env.Connect(ctx, t, "postgres").QueryRow(ctx, "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = 'ledger'").Scan(&comment); err != nil {
		t.Fatal(err)
	}
	vdb := &v1alpha1.PostgreSQLDatabase{}
	if err := env.Kube.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "ledger"}, vdb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(comment, string(vdb.UID)) {
		t.Errorf("the victim's database lost its marker: %q", comment)
	}

	// Still nothing once the victim's tenant is gone and its data retained.
	deleteAndWait(ctx, t, victim)
	phase(ctx, t, vdb, v1alpha1.PhaseReleased)
	time.Sleep(3 * time.Second)
	bindingReady(ctx, t, attacker, corev1.ConditionFalse, v1alpha1.ReasonConflict)
	if n := pgCount(ctx, t, "SELECT count(*) FROM pg_roles"); n != roles {
		t.Errorf("after the victim left, the attacker's binding changed the server's roles: %d, was %d", n, roles)
	}
	deleteAndWait(ctx, t, attacker)
}

// TestRace sends five tenants for one offered database at once, ten
// times: exactly one is Bound each round, and the others are told which
// tenant holds it.
func TestRace(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	type decision struct {
		db     *v1alpha1.PostgreSQLDatabase
		winner v1alpha1.BindingReference
	}
	var decided []decision
	for round := range 10 {
		name := fmt.Sprintf("race_%d", round)
		db := registered(ctx, t, "race", name)
		phase(ctx, t, db, v1alpha1.PhaseAvailable)
		bs := make([]*v1alpha1.PostgreSQLBinding, 5)
		errs := make(chan error, len(bs))
		for i := range bs {
			bs[i] = explicit("race", fmt.Sprintf("r%d-t%d", round, i), db.Name)
			go func(b *v1alpha1.PostgreSQLBinding) { errs <- env.Kube.Create(ctx, b) }(bs[i])
		}
		for range bs {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		winner := phase(ctx, t, db, v1alpha1.PhaseBound).Status.Binding.BoundTo
		bound := 0
		for _, b := range bs {
			got := &v1alpha1.PostgreSQLBinding{}
			err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
				err := env.Kube.Get(ctx, client.ObjectKeyFromObject(b), got)
				// A decision, not the "waiting" it may show before the
				// database's binding reaches it.
				r := got.GetCondition(xpv2.TypeReady).Reason
				return err == nil && (r == v1alpha1.ReasonBound || r == v1alpha1.ReasonBoundToAnotherTenant), err
			})
			if err != nil {
				t.Fatalf("round %d: binding %s never reported a decision: %v (Ready %+v)", round, b.Name, err, got.GetCondition(xpv2.TypeReady))
			}
			switch c := got.GetCondition(xpv2.TypeReady); {
			case c.Status == corev1.ConditionTrue:
				bound++
				if string(got.UID) != winner.UID {
					t.Errorf("round %d: %s says Bound but the database is bound to %s", round, b.Name, winner.Name)
				}
			case c.Reason != v1alpha1.ReasonBoundToAnotherTenant || !strings.Contains(c.Message, winner.Tenant):
				t.Errorf("round %d: loser %s: %s %q", round, b.Name, c.Reason, c.Message)
			}
		}
		if bound != 1 {
			t.Fatalf("round %d: %d bindings Bound, want exactly 1", round, bound)
		}
		decided = append(decided, decision{db: db, winner: *winner})
	}
	// A poll later no decision has moved (one wait for all rounds).
	time.Sleep(2500 * time.Millisecond)
	for round, d := range decided {
		if now := phase(ctx, t, d.db, v1alpha1.PhaseBound).Status.Binding.BoundTo; now.UID != d.winner.UID {
			t.Errorf("round %d: the binding moved from %s to %s", round, d.winner.Name, now.Name)
		}
	}
}

// TestImportsAreNeverDeliveredAsTheyStand covers what an admin registers:
// an Observe-only import, a database owned by a superuser, and a second
// registration of a database already managed elsewhere.
func TestImportsAreNeverDeliveredAsTheyStand(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	if _, err := env.Connect(ctx, t, "postgres").Exec(ctx, "CREATE DATABASE legacy_app"); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		db     *v1alpha1.PostgreSQLDatabase
		reason xpv2.ConditionReason
	}{
		"ObserveOnly": {
			db: &v1alpha1.PostgreSQLDatabase{
				ObjectMeta: metav1.ObjectMeta{Namespace: "imports", Name: "observed"},
				Spec: v1alpha1.PostgreSQLDatabaseSpec{
					ManagementPolicies: xpv2.ManagementPolicies{xpv2.ManagementActionObserve}, InstanceRef: v1alpha1.InstanceReference{Name: "main"},
					ForProvider: v1alpha1.PostgreSQLDatabaseParameters{Name: ptr.To("legacy_app")}, Binding: v1alpha1.DatabaseBindingPolicy{Offered: true},
				},
			},
			reason: v1alpha1.ReasonObserveOnly,
		},
		"SuperuserOwned": {
			// No owner given: the Instance's admin, a superuser, owns it.
			db: &v1alpha1.PostgreSQLDatabase{
				ObjectMeta: metav1.ObjectMeta{Namespace: "imports", Name: "admins"},
				Spec: v1alpha1.PostgreSQLDatabaseSpec{
					InstanceRef: v1alpha1.InstanceReference{Name: "main"},
					ForProvider: v1alpha1.PostgreSQLDatabaseParameters{Name: ptr.To("admins_db")}, Binding: v1alpha1.DatabaseBindingPolicy{Offered: true},
				},
			},
			reason: v1alpha1.ReasonPrivilegedOwner,
		},
		"RegisteredTwice": {
			// twice_db is managed (and marked) by a PostgreSQLDatabase in
			// shop; a second registration in imports is a Conflict.
			db: &v1alpha1.PostgreSQLDatabase{
				ObjectMeta: metav1.ObjectMeta{Namespace: "imports", Name: "twice"},
				Spec: v1alpha1.PostgreSQLDatabaseSpec{
					InstanceRef: v1alpha1.InstanceReference{Name: "main"},
					ForProvider: v1alpha1.PostgreSQLDatabaseParameters{Name: ptr.To("twice_db")}, Binding: v1alpha1.DatabaseBindingPolicy{Offered: true},
				},
			},
			reason: v1alpha1.ReasonConflict,
		},
	}
	first := registered(ctx, t, "shop", "twice_db")
	phase(ctx, t, first, v1alpha1.PhaseAvailable)
	roles := pgCount(ctx, t, "SELECT count(*) FROM pg_roles")
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			env.Create(ctx, t, tc.db)
			got := phase(ctx, t, tc.db, v1alpha1.PhaseUnavailable)
			if got.Status.Binding.Reason != tc.reason {
				t.Errorf("reason %s (%q), want %s", got.Status.Binding.Reason, got.Status.Binding.Message, tc.reason)
			}
			b := explicit("imports", "wants-"+tc.db.Name, tc.db.Name)
			env.Create(ctx, t, b)
			st := bindingReady(ctx, t, b, corev1.ConditionFalse, tc.reason)
			if st.Status.Database != nil {
				t.Errorf("delivers %+v", st.Status.Database)
			}
		})
	}
	if n := pgCount(ctx, t, "SELECT count(*) FROM pg_roles"); n != roles {
		t.Errorf("refused imports changed the server's roles: %d, was %d", n, roles)
	}
}

// TestRestartMidBinding kills the provider right after a database records
// its binding, before the binding's own status says so: after a restart
// the same binding is Bound, and no second one.
func TestRestartMidBinding(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	db := registered(ctx, t, "shop", "restart_db")
	phase(ctx, t, db, v1alpha1.PhaseAvailable)
	a, b := explicit("shop", "restart-a", db.Name), explicit("shop", "restart-b", db.Name)
	env.Create(ctx, t, a)
	first := phase(ctx, t, db, v1alpha1.PhaseBound).Status.Binding.BoundTo
	if err := env.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	env.Create(ctx, t, b)
	bindingReady(ctx, t, a, corev1.ConditionTrue, v1alpha1.ReasonBound)
	bindingReady(ctx, t, b, corev1.ConditionFalse, v1alpha1.ReasonBoundToAnotherTenant)
	if now := phase(ctx, t, db, v1alpha1.PhaseBound).Status.Binding.BoundTo; *now != *first {
		t.Errorf("after the restart bound to %+v, was %+v", now, first)
	}
}

// TestOwnerPrivilegedAfterBinding: a Bound database's owner is given a
// predefined role's power after binding (by hand, by whoever may): the
// database stays bound to its tenant, the binding delivers nothing and
// says why at the next poll, and delivery resumes once the power goes.
func TestOwnerPrivilegedAfterBinding(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	db := registered(ctx, t, "shop", "later_priv")
	b := explicit("shop", "later-priv", db.Name)
	env.Create(ctx, t, b)
	bindingReady(ctx, t, b, corev1.ConditionTrue, v1alpha1.ReasonBound)

	env.SQL(ctx, t, "postgres", "GRANT pg_read_server_files TO later_priv_owner")
	got := bindingReady(ctx, t, b, corev1.ConditionFalse, v1alpha1.ReasonPrivilegedOwner)
	if got.Status.Database != nil {
		t.Errorf("still delivers %+v", got.Status.Database)
	}
	if c := got.GetCondition(xpv2.TypeReady); !strings.Contains(c.Message, "member of pg_read_server_files") {
		t.Errorf("the condition does not say why: %q", c.Message)
	}
	if d := phase(ctx, t, db, v1alpha1.PhaseBound); d.Status.Binding.BoundTo == nil || d.Status.Binding.BoundTo.UID != string(got.GetUID()) {
		t.Errorf("the database is no longer bound to its tenant: %+v", d.Status.Binding)
	}

	env.SQL(ctx, t, "postgres", "REVOKE pg_read_server_files FROM later_priv_owner")
	if got := bindingReady(ctx, t, b, corev1.ConditionTrue, v1alpha1.ReasonBound); got.Status.Database == nil {
		t.Error("delivery did not resume once the owner lost the power")
	}
}

// TestMisspeltExtensionRemoved: a tenant that asked for an extension the
// server cannot install (a misspelt name) leaves its database
// ExtensionUnavailable; removing that entry takes it off the database's
// list, and the database installs the rest and becomes Ready. An installed
// extension is then listed in the binding's status and cannot be removed;
// nothing is ever uninstalled.
func TestMisspeltExtensionRemoved(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	b := dynamic("shop", "typo", "typo")
	b.Spec.Provision.Extensions = []string{"pgcrypto", "pgcrytpo"}
	env.Create(ctx, t, b)
	// The database is not created while an extension cannot be installed,
	// so it is never Bound.
	db := &v1alpha1.PostgreSQLDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "typo"}}
	env.Ready(ctx, t, db, corev1.ConditionFalse, v1alpha1.ReasonExtensionUnavailable)
	bindingReady(ctx, t, b, corev1.ConditionFalse, v1alpha1.ReasonProvisioning)
	if !strings.Contains(db.GetCondition(xpv2.TypeReady).Message, `"pgcrytpo" (did you mean pgcrypto?)`) {
		t.Errorf("ExtensionUnavailable does not name the misspelt extension: %q", db.GetCondition(xpv2.TypeReady).Message)
	}

	providertest.Update(ctx, t, env, b, func(b *v1alpha1.PostgreSQLBinding) { b.Spec.Provision.Extensions = []string{"pgcrypto"} })
	env.Ready(ctx, t, db, corev1.ConditionTrue, xpv2.ReasonAvailable)
	bindingReady(ctx, t, b, corev1.ConditionTrue, v1alpha1.ReasonBound)
	if got := names(db.Spec.ForProvider.Extensions); !slices.Equal(got, []string{"pgcrypto"}) {
		t.Errorf("the database lists extensions %v, want [pgcrypto]", got)
	}
	if n := pgCount(ctx, t, "SELECT count(*) FROM pg_database WHERE datname = 'typo'"); n != 1 {
		t.Fatal("the database is gone")
	}
	var installed int
	if err := env.Connect(ctx, t, "typo").QueryRow(ctx, "SELECT count(*) FROM pg_extension WHERE extname = 'pgcrypto'").Scan(&installed); err != nil || installed != 1 {
		t.Fatalf("pgcrypto installed %d times (%v), want once", installed, err)
	}

	// The binding's status now lists pgcrypto as installed: it can no
	// longer be removed.
	err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		err := env.Kube.Get(ctx, client.ObjectKeyFromObject(b), b)
		return err == nil && b.Status.Database != nil && slices.Equal(b.Status.Database.Extensions, []string{"pgcrypto"}), err
	})
	if err != nil {
		t.Fatalf("the binding does not show pgcrypto installed: %v (%+v)", err, b.Status.Database)
	}
	b.Spec.Provision.Extensions = nil
	if err := env.Kube.Update(ctx, b); err == nil || !strings.Contains(err.Error(), "cannot be removed") {
		t.Errorf("removing an installed extension: %v, want a refusal", err)
	}
	deleteAndWait(ctx, t, b)
}

func names(xs []v1alpha1.Extension) []string {
	var out []string
	for _, x := range xs {
		out = append(out, x.Name)
	}
	return out
}

// TestProvisioningPlan previews a tenant's provisioning: a binding whose
// provisioned resources are observed read-only shows what widening their
// policies would send, in order (the owner role's creation, then the
// database's, owned by it) and nothing is sent. Widening the role's and
// then the database's policies sends exactly that plan, the database is
// bound, and the binding's plan empties.
func TestProvisioningPlan(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	env.LogStatements(ctx, t)
	from := env.ServerLogLen(t)
	b := dynamic("shop", "preview", "preview")
	b.Spec.Provision.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
	env.Create(ctx, t, b)

	role := &v1alpha1.PostgreSQLRole{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "preview-owner"}}
	db := &v1alpha1.PostgreSQLDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "preview"}}
	err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
			return false, err
		}
		return b.Status.Plan != nil && len(b.Status.Plan.Steps) == 2, nil
	})
	if err != nil {
		t.Fatalf("the binding never showed its provisioning's plan: %v (plan %+v, Ready %+v)", err, b.Status.Plan, b.GetCondition(xpv2.TypeReady))
	}
	for _, o := range []client.Object{role, db} {
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatal(err)
		}
	}
	want := []v1alpha1.ProvisioningStep{
		{Kind: v1alpha1.PostgreSQLRoleKind, Name: role.Name, Plan: ptr.Deref(role.GetPlan(), v1alpha1.Plan{})},
		{Kind: v1alpha1.PostgreSQLDatabaseKind, Name: db.Name, Plan: ptr.Deref(db.GetPlan(), v1alpha1.Plan{})},
	}
	if diff := cmp.Diff(want, b.Status.Plan.Steps); diff != "" {
		t.Errorf("the binding's plan is not its resources' plans in order (-want +got):\n%s", diff)
	}
	var planned []string
	for _, s := range b.Status.Plan.Steps {
		if s.Plan.Action != v1alpha1.PlanCreate || s.Plan.Omitted != 0 {
			t.Errorf("%s %s plans %s (%d omitted), want its whole Create", s.Kind, s.Name, s.Plan.Action, s.Plan.Omitted)
		}
		planned = append(planned, s.Plan.Statements...)
	}
	if len(planned) < 2 || !strings.HasPrefix(planned[0], `CREATE ROLE "preview_owner"`) ||
		!slices.ContainsFunc(planned, func(s string) bool {
			return strings.HasPrefix(s, `ALTER DATABASE "preview" OWNER TO "preview_owner"`)
		}) {
		t.Errorf("the plan does not create the owner role, then the database owned by it:\n%s", strings.Join(planned, "\n"))
	}
	if s := fmt.Sprintf("Create: %d statements in 2 resources", len(planned)); b.Status.Plan.Summary != s {
		t.Errorf("summary %q, want %q", b.Status.Plan.Summary, s)
	}
	st := bindingReady(ctx, t, b, corev1.ConditionFalse, v1alpha1.ReasonObserveOnly)
	if m := st.GetCondition(xpv2.TypeReady).Message; !strings.Contains(m, "a preview") || !strings.Contains(m, "status.plan") {
		t.Errorf("the binding's condition does not say it is a preview whose plan is in status.plan: %q", m)
	}
	// A few more observations: still nothing sent, nothing on the server.
	time.Sleep(3 * time.Second)
	if sent := env.Sent(t, from, "preview"); len(sent) > 0 {
		t.Fatalf("with managementPolicies [Observe], the provider sent:\n%s", strings.Join(sent, "\n"))
	}
	if n := pgCount(ctx, t, "SELECT count(*) FROM pg_roles WHERE rolname = 'preview_owner'") + pgCount(ctx, t, "SELECT count(*) FROM pg_database WHERE datname = 'preview'"); n != 0 {
		t.Fatalf("a preview created %d objects on the server", n)
	}

	// An admin widens the role's policies, then the database's.
	from = env.ServerLogLen(t)
	providertest.Update(ctx, t, env, role, func(r *v1alpha1.PostgreSQLRole) {
		r.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
	})
	env.Ready(ctx, t, role, corev1.ConditionTrue, xpv2.ReasonAvailable)
	providertest.Update(ctx, t, env, db, func(d *v1alpha1.PostgreSQLDatabase) {
		d.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
	})
	bindingReady(ctx, t, b, corev1.ConditionTrue, v1alpha1.ReasonBound)
	err = providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		err := env.Kube.Get(ctx, client.ObjectKeyFromObject(b), b)
		return err == nil && b.Status.Plan == nil, err
	})
	if err != nil {
		t.Errorf("the binding still shows a plan once everything was sent: %+v", b.Status.Plan)
	}
	// A few more observations: anything the plan missed would follow.
	time.Sleep(3 * time.Second)
	if diff := cmp.Diff(planned, env.Sent(t, from, "preview", postgres.StagingDatabaseName(string(db.GetUID())))); diff != "" {
		t.Errorf("what the server logged is not the binding's plan (-plan +logged):\n%s", diff)
	}
	deleteAndWait(ctx, t, b)
	deleteAndWait(ctx, t, db)
}

// TestHeldDeletionPlan: an admin deletes a Bound database whose policies
// drop it, ending its sessions (terminateConnectionsOnDelete). The drop is
// held while its tenant is bound, and the database's plan shows the
// drop that will go (WITH (FORCE)); once the tenant goes, exactly that is
// sent, and the tenant's open session is ended by it.
func TestHeldDeletionPlan(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	db := registered(ctx, t, "shop", "held_drop")
	providertest.Update(ctx, t, env, db, func(d *v1alpha1.PostgreSQLDatabase) {
		d.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
		d.Spec.ForProvider.TerminateConnectionsOnDelete = true
	})
	b := explicit("shop", "held-drop", db.Name)
	env.Create(ctx, t, b)
	bindingReady(ctx, t, b, corev1.ConditionTrue, v1alpha1.ReasonBound)
	session, err := env.Postgres.Connect(ctx, "held_drop")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = session.Close(context.WithoutCancel(ctx)) })

	unblock := func() {
		if c := db.GetCondition(xpv2.TypeSynced); !strings.Contains(c.Message, "deletion held") {
			t.Errorf("the database does not say its deletion is held: %q", c.Message)
		}
		// Held: a few observations later the database and its session
		// are still there.
		time.Sleep(3 * time.Second)
		if err := session.Ping(ctx); err != nil {
			t.Fatalf("the tenant's session was ended while the database was bound: %v", err)
		}
		deleteAndWait(ctx, t, b)
	}
	want := env.DeletePlanIsTheTruth(ctx, t, db, unblock, "held_drop")
	if diff := cmp.Diff([]string{`DROP DATABASE IF EXISTS "held_drop" WITH (FORCE)`}, want); diff != "" {
		t.Errorf("the held drop's plan (-want +got):\n%s", diff)
	}
	if n := pgCount(ctx, t, "SELECT count(*) FROM pg_database WHERE datname = 'held_drop'"); n != 0 {
		t.Error("the database is still on the server")
	}
	if err := session.Ping(ctx); err == nil {
		t.Error("the tenant's session survived the forced drop")
	}
}

// backup is what docs/operations.md backs up of namespace ns, of the
// kinds these tests make.
func backup(ctx context.Context, t *testing.T, ns string) []client.Object {
	t.Helper()
	return env.Backup(ctx, t, ns, v1alpha1.PostgreSQLDatabaseGroupVersionKind, v1alpha1.PostgreSQLRoleGroupVersionKind, v1alpha1.PostgreSQLBindingGroupVersionKind)
}

// serverObjects are the OIDs of the namespace's databases and roles on the
// server, by name: the same OIDs after a restore mean nothing was dropped
// or made again.
func serverObjects(ctx context.Context, t *testing.T, admin *pgx.Conn) map[string]uint32 {
	t.Helper()
	rows, err := admin.Query(ctx, `
		SELECT 'database ' || datname, oid FROM pg_database WHERE datname LIKE 'restore\_%'
		UNION ALL SELECT 'role ' || rolname, oid FROM pg_roles WHERE rolname LIKE 'restore\_%'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]uint32{}
	for rows.Next() {
		var name string
		var oid uint32
		if err := rows.Scan(&name, &oid); err != nil {
			t.Fatal(err)
		}
		got[name] = oid
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestRestore brings a namespace back from a backup: its databases,
// roles and bindings deleted (the data retained, as every default reclaim
// policy has it) and created again from the backup, without status and
// with new UIDs. A provisioned database that was Bound, an admin's
// offered database that was Bound, and a provisioned one that was
// Released come back. A stranger's binding asks for the first before its
// own binding is back: it gets nothing, the rightful binding gets its
// database back, the Released one stays Released for a new tenant of the
// old name, and nothing is dropped or made again on the server.
func TestRestore(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	const ns = "restore"
	key := func(name string) *v1alpha1.PostgreSQLDatabase {
		return &v1alpha1.PostgreSQLDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}

	// A tenant with its data, on a database provisioned for it.
	orders := dynamic(ns, "orders", "restore_orders")
	env.Create(ctx, t, orders)
	bindingReady(ctx, t, orders, corev1.ConditionTrue, v1alpha1.ReasonBound)
	env.SQL(ctx, t, "restore_orders", "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('orders rows')")
	// A tenant on a database an admin registered and offered.
	shared := registered(ctx, t, ns, "restore_shared")
	sharedUser := explicit(ns, "shared-user", shared.Name)
	env.Create(ctx, t, sharedUser)
	bindingReady(ctx, t, sharedUser, corev1.ConditionTrue, v1alpha1.ReasonBound)
	// A tenant that left: its database is Released, its data kept.
	left := dynamic(ns, "left", "restore_left")
	env.Create(ctx, t, left)
	bindingReady(ctx, t, left, corev1.ConditionTrue, v1alpha1.ReasonBound)
	env.SQL(ctx, t, "restore_left", "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('left rows')")
	deleteAndWait(ctx, t, left)
	phase(ctx, t, key("left"), v1alpha1.PhaseReleased)
	// Once each has settled: the owner roles carry their origin.
	for _, n := range []string{"orders", "left"} {
		phase(ctx, t, key(n), map[string]v1alpha1.DatabasePhase{"orders": v1alpha1.PhaseBound, "left": v1alpha1.PhaseReleased}[n])
	}
	admin := env.Connect(ctx, t, "postgres")
	before := serverObjects(ctx, t, admin)
	saved := backup(ctx, t, ns)

	// The namespace's objects are lost; the data stays on the server.
	var objs []client.Object
	for _, l := range []client.ObjectList{&v1alpha1.PostgreSQLBindingList{}, &v1alpha1.PostgreSQLDatabaseList{}, &v1alpha1.PostgreSQLRoleList{}} {
		if err := env.Kube.List(ctx, l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		items, err := apimeta.ExtractList(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range items {
			o, ok := i.(client.Object)
			if !ok {
				t.Fatalf("%T is not an object", i)
			}
			objs = append(objs, o)
		}
	}
	for _, o := range objs {
		deleteAndWait(ctx, t, o)
	}
	if diff := cmp.Diff(before, serverObjects(ctx, t, admin)); diff != "" {
		t.Fatalf("deleting the resources changed the server (-before +after):\n%s", diff)
	}

	// Another namespace's admin registers the admin-offered retained
	// database (no origin) under the very name of the lost resource: the
	// seal names the namespace too, so it is Conflict and nothing of the
	// database is changed or read.
	rival := &v1alpha1.PostgreSQLDatabase{
		ObjectMeta: metav1.ObjectMeta{Namespace: "rival", Name: shared.Name},
		Spec: v1alpha1.PostgreSQLDatabaseSpec{
			InstanceRef: v1alpha1.InstanceReference{Name: "main"},
			ForProvider: v1alpha1.PostgreSQLDatabaseParameters{Name: shared.Spec.ForProvider.Name},
		},
	}
	env.Create(ctx, t, rival)
	env.Ready(ctx, t, rival, corev1.ConditionFalse, v1alpha1.ReasonConflict)
	if r := rival.Status.AtProvider; r.Owner != "" || r.RestoredFrom != "" {
		t.Errorf("another namespace's resource recorded the retained database: %+v", r)
	}
	deleteAndWait(ctx, t, rival)

	// Strangers ask for the tenants' databases before anything is back:
	// the offered one would go to the oldest request.
	stranger := explicit(ns, "stranger", "orders")
	strangerOfShared := explicit(ns, "stranger-of-shared", shared.Name)
	env.Create(ctx, t, stranger, strangerOfShared)

	// The restore, databases and roles first: each database is this
	// resource's again, and waits for the binding it was bound to.
	var bindings []client.Object
	for _, o := range saved {
		if o.GetObjectKind().GroupVersionKind().Kind == v1alpha1.PostgreSQLBindingKind {
			bindings = append(bindings, o)
			continue
		}
		env.Create(ctx, t, o)
	}
	for _, n := range []string{"orders", "restore-shared"} {
		got := phase(ctx, t, key(n), v1alpha1.PhaseUnavailable)
		err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
			err := env.Kube.Get(ctx, client.ObjectKeyFromObject(got), got)
			return err == nil && got.Status.Binding.Reason == v1alpha1.ReasonRestored, err
		})
		if err != nil {
			t.Fatalf("restored database %s: %v (%+v)", n, err, got.Status.Binding)
		}
	}
	// A poll later the stranger still has nothing.
	time.Sleep(3 * time.Second)
	for _, n := range []string{"orders", "restore-shared"} {
		if got := phase(ctx, t, key(n), v1alpha1.PhaseUnavailable); got.Status.Binding.BoundTo != nil {
			t.Fatalf("the restored database %s was bound to %+v before its own binding was back", n, got.Status.Binding.BoundTo)
		}
	}
	for _, o := range bindings {
		env.Create(ctx, t, o)
	}

	t.Run("TheRightfulTenantGetsItsDatabaseBack", func(t *testing.T) {
		for _, b := range []*v1alpha1.PostgreSQLBinding{orders, sharedUser} {
			now := bindingReady(ctx, t, b, corev1.ConditionTrue, v1alpha1.ReasonBound)
			db := phase(ctx, t, key(b.Spec.DatabaseRef.Name), v1alpha1.PhaseBound)
			if r := db.Status.Binding.BoundTo; r == nil || r.UID != string(now.GetUID()) || r.Name != b.Name {
				t.Errorf("database %s bound to %+v, want the restored binding %s (%s)", db.Name, r, b.Name, now.GetUID())
			}
			if db.Status.AtProvider.RestoredFrom == "" || db.Status.AtProvider.RestoredFrom == string(db.GetUID()) {
				t.Errorf("database %s does not say which resource it succeeded: %q", db.Name, db.Status.AtProvider.RestoredFrom)
			}
		}
		bindingReady(ctx, t, stranger, corev1.ConditionFalse, v1alpha1.ReasonBoundToAnotherTenant)
		bindingReady(ctx, t, strangerOfShared, corev1.ConditionFalse, v1alpha1.ReasonBoundToAnotherTenant)
		var v string
		if err := env.Connect(ctx, t, "restore_orders").QueryRow(ctx, "SELECT v FROM kept").Scan(&v); err != nil || v != "orders rows" {
			t.Errorf("the tenant's rows: %q, %v", v, err)
		}
	})

	t.Run("TheReleasedStaysReleased", func(t *testing.T) {
		phase(ctx, t, key("left"), v1alpha1.PhaseReleased)
		again := dynamic(ns, "left", "restore_left")
		env.Create(ctx, t, again)
		bindingReady(ctx, t, again, corev1.ConditionFalse, v1alpha1.ReasonReleased)

		// Its record deleted (the data retained), the new tenant of the
		// old name provisions a database of the same name: another
		// origin, so not the released one's successor, and nothing of it
		// is taken.
		was := &v1alpha1.PostgreSQLDatabase{}
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(key("left")), was); err != nil {
			t.Fatal(err)
		}
		// The new tenant's binding provisions a database of the name at
		// once: gone is a new UID under the name.
		if err := env.Kube.Delete(ctx, was.DeepCopy()); err != nil {
			t.Fatal(err)
		}
		fresh := &v1alpha1.PostgreSQLDatabase{}
		err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
			err := env.Kube.Get(ctx, client.ObjectKeyFromObject(key("left")), fresh)
			return err == nil && fresh.GetUID() != was.GetUID() && fresh.GetCondition(xpv2.TypeReady).Reason == v1alpha1.ReasonConflict, client.IgnoreNotFound(err)
		})
		if err != nil {
			t.Fatalf("the database provisioned afresh for a new tenant of a released name is not in Conflict: %v (Ready %+v)", err, fresh.GetCondition(xpv2.TypeReady))
		}
		// The binding stops at the released database's owner role, which
		// is not the fresh database's.
		if got := bindingReady(ctx, t, again, corev1.ConditionFalse, v1alpha1.ReasonMismatch); got.Status.Database != nil {
			t.Errorf("the new tenant is delivered %+v", got.Status.Database)
		}
		var comment string
		if err := admin.QueryRow(ctx, "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = 'restore_left'").Scan(&comment); err != nil {
			t.Fatal(err)
		}
		if _, m := postgres.ParseMarker(comment); m.UID != string(was.GetUID()) {
			t.Errorf("the released database's marker names %s, want the restored resource %s", m.UID, was.GetUID())
		}
		deleteAndWait(ctx, t, again)
		deleteAndWait(ctx, t, fresh)
	})

	t.Run("EveryObjectIsTheRestoredResources", func(t *testing.T) {
		// Marked with the new UIDs, found by the same OIDs: nothing was
		// dropped or made again.
		if diff := cmp.Diff(before, serverObjects(ctx, t, admin)); diff != "" {
			t.Errorf("the restore changed the server's objects (-before +after):\n%s", diff)
		}
		for _, n := range []string{"orders", "restore-shared"} {
			db := &v1alpha1.PostgreSQLDatabase{}
			if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(key(n)), db); err != nil {
				t.Fatal(err)
			}
			err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
				var comment string
				err := admin.QueryRow(ctx, "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = $1", db.DatabaseName()).Scan(&comment)
				_, m := postgres.ParseMarker(comment)
				return err == nil && m.UID == string(db.GetUID()), err
			})
			if err != nil {
				t.Errorf("database %s is not marked as the restored resource's: %v", db.DatabaseName(), err)
			}
			if c := db.GetCondition(xpv2.TypeReady); c.Reason == v1alpha1.ReasonConflict {
				t.Errorf("database %s: %s", n, c.Message)
			}
		}
	})
}

// TestRestoreWithoutItsRecord: a database restored without its binding
// record (its manifest applied again from Git, say) may have been any
// tenant's: it goes to nobody, not to the oldest request, and says what
// an admin runs; once the admin writes the record, the tenant it names
// gets its database back.
func TestRestoreWithoutItsRecord(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	const ns = "restore"
	db := registered(ctx, t, ns, "restore_gitops")
	user := explicit(ns, "gitops-user", db.Name)
	env.Create(ctx, t, user)
	bindingReady(ctx, t, user, corev1.ConditionTrue, v1alpha1.ReasonBound)
	var saved []client.Object
	for _, o := range backup(ctx, t, ns) {
		switch o.GetName() {
		case db.Name, db.Name + "-owner", user.Name:
			meta.RemoveAnnotations(o, v1alpha1.AnnotationBindingRecord)
			saved = append(saved, o)
		}
	}
	if len(saved) != 3 {
		t.Fatalf("backup holds %d of the 3 objects", len(saved))
	}
	deleteAndWait(ctx, t, user)
	for _, o := range []client.Object{db, &v1alpha1.PostgreSQLRole{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: db.Name + "-owner"}}} {
		deleteAndWait(ctx, t, o)
	}
	stranger := explicit(ns, "gitops-stranger", db.Name)
	env.Create(ctx, t, stranger)
	env.Create(ctx, t, saved...)

	got := &v1alpha1.PostgreSQLDatabase{}
	err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		err := env.Kube.Get(ctx, client.ObjectKeyFromObject(db), got)
		return err == nil && got.Status.Binding.Reason == v1alpha1.ReasonRestored, err
	})
	if err != nil {
		t.Fatalf("a database restored without its record: %v (%+v)", err, got.Status.Binding)
	}
	step := fmt.Sprintf("kubectl annotate postgresqldatabase -n %s %s %s=", ns, db.Name, v1alpha1.AnnotationBindingRecord)
	if !strings.Contains(got.Status.Binding.Message, step) {
		t.Errorf("the message does not give the admin's step %q: %q", step, got.Status.Binding.Message)
	}
	time.Sleep(3 * time.Second)
	bindingReady(ctx, t, stranger, corev1.ConditionFalse, v1alpha1.ReasonRestored)
	bindingReady(ctx, t, user, corev1.ConditionFalse, v1alpha1.ReasonRestored)

	// The admin's step, as the message gives it.
	providertest.Update(ctx, t, env, got, func(d *v1alpha1.PostgreSQLDatabase) {
		meta.AddAnnotations(d, map[string]string{v1alpha1.AnnotationBindingRecord: `{"phase":"Bound","name":"gitops-user"}`})
	})
	now := bindingReady(ctx, t, user, corev1.ConditionTrue, v1alpha1.ReasonBound)
	if r := phase(ctx, t, db, v1alpha1.PhaseBound).Status.Binding.BoundTo; r == nil || r.UID != string(now.GetUID()) {
		t.Errorf("bound to %+v, want the tenant the admin named", r)
	}
	bindingReady(ctx, t, stranger, corev1.ConditionFalse, v1alpha1.ReasonBoundToAnotherTenant)
}

// TestBoundDatabaseDeletionRefused: with the shipped in-use policy, deleting
// a Bound database is refused at admission, naming its tenant and what to
// do, so its deletion is never set (where the finalizer would only defer
// it); once the tenant has gone (Released) the deletion is accepted.
func TestBoundDatabaseDeletionRefused(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	env.InstallInUsePolicy(ctx, t)
	b := dynamic("shop", "in-use", "in_use")
	env.Create(ctx, t, b)
	bindingReady(ctx, t, b, corev1.ConditionTrue, v1alpha1.ReasonBound)
	db := phase(ctx, t, &v1alpha1.PostgreSQLDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "in-use"}}, v1alpha1.PhaseBound)

	env.DeleteDenied(ctx, t, db, "PostgreSQLDatabase shop/in-use is bound to PostgreSQLTenant shop/in-use: its data is that tenant's. Delete the tenant's claim first")
	err := env.Kube.Delete(ctx, db)
	if err == nil || !kerrors.IsForbidden(err) && !kerrors.IsInvalid(err) {
		t.Fatalf("deleting a Bound database: %v, want refused", err)
	}
	if err := env.Kube.DeleteAllOf(ctx, &v1alpha1.PostgreSQLDatabase{}, client.InNamespace("shop"), client.MatchingFields{"metadata.name": "in-use"}); err == nil || !strings.Contains(err.Error(), "is bound to PostgreSQLTenant") {
		t.Errorf("a DeleteCollection of the Bound database: %v, want refused by the policy", err)
	}
	got := &v1alpha1.PostgreSQLDatabase{}
	if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(db), got); err != nil || got.GetDeletionTimestamp() != nil {
		t.Fatalf("the refused deletion was set anyway: %v, %v", err, got.GetDeletionTimestamp())
	}

	deleteAndWait(ctx, t, b)
	phase(ctx, t, db, v1alpha1.PhaseReleased)
	err = providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		err := env.Kube.Delete(ctx, got)
		return err == nil, client.IgnoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("the Released database's deletion is still refused: %v", err)
	}
	env.Gone(ctx, t, got)
}

// TestBoundShowsTheCredentialVault: a Bound binding says whether its
// database's Instance names a credentialVault (the tenant Composition
// delivers through it when it does), and follows the Instance when it
// gains one or loses it, for a registered database's binding too (which
// provisions nothing on the Instance).
func TestBoundShowsTheCredentialVault(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	db := registered(ctx, t, "shop", "vaulted_app")
	b := explicit("shop", "vaulted", db.Name)
	env.Create(ctx, t, b)
	vault := func(want bool) {
		t.Helper()
		got := &v1alpha1.PostgreSQLBinding{}
		err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
			err := env.Kube.Get(ctx, client.ObjectKeyFromObject(b), got)
			d := got.Status.Database
			return err == nil && d != nil && d.CredentialVault == want, err
		})
		if err != nil {
			t.Fatalf("status.database %+v, want credentialVault %t: %v", got.Status.Database, want, err)
		}
	}
	bindingReady(ctx, t, b, corev1.ConditionTrue, v1alpha1.ReasonBound)
	vault(false)
	in := &v1alpha1.PostgreSQLInstance{ObjectMeta: metav1.ObjectMeta{Name: "main"}}
	providertest.Update(ctx, t, env, in, func(in *v1alpha1.PostgreSQLInstance) {
		in.Spec.CredentialVault = &v1alpha1.CredentialVault{Address: "https://openbao.invalid:8200",
			Auth: v1alpha1.CredentialVaultAuth{TokenSecretRef: &v1alpha1.VaultTokenReference{Name: "vault-token"}}}
	})
	t.Cleanup(func() {
		providertest.Update(context.WithoutCancel(ctx), t, env, in, func(in *v1alpha1.PostgreSQLInstance) { in.Spec.CredentialVault = nil })
	})
	vault(true)
	providertest.Update(ctx, t, env, in, func(in *v1alpha1.PostgreSQLInstance) { in.Spec.CredentialVault = nil })
	vault(false)
}
