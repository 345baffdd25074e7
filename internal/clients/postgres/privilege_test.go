package postgres

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestExpandPrivileges(t *testing.T) {
	cases := map[string]struct {
		kind        ObjectKind
		version     int
		in          []string
		want, unsup []string
	}{
		"AllTablesOn15": {kind: KindTable, version: 150014, in: []string{"ALL"},
			want: []string{"DELETE", "INSERT", "REFERENCES", "SELECT", "TRIGGER", "TRUNCATE", "UPDATE"}},
		"AllTablesOn17HasMaintain": {kind: KindTable, version: 170002, in: []string{"ALL"},
			want: []string{"DELETE", "INSERT", "MAINTAIN", "REFERENCES", "SELECT", "TRIGGER", "TRUNCATE", "UPDATE"}},
		"MaintainBefore17": {kind: KindTable, version: 160004, in: []string{"SELECT", "MAINTAIN"},
			want: []string{"SELECT"}, unsup: []string{"MAINTAIN"}},
		"DuplicatesFolded": {kind: KindDatabase, version: 150000, in: []string{"CONNECT", "ALL"},
			want: []string{"CONNECT", "CREATE", "TEMPORARY"}},
		"Sequences": {kind: KindSequence, version: 150000, in: []string{"ALL"}, want: []string{"SELECT", "UPDATE", "USAGE"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, unsup := ExpandPrivileges(tc.kind, tc.version, tc.in)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("expanded (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.unsup, unsup); diff != "" {
				t.Errorf("unsupported (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlanPrivileges(t *testing.T) {
	cases := map[string]struct {
		reason string
		want   PrivilegeWant
		held   []Held
		plan   PrivilegePlan
	}{
		"ExtraPrivilegesHeldIsUpToDate": {
			reason: "provider-sql #240: the role holds more than the grant lists; nothing to do.",
			want:   PrivilegeWant{Privileges: []string{"SELECT"}, Applied: []string{"SELECT"}},
			held:   []Held{{"SELECT": false, "INSERT": false, "DELETE": true}},
		},
		"RemovedPrivilegeRevoked": {
			reason: "provider-sql #465: a privilege the grant applied and no longer lists is revoked.",
			want:   PrivilegeWant{Privileges: []string{"SELECT"}, Applied: []string{"INSERT", "SELECT"}},
			held:   []Held{{"SELECT": false, "INSERT": false}},
			plan:   PrivilegePlan{Revoke: []string{"INSERT"}},
		},
		"PrivilegeNeverAppliedNotRevoked": {
			reason: "A privilege the grantee held by other means is not the grant's to revoke.",
			want:   PrivilegeWant{Privileges: []string{"SELECT"}, Applied: []string{"SELECT"}},
			held:   []Held{{"SELECT": false, "UPDATE": false}},
		},
		"AppliedButAlreadyGoneNotRevoked": {
			reason: "Nothing to revoke when nobody holds it.",
			want:   PrivilegeWant{Privileges: []string{"SELECT"}, Applied: []string{"INSERT", "SELECT"}},
			held:   []Held{{"SELECT": false}},
		},
		"MissingGrantedOnlyWhereMissing": {
			reason: "Only objects lacking a privilege are named in the GRANT.",
			want:   PrivilegeWant{Privileges: []string{"INSERT", "SELECT"}},
			held:   []Held{{"SELECT": false, "INSERT": false}, {"SELECT": false}, {}},
			plan:   PrivilegePlan{Grant: []string{"INSERT", "SELECT"}, GrantOn: []int{1, 2}},
		},
		"GrantOptionMissing": {
			reason: "Held without grant option is not held when the option is asked for.",
			want:   PrivilegeWant{Privileges: []string{"SELECT"}, GrantOption: true},
			held:   []Held{{"SELECT": false}},
			plan:   PrivilegePlan{Grant: []string{"SELECT"}, GrantOn: []int{0}},
		},
		"GrantOptionRevokedWhenApplied": {
			reason: "The grant option this grant gave goes when withGrantOption is turned off.",
			want:   PrivilegeWant{Privileges: []string{"SELECT"}, Applied: []string{"SELECT"}, AppliedGrantOption: true},
			held:   []Held{{"SELECT": true}},
			plan:   PrivilegePlan{RevokeGrantOption: []string{"SELECT"}},
		},
		"GrantOptionNotOursKept": {
			reason: "A grant option given by someone else stays.",
			want:   PrivilegeWant{Privileges: []string{"SELECT"}, Applied: []string{"SELECT"}},
			held:   []Held{{"SELECT": true}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := PlanPrivileges(tc.want, tc.held)
			if diff := cmp.Diff(tc.plan, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nPlanPrivileges (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestAppliedBookkeeping(t *testing.T) {
	w := PrivilegeWant{Privileges: []string{"INSERT", "SELECT"}, GrantOption: true, Applied: []string{"DELETE", "SELECT"}}
	p := PrivilegePlan{Grant: []string{"INSERT"}, Revoke: []string{"DELETE"}}
	intent, intentGO := w.Intent(p)
	if diff := cmp.Diff([]string{"DELETE", "INSERT", "SELECT"}, intent); diff != "" || !intentGO {
		t.Errorf("Intent (-want +got):\n%s (grant option %t)", diff, intentGO)
	}
	after, afterGO := w.After(p)
	if diff := cmp.Diff([]string{"INSERT", "SELECT"}, after); diff != "" || !afterGO {
		t.Errorf("After (-want +got):\n%s (grant option %t)", diff, afterGO)
	}
	// A privilege held from elsewhere before the grant existed is not
	// recorded as applied: deleting the grant keeps it.
	w = PrivilegeWant{Privileges: []string{"CONNECT", "TEMPORARY"}}
	after, _ = w.After(PrivilegePlan{Grant: []string{"TEMPORARY"}})
	if diff := cmp.Diff([]string{"TEMPORARY"}, after); diff != "" {
		t.Errorf("After with a pre-held privilege (-want +got):\n%s", diff)
	}
}

func TestHeldByAll(t *testing.T) {
	held := []Held{{"SELECT": true, "INSERT": false}, {"SELECT": false}}
	if diff := cmp.Diff([]string{"SELECT"}, HeldByAll([]string{"INSERT", "SELECT"}, false, held)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := HeldByAll([]string{"SELECT"}, true, held); len(got) != 0 {
		t.Errorf("with grant option: %v, want none", got)
	}
	if got := HeldByAll([]string{"SELECT"}, false, nil); len(got) != 0 {
		t.Errorf("no objects: %v, want none", got)
	}
}
