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

func TestServerVersionNum(t *testing.T) {
	cases := map[string]struct {
		version string
		want    int
	}{
		"NotObserved": {version: "", want: 0},
		"Debian":      {version: "15.14 (Debian 15.14-0+deb12u1)", want: 150014},
		"Plain":       {version: "16.4", want: 160004},
		"Beta":        {version: "18beta1", want: 180000},
		"MajorOnly":   {version: "17", want: 170000},
		"OldScheme":   {version: "9.6.24", want: 0},
		"Garbage":     {version: "PostgreSQL", want: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := &PostgreSQLInstance{Status: PostgreSQLInstanceStatus{PostgreSQLVersion: tc.version}}
			if got := in.ServerVersionNum(); got != tc.want {
				t.Errorf("ServerVersionNum() of %q = %d, want %d", tc.version, got, tc.want)
			}
		})
	}
}
