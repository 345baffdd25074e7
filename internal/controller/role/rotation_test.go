package role_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/role"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

// loginLoop is an application that logs in every 100 ms with whatever its
// connection Secret holds at that moment, as a client that reads mounted
// Secret files for each new connection does.
type loginLoop struct {
	mu       sync.Mutex
	ok       int
	failures []string
	users    []string // the logins used, in order, without repeats
	perUser  map[string]int
	stop     chan struct{}
	done     chan struct{}
}

func startLoginLoop(ctx context.Context, t *testing.T, secret, roleName string) *loginLoop {
	t.Helper()
	l := &loginLoop{stop: make(chan struct{}), done: make(chan struct{}), perUser: map[string]int{}}
	go func() {
		defer close(l.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-tick.C:
			}
			s := &corev1.Secret{}
			if err := env.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: secret}, s); err != nil {
				l.fail(fmt.Sprintf("reading the Secret: %v", err))
				continue
			}
			cur, err := loginWith(ctx, s.Data)
			l.mu.Lock()
			switch {
			case err != nil:
				l.failures = append(l.failures, fmt.Sprintf("login as %s: %v", s.Data["username"], err))
			case cur != roleName:
				// Sessions of either login act as the role itself.
				l.failures = append(l.failures, fmt.Sprintf("login as %s runs as %q, not as the role", s.Data["username"], cur))
			default:
				l.ok++
				u := string(s.Data["username"])
				if len(l.users) == 0 || l.users[len(l.users)-1] != u {
					l.users = append(l.users, u)
				}
				l.perUser[u]++
			}
			l.mu.Unlock()
		}
	}()
	t.Cleanup(l.end)
	return l
}

func (l *loginLoop) fail(msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failures = append(l.failures, msg)
}

func (l *loginLoop) end() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	<-l.done
}

// switches is the number of times the logins used changed.
func (l *loginLoop) switches() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return max(len(l.users)-1, 0)
}

func (l *loginLoop) report(t *testing.T) {
	t.Helper()
	l.end()
	l.mu.Lock()
	defer l.mu.Unlock()
	t.Logf("%d logins succeeded through logins %v", l.ok, l.users)
	if len(l.failures) > 0 {
		t.Errorf("%d of %d logins failed; first: %s", len(l.failures), len(l.failures)+l.ok, l.failures[0])
	}
	// The loop must have run on each side of every switch. Not a count
	// of the 100 ms ticks: on a loaded machine each login takes longer.
	for _, u := range l.users {
		if l.perUser[u] < 3 {
			t.Errorf("only %d logins as %s succeeded: the loop did not run through the switch (%v)", l.perUser[u], u, l.perUser)
		}
	}
	if len(l.users) == 0 {
		t.Error("no login succeeded: the loop did not run")
	}
}

func alternatingRole(name string, mutate func(*v1alpha1.PasswordRotation)) *v1alpha1.PostgreSQLRole {
	return newRole(name, func(r *v1alpha1.PostgreSQLRole) {
		r.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
		r.Spec.PasswordRotation = &v1alpha1.PasswordRotation{Mode: v1alpha1.RotationAlternating}
		mutate(r.Spec.PasswordRotation)
	})
}

func getRole(ctx context.Context, t *testing.T, r *v1alpha1.PostgreSQLRole) *v1alpha1.PostgreSQLRole {
	t.Helper()
	cur := &v1alpha1.PostgreSQLRole{}
	if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), cur); err != nil {
		t.Fatal(err)
	}
	return cur
}

