package role_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

// certificateInstance registers the test server again as Instance name,
// offering client certificates signed by the server's own CA (which its
// ssl_ca_file trusts), and has pg_hba.conf ask roles for a certificate.
func certificateInstance(ctx context.Context, t *testing.T, name string, roles ...string) *v1alpha1.PostgreSQLInstance {
	t.Helper()
	if err := env.ClientCASecret(ctx, name+"-client-ca"); err != nil {
		t.Fatal(err)
	}
	in, err := env.Instance(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	orig := in.DeepCopy()
	in.Spec.ClientCertificateAuthorityRef = &v1alpha1.ClientCertificateAuthorityReference{Name: name + "-client-ca"}
	if err := env.Kube.Patch(ctx, in, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	if err := env.Postgres.AddHBA(ctx, "hostssl all "+strings.Join(roles, ",")+" 127.0.0.1/32 cert"); err != nil {
		t.Fatal(err)
	}
	return in
}

// certificateSecret waits until the Secret name holds a certificate whose
// serial is not one of not, and returns its data and the certificate.
func certificateSecret(ctx context.Context, t *testing.T, name string, timeout time.Duration, not ...string) (map[string][]byte, *x509.Certificate) {
	t.Helper()
	var d map[string][]byte
	var leaf *x509.Certificate
	err := providertest.Wait(ctx, timeout, func(ctx context.Context) (bool, error) {
		s := &corev1.Secret{}
		if err := env.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		pair, err := tls.X509KeyPair(s.Data["tls.crt"], s.Data["tls.key"])
		if err != nil {
			return false, nil
		}
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return false, err
		}
		d = s.Data
		for _, n := range not {
			if serial(leaf) == n {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("connection Secret %s with a new certificate: %v", name, err)
	}
	return d, leaf
}

func serial(c *x509.Certificate) string { return fmt.Sprintf("%x", c.SerialNumber) }

// mount writes the Secret's files into dir, as a volume with defaultMode
// 0600 would.
func mount(t *testing.T, d map[string][]byte, dir string) {
	t.Helper()
	if err := providertest.MountCredential(d, dir, "tls.crt", "tls.key", "tls.key.pk8", "ca.crt"); err != nil {
		t.Fatal(err)
	}
}

// TestCertificateLogin: a role with authentication Certificate logs in
// with the certificate its Secret delivers (psql with the uri, PgJDBC with
// the jdbc-url), has no password, gets its next certificate renewBefore
// the current one expires, and the previous one logs in until it expires
// and no longer. The key is only in the Secret.
func TestCertificateLogin(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	in := certificateInstance(ctx, t, "certs", "certapp", "certswitch")
	dir := t.TempDir()
	r := newRole("certapp", func(r *v1alpha1.PostgreSQLRole) {
		r.Spec.InstanceRef.Name = in.Name
		r.Spec.ForProvider.Authentication = v1alpha1.AuthenticationCertificate
		r.Spec.ClientCertificate = &v1alpha1.ClientCertificate{
			Duration: &metav1.Duration{Duration: time.Minute}, RenewBefore: &metav1.Duration{Duration: 40 * time.Second}, MountPath: dir,
		}
	})
	if err := env.Kube.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	waitCondition(ctx, t, r, corev1.ConditionTrue, xpv2.ReasonAvailable)
	d, first := certificateSecret(ctx, t, "certapp-conn", 30*time.Second)

	t.Run("Delivered", func(t *testing.T) {
		for _, k := range []string{"username", "host", "port", "database", "sslmode", "uri", "jdbc-url", "ca.crt", "tls.crt", "tls.key", "tls.key.pk8"} {
			if len(d[k]) == 0 {
				t.Errorf("the connection Secret has no %s", k)
			}
		}
		for _, k := range []string{"password", "pgpass"} {
			if _, ok := d[k]; ok {
				t.Errorf("the connection Secret of a certificate login has %s", k)
			}
		}
		if first.Subject.CommonName != "certapp" || first.NotAfter.Sub(first.NotBefore) > time.Minute+6*time.Minute {
			t.Errorf("certificate for %q valid %s to %s, want CN certapp valid about a minute", first.Subject.CommonName, first.NotBefore, first.NotAfter)
		}
		for _, want := range []string{"sslcert=" + filepath.Join(dir, "tls.crt"), "sslkey=" + filepath.Join(dir, "tls.key"), "sslrootcert=" + filepath.Join(dir, "ca.crt")} {
			if !strings.Contains(strings.ReplaceAll(string(d["uri"]), "%2F", "/"), want) {
				t.Errorf("uri %s does not name %s", d["uri"], want)
			}
		}
	})

	mount(t, d, dir)
	t.Run("PsqlLogsInWithTheURI", func(t *testing.T) {
		if user, err := providertest.PsqlLogin(ctx, string(d["uri"])); err != nil || user != "certapp" {
			t.Errorf("psql with the uri: user %q, %v", user, err)
		}
	})

	t.Run("PgJDBCLogsInWithTheJDBCURL", func(t *testing.T) {
		if out, err := pgJDBCLogin(ctx, t, d, string(d["jdbc-url"])); err != nil || out != "certapp" {
			t.Errorf("PgJDBC with the jdbc-url %s: %v: %s", d["jdbc-url"], err, out)
		}
	})

	t.Run("NoPassword", func(t *testing.T) {
		var none bool
		if err := admin(ctx, t).QueryRow(ctx, "SELECT rolpassword IS NULL FROM pg_catalog.pg_authid WHERE rolname = 'certapp'").Scan(&none); err != nil || !none {
			t.Errorf("certapp has a password (%v)", err)
		}
	})

	t.Run("KeyOnlyInTheSecret", func(t *testing.T) {
		got := &v1alpha1.PostgreSQLRole{}
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), got); err != nil {
			t.Fatal(err)
		}
		c := got.Status.AtProvider.Credential
		if c == nil || c.Certificate == nil || c.Certificate.SerialNumber != serial(first) || !c.Certificate.NotAfter.Time.Equal(first.NotAfter) ||
			!c.Certificate.RenewAt.Time.Equal(first.NotAfter.Add(-40*time.Second)) {
			t.Errorf("status.atProvider.credential %+v does not describe the certificate %s expiring %s", c, serial(first), first.NotAfter)
		}
		events := &corev1.EventList{}
		if err := env.Kube.List(ctx, events, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		issued := false
		for _, e := range events.Items {
			if e.InvolvedObject.Name == r.Name && e.Reason == "IssuedCertificate" && strings.Contains(e.Message, serial(first)) {
				issued = true
			}
			if strings.Contains(e.Message, "PRIVATE KEY") {
				t.Errorf("event %s holds a key", e.Reason)
			}
		}
		if !issued {
			t.Error("no IssuedCertificate event names the certificate")
		}
		body, _ := json.Marshal(got)
		key := strings.Split(strings.TrimSpace(string(d["tls.key"])), "\n")[1]
		if strings.Contains(string(body), key) || strings.Contains(string(body), "PRIVATE KEY") {
			t.Error("the PostgreSQLRole holds the key")
		}
	})

	// Renewed 40s before the first expires, 20s after it was issued.
	d2, second := certificateSecret(ctx, t, "certapp-conn", 45*time.Second, serial(first))
	old := t.TempDir()
	mount(t, d, old)
	mount(t, d2, dir)
	oldURI := strings.ReplaceAll(string(d2["uri"]), strings.ReplaceAll(dir, "/", "%2F"), strings.ReplaceAll(old, "/", "%2F"))
	t.Run("BothLogInAcrossTheSwitch", func(t *testing.T) {
		if time.Now().After(first.NotAfter) {
			t.Fatalf("renewed too late: the first certificate expired at %s", first.NotAfter)
		}
		if user, err := providertest.PsqlLogin(ctx, string(d2["uri"])); err != nil || user != "certapp" {
			t.Errorf("the new certificate: user %q, %v", user, err)
		}
		if user, err := providertest.PsqlLogin(ctx, oldURI); err != nil || user != "certapp" {
			t.Errorf("the previous certificate, before it expires: user %q, %v", user, err)
		}
	})

	t.Run("ThePreviousFailsOnceExpired", func(t *testing.T) {
		time.Sleep(time.Until(first.NotAfter) + 2*time.Second)
		if user, err := providertest.PsqlLogin(ctx, oldURI); err == nil {
			t.Errorf("the previous certificate logged in as %q after it expired", user)
		}
		if time.Now().After(second.NotAfter) {
			t.Fatalf("too slow to tell: the second certificate expired too, at %s", second.NotAfter)
		}
		if user, err := providertest.PsqlLogin(ctx, string(d2["uri"])); err != nil || user != "certapp" {
			t.Errorf("the new certificate: user %q, %v", user, err)
		}
	})
}

// TestPasswordRoleMovesToCertificate: a role that logged in with a
// password, switched to Certificate, loses its password on the server and
// in its Secret, and logs in with the certificate delivered.
func TestPasswordRoleMovesToCertificate(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	in := certificateInstance(ctx, t, "certs2", "certswitch2")
	dir := t.TempDir()
	r := newRole("certswitch2", func(r *v1alpha1.PostgreSQLRole) { r.Spec.InstanceRef.Name = in.Name })
	if err := env.Kube.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	waitCondition(ctx, t, r, corev1.ConditionTrue, xpv2.ReasonAvailable)
	if _, err := env.ConnectionSecret(ctx, ns, "certswitch2-conn"); err != nil {
		t.Fatal(err)
	}
	got := &v1alpha1.PostgreSQLRole{}
	if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), got); err != nil {
		t.Fatal(err)
	}
	orig := got.DeepCopy()
	got.Spec.ForProvider.Authentication = v1alpha1.AuthenticationCertificate
	// The test CA is valid for 30 days: less than the default renewBefore.
	got.Spec.ClientCertificate = &v1alpha1.ClientCertificate{Duration: &metav1.Duration{Duration: 24 * time.Hour}, MountPath: dir}
	if err := env.Kube.Patch(ctx, got, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	var d map[string][]byte
	err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		s := &corev1.Secret{}
		err := env.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "certswitch2-conn"}, s)
		_, pw := s.Data["password"]
		d = s.Data
		return err == nil && len(s.Data["tls.crt"]) > 0 && !pw, err
	})
	if err != nil {
		cur := &v1alpha1.PostgreSQLRole{}
		_ = env.Kube.Get(ctx, client.ObjectKeyFromObject(r), cur)
		keys := slices.Sorted(maps.Keys(d))
		t.Fatalf("the Secret did not trade its password for a certificate: %v; it holds %v; the role: %v", err, keys, cur.Status.Conditions)
	}
	var none bool
	if err := admin(ctx, t).QueryRow(ctx, "SELECT rolpassword IS NULL FROM pg_catalog.pg_authid WHERE rolname = 'certswitch2'").Scan(&none); err != nil || !none {
		t.Errorf("certswitch2 kept its password (%v)", err)
	}
	mount(t, d, dir)
	if user, err := providertest.PsqlLogin(ctx, string(d["uri"])); err != nil || user != "certswitch2" {
		t.Errorf("psql with the uri: user %q, %v", user, err)
	}
	after := waitCondition(ctx, t, r, corev1.ConditionTrue, xpv2.ReasonAvailable)
	if p := after.Status.AtProvider.Plan; p != nil && len(p.Statements) > 0 {
		t.Errorf("plan after the switch: %v", p.Statements)
	}

	t.Run("NothingWrittenInSteadyState", func(t *testing.T) {
		// Neither the role nor its Secret, over two polls: the certificate
		// read back is the one delivered.
		secret := &corev1.Secret{}
		if err := env.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "certswitch2-conn"}, secret); err != nil {
			t.Fatal(err)
		}
		// Once the drift baseline has caught up with the switch.
		role := &v1alpha1.PostgreSQLRole{}
		err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
			err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), role)
			b := role.Status.AtProvider.DriftBaseline
			return err == nil && b != nil && b.Generation == role.Generation, err
		})
		if err != nil {
			t.Fatalf("the drift baseline did not follow the switch: %v", err)
		}
		time.Sleep(5 * time.Second)
		secretAfter, roleAfter := &corev1.Secret{}, &v1alpha1.PostgreSQLRole{}
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(secret), secretAfter); err != nil {
			t.Fatal(err)
		}
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), roleAfter); err != nil {
			t.Fatal(err)
		}
		if secretAfter.ResourceVersion != secret.ResourceVersion || roleAfter.ResourceVersion != role.ResourceVersion {
			t.Errorf("written over two polls with nothing changed: Secret %s -> %s, role %s -> %s; the role (-before +after):\n%s",
				secret.ResourceVersion, secretAfter.ResourceVersion, role.ResourceVersion, roleAfter.ResourceVersion,
				cmp.Diff(role, roleAfter, cmpopts.IgnoreFields(metav1.ObjectMeta{}, "ResourceVersion", "ManagedFields")))
		}
	})

	t.Run("RotateAnnotationIssuesOneNow", func(t *testing.T) {
		// A day's certificate, far from its renewal: only the request
		// replaces it.
		_, cur := certificateSecret(ctx, t, "certswitch2-conn", 10*time.Second)
		got := &v1alpha1.PostgreSQLRole{}
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), got); err != nil {
			t.Fatal(err)
		}
		orig := got.DeepCopy()
		got.SetAnnotations(map[string]string{v1alpha1.AnnotationRotatePassword: "now"})
		if err := env.Kube.Patch(ctx, got, client.MergeFrom(orig)); err != nil {
			t.Fatal(err)
		}
		d, next := certificateSecret(ctx, t, "certswitch2-conn", 15*time.Second, serial(cur))
		if !next.NotAfter.After(cur.NotAfter) {
			t.Errorf("the certificate issued on request expires at %s, before the one it replaces (%s)", next.NotAfter, cur.NotAfter)
		}
		mount(t, d, dir)
		if user, err := providertest.PsqlLogin(ctx, string(d["uri"])); err != nil || user != "certswitch2" {
			t.Errorf("the new certificate: user %q, %v", user, err)
		}
	})
}

