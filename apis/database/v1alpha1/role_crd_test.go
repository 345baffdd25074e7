package v1alpha1_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

func validRotatingRole(name string) *v1alpha1.PostgreSQLRole {
	return &v1alpha1.PostgreSQLRole{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: v1alpha1.PostgreSQLRoleSpec{
			InstanceRef:                      v1alpha1.InstanceReference{Name: "main"},
			ForProvider:                      v1alpha1.PostgreSQLRoleParameters{Login: ptr.To(true)},
			WriteConnectionSecretToReference: &xpv2.LocalSecretReference{Name: name + "-conn"},
			PasswordRotation: &v1alpha1.PasswordRotation{
				Mode: v1alpha1.RotationAlternating, MaxAge: &metav1.Duration{Duration: 720 * time.Hour},
				GracePeriod: &metav1.Duration{Duration: time.Hour},
			},
		},
	}
}

func TestRoleRotationValidation(t *testing.T) {
	suite.Server(t)
	d := func(s string) *metav1.Duration {
		v, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		return &metav1.Duration{Duration: v}
	}
	cases := map[string]struct {
		reason string
		mutate func(*v1alpha1.PostgreSQLRole)
		want   []string
	}{
		"MaxAgeAndSchedule": {
			reason: "One schedule, not two.",
			mutate: func(r *v1alpha1.PostgreSQLRole) { r.Spec.PasswordRotation.Schedule = "@weekly" },
			want:   []string{"set one of maxAge and schedule, not both"},
		},
		"MaxAgeTooShort": {
			reason: "A rotation every second would churn logins.",
			mutate: func(r *v1alpha1.PostgreSQLRole) {
				r.Spec.PasswordRotation.MaxAge, r.Spec.PasswordRotation.GracePeriod = d("1s"), nil
			},
			want: []string{"maxAge must be at least 10s"},
		},
		"GraceNotShorterThanMaxAge": {
			reason: "The next rotation would reuse a login still in its grace period.",
			mutate: func(r *v1alpha1.PostgreSQLRole) { r.Spec.PasswordRotation.GracePeriod = d("720h") },
			want:   []string{"gracePeriod must be shorter than maxAge"},
		},
		"EndSessionsBeforeGraceEnds": {
			reason: "Sessions are not ended while their login still accepts new ones.",
			mutate: func(r *v1alpha1.PostgreSQLRole) { r.Spec.PasswordRotation.EndSessionsAfter = d("30m") },
			want:   []string{"endSessionsAfter must not be shorter than gracePeriod"},
		},
		"NotADuration": {
			reason: "Durations are Go durations.",
			mutate: func(r *v1alpha1.PostgreSQLRole) { r.Spec.PasswordRotation.MaxAge = &metav1.Duration{Duration: 0} },
			want:   []string{"maxAge must be at least 10s"},
		},
		"NotACronExpression": {
			reason: "A schedule has five fields.",
			mutate: func(r *v1alpha1.PostgreSQLRole) {
				r.Spec.PasswordRotation.MaxAge, r.Spec.PasswordRotation.GracePeriod = nil, nil
				r.Spec.PasswordRotation.Schedule = "daily at three"
			},
			want: []string{"spec.passwordRotation.schedule", "should match"},
		},
		"AlternatingWithoutLogin": {
			reason: "Alternating hands out logins.",
			mutate: func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.Login = ptr.To(false) },
			want:   []string{"passwordRotation mode Alternating needs forProvider.login true and writeConnectionSecretToRef"},
		},
		"AlternatingWithoutSecret": {
			reason: "Alternating publishes what it generates.",
			mutate: func(r *v1alpha1.PostgreSQLRole) { r.Spec.WriteConnectionSecretToReference = nil },
			want:   []string{"passwordRotation mode Alternating needs forProvider.login true and writeConnectionSecretToRef"},
		},
		"AlternatingWithOwnPassword": {
			reason: "The provider cannot give two logins a user's one password, nor rotate it.",
			mutate: func(r *v1alpha1.PostgreSQLRole) {
				r.Spec.ForProvider.PasswordSecretRef = &v1alpha1.SecretKeyReference{Name: "pw", Key: "password"}
			},
			want: []string{"without forProvider.passwordSecretRef"},
		},
		"ScheduleWithOwnPassword": {
			reason: "A password from a Secret is the user's to change.",
			mutate: func(r *v1alpha1.PostgreSQLRole) {
				r.Spec.PasswordRotation = &v1alpha1.PasswordRotation{Mode: v1alpha1.RotationInPlace, MaxAge: d("24h")}
				r.Spec.ForProvider.PasswordSecretRef = &v1alpha1.SecretKeyReference{Name: "pw", Key: "password"}
			},
			want: []string{"passwordRotation maxAge and schedule rotate generated passwords"},
		},
		"GraceInPlace": {
			reason: "An in-place rotation leaves no previous login to keep.",
			mutate: func(r *v1alpha1.PostgreSQLRole) { r.Spec.PasswordRotation.Mode = v1alpha1.RotationInPlace },
			want:   []string{"gracePeriod and endSessionsAfter need mode Alternating"},
		},
		"NameTooLongForLogins": {
			reason: "The logins add _a and _b to the name.",
			mutate: func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.Name = ptr.To(strings.Repeat("n", 62)) },
			want:   []string{"at most 61 characters"},
		},
		"MetadataNameTooLongForLogins": {
			reason: "The same without forProvider.name.",
			mutate: func(r *v1alpha1.PostgreSQLRole) { r.Name = strings.Repeat("n", 62) },
			want:   []string{"at most 61 characters"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := validRotatingRole(strings.ToLower(name))
			tc.mutate(r)
			rejects(t, r, tc.reason, tc.want...)
		})
	}
}

