package v1alpha1

import (
	"testing"

	"k8s.io/utils/ptr"
)

func TestDefaultConnectionLimit(t *testing.T) {
	observed := &InstanceConnections{Max: 100}
	cases := map[string]struct {
		reason string
		policy InstancePolicy
		status *InstanceConnections
		want   int32
	}{
		"AQuarterOfTheServer": {reason: "Absent a policy, a role may take a quarter of max_connections.", status: observed, want: 25},
		"AtLeastOne":          {reason: "A tiny server still gives each role a session.", status: &InstanceConnections{Max: 3}, want: 1},
		"NotObservedYet":      {reason: "Before the server was observed there is nothing to take a quarter of: no limit.", want: -1},
		"ThePolicysDefault":   {reason: "The policy's default wins over the quarter.", policy: InstancePolicy{DefaultConnectionLimit: ptr.To[int32](40)}, status: observed, want: 40},
		"ThePolicysNoLimit":   {reason: "A platform may choose no limit.", policy: InstancePolicy{DefaultConnectionLimit: ptr.To[int32](-1)}, status: observed, want: -1},
		"CappedQuarter":       {reason: "The default never exceeds the cap.", policy: InstancePolicy{MaxConnectionLimit: ptr.To[int32](10)}, status: observed, want: 10},
		"CappedNoLimit":       {reason: "No limit is above any cap.", policy: InstancePolicy{DefaultConnectionLimit: ptr.To[int32](-1), MaxConnectionLimit: ptr.To[int32](10)}, status: observed, want: 10},
		"UnderTheCap":         {reason: "A default under the cap stays.", policy: InstancePolicy{DefaultConnectionLimit: ptr.To[int32](5), MaxConnectionLimit: ptr.To[int32](10)}, status: observed, want: 5},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := &PostgreSQLInstance{Spec: PostgreSQLInstanceSpec{Policy: tc.policy}, Status: PostgreSQLInstanceStatus{Connections: tc.status}}
			if got := in.DefaultConnectionLimit(); got != tc.want {
				t.Errorf("%s\nDefaultConnectionLimit() = %d, want %d", tc.reason, got, tc.want)
			}
		})
	}
}
