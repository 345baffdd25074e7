package controller_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

// BenchmarkFailover runs two replicas of the provider's binary with
// --leader-election, applies BENCH_FAILOVER_PAIRS (500) login roles with
// Secrets and databases each owned by its role, and kills the leader with
// SIGKILL once a quarter of them are Ready: in the middle of a wave of
// creates. It reports how long the standby took to take over, at the
// default lease (60 s) and at 15 s, and the time until every object was
// Ready; it fails when an object was refused as a Conflict, a database was
// created twice or left under its staging name, or a connection Secret's
// password changed or does not log in. Then it starts a third replica and
// stops the new leader with SIGTERM: the hand-over it reports is a
// graceful stop's.
func BenchmarkFailover(b *testing.B) {
	suite.Server(b)
	ctx := context.Background()
	pairs := 500
	if s := os.Getenv("BENCH_FAILOVER_PAIRS"); s != "" {
		var err error
		if pairs, err = strconv.Atoi(s); err != nil || pairs < 4 {
			b.Fatalf("BENCH_FAILOVER_PAIRS=%q: want a number of pairs, at least 4", s)
		}
	}
	bin, err := providertest.BuildProvider(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer restoreScaleEnv(ctx, b)
	for _, lease := range []time.Duration{60 * time.Second, 15 * time.Second} {
		b.Run("lease="+lease.String(), func(b *testing.B) {
			for range b.N {
				measureFailover(ctx, b, bin, lease, pairs)
			}
		})
	}
}

func measureFailover(ctx context.Context, b *testing.B, bin string, lease time.Duration, pairs int) {
	b.Helper()
	args := []string{"--leader-election"}
	if lease != 60*time.Second {
		args = append(args, "--leader-election-lease-duration="+lease.String(), "--leader-election-renew-deadline="+(lease*2/3).String())
	}
	replica := func() *providertest.Process {
		p, err := env.RunProvider(ctx, bin, providertest.ProcessOptions{Args: args})
		if err != nil {
			b.Fatal(err)
		}
		return p
	}
	first := replica()
	defer first.Stop()
	leader := leaseHolder(ctx, b, "")
	second := replica()
	defer second.Stop()

	// From the apply to the kill: the renewals under the wave's load.
	renewals := watchRenewals(ctx, leader)
	prefix := fmt.Sprintf("fo%d", int(lease.Seconds()))
	labels := map[string]string{"bench": prefix}
	on := v1alpha1.InstanceReference{Name: "main"}
	start := time.Now()
	err := env.Burst(ctx, 2*pairs, func(i int) client.Object {
		role := fmt.Sprintf("%sr%d", prefix, i/2)
		if i%2 == 0 {
			return &v1alpha1.PostgreSQLRole{ObjectMeta: metav1.ObjectMeta{Name: role, Namespace: "scale", Labels: labels}, Spec: v1alpha1.PostgreSQLRoleSpec{
				InstanceRef: on, ForProvider: v1alpha1.PostgreSQLRoleParameters{Login: ptr.To(true)},
				WriteConnectionSecretToReference: &xpv2.LocalSecretReference{Name: role + "-conn"},
			}}
		}
		return &v1alpha1.PostgreSQLDatabase{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%sd%d", prefix, i/2), Namespace: "scale", Labels: labels}, Spec: v1alpha1.PostgreSQLDatabaseSpec{
			InstanceRef: on, ForProvider: v1alpha1.PostgreSQLDatabaseParameters{OwnerRef: &v1alpha1.LocalReference{Name: role}},
		}}
	})
	if err != nil {
		b.Fatal(err)
	}
	waitReadyCount(ctx, b, labels, pairs/2, 10*time.Minute)
	before := secretPasswords(ctx, b, labels)
	gap, renewed := renewals.done()
	if err := syscall.Kill(first.Pid(), syscall.SIGKILL); err != nil {
		b.Fatal(err)
	}
	killedAt := time.Now()
	leader = leaseHolder(ctx, b, leader)
	takeover := time.Since(killedAt)
	waitReadyCount(ctx, b, labels, 2*pairs, 15*time.Minute)
	allReady := time.Since(start)

	// Nothing created twice, no password replaced.
	after := secretPasswords(ctx, b, labels)
	if len(after) != pairs {
		b.Errorf("%d connection Secrets, want %d", len(after), pairs)
	}
	for name, pw := range before {
		if after[name] != pw {
			b.Errorf("Secret %s: its password changed after the failover", name)
		}
	}
	var databases int
	if err := env.Connect(ctx, b, "postgres").QueryRow(ctx, `SELECT count(*) FROM pg_database WHERE starts_with(datname, $1)`, prefix+"d").Scan(&databases); err != nil {
		b.Fatal(err)
	}
	if staging := stagingDatabases(ctx, b); databases != pairs || len(staging) != 0 {
		b.Errorf("%d databases and staging databases %v on the server, want %d and none", databases, staging, pairs)
	}
	failed := 0
	for name := range after {
		d, err := env.ConnectionSecret(ctx, "scale", name)
		if err == nil {
			c, cerr := providertest.ConnectWithSecret(ctx, d, "postgres")
			if err = cerr; err == nil {
				_ = c.Close(ctx)
			}
		}
		if err != nil {
			failed++
		}
	}
	if failed > 0 {
		b.Errorf("%d of %d connection Secrets do not log in", failed, len(after))
	}

	// A graceful stop of the new leader hands over at once.
	third := replica()
	defer third.Stop()
	time.Sleep(3 * time.Second)
	if err := syscall.Kill(second.Pid(), syscall.SIGTERM); err != nil {
		b.Fatal(err)
	}
	stoppedAt := time.Now()
	leaseHolder(ctx, b, leader)
	graceful := time.Since(stoppedAt)
	removeFailover(ctx, b, labels)

	renewDeadline := lease * 2 / 3
	if lease == 60*time.Second {
		renewDeadline = 50 * time.Second
	}
	b.Logf("the leader renewed its Lease %d times in the wave before the kill; the longest gap between two renewals was %s (renew deadline %s)", renewed, gap.Round(time.Millisecond), renewDeadline)
	if renewed < 2 {
		b.Errorf("the leader renewed its Lease %d times in the wave: too few to measure", renewed)
	}
	b.ReportMetric(gap.Seconds(), "s-longest-renewal-gap")
	b.ReportMetric(gap.Seconds()/renewDeadline.Seconds(), "x-renew-deadline")
	b.ReportMetric(lease.Seconds(), "s-lease")
	b.ReportMetric(takeover.Seconds(), "s-takeover-after-kill")
	b.ReportMetric(takeover.Seconds()/lease.Seconds(), "x-lease")
	b.ReportMetric(graceful.Seconds(), "s-takeover-after-sigterm")
	b.ReportMetric(allReady.Seconds(), "s-all-ready")
	b.ReportMetric(float64(2*pairs), "objects")
	b.ReportMetric(0, "ns/op")
}

