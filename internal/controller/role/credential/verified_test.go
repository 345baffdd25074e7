package credential

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
)

func TestVerified(t *testing.T) {
	now := t0
	cases := map[string]struct {
		reason string
		steps  func(v *Verified)
		pw     string
		want   bool
	}{
		"NeverVerified": {
			reason: "A password nobody verified logs in again.",
			steps:  func(*Verified) {},
			pw:     "pw", want: false,
		},
		"Verified": {
			reason: "A password verified a moment ago is trusted.",
			steps:  func(v *Verified) { v.Set("uid", "pw") },
			pw:     "pw", want: true,
		},
		"AnotherPassword": {
			reason: "Only the verified password is trusted, not whatever is asked next.",
			steps:  func(v *Verified) { v.Set("uid", "pw") },
			pw:     "other", want: false,
		},
		"Expired": {
			reason: "After VerifiedFor the password is checked again, so a change made by hand is found.",
			steps: func(v *Verified) {
				v.Set("uid", "pw")
				now = now.Add(VerifiedFor)
			},
			pw: "pw", want: false,
		},
		"Forgotten": {
			reason: "A role deleted or given a new password forgets what was verified.",
			steps: func(v *Verified) {
				v.Set("uid", "pw")
				v.Forget("uid")
			},
			pw: "pw", want: false,
		},
		"EmptyIsNeverRemembered": {
			reason: "No password is not a verified password.",
			steps:  func(v *Verified) { v.Set("uid", "") },
			pw:     "", want: false,
		},
		"OtherRole": {
			reason: "What is verified is per role.",
			steps:  func(v *Verified) { v.Set("another", "pw") },
			pw:     "pw", want: false,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			now = t0
			v := &Verified{now: func() time.Time { return now }}
			tc.steps(v)
			if got := v.Is(types.UID("uid"), tc.pw); got != tc.want {
				t.Errorf("%s\nIs = %t, want %t", tc.reason, got, tc.want)
			}
		})
	}
}

// TestWorks is the verification step of the lifecycle: whether the server
// holds the password the role should have, for each thing the provider
// may know of the server.
func TestWorks(t *testing.T) {
	verifier, err := postgres.SCRAMVerifier("pw")
	if err != nil {
		t.Fatal(err)
	}
	refused := func(context.Context) error { return postgres.ErrPasswordRejected }
	accepted := func(context.Context) error { return nil }
	cases := map[string]struct {
		reason     string
		got        postgres.ObservedRole
		remembered bool
		logIn      func(context.Context) error
		want       bool
		wantErr    bool
		logsIn     bool
		remembers  bool
	}{
		"VerifierMatches": {
			reason: "A superuser admin read the stored verifier: it is recomputed, nobody logs in.",
			got:    postgres.ObservedRole{VerifierRead: true, Verifier: verifier},
			logIn:  refused, want: true,
		},
		"VerifierDiffers": {
			reason: "The stored verifier is of another password (changed by hand): set it again.",
			got:    postgres.ObservedRole{VerifierRead: true, Verifier: "SCRAM-SHA-256$4096:c2FsdA==$a2V5:c2VydmVy"},
			logIn:  accepted, want: false,
		},
		"Remembered": {
			reason:     "A password verified by logging in a moment ago is not checked again.",
			remembered: true, logIn: refused, want: true, remembers: true,
		},
		"LogsInAndRemembers": {
			reason: "Without the verifier, the provider logs in as the role once and remembers it.",
			logIn:  accepted, want: true, logsIn: true, remembers: true,
		},
		"Refused": {
			reason: "The server refuses the password: it must be set again, and nothing is remembered.",
			logIn:  refused, want: false, logsIn: true,
		},
		"ServerUnreachable": {
			reason: "A login that fails for another reason says nothing of the password: an error, and nothing is remembered.",
			logIn:  func(context.Context) error { return errors.New("connection refused") }, wantErr: true, logsIn: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v := &Verified{}
			if tc.remembered {
				v.Set("uid", "pw")
			}
			loggedIn := false
			got, err := v.Works(context.Background(), "uid", &tc.got, "pw", func(ctx context.Context) error {
				loggedIn = true
				return tc.logIn(ctx)
			})
			if (err != nil) != tc.wantErr {
				t.Fatalf("%s\nerror %v, want an error: %t", tc.reason, err, tc.wantErr)
			}
			if got != tc.want || loggedIn != tc.logsIn || v.Is("uid", "pw") != tc.remembers {
				t.Errorf("%s\nWorks = %t (logged in %t, remembered %t), want %t (logged in %t, remembered %t)",
					tc.reason, got, loggedIn, v.Is("uid", "pw"), tc.want, tc.logsIn, tc.remembers)
			}
		})
	}
}