// TestCertificateNeedsAnOfferedCA: a certificate login on an Instance that
// offers no client certificates, or names a CA Secret that has not opted
// in, is refused with a condition saying so, and no role is created.
func TestCertificateNeedsAnOfferedCA(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	unlabelled := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "optout-client-ca", Namespace: providertest.Namespace},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: env.Postgres.CA.CertPEM, corev1.TLSPrivateKeyKey: []byte("not read")},
	}
	if err := env.Kube.Create(ctx, unlabelled); err != nil {
		t.Fatal(err)
	}
	in, err := env.Instance(ctx, "optout")
	if err != nil {
		t.Fatal(err)
	}
	orig := in.DeepCopy()
	in.Spec.ClientCertificateAuthorityRef = &v1alpha1.ClientCertificateAuthorityReference{Name: unlabelled.Name}
	if err := env.Kube.Patch(ctx, in, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ instance, want string }{
		"certnoca":   {instance: main.Name, want: `PostgreSQLInstance main offers no client certificates (it has no spec.clientCertificateAuthorityRef)`},
		"certoptout": {instance: in.Name, want: "has not opted in as a client certificate authority: label it " + v1alpha1.LabelClientCertificateAuthority + "=true"},
	} {
		t.Run(name, func(t *testing.T) {
			r := newRole(name, func(r *v1alpha1.PostgreSQLRole) {
				r.Spec.InstanceRef.Name = tc.instance
				r.Spec.ForProvider.Authentication = v1alpha1.AuthenticationCertificate
			})
			if err := env.Kube.Create(ctx, r); err != nil {
				t.Fatal(err)
			}
			err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
				err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), r)
				c := r.GetCondition(xpv2.TypeSynced)
				return c.Status == corev1.ConditionFalse && strings.Contains(c.Message, tc.want), err
			})
			if err != nil {
				t.Fatalf("Synced condition %+v does not say %q: %v", r.GetCondition(xpv2.TypeSynced), tc.want, err)
			}
			var exists bool
			if err := admin(ctx, t).QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = $1)", name).Scan(&exists); err != nil || exists {
				t.Errorf("role %s was created (%v)", name, err)
			}
		})
	}
}

