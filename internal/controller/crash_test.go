package controller_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

// TestCreateCutShortAtEveryStatement kills the provider's process
// (SIGKILL, as an OOM kill or a lost node would) before each statement of
// each kind's create in turn, with a superuser admin and with a
// managed-service admin: before statement 1, then 2, and so on until a
// create completes with the process alive. After each kill a provider
// started afresh must bring the object to Ready (no Conflict, nothing for
// a person), leave no staging database, hold no temporary membership, and
// a login role's Secret must still log in: nothing created twice, no
// password replaced.
func TestCreateCutShortAtEveryStatement(t *testing.T) {
	suite.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	bin, err := providertest.BuildProvider(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	managed := env.ManagedServiceInstance(ctx, t, "cut-managed", "cut_admin")
	// Deleted last, once what lives on it is gone.
	t.Cleanup(func() { _ = env.Kube.Delete(context.WithoutCancel(ctx), managed) })
	env.Ready(ctx, t, managed, corev1.ConditionTrue, xpv2.ReasonAvailable)
	defer restoreScaleEnv(ctx, t)

	ref := func(n string) *v1alpha1.LocalReference { return &v1alpha1.LocalReference{Name: n} }
	for _, in := range []struct{ name, tag, admin string }{{"main", "s", env.AdminUser()}, {managed.Name, "m", "cut_admin"}} {
		// What the objects under test need is made by the in-process
		// controllers, which each provider process stops.
		restoreScaleEnv(ctx, t)
		on := v1alpha1.InstanceReference{Name: in.name}
		p := "cut" + in.tag // metadata.name is the SQL name: no dashes.
		owner := &v1alpha1.PostgreSQLRole{ObjectMeta: metav1.ObjectMeta{Name: p + "owner", Namespace: "scale"}, Spec: v1alpha1.PostgreSQLRoleSpec{InstanceRef: on}}
		reader := &v1alpha1.PostgreSQLRole{ObjectMeta: metav1.ObjectMeta{Name: p + "reader", Namespace: "scale"}, Spec: v1alpha1.PostgreSQLRoleSpec{InstanceRef: on}}
		db := &v1alpha1.PostgreSQLDatabase{ObjectMeta: metav1.ObjectMeta{Name: p + "db", Namespace: "scale"}, Spec: v1alpha1.PostgreSQLDatabaseSpec{
			InstanceRef: on, ForProvider: v1alpha1.PostgreSQLDatabaseParameters{OwnerRef: ref(owner.Name)},
		}}
		schema := &v1alpha1.PostgreSQLSchema{ObjectMeta: metav1.ObjectMeta{Name: p + "schema", Namespace: "scale"}, Spec: v1alpha1.PostgreSQLSchemaSpec{
			InstanceRef: on, ForProvider: v1alpha1.PostgreSQLSchemaParameters{DatabaseRef: ref(db.Name), OwnerRef: ref(owner.Name)},
		}}
		for _, o := range []providertest.Conditioned{owner, reader, db, schema} {
			env.CreateForTest(ctx, t, o)
			env.Ready(ctx, t, o, corev1.ConditionTrue, xpv2.ReasonAvailable)
		}
		acting := []string{owner.Name, reader.Name}

		kinds := []struct {
			kind string
			make func(n int) providertest.Conditioned
		}{
			{"PostgreSQLRole", func(n int) providertest.Conditioned {
				name := fmt.Sprintf("%srole%d", p, n)
				acting = append(acting, name)
				return &v1alpha1.PostgreSQLRole{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "scale"}, Spec: v1alpha1.PostgreSQLRoleSpec{
					InstanceRef: on, ForProvider: v1alpha1.PostgreSQLRoleParameters{Login: ptr.To(true)},
					WriteConnectionSecretToReference: &xpv2.LocalSecretReference{Name: name + "-conn"},
				}}
			}},
			{"PostgreSQLDatabase", func(n int) providertest.Conditioned {
				return &v1alpha1.PostgreSQLDatabase{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%sdb%d", p, n), Namespace: "scale"}, Spec: v1alpha1.PostgreSQLDatabaseSpec{
					InstanceRef: on, ForProvider: v1alpha1.PostgreSQLDatabaseParameters{
						OwnerRef: ref(owner.Name), RevokePublicPrivileges: true, Extensions: []v1alpha1.Extension{{Name: "citext"}},
					},
				}}
			}},
			{"PostgreSQLSchema", func(n int) providertest.Conditioned {
				return &v1alpha1.PostgreSQLSchema{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%sschema%d", p, n), Namespace: "scale"}, Spec: v1alpha1.PostgreSQLSchemaSpec{
					InstanceRef: on, ForProvider: v1alpha1.PostgreSQLSchemaParameters{DatabaseRef: ref(db.Name), OwnerRef: ref(owner.Name)},
				}}
			}},
			{"PostgreSQLGrant", func(n int) providertest.Conditioned {
				return &v1alpha1.PostgreSQLGrant{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%sgrant%d", p, n), Namespace: "scale"}, Spec: v1alpha1.PostgreSQLGrantSpec{
					InstanceRef: on, ForProvider: v1alpha1.PostgreSQLGrantParameters{
						RoleRef: ref(reader.Name), ObjectType: v1alpha1.GrantObjectSchema, DatabaseRef: ref(db.Name), SchemaRef: ref(schema.Name),
						Privileges: []v1alpha1.Privilege{"USAGE", "CREATE"},
					},
				}}
			}},
			{"PostgreSQLDefaultPrivileges", func(n int) providertest.Conditioned {
				return &v1alpha1.PostgreSQLDefaultPrivileges{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%sdefaults%d", p, n), Namespace: "scale"}, Spec: v1alpha1.PostgreSQLDefaultPrivilegesSpec{
					InstanceRef: on, ForProvider: v1alpha1.PostgreSQLDefaultPrivilegesParameters{
						RoleRef: ref(reader.Name), OwnerRef: ref(owner.Name), DatabaseRef: ref(db.Name), SchemaRef: ref(schema.Name),
						ObjectType: v1alpha1.DefaultPrivilegesTables, Privileges: []v1alpha1.Privilege{"SELECT", "INSERT"},
					},
				}}
			}},
		}
		for _, k := range kinds {
			t.Run(in.tag+"/"+k.kind, func(t *testing.T) {
				for n := 1; ; n++ {
					if n > 30 {
						t.Fatal("the create was still being killed at its 30th statement")
					}
					obj := k.make(n)
					// Once obj is Ready and deleted again, with the provider
					// started afresh still running: a temporary membership
					// the kill left is revoked by the Instance's first
					// reconcile, which may come a moment later.
					leftovers := func() {
						if left := stagingDatabases(ctx, t); len(left) > 0 {
							t.Errorf("killed before statement %d: staging databases left behind: %v", n, left)
						}
						if in.tag != "m" {
							return
						}
						held := 0
						_ = providertest.WaitEvery(ctx, 30*time.Second, 250*time.Millisecond, func(context.Context) (bool, error) {
							held = env.ActingMemberships(ctx, t, in.admin, acting...)
							return held == 0, nil
						})
						if held > 0 {
							t.Errorf("killed before statement %d: the managed-service admin still holds %d temporary membership(s) of %v", n, held, acting)
						}
					}
					if !cutShort(ctx, t, bin, obj, n, leftovers) {
						t.Logf("%s on %s: killed before each of %d statements, finished every time", k.kind, in.name, n-1)
						return
					}
					if t.Failed() {
						return
					}
				}
			})
		}
	}
}