func TestRoleRotationModeOneWay(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	r := validRotatingRole("oneway")
	r.Spec.PasswordRotation = &v1alpha1.PasswordRotation{Mode: v1alpha1.RotationInPlace, Schedule: "0 3 * * 1"}
	if err := kube.Create(ctx, r); err != nil {
		t.Fatalf("an InPlace role on a weekly schedule: %v", err)
	}
	t.Cleanup(func() { _ = kube.Delete(ctx, r) })
	update := func(mutate func(*v1alpha1.PostgreSQLRole)) error {
		cur := &v1alpha1.PostgreSQLRole{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(r), cur); err != nil {
			t.Fatal(err)
		}
		mutate(cur)
		return kube.Update(ctx, cur)
	}
	if err := update(func(r *v1alpha1.PostgreSQLRole) { r.Spec.PasswordRotation.Mode = v1alpha1.RotationAlternating }); err != nil {
		t.Fatalf("InPlace to Alternating: %v", err)
	}
	for what, mutate := range map[string]func(*v1alpha1.PostgreSQLRole){
		"back to InPlace":  func(r *v1alpha1.PostgreSQLRole) { r.Spec.PasswordRotation.Mode = v1alpha1.RotationInPlace },
		"rotation removed": func(r *v1alpha1.PostgreSQLRole) { r.Spec.PasswordRotation = nil },
	} {
		if err := update(mutate); err == nil || !strings.Contains(err.Error(), "cannot be turned back to InPlace") {
			t.Errorf("%s: got %v, want a refusal", what, err)
		}
	}
}