// TestAlternatingRotation: three scheduled rotations under a client that
// logs in every 100 ms see no failed login; the previous login works
// through its grace period, is then refused, and its sessions are shown
// and ended after endSessionsAfter; what one login creates the other may
// use, as both act as the role.
func TestAlternatingRotation(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	// Every statement in the server's log, to show no password is in it.
	if err := env.Postgres.SetLogStatement(ctx, "all"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Postgres.SetLogStatement(context.WithoutCancel(ctx), "none") })
	r := alternatingRole("ledger", func(p *v1alpha1.PasswordRotation) {
		p.MaxAge = &metav1.Duration{Duration: 12 * time.Second}
		p.GracePeriod = &metav1.Duration{Duration: 4 * time.Second}
		p.EndSessionsAfter = &metav1.Duration{Duration: 7 * time.Second}
	})
	env.Create(ctx, t, r)
	t.Cleanup(func() {
		env.SQL(context.WithoutCancel(ctx), t, "postgres", "DROP SCHEMA IF EXISTS ledger CASCADE")
		_ = env.Kube.Delete(context.WithoutCancel(ctx), r)
		waitGone(context.WithoutCancel(ctx), t, r)
	})
	env.Ready(ctx, t, r, corev1.ConditionTrue, xpv2.ReasonAvailable)
	first := waitSecretUser(ctx, t, "ledger-conn", "ledger_a")
	env.SQL(ctx, t, "postgres", "CREATE SCHEMA ledger AUTHORIZATION ledger")

	// A long-lived session of the first login, as a pool would hold, with
	// a table that the second login must be able to use.
	held, err := providertest.ConnectWithSecret(ctx, first, "")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close(ctx) //nolint:errcheck // Test.
	if _, err := held.Exec(ctx, "CREATE TABLE ledger.entries (id int)"); err != nil {
		t.Fatal(err)
	}

	loop := startLoginLoop(ctx, t, "ledger-conn", "ledger")
	second := waitSecretUser(ctx, t, "ledger-conn", "ledger_b")

	t.Run("PreviousLoginWorksInItsGracePeriod", func(t *testing.T) {
		if _, err := loginWith(ctx, first); err != nil {
			t.Errorf("the previous login is refused right after the switch: %v", err)
		}
		// The Secret is published before the status is written, in the
		// same reconcile: allow that reconcile to finish (well inside the
		// 4 s grace period).
		var c *v1alpha1.CredentialObservation
		_ = providertest.Wait(ctx, 3*time.Second, func(ctx context.Context) (bool, error) {
			c = getRole(ctx, t, r).Status.AtProvider.Credential
			return c != nil && c.ActiveLogin == "ledger_b", nil
		})
		if c == nil || c.ActiveLogin != "ledger_b" || c.PreviousLogin != "ledger_a" || c.PreviousLoginState != v1alpha1.PreviousLoginGrace {
			t.Errorf("status.atProvider.credential after the first rotation: %+v", c)
		}
	})

	t.Run("OwnershipIsTheRoles", func(t *testing.T) {
		c, err := providertest.ConnectWithSecret(ctx, second, "")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx) //nolint:errcheck // Test.
		if _, err := c.Exec(ctx, "INSERT INTO ledger.entries VALUES (1); ALTER TABLE ledger.entries ADD COLUMN note text"); err != nil {
			t.Errorf("the second login cannot use and alter the first login's table: %v", err)
		}
	})

	t.Run("PreviousLoginRetiredAndItsSessionsShownThenEnded", func(t *testing.T) {
		err := providertest.Wait(ctx, 20*time.Second, func(ctx context.Context) (bool, error) {
			c := getRole(ctx, t, r).Status.AtProvider.Credential
			return c != nil && c.PreviousLogin == "ledger_a" && c.PreviousLoginState == v1alpha1.PreviousLoginRetired && c.PreviousSessions >= 1, nil
		})
		if err != nil {
			t.Fatalf("the retired login and its held session are not shown: %v (%+v)", err, getRole(ctx, t, r).Status.AtProvider.Credential)
		}
		if _, err := loginWith(ctx, first); err == nil || !strings.Contains(err.Error(), "not permitted to log in") {
			t.Errorf("the retired login still logs in, or fails for another reason: %v", err)
		}
		err = providertest.Wait(ctx, 20*time.Second, func(ctx context.Context) (bool, error) {
			return held.Ping(ctx) != nil, nil
		})
		if err != nil {
			t.Errorf("the retired login's session was not ended after endSessionsAfter: %v", err)
		}
		// Events are posted asynchronously, after the step.
		err = providertest.Wait(ctx, 10*time.Second, func(ctx context.Context) (bool, error) {
			return hasEvent(ctx, t, r, "EndedSessions") && hasEvent(ctx, t, r, "RetiredLogin") && hasEvent(ctx, t, r, "RotatedCredential"), nil
		})
		if err != nil {
			t.Errorf("the rotation's steps have no events (EndedSessions %t, RetiredLogin %t, RotatedCredential %t)",
				hasEvent(ctx, t, r, "EndedSessions"), hasEvent(ctx, t, r, "RetiredLogin"), hasEvent(ctx, t, r, "RotatedCredential"))
		}
	})

	t.Run("NoPasswordInObjectsOrLogs", func(t *testing.T) {
		log := env.ProviderLog()
		if !strings.Contains(log, `"ledger"`) {
			t.Fatalf("the provider's debug log says nothing of the role: cannot check it (%d bytes)", len(log))
		}
		server := env.ServerLog(t, 0)
		for _, pw := range [][]byte{first["password"], second["password"]} {
			assertNotInObjects(ctx, t, r, string(pw))
			if strings.Contains(log, string(pw)) {
				t.Error("a password is in the provider's log")
			}
			if strings.Contains(server, string(pw)) {
				t.Error("a password is in the server's log")
			}
		}
	})

	t.Run("Metrics", func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(role.CredentialMetrics{Roles: env.Kube})
		got, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]float64{}
		for _, f := range got {
			for _, m := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["namespace"] == ns && labels["name"] == "ledger" {
					seen[f.GetName()] = m.GetGauge().GetValue()
				}
			}
		}
		if age, ok := seen["provider_postgresql_role_credential_age_seconds"]; !ok || age < 0 || age > 12 {
			t.Errorf("credential age: %v (present %v), want 0–12 s", age, ok)
		}
		if next, ok := seen["provider_postgresql_role_credential_next_rotation_seconds"]; !ok || next > 12 {
			t.Errorf("seconds to the next rotation: %v (present %v), want at most 12", next, ok)
		}
		if _, ok := seen["provider_postgresql_role_previous_login_sessions"]; !ok {
			t.Error("no session count of the previous login")
		}
	})

	t.Run("ThreeScheduledRotationsWithoutAFailedLogin", func(t *testing.T) {
		err := providertest.Wait(ctx, 90*time.Second, func(context.Context) (bool, error) { return loop.switches() >= 3, nil })
		if err != nil {
			t.Errorf("fewer than three rotations: %v", err)
		}
		loop.report(t)
		c := getRole(ctx, t, r).Status.AtProvider.Credential
		if c == nil || c.NextRotation == nil || c.ActiveSince == nil || c.NextRotation.Sub(c.ActiveSince.Time) != 12*time.Second {
			t.Errorf("status does not say when the next rotation is due: %+v", c)
		}
	})

	t.Run("DeleteDropsTheLogins", func(t *testing.T) {
		env.SQL(ctx, t, "postgres", "DROP SCHEMA ledger CASCADE")
		if err := env.Kube.Delete(ctx, r); err != nil {
			t.Fatal(err)
		}
		waitGone(ctx, t, r)
		if !env.Holds(ctx, t, "count(*) = 0 FROM pg_roles WHERE rolname IN ('ledger', 'ledger_a', 'ledger_b')") {
			t.Error("the role or its logins outlived the PostgreSQLRole (Delete policy)")
		}
	})
}