// cutShort creates obj with a provider process that dies before its nth
// statement, and reports whether it died. A provider started afresh must
// then bring obj to Ready, and a login role's Secret must log in. obj is
// deleted again, and leftovers checks what is left while that provider
// still runs.
func cutShort(ctx context.Context, t *testing.T, bin string, obj providertest.Conditioned, n int, leftovers func()) bool {
	t.Helper()
	p, err := env.RunProvider(ctx, bin, providertest.ProcessOptions{Env: []string{postgres.KillBeforeEnv + "=" + strconv.Itoa(n)}})
	if err != nil {
		t.Fatal(err)
	}
	env.Create(ctx, t, obj)
	var killed bool
	err = providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		select {
		case <-p.Exited():
			killed = true
			return true, nil
		default:
		}
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return false, err
		}
		return obj.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue, nil
	})
	if err != nil {
		t.Fatalf("%s: neither killed before statement %d nor Ready: %v; conditions %v; the provider's log:\n%s", obj.GetName(), n, err, obj.GetCondition(xpv2.TypeReady), p.LogTail())
	}
	if !killed {
		// Armed still: the deletion below would be cut short too.
		p.Stop()
	}
	if p, err = env.RunProvider(ctx, bin, providertest.ProcessOptions{}); err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if err := env.WaitForReady(ctx, obj, corev1.ConditionTrue, xpv2.ReasonAvailable, time.Minute); err != nil {
		t.Errorf("killed before statement %d, %s did not become Ready afterwards: %v; the provider's log:\n%s", n, obj.GetName(), err, p.LogTail())
	}
	if r, ok := obj.(*v1alpha1.PostgreSQLRole); ok && !t.Failed() {
		d, err := env.ConnectionSecret(ctx, r.Namespace, r.Spec.WriteConnectionSecretToReference.Name)
		if err == nil {
			c, cerr := providertest.ConnectWithSecret(ctx, d, "postgres")
			if err = cerr; err == nil {
				_ = c.Close(ctx)
			}
		}
		if err != nil {
			t.Errorf("killed before statement %d, the role's Secret does not log in: %v", n, err)
		}
	}
	if err := env.Kube.Delete(ctx, obj); err != nil {
		t.Fatal(err)
	}
	env.Gone(ctx, t, obj)
	if killed {
		leftovers()
	}
	return killed
}

// stagingDatabases lists the databases under a staging name.
func stagingDatabases(ctx context.Context, t testing.TB) []string {
	t.Helper()
	rows, err := env.Connect(ctx, t, "postgres").Query(ctx, `SELECT datname FROM pg_database WHERE starts_with(datname, $1)`, postgres.StagingDatabaseName(""))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}