// TestVaultDeliveryValidation: a role's vault path is set once, at
// creation or added to a role that writes a connection Secret (a move to
// the vault, both delivering meanwhile), and never changes or goes; an
// Instance's credentialVault is https, with exactly one way to log in.
func TestVaultDeliveryValidation(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	secret := &xpv2.LocalSecretReference{Name: "orders"}
	vault := &v1alpha1.VaultPath{Name: "orders"}
	const refused = "writeConnectionDetailsToVault cannot be changed or removed after creation, and is added later only to a role that writes a connection Secret"
	for name, tc := range map[string]struct {
		secret, vault       bool
		update              func(*v1alpha1.PostgreSQLRoleSpec)
		wantRefusalOnUpdate bool
	}{
		"VaultAddedToASecretRole": {secret: true, update: func(s *v1alpha1.PostgreSQLRoleSpec) { s.WriteConnectionDetailsToVault = vault }},
		"SecretRemovedOnceBoth":   {secret: true, vault: true, update: func(s *v1alpha1.PostgreSQLRoleSpec) { s.WriteConnectionSecretToReference = nil }},
		"VaultAddedToNothing":     {update: func(s *v1alpha1.PostgreSQLRoleSpec) { s.WriteConnectionDetailsToVault = vault }, wantRefusalOnUpdate: true},
		"VaultAddedAsSecretGoes": {secret: true, update: func(s *v1alpha1.PostgreSQLRoleSpec) {
			s.WriteConnectionDetailsToVault, s.WriteConnectionSecretToReference = vault, nil
		}},
		"VaultMoved": {vault: true, update: func(s *v1alpha1.PostgreSQLRoleSpec) {
			s.WriteConnectionDetailsToVault = &v1alpha1.VaultPath{Name: "elsewhere"}
		}, wantRefusalOnUpdate: true},
		"VaultRemoved": {secret: true, vault: true, update: func(s *v1alpha1.PostgreSQLRoleSpec) { s.WriteConnectionDetailsToVault = nil }, wantRefusalOnUpdate: true},
		"VaultSwappedForASecret": {vault: true, update: func(s *v1alpha1.PostgreSQLRoleSpec) {
			s.WriteConnectionDetailsToVault, s.WriteConnectionSecretToReference = nil, secret
		}, wantRefusalOnUpdate: true},
	} {
		t.Run(name, func(t *testing.T) {
			r := &v1alpha1.PostgreSQLRole{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "delivery-" + strings.ToLower(name)},
				Spec: v1alpha1.PostgreSQLRoleSpec{
					InstanceRef: v1alpha1.InstanceReference{Name: "main"},
					ForProvider: v1alpha1.PostgreSQLRoleParameters{Name: ptr.To("delivery"), Login: ptr.To(true)},
				},
			}
			if tc.secret {
				r.Spec.WriteConnectionSecretToReference = secret
			}
			if tc.vault {
				r.Spec.WriteConnectionDetailsToVault = vault
			}
			if err := kube.Create(ctx, r); err != nil {
				t.Fatalf("creating the role (Secret %t, vault %t) was refused: %v", tc.secret, tc.vault, err)
			}
			t.Cleanup(func() { _ = kube.Delete(context.WithoutCancel(ctx), r) })
			changed := r.DeepCopy()
			tc.update(&changed.Spec)
			err := kube.Update(ctx, changed)
			if tc.wantRefusalOnUpdate && (err == nil || !strings.Contains(err.Error(), refused)) {
				t.Errorf("update: %v, want a refusal", err)
			}
			if !tc.wantRefusalOnUpdate && err != nil {
				t.Errorf("update refused: %v", err)
			}
		})
	}

	instance := func(name string, cv v1alpha1.CredentialVault) *v1alpha1.PostgreSQLInstance {
		return &v1alpha1.PostgreSQLInstance{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.PostgreSQLInstanceSpec{
				Endpoint:           v1alpha1.Endpoint{Host: "db.example", Hostaddr: "127.0.0.1"},
				AdminCredentialRef: &v1alpha1.AdminCredentialReference{Name: "admin"},
				CredentialVault:    &cv,
			},
		}
	}
	token := v1alpha1.CredentialVaultAuth{TokenSecretRef: &v1alpha1.VaultTokenReference{Name: "t"}}
	for name, tc := range map[string]struct {
		cv   v1alpha1.CredentialVault
		want string
	}{
		"PlainHTTP":        {v1alpha1.CredentialVault{Address: "http://openbao:8200", Auth: token}, "spec.credentialVault.address"},
		"NoAuth":           {v1alpha1.CredentialVault{Address: "https://openbao:8200"}, "set exactly one of kubernetes and tokenSecretRef"},
		"TwoAuths":         {v1alpha1.CredentialVault{Address: "https://openbao:8200", Auth: v1alpha1.CredentialVaultAuth{TokenSecretRef: token.TokenSecretRef, Kubernetes: &v1alpha1.VaultKubernetesAuth{Role: "r"}}}, "set exactly one of kubernetes and tokenSecretRef"},
		"PrefixEscapes":    {v1alpha1.CredentialVault{Address: "https://openbao:8200", PathPrefix: "../sys", Auth: token}, "spec.credentialVault.pathPrefix"},
		"NamespaceEscapes": {v1alpha1.CredentialVault{Address: "https://openbao:8200", Namespace: "team-a/../root", Auth: token}, "spec.credentialVault.namespace"},
	} {
		t.Run(name, func(t *testing.T) {
			if err := kube.Create(ctx, instance("cv-"+strings.ToLower(name), tc.cv)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("credentialVault %+v: %v, want a refusal naming %q", tc.cv, err, tc.want)
			}
		})
	}
	ok := instance("cv-accepted", v1alpha1.CredentialVault{Address: "https://openbao.openbao.svc:8200", Namespace: "team-a/prod", Auth: token})
	if err := kube.Create(ctx, ok); err != nil {
		t.Fatalf("a valid credentialVault was refused: %v", err)
	}
	t.Cleanup(func() { _ = kube.Delete(context.WithoutCancel(ctx), ok) })
	if cv := ok.Spec.CredentialVault; cv.Mount != "secret" || cv.PathPrefix != "postgresql" || cv.DeletionPolicy != v1alpha1.VaultPathDelete {
		t.Errorf("defaults: mount %q, pathPrefix %q, deletionPolicy %q; want secret, postgresql, Delete", cv.Mount, cv.PathPrefix, cv.DeletionPolicy)
	}
}

func validCertificateRole(name string) *v1alpha1.PostgreSQLRole {
	return &v1alpha1.PostgreSQLRole{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: v1alpha1.PostgreSQLRoleSpec{
			InstanceRef:                      v1alpha1.InstanceReference{Name: "main"},
			ForProvider:                      v1alpha1.PostgreSQLRoleParameters{Login: ptr.To(true), Authentication: v1alpha1.AuthenticationCertificate},
			WriteConnectionSecretToReference: &xpv2.LocalSecretReference{Name: name + "-conn"},
			ClientCertificate: &v1alpha1.ClientCertificate{
				Duration: &metav1.Duration{Duration: 24 * time.Hour}, RenewBefore: &metav1.Duration{Duration: 8 * time.Hour}, MountPath: "/creds",
			},
		},
	}
}

