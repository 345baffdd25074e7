package credential

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
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
