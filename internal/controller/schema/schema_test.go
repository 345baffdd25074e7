package schema_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

const ns = "shop"

var (
	env  *providertest.Env
	main *v1alpha1.PostgreSQLInstance
)

// suite is the package's environment, started by the first test that
// declares it needs it.
var suite = providertest.Suite(providertest.Options{
	PollInterval: 2 * time.Second, Instance: "main", Namespaces: []string{ns},
	// The maintenance database these tests put schemas in is the DBA's:
	// shared with the namespace by the Instance's policy.
	Policy: v1alpha1.InstancePolicy{AllowDatabases: []string{"postgres"}},
}, func(e *providertest.Env) {
	env, main = e, e.Main
})

func TestMain(m *testing.M) { os.Exit(suite.Run(m)) }

func newSchema(name, database string, mutate ...func(*v1alpha1.PostgreSQLSchema)) *v1alpha1.PostgreSQLSchema {
	s := &v1alpha1.PostgreSQLSchema{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.PostgreSQLSchemaSpec{
			InstanceRef: v1alpha1.InstanceReference{Name: main.Name},
			ForProvider: v1alpha1.PostgreSQLSchemaParameters{Database: ptr.To(database)},
		},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

// schemaState reads a schema's owner, comment and PUBLIC privileges.
func schemaState(ctx context.Context, t *testing.T, db, name string) (owner, comment string, public []string, found bool) {
	t.Helper()
	err := env.Connect(ctx, t, db).QueryRow(ctx, `SELECT pg_get_userbyid(nspowner)::text, coalesce(obj_description(oid, 'pg_namespace'), ''),
		coalesce(ARRAY(SELECT a.privilege_type FROM aclexplode(nspacl) a WHERE a.grantee = 0), '{}') FROM pg_namespace WHERE nspname = $1`, name).
		Scan(&owner, &comment, &public)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return owner, comment, public, true
}

func TestSchemaLifecycle(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	owner := providertest.Role(ns, main.Name, "inventory_owner")
	db := &v1alpha1.PostgreSQLDatabase{
		ObjectMeta: metav1.ObjectMeta{Name: "inventory", Namespace: ns},
		Spec: v1alpha1.PostgreSQLDatabaseSpec{
			InstanceRef: v1alpha1.InstanceReference{Name: main.Name},
			ForProvider: v1alpha1.PostgreSQLDatabaseParameters{OwnerRef: &v1alpha1.LocalReference{Name: owner.Name}},
		},
	}
	// Created before what it refers to: the schema waits for both.
	s := newSchema("stock", "", func(s *v1alpha1.PostgreSQLSchema) {
		s.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
		s.Spec.ForProvider.Database = nil
		s.Spec.ForProvider.DatabaseRef = &v1alpha1.LocalReference{Name: db.Name}
		s.Spec.ForProvider.OwnerRef = &v1alpha1.LocalReference{Name: owner.Name}
		s.Spec.ForProvider.Comment = ptr.To("stock levels")
		s.Spec.ForProvider.RevokePublicPrivileges = true
	})
	env.Create(ctx, t, s, owner, db)
	env.Ready(ctx, t, s, corev1.ConditionTrue, xpv2.ReasonAvailable)

	t.Run("Catalog", func(t *testing.T) {
		o, comment, public, found := schemaState(ctx, t, "inventory", "stock")
		if !found || o != "inventory_owner" || len(public) != 0 {
			t.Errorf("schema: found %t, owner %q, PUBLIC holds %v", found, o, public)
		}
		providertest.CheckMarked(t, comment, "stock levels", s.UID)
		if s.Status.AtProvider.Database != "inventory" || s.Status.AtProvider.InstanceUID != string(main.UID) {
			t.Errorf("status.atProvider = %+v", s.Status.AtProvider)
		}
	})

	// Created as the spec says, marked as its observations expect: the
	// reconcile that finds it Ready changes nothing more (each object's
	// events are sent in order, so its update's would show by the time
	// its create's does).
	t.Run("CreatedOnceNotUpdated", func(t *testing.T) {
		err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
			return len(env.Events(ctx, t, ns, s.Name, "CreatedExternalResource")) > 0, nil
		})
		if err != nil {
			t.Fatalf("no CreatedExternalResource event: %v", err)
		}
		if updated := env.Events(ctx, t, ns, s.Name, "UpdatedExternalResource"); len(updated) > 0 {
			t.Errorf("a schema just created was updated: %q", updated)
		}
	})

	t.Run("PublicAccessRevokedAgain", func(t *testing.T) {
		if _, err := env.Connect(ctx, t, "inventory").Exec(ctx, "GRANT USAGE, CREATE ON SCHEMA stock TO PUBLIC"); err != nil {
			t.Fatal(err)
		}
		err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
			_, _, public, _ := schemaState(ctx, t, "inventory", "stock")
			return len(public) == 0, nil
		})
		if err != nil {
			t.Fatalf("PUBLIC's privileges were not revoked: %v", err)
		}
	})

	t.Run("DropRestrictSaysWhatBlocks", func(t *testing.T) {
		if _, err := env.Connect(ctx, t, "inventory").Exec(ctx, "CREATE TABLE stock.levels (sku text)"); err != nil {
			t.Fatal(err)
		}
		if err := env.Kube.Delete(ctx, s); err != nil {
			t.Fatal(err)
		}
		got := &v1alpha1.PostgreSQLSchema{}
		err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
			if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(s), got); err != nil {
				return false, err
			}
			c := got.GetCondition(xpv2.TypeSynced)
			return strings.Contains(c.Message, "table stock.levels depends on schema stock"), nil
		})
		if err != nil {
			t.Fatalf("the blocked drop does not say what blocks it: %v (Synced: %q)", err, got.GetCondition(xpv2.TypeSynced).Message)
		}
		if !strings.Contains(got.GetCondition(xpv2.TypeSynced).Message, "cascadeOnDelete") {
			t.Errorf("the message does not say how to proceed: %q", got.GetCondition(xpv2.TypeSynced).Message)
		}
		if _, _, _, found := schemaState(ctx, t, "inventory", "stock"); !found {
			t.Fatal("a RESTRICT drop removed a schema holding a table")
		}
		orig := got.DeepCopy()
		got.Spec.ForProvider.CascadeOnDelete = true
		if err := env.Kube.Patch(ctx, got, client.MergeFrom(orig)); err != nil {
			t.Fatal(err)
		}
		env.Gone(ctx, t, s)
		if _, _, _, found := schemaState(ctx, t, "inventory", "stock"); found {
			t.Error("the schema survived a CASCADE drop")
		}
	})
}