// TestAlternatingRotationSurvivesAStop stops the provider after each step
// of a rotation (the new password set, the Secret switched) and during the
// grace period: a client logging in every 100 ms sees no failure, and the
// provider converges (Secret and status agree; the previous login is
// retired on time).
func TestAlternatingRotationSurvivesAStop(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	r := alternatingRole("journal", func(p *v1alpha1.PasswordRotation) {
		p.GracePeriod = &metav1.Duration{Duration: 5 * time.Second}
	})
	env.Create(ctx, t, r)
	t.Cleanup(func() {
		role.SetStepHook(nil)
		_ = env.Kube.Delete(context.WithoutCancel(ctx), r)
		waitGone(context.WithoutCancel(ctx), t, r)
	})
	env.Ready(ctx, t, r, corev1.ConditionTrue, xpv2.ReasonAvailable)
	waitSecretUser(ctx, t, "journal-conn", "journal_a")
	loop := startLoginLoop(ctx, t, "journal-conn", "journal")

	want := "journal_a"
	for i, step := range []string{role.StepPasswordSet, role.StepSecretSwitched, "grace"} {
		prev := want
		want = map[string]string{"journal_a": "journal_b", "journal_b": "journal_a"}[want]
		stopped := make(chan struct{})
		var once sync.Once
		if step != "grace" {
			role.SetStepHook(func(ctx context.Context, s string) error {
				if s != step {
					return nil
				}
				fired := false
				once.Do(func() { fired = true; close(stopped) })
				if !fired {
					return nil
				}
				// Stopped here: nothing after this step happens until
				// the provider is gone.
				<-ctx.Done()
				return errors.New("stopped by the test")
			})
		}
		providertest.Update(ctx, t, env, r, func(r *v1alpha1.PostgreSQLRole) {
			a := r.GetAnnotations()
			a[v1alpha1.AnnotationRotatePassword] = fmt.Sprintf("rotation-%d", i)
			r.SetAnnotations(a)
		})
		if step == "grace" {
			waitSecretUser(ctx, t, "journal-conn", want)
		} else {
			select {
			case <-stopped:
			case <-time.After(time.Minute):
				t.Fatalf("the rotation never reached step %s", step)
			}
			// While the provider stands at the step: the Secret holds the
			// old login until the new one's password is set, and then a
			// login that works.
			holds := map[string]string{role.StepPasswordSet: prev, role.StepSecretSwitched: want}[step]
			d := waitSecretUser(ctx, t, "journal-conn", holds)
			if _, err := loginWith(ctx, d); err != nil {
				t.Errorf("stopped at %s, the Secret's login %s does not work: %v", step, holds, err)
			}
		}
		if err := env.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		role.SetStepHook(nil)
		waitSecretUser(ctx, t, "journal-conn", want)
		err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
			cur := getRole(ctx, t, r)
			c := cur.Status.AtProvider.Credential
			return c != nil && c.ActiveLogin == want && c.PreviousLoginState == v1alpha1.PreviousLoginRetired &&
				cur.Status.AtProvider.PasswordRotation == fmt.Sprintf("rotation-%d", i), nil
		})
		if err != nil {
			t.Fatalf("after a stop at %s: the provider did not converge (Secret on %s, previous retired): %v; status %+v", step, want, err, getRole(ctx, t, r).Status.AtProvider)
		}
		if !env.Holds(ctx, t, fmt.Sprintf("NOT rolcanlogin FROM pg_roles WHERE rolname = '%s'", map[string]string{"journal_a": "journal_b", "journal_b": "journal_a"}[want])) {
			t.Errorf("after a stop at %s: the previous login still logs in after its grace period", step)
		}
	}
	loop.report(t)
	if hasEvent(ctx, t, r, "RepairedLogin") {
		t.Error("a login the Secret held had to be repaired: a stop left it without LOGIN or its password")
	}
}

