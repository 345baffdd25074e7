package role

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
)

var t0 = time.Date(2026, 12, 1, 10, 30, 0, 0, time.UTC)

func mt(t time.Time) *metav1.Time { return &metav1.Time{Time: t} }

func TestWakeAfter(t *testing.T) {
	cases := map[string]struct {
		c    *v1alpha1.CredentialObservation
		want time.Duration
	}{
		"NothingKnown": {},
		"NothingDue":   {c: &v1alpha1.CredentialObservation{ActiveLogin: "a"}},
		"NextRotation": {c: &v1alpha1.CredentialObservation{NextRotation: mt(t0.Add(time.Hour))}, want: time.Hour + time.Second},
		"GraceEndsFirst": {c: &v1alpha1.CredentialObservation{
			NextRotation: mt(t0.Add(time.Hour)), PreviousLogin: "b", PreviousLoginUntil: mt(t0.Add(time.Minute)),
		}, want: time.Minute + time.Second},
		"SessionsEndOnlyWhenThereAreSome": {c: &v1alpha1.CredentialObservation{
			PreviousLogin: "b", PreviousLoginUntil: mt(t0.Add(-time.Minute)), PreviousSessionsEndAt: mt(t0.Add(time.Minute)),
		}},
		"SessionsEnd": {c: &v1alpha1.CredentialObservation{
			PreviousLogin: "b", PreviousLoginUntil: mt(t0.Add(-time.Minute)), PreviousSessionsEndAt: mt(t0.Add(time.Minute)), PreviousSessions: 2,
		}, want: time.Minute + time.Second},
		"PastIsNotAWake": {c: &v1alpha1.CredentialObservation{NextRotation: mt(t0.Add(-time.Hour))}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			mg := &v1alpha1.PostgreSQLRole{}
			mg.Status.AtProvider.Credential = tc.c
			if got := wakeAfter(mg, t0); got != tc.want {
				t.Errorf("wakeAfter = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestTrack: the status follows the Secret, which is the truth after a
// stop between publishing and recording.
func TestTrack(t *testing.T) {
	grace := &metav1.Duration{Duration: 10 * time.Minute}
	cases := map[string]struct {
		reason     string
		secretUser string
		annotation string
		before     *v1alpha1.CredentialObservation
		want       *v1alpha1.CredentialObservation
		wantHandle string
	}{
		"FirstLoginNotYet": {
			reason: "A new role's Secret holds nothing: nothing is active.",
			want:   &v1alpha1.CredentialObservation{},
		},
		"OwnLoginBeforeAlternating": {
			reason:     "A role that logged in itself keeps it as the active login until the first rotation.",
			secretUser: "app",
			want:       &v1alpha1.CredentialObservation{ActiveLogin: "app", ActiveSince: mt(t0)},
		},
		"Steady": {
			reason:     "Status and Secret agree: nothing changes but the previous login's state.",
			secretUser: "app_b",
			before:     &v1alpha1.CredentialObservation{ActiveLogin: "app_b", ActiveSince: mt(t0.Add(-time.Hour)), PreviousLogin: "app_a", PreviousLoginUntil: mt(t0.Add(-time.Minute))},
			want: &v1alpha1.CredentialObservation{ActiveLogin: "app_b", ActiveSince: mt(t0.Add(-time.Hour)), PreviousLogin: "app_a", PreviousLoginUntil: mt(t0.Add(-time.Minute)),
				PreviousLoginState: v1alpha1.PreviousLoginRetired, PreviousSessions: 3},
		},
		"SwitchedWithoutStatus": {
			reason:     "A stop after the Secret switched: the switch counts from now, the previous login gets its whole grace, the request is handled.",
			secretUser: "app_a",
			annotation: "now",
			before:     &v1alpha1.CredentialObservation{ActiveLogin: "app_b", ActiveSince: mt(t0.Add(-time.Hour))},
			want: &v1alpha1.CredentialObservation{ActiveLogin: "app_a", ActiveSince: mt(t0), PreviousLogin: "app_b",
				PreviousLoginState: v1alpha1.PreviousLoginGrace, PreviousLoginUntil: mt(t0.Add(10 * time.Minute)), PreviousSessions: 1},
			wantHandle: "now",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			mg := &v1alpha1.PostgreSQLRole{}
			mg.Spec.ForProvider.Name = ptrTo("app")
			mg.Spec.PasswordRotation = &v1alpha1.PasswordRotation{Mode: v1alpha1.RotationAlternating, GracePeriod: grace}
			if tc.annotation != "" {
				mg.SetAnnotations(map[string]string{v1alpha1.AnnotationRotatePassword: tc.annotation})
			}
			mg.Status.AtProvider.Credential = tc.before
			l := &logins{base: "app", names: loginNames("app"), user: tc.secretUser, password: "pw", roles: map[string]postgres.ObservedLogin{
				"app_a": {Name: "app_a", Sessions: 3}, "app_b": {Name: "app_b", Sessions: 1},
			}}
			if err := track(mg, l, t0); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, mg.Status.AtProvider.Credential); diff != "" {
				t.Errorf("%s\ncredential (-want +got):\n%s", tc.reason, diff)
			}
			if got := mg.Status.AtProvider.PasswordRotation; got != tc.wantHandle {
				t.Errorf("%s\nhandled rotation request %q, want %q", tc.reason, got, tc.wantHandle)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }
