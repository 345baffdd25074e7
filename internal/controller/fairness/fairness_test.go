// Package fairness_test holds the test of how the provider shares itself
// between namespaces: one namespace's burst of work must not hold up
// another's. Its environment is its own, so that the burst's thousands of
// objects do not weigh on other packages' measurements.
package fairness_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/controller/config"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

// poll is the environment's poll interval: what "one poll" means below.
const poll = 5 * time.Second

var env *providertest.Env

// suite runs the provider as it runs by default (--max-reconcile-rate,
// --max-concurrent-reconciles, --max-conns-per-pool), with few server
// connections, so that the burst contends for every shared resource.
var suite = providertest.Suite(providertest.Options{
	PollInterval: poll, Instance: "main", Namespaces: []string{"noisy", "quiet"},
	Pools:            postgres.RegistryOptions{MaxConnsPerPool: postgres.DefaultMaxConnsPerPool, MaxConns: 4},
	MaxReconcileRate: config.DefaultMaxReconcileRate, MaxConcurrentReconciles: config.DefaultMaxConcurrentReconciles,
	DiscardLog: true,
}, func(e *providertest.Env) { env = e })

func TestMain(m *testing.M) { os.Exit(suite.Run(m)) }

// burst is how many objects the noisy namespace applies at once.
const burst = 2000

// TestNoisyNeighbour: namespace noisy applies 2,000 roles at once, as
// kubectl apply of a large folder does; once they are all in, and while
// the provider works through them, namespace quiet asks for what a
// tenant's claim composes: a role, a database it owns and a grant on it.
// Quiet's work is done within one poll of what it takes on a quiet
// provider. (Served first come, first served, it waited for most of the
// burst: 16 s against 0.3 s.)
func TestNoisyNeighbour(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	calm := claim(ctx, t, "calm")

	start := time.Now()
	if err := env.Burst(ctx, burst, func(i int) client.Object { return providertest.Role("noisy", "main", fmt.Sprintf("noisy_%d", i)) }); err != nil {
		t.Fatal(err)
	}
	created := time.Since(start)
	// Quiet asks once the whole burst is in: the provider has most of it
	// still to do.
	busy := claim(ctx, t, "busy")
	ready := 0
	if err := providertest.Wait(ctx, 5*time.Minute, func(ctx context.Context) (bool, error) {
		l := &v1alpha1.PostgreSQLRoleList{}
		err := env.Kube.List(ctx, l, client.InNamespace("noisy"))
		ready = 0
		for i := range l.Items {
			if l.Items[i].GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue {
				ready++
			}
		}
		return ready == burst, err
	}); err != nil {
		t.Fatalf("%d of noisy's %d roles Ready after five minutes: %v", ready, burst, err)
	}
	t.Logf("quiet's role, database and grant Ready in %s while noisy applied %d roles (created in %s, all Ready in %s); %s on a quiet provider",
		busy.Round(10*time.Millisecond), burst, created.Round(time.Second), time.Since(start).Round(time.Second), calm.Round(10*time.Millisecond))
	if busy > calm+poll {
		t.Errorf("quiet's work took %s during noisy's burst, %s on a quiet provider: more than one poll (%s) more", busy, calm, poll)
	}
}

// TestFailingNeighbour: namespace failing has 300 roles that fail at every
// try (a setting the server refuses), retried with back-off; namespace
// quiet's claim is done within one poll of what it takes on a quiet
// provider.
func TestFailingNeighbour(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	if err := env.Namespace(ctx, "failing"); err != nil {
		t.Fatal(err)
	}
	calm := claim(ctx, t, "calm2")
	const failing = 300
	for i := range failing {
		r := providertest.Role("failing", "main", fmt.Sprintf("failing_%d", i))
		r.Spec.ForProvider.ConfigurationParameters = []v1alpha1.ConfigurationParameter{{Name: "work_mem", Value: "not-a-size"}}
		env.Create(ctx, t, r)
	}
	// Every one has failed at least once: they are all in their back-off.
	errored := 0
	if err := providertest.Wait(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
		l := &v1alpha1.PostgreSQLRoleList{}
		err := env.Kube.List(ctx, l, client.InNamespace("failing"))
		errored = 0
		for i := range l.Items {
			if c := l.Items[i].GetCondition(xpv2.TypeSynced); c.Status == corev1.ConditionFalse && c.Reason == xpv2.ReasonReconcileError {
				errored++
			}
		}
		return errored == failing, err
	}); err != nil {
		t.Fatalf("%d of %d failing roles failed: %v", errored, failing, err)
	}
	busy := claim(ctx, t, "failing")
	t.Logf("quiet's role, database and grant Ready in %s while %d of another namespace's roles failed and retried; %s on a quiet provider",
		busy.Round(10*time.Millisecond), failing, calm.Round(10*time.Millisecond))
	if busy > calm+poll {
		t.Errorf("quiet's work took %s while another namespace's roles failed, %s on a quiet provider: more than one poll (%s) more", busy, calm, poll)
	}
}

// claim creates in namespace quiet what a tenant's claim composes, a role,
// a database it owns and a grant on it, and returns how long they took to
// be Ready.
func claim(ctx context.Context, t *testing.T, run string) time.Duration {
	t.Helper()
	local := func(name string) *v1alpha1.LocalReference { return &v1alpha1.LocalReference{Name: name} }
	in := v1alpha1.InstanceReference{Name: "main"}
	role := providertest.Role("quiet", in.Name, "quiet_"+run)
	role.Spec.ForProvider.Login = ptr.To(true)
	role.Spec.WriteConnectionSecretToReference = &xpv2.LocalSecretReference{Name: "quiet-" + run}
	db := &v1alpha1.PostgreSQLDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: "quiet", Name: "quiet-" + run}, Spec: v1alpha1.PostgreSQLDatabaseSpec{InstanceRef: in,
		ForProvider: v1alpha1.PostgreSQLDatabaseParameters{Name: ptr.To("quiet_" + run), OwnerRef: local(role.Name)}}}
	grant := &v1alpha1.PostgreSQLGrant{ObjectMeta: metav1.ObjectMeta{Namespace: "quiet", Name: "quiet-temp-" + run}, Spec: v1alpha1.PostgreSQLGrantSpec{InstanceRef: in,
		ForProvider: v1alpha1.PostgreSQLGrantParameters{RoleRef: local(role.Name), ObjectType: v1alpha1.GrantObjectDatabase,
			DatabaseRef: local(db.Name), Privileges: []v1alpha1.Privilege{"TEMPORARY"}}}}
	start := time.Now()
	env.Create(ctx, t, grant, db, role)
	for _, o := range []providertest.Conditioned{role, db, grant} {
		if err := env.WaitForReady(ctx, o, corev1.ConditionTrue, xpv2.ReasonAvailable, 5*time.Minute); err != nil {
			t.Fatalf("quiet's %s: %v", o.GetName(), err)
		}
	}
	return time.Since(start)
}