// waitSecretUser waits until the connection Secret holds login user, and
// returns it.
func waitSecretUser(ctx context.Context, t *testing.T, name, user string) map[string][]byte {
	t.Helper()
	s := &corev1.Secret{}
	err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		err := env.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s)
		return err == nil && string(s.Data["username"]) == user && len(s.Data["password"]) > 0, nil
	})
	if err != nil {
		t.Fatalf("connection Secret %s never held login %s (it holds %q): %v", name, user, s.Data["username"], err)
	}
	return s.Data
}

func hasEvent(ctx context.Context, t *testing.T, r client.Object, reason string) bool {
	t.Helper()
	l := &corev1.EventList{}
	if err := env.Kube.List(ctx, l, client.InNamespace(r.GetNamespace())); err != nil {
		t.Fatal(err)
	}
	for _, e := range l.Items {
		if e.InvolvedObject.Name == r.GetName() && e.Reason == reason {
			return true
		}
	}
	return false
}

// TestAlternatingRefusesAForeignLogin: a role named like one of the
// logins, made beforehand by someone else (who knows its password), is
// not taken over: it would get the role's privileges.
func TestAlternatingRefusesAForeignLogin(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	env.AdminSQL(ctx, t, "postgres", "CREATE ROLE vault_a LOGIN PASSWORD 'known-to-mallory'")
	t.Cleanup(func() { env.AdminSQL(context.WithoutCancel(ctx), t, "postgres", "DROP ROLE IF EXISTS vault_a") })
	r := alternatingRole("vault", func(*v1alpha1.PasswordRotation) {})
	env.Create(ctx, t, r)
	t.Cleanup(func() {
		_ = env.Kube.Delete(context.WithoutCancel(ctx), r)
		waitGone(context.WithoutCancel(ctx), t, r)
	})
	err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		c := getRole(ctx, t, r).GetCondition(xpv2.TypeSynced)
		return c.Status == corev1.ConditionFalse && strings.Contains(c.Message, `role "vault_a" on PostgreSQLInstance "main" exists`) && strings.Contains(c.Message, "was not created by this PostgreSQLRole"), nil
	})
	if err != nil {
		t.Fatalf("the foreign login is not reported: %v (%+v)", err, getRole(ctx, t, r).GetCondition(xpv2.TypeSynced))
	}
	time.Sleep(3 * time.Second) // a poll or two more
	if env.Holds(ctx, t, "pg_has_role('vault_a', 'vault', 'MEMBER')") {
		t.Error("the foreign role was made a member of the role")
	}
	if !env.Holds(ctx, t, "count(*) = 0 FROM pg_roles WHERE rolname = 'vault_b'") {
		t.Error("the rotation went on with the other login")
	}
	s := &corev1.Secret{}
	if err := env.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "vault-conn"}, s); err == nil && len(s.Data["password"]) > 0 {
		t.Errorf("a credential was published (user %s)", s.Data["username"])
	}
}