func TestSchemaRetainedByDefault(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	s := newSchema("kept", "postgres")
	env.Create(ctx, t, s)
	env.Ready(ctx, t, s, corev1.ConditionTrue, xpv2.ReasonAvailable)
	if err := env.Kube.Delete(ctx, s); err != nil {
		t.Fatal(err)
	}
	env.Gone(ctx, t, s)
	if _, _, _, found := schemaState(ctx, t, "postgres", "kept"); !found {
		t.Error("deleting a PostgreSQLSchema without the Delete policy dropped the schema")
	}
}

func TestSchemaConflict(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	if _, err := env.Connect(ctx, t, "postgres").Exec(ctx, "CREATE SCHEMA legacy; COMMENT ON SCHEMA legacy IS 'hand made'"); err != nil {
		t.Fatal(err)
	}
	s := newSchema("legacy", "postgres", func(s *v1alpha1.PostgreSQLSchema) {
		s.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
		s.Spec.ForProvider.Comment = ptr.To("mine now")
	})
	env.Create(ctx, t, s)
	env.Ready(ctx, t, s, corev1.ConditionFalse, v1alpha1.ReasonConflict)
	for _, want := range []string{"Confirmed: the schema exists", "Uncertain:", `\dn+ legacy`, "COMMENT ON SCHEMA"} {
		if msg := s.GetCondition(xpv2.TypeReady).Message; !strings.Contains(msg, want) {
			t.Errorf("Conflict message %q lacks %q", msg, want)
		}
	}
	// No busy loop: a resource in Conflict is retried with back-off (1 s
	// doubling, and the poll), a handful of reconciles in a minute, not
	// one after another.
	reads := env.CountReads(t, client.ObjectKeyFromObject(s))
	time.Sleep(time.Minute)
	if n := reads()[0]; n > 20 {
		t.Errorf("a resource in Conflict was reconciled %d times in a minute: a busy loop", n)
	} else {
		t.Logf("reconciled %d times in a minute while in Conflict", n)
	}
	if err := env.Kube.Delete(ctx, s); err != nil {
		t.Fatal(err)
	}
	env.Gone(ctx, t, s)
	_, comment, _, found := schemaState(ctx, t, "postgres", "legacy")
	if !found || comment != "hand made" {
		t.Errorf("a schema the provider did not create was changed or dropped: found %t, comment %q", found, comment)
	}
}

