package role

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
)

// TestPlan is the credential lifecycle of an Alternating role, one row per
// situation: what plan decides from the role, its logins, its Secret and
// the time, and whether it asked for the password check (a login).
func TestPlan(t *testing.T) {
	const uid = "role-uid"
	grace := &metav1.Duration{Duration: 10 * time.Minute}
	role := func() *v1alpha1.PostgreSQLRole {
		mg := &v1alpha1.PostgreSQLRole{}
		mg.SetUID(types.UID(uid))
		mg.Spec.ForProvider.Name = ptrTo("app")
		mg.Spec.ForProvider.Login = ptrTo(true)
		mg.Spec.PasswordRotation = &v1alpha1.PasswordRotation{Mode: v1alpha1.RotationAlternating, GracePeriod: grace}
		return mg
	}
	// base is the role itself as the provider leaves it: NOLOGIN once a
	// login is handed out.
	base := func(mg *v1alpha1.PostgreSQLRole, login bool) *postgres.ObservedRole {
		a := desired(mg, nil)
		a.Login = login
		return &postgres.ObservedRole{RoleAttributes: a, Owner: uid}
	}
	// asLogin is login role n as the provider makes it: LOGIN or not.
	asLogin := func(mg *v1alpha1.PostgreSQLRole, on bool) *postgres.ObservedRole {
		return &postgres.ObservedRole{RoleAttributes: postgres.LoginAttributes("app", desired(mg, nil), on), Owner: uid}
	}
	type want struct {
		work    work
		checked []string
	}
	cases := map[string]struct {
		reason  string
		mg      func() *v1alpha1.PostgreSQLRole
		baseLog bool
		logins  func(mg *v1alpha1.PostgreSQLRole) map[string]postgres.ObservedLogin
		user    string
		works   bool
		want    want
	}{
		"FirstLogin": {
			reason: "A new role's Secret holds no login: the first one is handed out, and no password is checked.",
			mg:     role,
			logins: func(*v1alpha1.PostgreSQLRole) map[string]postgres.ObservedLogin { return nil },
			want:   want{work: work{rotate: "first login", target: "app_a"}},
		},
		"Steady": {
			reason: "The Secret's login has its attributes and its password works: nothing to do, one check.",
			mg: func() *v1alpha1.PostgreSQLRole {
				mg := role()
				mg.Status.AtProvider.Credential = &v1alpha1.CredentialObservation{ActiveLogin: "app_b", ActiveSince: mt(t0.Add(-time.Hour))}
				return mg
			},
			logins: func(mg *v1alpha1.PostgreSQLRole) map[string]postgres.ObservedLogin {
				return map[string]postgres.ObservedLogin{"app_a": {Name: "app_a", Role: asLogin(mg, false)}, "app_b": {Name: "app_b", Role: asLogin(mg, true)}}
			},
			user: "app_b", works: true,
			want: want{checked: []string{"app_b"}},
		},
		"PasswordChangedByHand": {
			reason: "The Secret's password no longer logs in: the login is repaired.",
			mg:     role,
			logins: func(mg *v1alpha1.PostgreSQLRole) map[string]postgres.ObservedLogin {
				return map[string]postgres.ObservedLogin{"app_b": {Name: "app_b", Role: asLogin(mg, true)}}
			},
			user: "app_b",
			want: want{work: work{repair: true}, checked: []string{"app_b"}},
		},
		"AttributesChangedByHand": {
			reason: "The active login lost LOGIN: repaired without a password check.",
			mg:     role,
			logins: func(mg *v1alpha1.PostgreSQLRole) map[string]postgres.ObservedLogin {
				return map[string]postgres.ObservedLogin{"app_b": {Name: "app_b", Role: asLogin(mg, false)}}
			},
			user: "app_b", works: true,
			want: want{work: work{repair: true}},
		},
		"ActiveLoginDropped": {
			reason: "The Secret names a login that no longer exists: repaired.",
			mg:     role,
			logins: func(*v1alpha1.PostgreSQLRole) map[string]postgres.ObservedLogin { return nil },
			user:   "app_b", works: true,
			want: want{work: work{repair: true}},
		},
		"Requested": {
			reason: "A new value of the rotate-password annotation hands out the idle login.",
			mg: func() *v1alpha1.PostgreSQLRole {
				mg := role()
				mg.SetAnnotations(map[string]string{v1alpha1.AnnotationRotatePassword: "now"})
				return mg
			},
			logins: func(mg *v1alpha1.PostgreSQLRole) map[string]postgres.ObservedLogin {
				return map[string]postgres.ObservedLogin{"app_b": {Name: "app_b", Role: asLogin(mg, true)}}
			},
			user: "app_b", works: true,
			want: want{work: work{rotate: "requested with the " + v1alpha1.AnnotationRotatePassword + " annotation", target: "app_a"}, checked: []string{"app_b"}},
		},
		"Scheduled": {
			reason: "maxAge has passed since the active login was handed out.",
			mg: func() *v1alpha1.PostgreSQLRole {
				mg := role()
				mg.Spec.PasswordRotation.MaxAge = &metav1.Duration{Duration: time.Hour}
				mg.Status.AtProvider.Credential = &v1alpha1.CredentialObservation{ActiveLogin: "app_b", ActiveSince: mt(t0.Add(-2 * time.Hour))}
				return mg
			},
			logins: func(mg *v1alpha1.PostgreSQLRole) map[string]postgres.ObservedLogin {
				return map[string]postgres.ObservedLogin{"app_b": {Name: "app_b", Role: asLogin(mg, true)}}
			},
			user: "app_b", works: true,
			want: want{work: work{rotate: "scheduled", target: "app_a"}, checked: []string{"app_b"}},
		},
		"TargetStillInGrace": {
			reason: "The idle login is the previous one, still in its grace period: it gets no new password yet, and is not retired.",
			mg: func() *v1alpha1.PostgreSQLRole {
				mg := role()
				mg.SetAnnotations(map[string]string{v1alpha1.AnnotationRotatePassword: "again"})
				mg.Status.AtProvider.Credential = &v1alpha1.CredentialObservation{ActiveLogin: "app_b", PreviousLogin: "app_a", PreviousLoginUntil: mt(t0.Add(time.Minute))}
				return mg
			},
			logins: func(mg *v1alpha1.PostgreSQLRole) map[string]postgres.ObservedLogin {
				return map[string]postgres.ObservedLogin{"app_a": {Name: "app_a", Role: asLogin(mg, true)}, "app_b": {Name: "app_b", Role: asLogin(mg, true)}}
			},
			user: "app_b", works: true,
			want: want{checked: []string{"app_b"}},
		},
		"GraceOver": {
			reason: "The previous login's grace period is over: it is retired.",
			mg: func() *v1alpha1.PostgreSQLRole {
				mg := role()
				mg.Status.AtProvider.Credential = &v1alpha1.CredentialObservation{ActiveLogin: "app_b", PreviousLogin: "app_a", PreviousLoginUntil: mt(t0.Add(-time.Minute))}
				return mg
			},
			logins: func(mg *v1alpha1.PostgreSQLRole) map[string]postgres.ObservedLogin {
				return map[string]postgres.ObservedLogin{"app_a": {Name: "app_a", Role: asLogin(mg, true), Sessions: 2}, "app_b": {Name: "app_b", Role: asLogin(mg, true)}}
			},
			user: "app_b", works: true,
			want: want{work: work{retire: []string{"app_a"}}, checked: []string{"app_b"}},
		},
		"EndSessions": {
			reason: "endSessionsAfter has passed and the previous login still has sessions: they end.",
			mg: func() *v1alpha1.PostgreSQLRole {
				mg := role()
				mg.Status.AtProvider.Credential = &v1alpha1.CredentialObservation{ActiveLogin: "app_b", PreviousLogin: "app_a",
					PreviousLoginUntil: mt(t0.Add(-time.Hour)), PreviousSessionsEndAt: mt(t0.Add(-time.Minute))}
				return mg
			},
			logins: func(mg *v1alpha1.PostgreSQLRole) map[string]postgres.ObservedLogin {
				return map[string]postgres.ObservedLogin{"app_a": {Name: "app_a", Role: asLogin(mg, false), Sessions: 2}, "app_b": {Name: "app_b", Role: asLogin(mg, true)}}
			},
			user: "app_b", works: true,
			want: want{work: work{endSessions: "app_a"}, checked: []string{"app_b"}},
		},
		"Expired": {
			reason: "Past validUntil nothing logs in: no password check (it would fail at every poll), no rotation.",
			mg: func() *v1alpha1.PostgreSQLRole {
				mg := role()
				mg.Spec.ForProvider.ValidUntil = mt(t0.Add(-time.Hour))
				mg.SetAnnotations(map[string]string{v1alpha1.AnnotationRotatePassword: "now"})
				return mg
			},
			logins: func(mg *v1alpha1.PostgreSQLRole) map[string]postgres.ObservedLogin {
				return map[string]postgres.ObservedLogin{"app_b": {Name: "app_b", Role: asLogin(mg, true)}}
			},
			user: "app_b",
			want: want{},
		},
		"BaseStopsLoggingIn": {
			reason: "The role itself still has LOGIN once a login is handed out and its grace is over: NOLOGIN.",
			mg:     role, baseLog: true,
			logins: func(mg *v1alpha1.PostgreSQLRole) map[string]postgres.ObservedLogin {
				return map[string]postgres.ObservedLogin{"app_b": {Name: "app_b", Role: asLogin(mg, true)}}
			},
			user: "app_b", works: true,
			want: want{work: work{base: []string{`ALTER ROLE "app" WITH NOLOGIN`}}, checked: []string{"app_b"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			mg := tc.mg()
			got := base(mg, tc.baseLog)
			if tc.mg().Spec.ForProvider.ValidUntil != nil {
				got.ValidUntil = desired(mg, nil).ValidUntil
			}
			roles := tc.logins(mg)
			if roles == nil {
				roles = map[string]postgres.ObservedLogin{}
			}
			roles["app"] = postgres.ObservedLogin{Name: "app", Role: got}
			l := &logins{base: "app", names: loginNames("app"), roles: roles, user: tc.user}
			if tc.user != "" {
				l.password = "secret"
			}
			var checked []string
			w, err := plan(mg, nil, got, l, t0, func(login string) (bool, error) {
				checked = append(checked, login)
				return tc.works, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want.work, w, cmp.AllowUnexported(work{})); diff != "" {
				t.Errorf("%s\nwork (-want +got):\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.checked, checked); diff != "" {
				t.Errorf("%s\npassword checks (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestPlanCheckFails: a password check that cannot be made is an error,
// never taken for a working or a broken password.
func TestPlanCheckFails(t *testing.T) {
	mg := &v1alpha1.PostgreSQLRole{}
	mg.Spec.ForProvider.Name = ptrTo("app")
	mg.Spec.PasswordRotation = &v1alpha1.PasswordRotation{Mode: v1alpha1.RotationAlternating}
	a := postgres.LoginAttributes("app", desired(mg, nil), true)
	l := &logins{base: "app", names: loginNames("app"), user: "app_a", password: "secret", roles: map[string]postgres.ObservedLogin{
		"app_a": {Name: "app_a", Role: &postgres.ObservedRole{RoleAttributes: a}},
	}}
	got := &postgres.ObservedRole{RoleAttributes: desired(mg, nil)}
	unreachable := errors.New("server unreachable")
	if _, err := plan(mg, nil, got, l, t0, func(string) (bool, error) { return false, unreachable }); !errors.Is(err, unreachable) {
		t.Errorf("plan error = %v, want %v", err, unreachable)
	}
}
