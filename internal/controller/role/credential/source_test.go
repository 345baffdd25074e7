package credential

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

var t0 = time.Date(2026, 12, 1, 10, 30, 0, 0, time.UTC)

func mt(t time.Time) *metav1.Time { return &metav1.Time{Time: t} }

func TestNextRotation(t *testing.T) {
	cases := map[string]struct {
		rot    *v1alpha1.PasswordRotation
		want   time.Time
		wantOK bool
		err    bool
	}{
		"None":         {},
		"OnlyOnDemand": {rot: &v1alpha1.PasswordRotation{Mode: v1alpha1.RotationAlternating}},
		"MaxAge":       {rot: &v1alpha1.PasswordRotation{MaxAge: &metav1.Duration{Duration: 36 * time.Hour}}, want: t0.Add(36 * time.Hour), wantOK: true},
		"CronMonday":   {rot: &v1alpha1.PasswordRotation{Schedule: "0 3 * * 1"}, want: time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC), wantOK: true},
		"Daily":        {rot: &v1alpha1.PasswordRotation{Schedule: "@daily"}, want: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), wantOK: true},
		"BadCron":      {rot: &v1alpha1.PasswordRotation{Schedule: "61 * * * *"}, err: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok, err := NextRotation(tc.rot, t0)
			if (err != nil) != tc.err {
				t.Fatalf("error %v, want error %v", err, tc.err)
			}
			if ok != tc.wantOK || !got.Equal(tc.want) {
				t.Errorf("NextRotation = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

// TestPasswordSource is the lifecycle of a role that keeps its own login:
// where its password comes from.
func TestPasswordSource(t *testing.T) {
	withSecret := func(mg *v1alpha1.PostgreSQLRole) *v1alpha1.PostgreSQLRole {
		mg.Spec.WriteConnectionSecretToReference = &xpv2.LocalSecretReference{Name: "app-credentials"}
		return mg
	}
	loginRole := func() *v1alpha1.PostgreSQLRole {
		mg := &v1alpha1.PostgreSQLRole{}
		mg.Spec.ForProvider.Name = ptr.To("app")
		mg.Spec.ForProvider.Login = ptr.To(true)
		return withSecret(mg)
	}
	cases := map[string]struct {
		reason    string
		mg        *v1alpha1.PostgreSQLRole
		published string
		want      Source
	}{
		"NotALogin": {
			reason: "A role that does not log in has no password the provider manages.",
			mg:     withSecret(&v1alpha1.PostgreSQLRole{}),
			want:   None,
		},
		"BroughtByTheTenant": {
			reason: "passwordSecretRef wins over anything published.",
			mg: func() *v1alpha1.PostgreSQLRole {
				mg := loginRole()
				mg.Spec.ForProvider.PasswordSecretRef = &v1alpha1.SecretKeyReference{Name: "mine", Key: "pw"}
				return mg
			}(),
			published: "old",
			want:      FromSecretRef,
		},
		"NowhereToPublish": {
			reason: "A generated password no one could read is never made.",
			mg: func() *v1alpha1.PostgreSQLRole {
				mg := loginRole()
				mg.Spec.WriteConnectionSecretToReference = nil
				return mg
			}(),
			want: None,
		},
		"FirstDelivery": {
			reason: "Nothing published yet: a new password.",
			mg:     loginRole(),
			want:   GenerateNew,
		},
		"Kept": {
			reason:    "The published password is the role's.",
			mg:        loginRole(),
			published: "current",
			want:      KeepPublished,
		},
		"Requested": {
			reason: "A new rotate-password value replaces it.",
			mg: func() *v1alpha1.PostgreSQLRole {
				mg := loginRole()
				mg.SetAnnotations(map[string]string{v1alpha1.AnnotationRotatePassword: "now"})
				return mg
			}(),
			published: "current",
			want:      GenerateNew,
		},
		"RequestAlreadyHandled": {
			reason: "A request already handled does not rotate again.",
			mg: func() *v1alpha1.PostgreSQLRole {
				mg := loginRole()
				mg.SetAnnotations(map[string]string{v1alpha1.AnnotationRotatePassword: "now"})
				mg.Status.AtProvider.PasswordRotation = "now"
				return mg
			}(),
			published: "current",
			want:      KeepPublished,
		},
		"Due": {
			reason: "maxAge has passed since the password was set.",
			mg: func() *v1alpha1.PostgreSQLRole {
				mg := loginRole()
				mg.Spec.PasswordRotation = &v1alpha1.PasswordRotation{MaxAge: &metav1.Duration{Duration: time.Hour}}
				mg.Status.AtProvider.Credential = &v1alpha1.CredentialObservation{ActiveLogin: "app", ActiveSince: mt(t0.Add(-2 * time.Hour))}
				return mg
			}(),
			published: "current",
			want:      GenerateNew,
		},
		"NotDueYet": {
			mg: func() *v1alpha1.PostgreSQLRole {
				mg := loginRole()
				mg.Spec.PasswordRotation = &v1alpha1.PasswordRotation{MaxAge: &metav1.Duration{Duration: time.Hour}}
				mg.Status.AtProvider.Credential = &v1alpha1.CredentialObservation{ActiveLogin: "app", ActiveSince: mt(t0.Add(-time.Minute))}
				return mg
			}(),
			reason:    "maxAge has not passed: the password is kept.",
			published: "current",
			want:      KeepPublished,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := SourceOf(tc.mg, tc.published, t0)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("%s\nSourceOf = %d, want %d", tc.reason, got, tc.want)
			}
		})
	}
}
