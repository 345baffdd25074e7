package boundary_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

// adminInstance returns an Instance like main's that logs in with the admin
// Secret named secret.
func adminInstance(name, secret string) *v1alpha1.PostgreSQLInstance {
	in := env.Main.DeepCopy()
	in.ObjectMeta = metav1.ObjectMeta{Name: name}
	in.Status = v1alpha1.PostgreSQLInstanceStatus{}
	in.Spec.AdminCredentialRef = &v1alpha1.AdminCredentialReference{Name: secret}
	return in
}

// TestAdminCredentials is someone allowed to register Instances trying to
// make the provider hand a credential to a server: a Secret of the
// provider's namespace that never opted in is not read, a server asking for
// the password in clear text or as MD5 does not get it (unless the Instance
// allows that), and Ready follows the Secret's password within one poll
// even while pooled sessions stay logged in.
func TestAdminCredentials(t *testing.T) {
	suite.Versions(t)
	ctx := context.Background()
	pg := env.Connect(ctx, t, "postgres")
	for _, stmt := range []string{
		"CREATE ROLE optin_admin LOGIN CREATEDB CREATEROLE PASSWORD 'optin-pw-1'",
		"CREATE ROLE clear_admin LOGIN CREATEDB CREATEROLE PASSWORD 'clear-pw-1'",
		"CREATE ROLE rot_admin LOGIN CREATEDB CREATEROLE PASSWORD 'rot-pw-1'",
		// Stored as MD5, so that the server asks for MD5 and not SCRAM.
		"SET password_encryption = 'md5'",
		"CREATE ROLE md5_admin LOGIN CREATEDB CREATEROLE PASSWORD 'md5-pw-1'",
		"RESET password_encryption",
	} {
		if _, err := pg.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	// A login of user u reached the server with its password.
	loggedIn := func(log, u string) bool {
		return regexp.MustCompile(`connection authorized: user=`+u+`\b`).MatchString(log) ||
			strings.Contains(log, `password authentication failed for user "`+u+`"`)
	}

	t.Run("SecretMustOptIn", func(t *testing.T) {
		from := env.ServerLogLen(t)
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: providertest.Namespace, Name: "optin-admin"},
			Data:       map[string][]byte{"username": []byte("optin_admin"), "password": []byte("optin-pw-1")},
		}
		env.Create(ctx, t, s)
		in := adminInstance("optin", "optin-admin")
		env.Create(ctx, t, in)
		env.Ready(ctx, t, in, corev1.ConditionFalse, v1alpha1.ReasonCredentialsUnavailable)
		if msg := in.GetCondition(xpv2.TypeReady).Message; !strings.Contains(msg, "has not opted in") || !strings.Contains(msg, v1alpha1.LabelAdminCredential) {
			t.Errorf("Ready message %q does not say the Secret must opt in with the label", msg)
		}
		time.Sleep(3 * time.Second) // A poll later.
		if loggedIn(env.ServerLog(t, from), "optin_admin") {
			t.Error("the provider logged in with a Secret that never opted in")
		}
		// Opting in is picked up from the Secret watch.
		s.Labels = map[string]string{v1alpha1.LabelAdminCredential: "true"}
		if err := env.Kube.Update(ctx, s); err != nil {
			t.Fatal(err)
		}
		env.Ready(ctx, t, in, corev1.ConditionTrue, xpv2.ReasonAvailable)
	})

	for _, tc := range []struct {
		user, password string
		method         v1alpha1.PasswordMethod
	}{
		{user: "md5_admin", password: "md5-pw-1", method: v1alpha1.PasswordMethodMD5},
		{user: "clear_admin", password: "clear-pw-1", method: v1alpha1.PasswordMethodPassword},
	} {
		t.Run("WeakPasswordMethod"+string(tc.method), func(t *testing.T) {
			from := env.ServerLogLen(t)
			secret := strings.ReplaceAll(tc.user, "_", "-")
			if err := env.AdminSecret(ctx, secret, tc.user, tc.password); err != nil {
				t.Fatal(err)
			}
			in := adminInstance(secret, secret)
			env.Create(ctx, t, in)
			env.Ready(ctx, t, in, corev1.ConditionFalse, v1alpha1.ReasonUnreachable)
			msg := in.GetCondition(xpv2.TypeReady).Message
			for _, want := range []string{"password was not sent", "allowPasswordMethods"} {
				if !strings.Contains(msg, want) {
					t.Errorf("Ready message %q does not say %q", msg, want)
				}
			}
			time.Sleep(3 * time.Second)
			if loggedIn(env.ServerLog(t, from), tc.user) {
				t.Errorf("the password reached a server asking for %s", tc.method)
			}
			// The operator accepts the risk for this Instance.
			providertest.Update(ctx, t, env, in, func(in *v1alpha1.PostgreSQLInstance) {
				in.Spec.Endpoint.AllowPasswordMethods = []v1alpha1.PasswordMethod{tc.method}
			})
			env.Ready(ctx, t, in, corev1.ConditionTrue, xpv2.ReasonAvailable)
		})
	}

	t.Run("PasswordChangedOnTheServer", func(t *testing.T) {
		if err := env.AdminSecret(ctx, "rot-admin", "rot_admin", "rot-pw-1"); err != nil {
			t.Fatal(err)
		}
		in := adminInstance("rot", "rot-admin")
		env.Create(ctx, t, in)
		env.Ready(ctx, t, in, corev1.ConditionTrue, xpv2.ReasonAvailable)
		if _, err := pg.Exec(ctx, "ALTER ROLE rot_admin PASSWORD 'rot-pw-2'"); err != nil {
			t.Fatal(err)
		}
		// The poll is 2 s: within one poll (and a margin for a loaded
		// machine), not whenever the pool next dials.
		if err := env.WaitForReady(ctx, in, corev1.ConditionFalse, v1alpha1.ReasonUnreachable, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		if msg := in.GetCondition(xpv2.TypeReady).Message; !strings.Contains(msg, "does not log in") || strings.Contains(msg, "rot-pw") {
			t.Errorf("Ready message %q does not say the password stopped working (or shows a password)", msg)
		}
		s := &corev1.Secret{}
		if err := env.Kube.Get(ctx, client.ObjectKey{Namespace: providertest.Namespace, Name: "rot-admin"}, s); err != nil {
			t.Fatal(err)
		}
		s.Data["password"] = []byte("rot-pw-2")
		if err := env.Kube.Update(ctx, s); err != nil {
			t.Fatal(err)
		}
		env.Ready(ctx, t, in, corev1.ConditionTrue, xpv2.ReasonAvailable)
	})

	t.Run("ServerVerifiedCondition", func(t *testing.T) {
		for mode, want := range map[v1alpha1.SSLMode]xpv2.ConditionReason{
			v1alpha1.SSLModeVerifyFull: v1alpha1.ReasonVerifiedFull,
			v1alpha1.SSLModeVerifyCA:   v1alpha1.ReasonNamesNotVerified,
			v1alpha1.SSLModeRequire:    v1alpha1.ReasonNotVerified,
			v1alpha1.SSLModeDisable:    v1alpha1.ReasonClearText,
		} {
			t.Run(string(mode), func(t *testing.T) {
				in := adminInstance("tls-"+string(mode), env.Main.Spec.AdminCredentialRef.Name)
				in.Spec.Endpoint.SSLMode = mode
				if mode == v1alpha1.SSLModeDisable {
					in.Spec.CABundleRef = nil
				}
				env.Create(ctx, t, in)
				// Every mode works: the weaker ones are the operator's choice.
				env.Ready(ctx, t, in, corev1.ConditionTrue, xpv2.ReasonAvailable)
				c := in.GetCondition(v1alpha1.TypeServerVerified)
				wantStatus := corev1.ConditionFalse
				if mode == v1alpha1.SSLModeVerifyFull {
					wantStatus = corev1.ConditionTrue
				}
				if c.Status != wantStatus || c.Reason != want {
					t.Errorf("ServerVerified = %s/%s (%q), want %s/%s", c.Status, c.Reason, c.Message, wantStatus, want)
				}
			})
		}
	})
}
