package conflict

import (
	"strings"
	"testing"
	"time"
)

func TestForeign(t *testing.T) {
	const adopt = `COMMENT ON DATABASE "inventory" IS '[provider-postgresql uid=claimant]'`
	base := Object{
		Noun: "database", Name: "inventory", In: `on PostgreSQLInstance "main"`, Kind: "PostgreSQLDatabase",
		Check: `psql -c '\l+ inventory'`, Adopt: adopt,
	}
	cases := map[string]struct {
		reason string
		obj    func(Object) Object
		want   []string
		never  []string
	}{
		"AnotherResources": {
			reason: "An object marked by another resource of the same namespace says whose it is and is never handed over, whoever asks.",
			obj: func(o Object) Object {
				o.Marker, o.MarkedBy, o.Namespace = "victim-uid", victims, "victims"
				return o
			},
			want:  []string{"PostgreSQLDatabase victims/stock's", "UID victim-uid", "never handed over"},
			never: []string{"COMMENT ON", "claimant", "mark it"},
		},
		"AnotherNamespaces": {
			reason: "An object another namespace's resource made says so and no more: which resource, its UID and how to look at it are that namespace's.",
			obj: func(o Object) Object {
				o.Marker, o.MarkedBy, o.Namespace = "victim-uid", victims, "shop"
				return o
			},
			want:  []string{"managed from another namespace", "a PostgreSQLDatabase there", "never handed over nor observed from here, read-only imports included"},
			never: []string{"victims", "stock", "victim-uid", "COMMENT ON", "mark it"},
		},
		"AGoneResources": {
			reason: "An object marked by a resource that no longer exists (retained) is not handed over from here: the statement that marks it is offered only to an admin who has established that this resource is the gone one brought back from a backup without the seal key.",
			obj: func(o Object) Object {
				o.Marker = "gone-uid"
				return o
			},
			want: []string{"no longer exists", "UID gone-uid", "not handed over from here", "If this PostgreSQLDatabase is that resource brought back from a backup, and its seal key was not restored with it, an admin who has established so marks the database as this one's: " + adopt},
		},
		"AGoneResourcesWithoutAdoption": {
			reason: "A kind that must not be taken over offers no statement for a gone resource's object either.",
			obj: func(o Object) Object {
				o.Marker, o.Adopt = "gone-uid", ""
				return o
			},
			want:  []string{"no longer exists", "not handed over"},
			never: []string{"COMMENT ON", "claimant", "backup"},
		},
		"Unmarked": {
			reason: "Only an unmarked object gets the statement that marks it, for an admin to run.",
			obj:    func(o Object) Object { return o },
			want:   []string{"carries no ownership marker", "an admin can mark it", adopt},
		},
		"MarkerRemoved": {
			reason: "An unmarked object of a resource that created one says its marker is gone, and offers the statement that restores it.",
			obj: func(o Object) Object {
				o.Created = time.Date(2026, 12, 5, 8, 0, 0, 0, time.FixedZone("CET", 3600))
				return o
			},
			want:  []string{"ownership marker is gone", "records that it created a database of this name at 2026-12-05T07:00:00Z", "by someone allowed to comment on it", "restores the marker: " + adopt},
			never: []string{"was not created by this", "interrupted"},
		},
		"CreateRecordIsNotConfirmation": {
			reason: "Whoever may edit a resource can write its create record: the Conflict reports it as the resource's record, confirms only what the catalog shows, and asks for the server's log before the marker is restored.",
			obj: func(o Object) Object {
				o.Created = time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC)
				return o
			},
			want:  []string{"Confirmed: the database exists and carries no ownership marker. Uncertain: whether it is the database this resource created", "crossplane.io/external-create-pending annotation, which whoever may edit the resource can write", "If the server's log shows it is the one this resource created"},
			never: []string{"Confirmed: this resource created"},
		},
		"MarkerRemovedWithoutAdoption": {
			reason: "A kind that must not be taken over offers no statement, its marker removed or not.",
			obj: func(o Object) Object {
				o.Created, o.Adopt = time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC), ""
				return o
			},
			want:  []string{"ownership marker is gone", `managementPolicies to ["Observe"]`},
			never: []string{"COMMENT ON", "restores"},
		},
		"AnotherResourcesMarkerOnOneItCreated": {
			reason: "Another resource's marker on an object this resource created still hands nothing over.",
			obj: func(o Object) Object {
				o.Created, o.Marker, o.MarkedBy, o.Namespace = time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC), "victim-uid", victims, "victims"
				return o
			},
			want:  []string{"PostgreSQLDatabase victims/stock's", "never handed over"},
			never: []string{"COMMENT ON", "claimant"},
		},
		"UnmarkedWithoutAdoption": {
			reason: "A kind that must not be taken over (a role: its password would be replaced) offers no statement.",
			obj: func(o Object) Object {
				o.Adopt = ""
				return o
			},
			want:  []string{"carries no ownership marker", `managementPolicies to ["Observe"]`},
			never: []string{"COMMENT ON", "mark it"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			msg := Foreign(tc.obj(base)).String()
			// Every Conflict: the target, the step, what is confirmed and
			// uncertain, that nothing changed, how to check.
			for _, want := range append([]string{`database "inventory" on PostgreSQLInstance "main"`, "(step: " + StepObserve + ")",
				"Confirmed: ", "Uncertain: ", "Nothing was changed.", `Check by hand: psql -c '\l+ inventory'.`}, tc.want...) {
				if !strings.Contains(msg, want) {
					t.Errorf("%s\n%q\ndoes not say %q", tc.reason, msg, want)
				}
			}
			for _, never := range tc.never {
				if strings.Contains(msg, never) {
					t.Errorf("%s\n%q\nsays %q", tc.reason, msg, never)
				}
			}
		})
	}
}

// victims is the resource another namespace's objects are marked by.
var victims = Owner{Kind: "PostgreSQLDatabase", Namespace: "victims", Name: "stock"}

func TestMessageNeverSteersToAPasswordChange(t *testing.T) {
	for _, m := range []Message{
		Foreign(Object{Noun: "role", Name: "app", Kind: "PostgreSQLRole"}),
		Foreign(Object{Noun: "role", Name: "app", Kind: "PostgreSQLRole", Marker: "u"}),
		Foreign(Object{Noun: "role", Name: "app", Kind: "PostgreSQLRole", Marker: "u", MarkedBy: Owner{"PostgreSQLRole", "a", "b"}, Namespace: "a"}),
		Foreign(Object{Noun: "role", Name: "app", Kind: "PostgreSQLRole", Marker: "u", MarkedBy: Owner{"PostgreSQLRole", "a", "b"}, Namespace: "c"}),
		Foreign(Object{Noun: "role", Name: "app", Kind: "PostgreSQLRole", Created: time.Now()}),
	} {
		for _, never := range []string{"password", "Ready"} {
			if s := m.String(); strings.Contains(s, never) {
				t.Errorf("%q mentions %q", s, never)
			}
		}
	}
}
