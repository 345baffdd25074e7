package instance_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/admintoken"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/controller/oninstance"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

// The directory of token files and the token command the provider of this
// package's tests allows (--admin-token-dir, --admin-token-command); the
// test that uses them makes them.
var (
	tokenDir     = filepath.Join(os.TempDir(), fmt.Sprintf("provider-postgresql-tokens-%d", os.Getpid()))
	tokenCommand = filepath.Join(tokenDir, "print-token")
)

// TestAdminTokenSource: an Instance whose admin logs in with a token from
// a file, or from a command the provider allows, is Ready with what the
// token's role may do; after the password behind the token rotates, new
// sessions log in with the new token while the one logged in stays;
// commands and files the provider does not allow are refused, naming the
// flag; no token or value of the command's Secret shows in the Instance,
// its events or the provider's log.
func TestAdminTokenSource(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	if err := os.MkdirAll(tokenDir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(tokenDir) })
	file := filepath.Join(tokenDir, "admin")
	rotate := func(token string) {
		t.Helper()
		env.SQL(ctx, t, "postgres", "ALTER ROLE token_admin PASSWORD '"+token+"'")
		// As an agent does: a new file renamed over the old one.
		if err := os.WriteFile(file+".new", []byte(token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(file+".new", file); err != nil {
			t.Fatal(err)
		}
	}
	env.SQL(ctx, t, "postgres", "CREATE ROLE token_admin LOGIN CREATEDB CREATEROLE")
	t.Cleanup(func() { env.SQL(context.Background(), t, "postgres", "DROP ROLE IF EXISTS token_admin") })
	rotate("first-token-value")
	// The command prints the file and an expiry far off: it is run once
	// for the whole test unless a login is refused.
	script := "#!/bin/sh\nif [ \"$TOKEN_CHECK\" != \"s3cr3t-env-value\" ]; then echo \"no TOKEN_CHECK in $TOKEN_CHECK\" >&2; exit 2; fi\ncat " + file + "\necho 2099-01-01T00:00:00Z\n"
	if err := os.WriteFile(tokenCommand, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := env.CASecret(ctx, "token-ca"); err != nil {
		t.Fatal(err)
	}
	if err := env.Kube.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "token-env", Namespace: providertest.Namespace, Labels: map[string]string{v1alpha1.LabelAdminCredential: "true"}},
		Data:       map[string][]byte{"TOKEN_CHECK": []byte("s3cr3t-env-value")},
	}); err != nil {
		t.Fatal(err)
	}
	withToken := func(name string, ts v1alpha1.AdminTokenSource) *v1alpha1.PostgreSQLInstance {
		in := newInstance(name, "", "token-ca")
		in.Spec.AdminCredentialRef = nil
		ts.Username = "token_admin"
		in.Spec.AdminTokenSource = &ts
		return in
	}
	fromFile := withToken("token-file", v1alpha1.AdminTokenSource{File: &v1alpha1.TokenFile{Path: file}})
	fromExec := withToken("token-exec", v1alpha1.AdminTokenSource{Exec: &v1alpha1.TokenExec{
		Command: tokenCommand, EnvFromSecretRef: &v1alpha1.TokenEnvSecretReference{Name: "token-env"},
	}})
	// Someone who may create Secrets in the provider's namespace, but not
	// label them as admin credentials, cannot have one read.
	if err := env.Kube.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "token-env-unlabelled", Namespace: providertest.Namespace},
		Data:       map[string][]byte{"TOKEN_CHECK": []byte("s3cr3t-env-value")},
	}); err != nil {
		t.Fatal(err)
	}
	unlabelled := withToken("token-unlabelled-env", v1alpha1.AdminTokenSource{Exec: &v1alpha1.TokenExec{
		Command: tokenCommand, EnvFromSecretRef: &v1alpha1.TokenEnvSecretReference{Name: "token-env-unlabelled"},
	}})
	otherCommand := withToken("token-other-command", v1alpha1.AdminTokenSource{Exec: &v1alpha1.TokenExec{Command: "/bin/cat", Args: []string{file}}})
	otherFile := withToken("token-other-file", v1alpha1.AdminTokenSource{File: &v1alpha1.TokenFile{Path: "/var/run/secrets/kubernetes.io/serviceaccount/token"}})
	for _, in := range []*v1alpha1.PostgreSQLInstance{fromFile, fromExec, unlabelled, otherCommand, otherFile} {
		create(ctx, t, in)
		t.Cleanup(func() { _ = env.Kube.Delete(context.Background(), in) })
	}

	for _, name := range []string{"token-file", "token-exec"} {
		in := waitReady(ctx, t, name, corev1.ConditionTrue, xpv2.ReasonAvailable, time.Minute)
		if p := in.Status.AdminPrivileges; p == nil || p.Superuser || !p.Sufficient {
			t.Errorf("%s: adminPrivileges = %+v, want the token role's, sufficient", name, p)
		}
	}
	for name, flag := range map[string]string{
		"token-other-command":  "--admin-token-command=/bin/cat",
		"token-other-file":     "--admin-token-dir=/var/run/secrets/kubernetes.io/serviceaccount",
		"token-unlabelled-env": "has not opted in as an admin credential",
	} {
		in := waitReady(ctx, t, name, corev1.ConditionFalse, v1alpha1.ReasonCredentialsUnavailable, time.Minute)
		if msg := in.GetCondition(xpv2.TypeReady).Message; !strings.Contains(msg, flag) {
			t.Errorf("%s: Ready message %q does not name %s", name, msg, flag)
		}
	}

	t.Run("NewSessionsLogInWithTheRotatedToken", func(t *testing.T) {
		pool, err := env.Pools.Pool(ctx, target(ctx, t, fromFile))
		if err != nil {
			t.Fatal(err)
		}
		// One session logged in with the first token.
		held, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer held.Release()
		rotate("second-token-value")
		if _, err := held.Exec(ctx, "SELECT 1"); err != nil {
			t.Errorf("a session logged in before the rotation: %v", err)
		}
		// Another session: the pool logs in with the second token.
		second, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatalf("a new session after the rotation: %v", err)
		}
		second.Release()
		var logins int
		if err := env.Connect(ctx, t, "postgres").QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE usename = 'token_admin'").Scan(&logins); err != nil {
			t.Fatal(err)
		}
		if logins < 2 {
			t.Errorf("%d sessions of token_admin, want the old and the new", logins)
		}
		// The Instances' readiness logins use the new token: a change to
		// their spec checks them again at once.
		for _, in := range []*v1alpha1.PostgreSQLInstance{fromFile, fromExec} {
			touch(ctx, t, in.Name)
			got := waitGeneration(ctx, t, in.Name, time.Minute)
			if c := got.GetCondition(xpv2.TypeReady); c.Status != corev1.ConditionTrue {
				t.Errorf("%s after the rotation: Ready %s %s: %s", in.Name, c.Status, c.Reason, c.Message)
			}
		}
	})

	t.Run("NoTokenInStatusEventsOrLog", func(t *testing.T) {
		secrets := []string{"first-token-value", "second-token-value", "s3cr3t-env-value"}
		for _, in := range []*v1alpha1.PostgreSQLInstance{fromFile, fromExec, unlabelled, otherCommand, otherFile} {
			assertNoSecret(ctx, t, in.Name, secrets...)
		}
		log := env.ProviderLog()
		for _, s := range secrets {
			if strings.Contains(log, s) {
				t.Errorf("the provider's log holds a token or a value of the command's Secret")
			}
		}
	})
}