// TestCertificatePlanIsTheTruth: a role created for a certificate plans no
// password, and a password role moved to a certificate, previewed with
// managementPolicies [Observe], plans the removal of its password, which
// is what the provider sends once widened.
func TestCertificatePlanIsTheTruth(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	in := certificateInstance(ctx, t, "certs3", "rp_createcertificate", "rp_movetocertificate")
	certificate := func(r *v1alpha1.PostgreSQLRole) {
		r.Spec.ForProvider.Login = ptr.To(true)
		r.Spec.ForProvider.Authentication = v1alpha1.AuthenticationCertificate
		r.Spec.ClientCertificate = &v1alpha1.ClientCertificate{Duration: &metav1.Duration{Duration: 24 * time.Hour}}
	}
	providertest.PlanCases(ctx, t, env, map[string]providertest.PlanCase[*v1alpha1.PostgreSQLRole]{
		"CreateCertificate": {
			Change: certificate,
			Says:   []string{"CREATE ROLE", "LOGIN"},
			Lacks:  []string{"PASSWORD"},
		},
		"MoveToCertificate": {
			Existing: func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.Login = ptr.To(true) },
			Change:   certificate,
			Says:     []string{`ALTER ROLE "rp_movetocertificate" PASSWORD NULL`},
		},
	}, planRole(in.Name))
}