// TestInPlaceScheduledRotation: without the annotation, maxAge rotates the
// role's own password, and status says when the next rotation is due.
func TestInPlaceScheduledRotation(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	r := newRole("tally", func(r *v1alpha1.PostgreSQLRole) {
		r.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
		r.Spec.PasswordRotation = &v1alpha1.PasswordRotation{MaxAge: &metav1.Duration{Duration: 10 * time.Second}}
	})
	env.Create(ctx, t, r)
	t.Cleanup(func() {
		_ = env.Kube.Delete(context.WithoutCancel(ctx), r)
		waitGone(context.WithoutCancel(ctx), t, r)
	})
	first := waitSecretUser(ctx, t, "tally-conn", "tally")
	err := providertest.Wait(ctx, 10*time.Second, func(ctx context.Context) (bool, error) {
		c := getRole(ctx, t, r).Status.AtProvider.Credential
		return c != nil && c.ActiveLogin == "tally" && c.ActiveSince != nil && c.NextRotation != nil && c.NextRotation.Sub(c.ActiveSince.Time) == 10*time.Second, nil
	})
	if err != nil {
		t.Errorf("status.atProvider.credential does not say when the next rotation is due: %+v", getRole(ctx, t, r).Status.AtProvider.Credential)
	}
	// Every version of the Secret the rotation writes is whole: its uri
	// carries its password (an observation once published the uri
	// without it just before the new one was staged: a client reading
	// it then could not log in).
	wc, err := client.NewWithWatch(env.ControlPlane.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(ctx, &corev1.SecretList{}, client.InNamespace(ns), client.MatchingFields{"metadata.name": "tally-conn"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var seen []*corev1.Secret
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for e := range w.ResultChan() {
			if s, ok := e.Object.(*corev1.Secret); ok {
				seen = append(seen, s)
			}
		}
	}()
	var now map[string][]byte
	err = providertest.Wait(ctx, 40*time.Second, func(ctx context.Context) (bool, error) {
		now = waitSecretUser(ctx, t, "tally-conn", "tally")
		if string(now["password"]) == string(first["password"]) {
			return false, nil
		}
		_, err := loginWith(ctx, now)
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("maxAge did not rotate the password: %v", err)
	}
	if _, err := loginWith(ctx, first); err == nil {
		t.Error("the old password still logs in after an in-place rotation")
	}
	w.Stop()
	<-watched
	for _, s := range seen {
		if !strings.Contains(string(s.Data["uri"]), ":"+string(s.Data["password"])+"@") {
			t.Errorf("version %s of the Secret has a uri without its password", s.ResourceVersion)
		}
	}
	if len(seen) < 2 {
		t.Errorf("the watch saw %d versions of the Secret, want the one before and at least one rotation", len(seen))
	}
}

// TestSwitchToAlternating: a role that logged in itself hands its login to
// the first alternating login without a failed login; its own login is
// retired after the grace period.
func TestSwitchToAlternating(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	r := newRole("shift", func(r *v1alpha1.PostgreSQLRole) {
		r.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
	})
	env.Create(ctx, t, r)
	t.Cleanup(func() {
		_ = env.Kube.Delete(context.WithoutCancel(ctx), r)
		waitGone(context.WithoutCancel(ctx), t, r)
	})
	own := waitSecretUser(ctx, t, "shift-conn", "shift")
	// The Secret holds the password before the role exists (it is staged
	// there first, so that a create cut short never loses it): the loop
	// starts once the role is Ready, as a client waiting for it would.
	env.Ready(ctx, t, r, corev1.ConditionTrue, xpv2.ReasonAvailable)
	loop := startLoginLoop(ctx, t, "shift-conn", "shift")
	time.Sleep(time.Second)
	providertest.Update(ctx, t, env, r, func(r *v1alpha1.PostgreSQLRole) {
		r.Spec.PasswordRotation = &v1alpha1.PasswordRotation{Mode: v1alpha1.RotationAlternating, GracePeriod: &metav1.Duration{Duration: 4 * time.Second}}
	})
	waitSecretUser(ctx, t, "shift-conn", "shift_a")
	if _, err := loginWith(ctx, own); err != nil {
		t.Errorf("the role's own login is refused within its grace period: %v", err)
	}
	err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		return env.Holds(ctx, t, "NOT rolcanlogin FROM pg_roles WHERE rolname = 'shift'"), nil
	})
	if err != nil {
		t.Errorf("the role's own login was not retired after its grace period: %v", err)
	}
	time.Sleep(time.Second)
	loop.report(t)
	c := getRole(ctx, t, r).Status.AtProvider.Credential
	if c == nil || c.ActiveLogin != "shift_a" || c.PreviousLogin != "shift" || c.PreviousLoginState != v1alpha1.PreviousLoginRetired {
		t.Errorf("status.atProvider.credential: %+v", c)
	}
}

// TestAdoptImportedLogin: an imported login role publishes nothing until
// an admin adopts it (the statement its condition shows); then the
// provider puts a generated password into the Secret. With Alternating, on
// an alternating login, and the clients of the old password keep working
// for the grace period, then are refused; with InPlace, on the role
// itself, and the old password stops working at once.
func TestAdoptImportedLogin(t *testing.T) {
	suite.Matrix(t)
	cases := map[string]struct {
		mode v1alpha1.RotationMode
		// user is the login the Secret names after the adoption.
		user string
		// grace: the old password still logs in right after the Secret
		// switched.
		grace bool
	}{
		"Alternating": {mode: v1alpha1.RotationAlternating, user: "heirloom_a", grace: true},
		"InPlace":     {mode: v1alpha1.RotationInPlace, user: "heirloom"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			adoptImportedLogin(t, tc.mode, tc.user, tc.grace)
		})
	}
}

