package boundary_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

// TestTenantCannotStopOthers: a tenant with nothing but its login's
// Secret, in psql, does on the shared server what any login may:
//
//  1. takes the advisory key the provider once locked a role name with
//     (0x70677270, hashtext(name)), for the name another namespace is
//     about to create;
//  2. sits idle in template1, which CREATE DATABASE copies unless told
//     otherwise and PostgreSQL refuses to copy while anyone is in it;
//  3. changes its own databases' connection limits (21 of them) and its
//     own role's settings (drift the provider repairs), then holds those
//     catalog rows in an open transaction in the maintenance database;
//  4. opens sessions until the server refuses.
//
// While it holds all four, another namespace creates a role, a database
// and a grant, and a third rotates a login's password: all are done
// within two polls of the same work on a quiet server, no provider session
// waits more than a quarter of a second on the tenant's locks in the
// Instance's own database (read from pg_stat_activity and
// pg_blocking_pids), and the tenant's sessions stop at its login's
// connection limit. Once it lets go, the repairs land.
func TestTenantCannotStopOthers(t *testing.T) {
	suite.Matrix(t)
	// held is how many more databases of the tenant's hold their rows.
	const held = 20
	ctx := context.Background()
	for _, n := range []string{"tenant-a", "rotators"} {
		if err := env.Namespace(ctx, n); err != nil && !kerrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	in := v1alpha1.InstanceReference{Name: env.Main.Name}
	local := func(name string) *v1alpha1.LocalReference { return &v1alpha1.LocalReference{Name: name} }

	// The tenant: a NOLOGIN owner, a login member of it, a database the
	// owner owns with a connection limit the provider keeps at 10.
	owner := providertest.Role("tenant-a", in.Name, "sh_owner")
	login := providertest.Role("tenant-a", in.Name, "sh_login")
	login.Spec.ForProvider.Login, login.Spec.ForProvider.MemberOf = ptr.To(true), []string{"sh_owner"}
	login.Spec.WriteConnectionSecretToReference = &xpv2.LocalSecretReference{Name: "sh-login"}
	db := &v1alpha1.PostgreSQLDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "sh-db"}, Spec: v1alpha1.PostgreSQLDatabaseSpec{InstanceRef: in,
		ForProvider: v1alpha1.PostgreSQLDatabaseParameters{Name: ptr.To("sh_db"), OwnerRef: local(owner.Name), ConnectionLimit: ptr.To[int32](10)}}}
	// The third namespace's login, rotated during both runs.
	rotated := providertest.Role("rotators", in.Name, "sh_rotated")
	rotated.Spec.ForProvider.Login = ptr.To(true)
	rotated.Spec.WriteConnectionSecretToReference = &xpv2.LocalSecretReference{Name: "sh-rotated"}
	env.Create(ctx, t, db, login, owner, rotated)
	// More databases the tenant owns, whose rows it holds too: each repair
	// of them waits on it in the Instance's own database, whose few
	// sessions every namespace's roles and databases go through.
	var more []string
	for i := range held {
		name := fmt.Sprintf("sh_db_%d", i)
		more = append(more, name)
		env.Create(ctx, t, &v1alpha1.PostgreSQLDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: strings.ReplaceAll(name, "_", "-")}, Spec: v1alpha1.PostgreSQLDatabaseSpec{InstanceRef: in,
			ForProvider: v1alpha1.PostgreSQLDatabaseParameters{Name: ptr.To(name), OwnerRef: local(owner.Name), ConnectionLimit: ptr.To[int32](10)}}})
	}
	for _, o := range []providertest.Conditioned{db, login, owner, rotated} {
		env.Ready(ctx, t, o, corev1.ConditionTrue, xpv2.ReasonAvailable)
	}
	for _, name := range more {
		env.Ready(ctx, t, &v1alpha1.PostgreSQLDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: strings.ReplaceAll(name, "_", "-")}}, corev1.ConditionTrue, xpv2.ReasonAvailable)
	}
	secret, err := env.ConnectionSecret(ctx, "tenant-a", "sh-login")
	if err != nil {
		t.Fatal(err)
	}
	instance := &v1alpha1.PostgreSQLInstance{}
	if err := env.Kube.Get(ctx, client.ObjectKey{Name: in.Name}, instance); err != nil {
		t.Fatal(err)
	}
	limit := instance.DefaultConnectionLimit()
	if limit < 1 {
		t.Fatalf("the Instance gives roles no connection limit (%d): status.connections %+v", limit, instance.Status.Connections)
	}

	// work is what the others do: another namespace's role, a database it
	// owns and a grant on it, and the third namespace's rotation. It
	// returns how long it took for everything to be done.
	work := func(run string) time.Duration {
		t.Helper()
		name := "sh_victim_" + run
		role := providertest.Role("victims", in.Name, name)
		vdb := &v1alpha1.PostgreSQLDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: "victims", Name: "sh-victim-db-" + run}, Spec: v1alpha1.PostgreSQLDatabaseSpec{InstanceRef: in,
			ForProvider: v1alpha1.PostgreSQLDatabaseParameters{Name: ptr.To(name + "_db"), OwnerRef: local(role.Name)}}}
		grant := &v1alpha1.PostgreSQLGrant{ObjectMeta: metav1.ObjectMeta{Namespace: "victims", Name: "sh-victim-temp-" + run}, Spec: v1alpha1.PostgreSQLGrantSpec{InstanceRef: in,
			ForProvider: v1alpha1.PostgreSQLGrantParameters{RoleRef: local(role.Name), ObjectType: v1alpha1.GrantObjectDatabase,
				DatabaseRef: local(vdb.Name), Privileges: []v1alpha1.Privilege{"TEMPORARY"}}}}
		start := time.Now()
		env.Create(ctx, t, grant, vdb, role)
		providertest.Update(ctx, t, env, rotated, func(r *v1alpha1.PostgreSQLRole) {
			meta := r.GetAnnotations()
			if meta == nil {
				meta = map[string]string{}
			}
			meta[v1alpha1.AnnotationRotatePassword] = run
			r.SetAnnotations(meta)
		})
		for _, o := range []providertest.Conditioned{role, vdb, grant} {
			if err := env.WaitForReady(ctx, o, corev1.ConditionTrue, xpv2.ReasonAvailable, 2*time.Minute); err != nil {
				t.Fatalf("run %s: another namespace's %s was not Ready: %v", run, o.GetName(), err)
			}
		}
		err := providertest.Wait(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
			got := &v1alpha1.PostgreSQLRole{}
			if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(rotated), got); err != nil {
				return false, err
			}
			return got.Status.AtProvider.PasswordRotation == run && got.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue, nil
		})
		if err != nil {
			t.Fatalf("run %s: the third namespace's rotation was not handled: %v", run, err)
		}
		return time.Since(start)
	}
	calm := work("calm")

	// The tenant moves in. Every session is its login's, from its Secret.
	connect := func(database string) *pgx.Conn {
		t.Helper()
		c, err := providertest.ConnectWithSecret(ctx, secret, database)
		if err != nil {
			t.Fatalf("the tenant cannot connect to %s: %v", database, err)
		}
		t.Cleanup(func() { _ = c.Close(context.WithoutCancel(ctx)) })
		return c
	}
	var tenantPIDs []uint32
	// 1. The old role-name key of the name the others are about to create.
	locker := connect("postgres")
	if _, err := locker.Exec(ctx, "SELECT pg_advisory_lock(1885827696, hashtext('sh_victim_stalled'))"); err != nil {
		t.Fatal(err)
	}
	// 2. Idle in template1.
	idler := connect("template1")
	// 3. Drift, committed, then the same rows held.
	holder := connect("postgres")
	drift, hold := []string{"ALTER DATABASE sh_db CONNECTION LIMIT 5", "ALTER ROLE sh_login SET work_mem = '8MB'"}, []string{"ALTER DATABASE sh_db CONNECTION LIMIT 6", "ALTER ROLE sh_login SET work_mem = '9MB'"}
	for _, name := range more {
		drift, hold = append(drift, "ALTER DATABASE "+name+" CONNECTION LIMIT 5"), append(hold, "ALTER DATABASE "+name+" CONNECTION LIMIT 6")
	}
	if _, err := holder.Exec(ctx, strings.Join(drift, "; ")); err != nil {
		t.Fatalf("the tenant cannot change its own databases and role: %v", err)
	}
	if _, err := holder.Exec(ctx, "BEGIN; "+strings.Join(hold, "; ")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*pgx.Conn{locker, idler, holder} {
		tenantPIDs = append(tenantPIDs, c.PgConn().PID())
	}
	// 4. Sessions until the server refuses.
	sessions := 3
	var refused error
	for sessions < 1000 {
		c, err := providertest.ConnectWithSecret(ctx, secret, "postgres")
		if err != nil {
			refused = err
			break
		}
		t.Cleanup(func() { _ = c.Close(context.WithoutCancel(ctx)) })
		sessions++
	}
	if int32(sessions) != limit || !postgres.IsCode(refused, "53300") || !strings.Contains(refused.Error(), "too many connections for role") {
		t.Errorf("the tenant's login opened %d sessions (refused: %v), want exactly its connection limit of %d, then \"too many connections for role\"", sessions, refused, limit)
	}

	// Watch the provider's sessions wait on the tenant's.
	sampler := env.Connect(ctx, t, "postgres")
	var (
		mu      sync.Mutex
		longest float64
		waits   int
	)
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			// How long each provider session has waited for the lock it
			// waits on (pg_locks.waitstart), not since its statement
			// began: a statement's earlier work is not a wait on the
			// tenant.
			rows, err := sampler.Query(ctx, `SELECT extract(epoch FROM clock_timestamp() - l.waitstart)::float8
			  FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			  WHERE NOT l.granted AND l.waitstart IS NOT NULL
			    AND a.application_name = $1 AND pg_blocking_pids(a.pid) && $2::int4[]`, postgres.ApplicationName, tenantPIDs)
			if err != nil {
				continue
			}
			for rows.Next() {
				var s float64
				if rows.Scan(&s) == nil {
					mu.Lock()
					waits++
					longest = max(longest, s)
					mu.Unlock()
				}
			}
			rows.Close()
		}
	}()
	stalled := work("stalled")
	// The repairs the tenant holds back are tried at every poll: watch
	// two more, so that the longest wait is one the provider gave up on.
	time.Sleep(2 * poll)
	close(stop)
	<-sampled
	t.Logf("another namespace's role, database and grant and a third's rotation done in %s with the tenant holding the old role-name key, a session in template1, "+
		"its own catalog rows and %d sessions; %s on a quiet server. Provider statements seen waiting on the tenant %d times, the longest %.2f s",
		stalled.Round(10*time.Millisecond), sessions, calm.Round(10*time.Millisecond), waits, longest)
	if waits == 0 {
		t.Error("no provider statement was seen waiting on the tenant's rows: the repairs it holds back were never tried, so the test proves nothing about lock waits")
	}
	// Every lock the tenant holds here is in the Instance's own database,
	// whose lock_timeout is 250 ms.
	if longest > 0.5 {
		t.Errorf("a provider statement waited %.2f s on a lock the tenant holds in the Instance's own database, whose lock_timeout is 250 ms", longest)
	}
	if polls := 2 * poll; stalled > calm+polls {
		t.Errorf("the others' work took %s with the tenant holding on, %s on a quiet server: more than two polls (%s) more", stalled, calm, polls)
	}

	// The tenant lets go: the repairs land.
	if _, err := holder.Exec(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	check := env.Connect(ctx, t, "postgres")
	err = providertest.Wait(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
		var drifted, settings int
		err := check.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_database d WHERE d.datname LIKE 'sh\_db%' AND d.datconnlimit <> 10)::int,
		  (SELECT count(*) FROM pg_db_role_setting s JOIN pg_roles r ON r.oid = s.setrole WHERE r.rolname = 'sh_login')::int`).Scan(&drifted, &settings)
		return drifted == 0 && settings == 0, err
	})
	if err != nil {
		t.Errorf("the tenant's drift was not repaired once it let go: %v", err)
	}
}