// TestRoleCertificateValidation: a certificate login is refused at
// admission where it would have no certificate to deliver, a password
// the spec also asks for, or lifetimes that cannot work.
func TestRoleCertificateValidation(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	ok := validCertificateRole("certificateok")
	if err := kube.Create(ctx, ok); err != nil {
		t.Fatalf("a valid certificate login: %v", err)
	}
	t.Cleanup(func() { _ = kube.Delete(ctx, ok) })
	d := func(s string) *metav1.Duration {
		v, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		return &metav1.Duration{Duration: v}
	}
	const needs = "forProvider.authentication Certificate needs forProvider.login true and writeConnectionSecretToRef or writeConnectionDetailsToVault"
	cases := map[string]struct {
		reason string
		mutate func(*v1alpha1.PostgreSQLRole)
		want   []string
	}{
		"WithoutLogin": {
			reason: "Only a login logs in.",
			mutate: func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.Login = ptr.To(false) },
			want:   []string{needs},
		},
		"NowhereToDeliver": {
			reason: "A certificate nobody can read is never issued.",
			mutate: func(r *v1alpha1.PostgreSQLRole) { r.Spec.WriteConnectionSecretToReference = nil },
			want:   []string{needs},
		},
		"WithAPasswordSecret": {
			reason: "A certificate login has no password.",
			mutate: func(r *v1alpha1.PostgreSQLRole) {
				r.Spec.ForProvider.PasswordSecretRef = &v1alpha1.SecretKeyReference{Name: "pw", Key: "password"}
			},
			want: []string{needs},
		},
		"WithValidUntil": {
			reason: "VALID UNTIL binds passwords only: it would mislead.",
			mutate: func(r *v1alpha1.PostgreSQLRole) {
				r.Spec.ForProvider.ValidUntil = &metav1.Time{Time: time.Now().Add(time.Hour)}
			},
			want: []string{needs},
		},
		"WithPasswordRotation": {
			reason: "Certificates are renewed by clientCertificate.",
			mutate: func(r *v1alpha1.PostgreSQLRole) {
				r.Spec.PasswordRotation = &v1alpha1.PasswordRotation{Mode: v1alpha1.RotationInPlace, MaxAge: d("24h")}
			},
			want: []string{needs},
		},
		"ClientCertificateForAPassword": {
			reason: "Certificate settings mean nothing to a password login.",
			mutate: func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.Authentication = v1alpha1.AuthenticationPassword },
			want:   []string{"clientCertificate needs forProvider.authentication Certificate"},
		},
		"DurationTooShort": {
			reason: "A certificate valid for seconds would be renewed all the time.",
			mutate: func(r *v1alpha1.PostgreSQLRole) {
				r.Spec.ClientCertificate.Duration, r.Spec.ClientCertificate.RenewBefore = d("30s"), d("10s")
			},
			want: []string{"duration must be at least 1m"},
		},
		"RenewBeforeNotShorterThanDuration": {
			reason: "The next certificate would be due as soon as it is issued.",
			mutate: func(r *v1alpha1.PostgreSQLRole) { r.Spec.ClientCertificate.RenewBefore = d("24h") },
			want:   []string{"renewBefore must be shorter than duration"},
		},
		"RenewBeforeNotShorterThanTheDefaultDuration": {
			reason: "The same against the default of 90 days.",
			mutate: func(r *v1alpha1.PostgreSQLRole) {
				r.Spec.ClientCertificate.Duration, r.Spec.ClientCertificate.RenewBefore = nil, d("2200h")
			},
			want: []string{"renewBefore must be shorter than duration (default 2160h)"},
		},
		"RenewBeforeTooShort": {
			reason: "Clients need time to read the next certificate.",
			mutate: func(r *v1alpha1.PostgreSQLRole) { r.Spec.ClientCertificate.RenewBefore = d("1s") },
			want:   []string{"renewBefore must be at least 10s"},
		},
		"RelativeMountPath": {
			reason: "libpq resolves a relative sslcert against the client's working directory.",
			mutate: func(r *v1alpha1.PostgreSQLRole) { r.Spec.ClientCertificate.MountPath = "creds" },
			want:   []string{"spec.clientCertificate.mountPath", "should match"},
		},
		"UnknownMethod": {
			reason: "Two methods.",
			mutate: func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.Authentication = "Kerberos" },
			want:   []string{"spec.forProvider.authentication", "Unsupported value"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := validCertificateRole(strings.ToLower(name))
			tc.mutate(r)
			rejects(t, r, tc.reason, tc.want...)
		})
	}
}