// leaseHolder waits until the provider's leader election Lease is held by
// someone other than was, and returns the holder.
func leaseHolder(ctx context.Context, tb testing.TB, was string) string {
	tb.Helper()
	var holder string
	err := providertest.WaitEvery(ctx, 5*time.Minute, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		var leases coordinationv1.LeaseList
		if err := env.Kube.List(ctx, &leases, client.InNamespace(providertest.Namespace)); err != nil {
			return false, err
		}
		for _, l := range leases.Items {
			if h := ptr.Deref(l.Spec.HolderIdentity, ""); h != "" && h != was {
				holder = h
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		tb.Fatalf("no new holder of the leader election Lease (was %q): %v", was, err)
	}
	return holder
}

// waitReadyCount waits until at least n roles and databases with labels
// are Ready; one in Conflict fails tb at once.
func waitReadyCount(ctx context.Context, tb testing.TB, labels map[string]string, n int, timeout time.Duration) {
	tb.Helper()
	var ready int
	err := providertest.WaitEvery(ctx, timeout, time.Second, func(ctx context.Context) (bool, error) {
		ready = 0
		for _, l := range []client.ObjectList{&v1alpha1.PostgreSQLRoleList{}, &v1alpha1.PostgreSQLDatabaseList{}} {
			if err := env.Kube.List(ctx, l, client.InNamespace("scale"), client.MatchingLabels(labels)); err != nil {
				return false, err
			}
			var conds []xpv2.Condition
			switch l := l.(type) {
			case *v1alpha1.PostgreSQLRoleList:
				for i := range l.Items {
					conds = append(conds, l.Items[i].GetCondition(xpv2.TypeReady))
				}
			case *v1alpha1.PostgreSQLDatabaseList:
				for i := range l.Items {
					conds = append(conds, l.Items[i].GetCondition(xpv2.TypeReady))
				}
			}
			for _, c := range conds {
				if c.Reason == v1alpha1.ReasonConflict {
					return false, fmt.Errorf("an object is in Conflict: %s", c.Message)
				}
				if c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready >= n, nil
	})
	if err != nil {
		tb.Fatalf("%d of the %d objects Ready: %v", ready, n, err)
	}
}

// secretPasswords maps the connection Secrets written so far for the
// roles with labels to their passwords.
func secretPasswords(ctx context.Context, tb testing.TB, labels map[string]string) map[string]string {
	tb.Helper()
	var roles v1alpha1.PostgreSQLRoleList
	if err := env.Kube.List(ctx, &roles, client.InNamespace("scale"), client.MatchingLabels(labels)); err != nil {
		tb.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range roles.Items {
		var s corev1.Secret
		err := env.Kube.Get(ctx, client.ObjectKey{Namespace: "scale", Name: r.Spec.WriteConnectionSecretToReference.Name}, &s)
		if client.IgnoreNotFound(err) != nil {
			tb.Fatal(err)
		}
		if pw := s.Data["password"]; err == nil && len(pw) > 0 {
			out[s.Name] = string(pw)
		}
	}
	return out
}

// removeFailover deletes the databases with labels, then their roles, and
// waits until they are gone.
func removeFailover(ctx context.Context, tb testing.TB, labels map[string]string) {
	tb.Helper()
	for _, kind := range []struct {
		one  client.Object
		list client.ObjectList
	}{{&v1alpha1.PostgreSQLDatabase{}, &v1alpha1.PostgreSQLDatabaseList{}}, {&v1alpha1.PostgreSQLRole{}, &v1alpha1.PostgreSQLRoleList{}}} {
		if err := env.Kube.DeleteAllOf(ctx, kind.one, client.InNamespace("scale"), client.MatchingLabels(labels)); err != nil {
			tb.Fatal(err)
		}
		err := providertest.WaitEvery(ctx, 15*time.Minute, time.Second, func(ctx context.Context) (bool, error) {
			if err := env.Kube.List(ctx, kind.list, client.InNamespace("scale"), client.MatchingLabels(labels)); err != nil {
				return false, err
			}
			return meta.LenList(kind.list) == 0, nil
		})
		if err != nil {
			tb.Fatalf("the benchmark's objects were not deleted: %v", err)
		}
	}
}

// A renewalWatch follows the renewals of the leader election Lease held
// by one holder: how often the leader renewed it under the wave's load,
// and the longest time between two renewals, which must stay well under
// the renew deadline for the leader to keep leading.
type renewalWatch struct {
	stop    chan struct{}
	wg      sync.WaitGroup
	longest time.Duration
	count   int
}

func watchRenewals(ctx context.Context, holder string) *renewalWatch {
	w := &renewalWatch{stop: make(chan struct{})}
	w.wg.Go(func() {
		var last time.Time
		for {
			var leases coordinationv1.LeaseList
			if err := env.Kube.List(ctx, &leases, client.InNamespace(providertest.Namespace)); err == nil {
				for _, l := range leases.Items {
					if ptr.Deref(l.Spec.HolderIdentity, "") != holder || l.Spec.RenewTime == nil {
						continue
					}
					if r := l.Spec.RenewTime.Time; r.After(last) {
						if !last.IsZero() {
							w.count++
							w.longest = max(w.longest, r.Sub(last))
						}
						last = r
					}
				}
			}
			select {
			case <-w.stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	})
	return w
}

// done stops the watch and returns the longest gap and the renewals seen.
func (w *renewalWatch) done() (time.Duration, int) {
	close(w.stop)
	w.wg.Wait()
	return w.longest, w.count
}