// TestNoCertificateForARoleNotItsOwn: someone allowed to create
// PostgreSQLRoles names a login role that exists and is not theirs (a
// DBA's, here one pg_hba.conf lets in by certificate) and asks for a
// certificate, managed or Observe-only: the resource is refused or
// imported read-only, and no certificate for that role is ever signed.
func TestNoCertificateForARoleNotItsOwn(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	in := certificateInstance(ctx, t, "certs4", "certdba")
	env.AdminSQL(ctx, t, "postgres", "CREATE ROLE certdba LOGIN")
	for name, mutate := range map[string]func(*v1alpha1.PostgreSQLRole){
		"certdba": func(*v1alpha1.PostgreSQLRole) {},
		"certdba-observe": func(r *v1alpha1.PostgreSQLRole) {
			r.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := newRole(name, func(r *v1alpha1.PostgreSQLRole) {
				r.Spec.InstanceRef.Name = in.Name
				r.Spec.ForProvider.Name = ptr.To("certdba")
				r.Spec.ForProvider.Authentication = v1alpha1.AuthenticationCertificate
				mutate(r)
			})
			env.CreateForTest(ctx, t, r)
			// Refused as another's (Conflict), or imported read-only.
			err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
				err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), r)
				c := r.GetCondition(xpv2.TypeReady)
				return err == nil && (c.Reason == v1alpha1.ReasonConflict || c.Reason == v1alpha1.ReasonObserveOnly), err
			})
			if err != nil {
				t.Fatalf("Ready condition %+v: %v", r.GetCondition(xpv2.TypeReady), err)
			}
			// Two polls more, then nothing may have been delivered or
			// recorded.
			time.Sleep(5 * time.Second)
			s := &corev1.Secret{}
			err = env.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-conn"}, s)
			if err == nil && (len(s.Data["tls.crt"]) > 0 || len(s.Data["tls.key"]) > 0) {
				t.Error("a certificate for a role the resource does not own was delivered")
			}
			if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), r); err != nil {
				t.Fatal(err)
			}
			if c := r.Status.AtProvider.Credential; c != nil && c.Certificate != nil {
				t.Errorf("status records a certificate %s for a role the resource does not own", c.Certificate.SerialNumber)
			}
		})
	}
}