func adoptImportedLogin(t *testing.T, mode v1alpha1.RotationMode, user string, grace bool) {
	ctx := context.Background()
	env.AdminSQL(ctx, t, "postgres", "CREATE ROLE heirloom LOGIN PASSWORD 'known-to-the-old-app'")
	r := alternatingRole("heirloom", func(p *v1alpha1.PasswordRotation) {
		p.Mode = mode
		if mode == v1alpha1.RotationAlternating {
			p.GracePeriod = &metav1.Duration{Duration: 4 * time.Second}
		}
	})
	r.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
	env.Create(ctx, t, r)
	t.Cleanup(func() {
		_ = env.Kube.Delete(context.WithoutCancel(ctx), r)
		waitGone(context.WithoutCancel(ctx), t, r)
		env.AdminSQL(context.WithoutCancel(ctx), t, "postgres", "DROP ROLE IF EXISTS heirloom_a; DROP ROLE IF EXISTS heirloom_b; DROP ROLE IF EXISTS heirloom")
		// The test's API server runs no garbage collector to remove the
		// Secret the resource owned.
		_ = env.Kube.Delete(context.WithoutCancel(ctx), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "heirloom-conn"}})
	})
	seen := waitCondition(ctx, t, r, corev1.ConditionFalse, v1alpha1.ReasonObserveOnly)
	msg := seen.GetCondition(xpv2.TypeReady).Message
	i := strings.Index(msg, "COMMENT ON ROLE")
	if i < 0 {
		t.Fatalf("the import does not say how an admin adopts it: %q", msg)
	}
	adopt := msg[i : strings.Index(msg[i:], "]'")+i+2]
	old := map[string][]byte{}
	for k, v := range endpointDetails(ctx, t) {
		old[k] = v
	}
	old["username"], old["password"] = []byte("heirloom"), []byte("known-to-the-old-app")
	if _, err := loginWith(ctx, old); err != nil {
		t.Fatalf("the old app's login: %v", err)
	}
	if s := (&corev1.Secret{}); env.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "heirloom-conn"}, s) == nil && len(s.Data["password"]) > 0 {
		t.Errorf("the imported role published a password before its adoption")
	}

	env.AdminSQL(ctx, t, "postgres", adopt)
	providertest.Update(ctx, t, env, seen, func(r *v1alpha1.PostgreSQLRole) {
		r.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
	})
	d := waitSecretUser(ctx, t, "heirloom-conn", user)
	err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		_, err := loginWith(ctx, d)
		return err == nil, nil
	})
	if err != nil {
		t.Errorf("the adopted role's generated login does not log in: %v", err)
	}
	if string(d["password"]) == "known-to-the-old-app" {
		t.Error("the Secret carries the imported password")
	}
	if grace {
		if _, err := loginWith(ctx, old); err != nil {
			t.Errorf("the old app is refused within the grace period: %v", err)
		}
	}
	err = providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		_, err := loginWith(ctx, old)
		return err != nil && (strings.Contains(err.Error(), "not permitted to log in") || strings.Contains(err.Error(), "password authentication failed")), nil
	})
	if err != nil {
		t.Errorf("the old password still logs in: %v", err)
	}
}

// endpointDetails returns the connection details every test Secret shares (host,
// port, CA), from a login role's Secret.
func endpointDetails(ctx context.Context, t *testing.T) map[string][]byte {
	t.Helper()
	r := newRole("probe", func(r *v1alpha1.PostgreSQLRole) {
		r.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
	})
	env.Create(ctx, t, r)
	t.Cleanup(func() {
		_ = env.Kube.Delete(context.WithoutCancel(ctx), r)
		waitGone(context.WithoutCancel(ctx), t, r)
	})
	return waitSecretUser(ctx, t, "probe-conn", "probe")
}