// touch changes a label of Instance name, so that its generation stays
// and it is reconciled at once.
func touch(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	in := &v1alpha1.PostgreSQLInstance{}
	if err := env.Kube.Get(ctx, client.ObjectKey{Name: name}, in); err != nil {
		t.Fatal(err)
	}
	in.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"touched": time.Now().Format("150405.000000")}}
	if err := env.Kube.Update(ctx, in); err != nil {
		t.Fatal(err)
	}
}

// waitGeneration waits for Instance name to have observed its generation.
func waitGeneration(ctx context.Context, t *testing.T, name string, timeout time.Duration) *v1alpha1.PostgreSQLInstance {
	t.Helper()
	in := &v1alpha1.PostgreSQLInstance{}
	if err := providertest.Wait(ctx, timeout, func(ctx context.Context) (bool, error) {
		if err := env.Kube.Get(ctx, client.ObjectKey{Name: name}, in); err != nil {
			return false, err
		}
		return in.Status.ObservedGeneration == in.Generation, nil
	}); err != nil {
		t.Fatalf("Instance %s never observed generation %d: %v", name, in.Generation, err)
	}
	return in
}

// target is how the provider reaches in's server, as its token source.
func target(ctx context.Context, t *testing.T, in *v1alpha1.PostgreSQLInstance) postgres.Target {
	t.Helper()
	got := &v1alpha1.PostgreSQLInstance{}
	if err := env.Kube.Get(ctx, client.ObjectKey{Name: in.Name}, got); err != nil {
		t.Fatal(err)
	}
	// Another Sources: the same source, by its identity, and so the
	// provider's own pool.
	tg, err := oninstance.ConnectionTarget(ctx, env.Kube, providertest.Namespace, admintoken.NewSources([]string{tokenCommand}, []string{tokenDir}), got, got.Spec.Endpoint.Database)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}