// TestSchemaWithManagedServiceAdmin: with the admin managed services give
// (CREATEDB + CREATEROLE, no superuser), a schema owned by a managed role is
// created, handed to another owner and dropped; the admin holds no
// membership in either role afterwards.
func TestSchemaWithManagedServiceAdmin(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	in := env.ManagedServiceInstance(ctx, t, "managed-service", "schema_admin")
	role := func(name string) *v1alpha1.PostgreSQLRole {
		r := providertest.Role(ns, in.Name, name)
		r.Spec.ForProvider.Login = ptr.To(false)
		return r
	}
	first, second := role("svc_schema_owner"), role("svc_schema_heir")
	db := &v1alpha1.PostgreSQLDatabase{
		ObjectMeta: metav1.ObjectMeta{Name: "svcschemas", Namespace: ns},
		Spec: v1alpha1.PostgreSQLDatabaseSpec{
			InstanceRef: v1alpha1.InstanceReference{Name: in.Name},
			ForProvider: v1alpha1.PostgreSQLDatabaseParameters{OwnerRef: &v1alpha1.LocalReference{Name: first.Name}},
		},
	}
	s := newSchema("svc-app", "svcschemas", func(s *v1alpha1.PostgreSQLSchema) {
		s.Spec.InstanceRef.Name = in.Name
		s.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
		s.Spec.ForProvider.Name = ptr.To("svc_app")
		s.Spec.ForProvider.Owner = ptr.To("svc_schema_owner")
		s.Spec.ForProvider.Comment = ptr.To("made by a managed-service admin")
	})
	env.Create(ctx, t, first, second, db, s)
	env.Ready(ctx, t, s, corev1.ConditionTrue, xpv2.ReasonAvailable)
	memberships := func() int {
		return env.ActingMemberships(ctx, t, "schema_admin", "svc_schema_owner", "svc_schema_heir")
	}

	// The grants are given back as soon as the statements are done, which
	// may be a moment after their effect shows.
	noMemberships := func(t *testing.T, when string) {
		t.Helper()
		if err := providertest.Wait(ctx, 10*time.Second, func(context.Context) (bool, error) { return memberships() == 0, nil }); err != nil {
			t.Errorf("the admin kept %d membership(s) %s", memberships(), when)
		}
	}
	if owner, _, _, _ := schemaState(ctx, t, "svcschemas", "svc_app"); owner != "svc_schema_owner" {
		t.Errorf("svc_app is owned by %q, want svc_schema_owner", owner)
	}
	noMemberships(t, "after creating the schema")

	providertest.Update(ctx, t, env, s, func(s *v1alpha1.PostgreSQLSchema) { s.Spec.ForProvider.Owner = ptr.To("svc_schema_heir") })
	err := providertest.Wait(ctx, time.Minute, func(context.Context) (bool, error) {
		owner, _, _, _ := schemaState(ctx, t, "svcschemas", "svc_app")
		return owner == "svc_schema_heir", nil
	})
	if err != nil {
		t.Fatalf("the schema was not handed to svc_schema_heir: %v (%v)", err, s.GetCondition(xpv2.TypeSynced))
	}
	noMemberships(t, "after changing the owner")

	if err := env.Kube.Delete(ctx, s); err != nil {
		t.Fatal(err)
	}
	env.Gone(ctx, t, s)
	if _, _, _, found := schemaState(ctx, t, "svcschemas", "svc_app"); found {
		t.Error("the schema was not dropped")
	}
	noMemberships(t, "after dropping the schema")
}
