package defaultprivileges

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres/fakedb"
	"github.com/ayatori/provider-postgresql/internal/controller/oninstance"
	"github.com/ayatori/provider-postgresql/internal/fixture/decision"
	"github.com/ayatori/provider-postgresql/internal/fixture/statuslog"
)

// The decisions of the default-privileges controller, against a scripted
// database: what Observe reports for what the grantee would be given, the
// statements Create and Delete send, and that the intent is recorded
// before anything is granted. The SQL is proven against real servers in
// defaultprivileges_test.go.

// defaults answers ObserveDefaultPrivileges's query on a server of
// version: system identifier, server version, grantee exists, owner
// exists, schema exists, the grantee's default privileges ("+" for grant
// option).
func defaults(version int, grantee, owner, schema bool, held ...string) fakedb.Answer {
	if held == nil {
		held = []string{}
	}
	return fakedb.Answer{Match: "FROM pg_catalog.pg_default_acl d", Rows: [][]any{{"7301234567890123456", version, grantee, owner, schema, held}}}
}

func newDefaults(change ...func(*v1alpha1.PostgreSQLDefaultPrivileges)) *v1alpha1.PostgreSQLDefaultPrivileges {
	d := &v1alpha1.PostgreSQLDefaultPrivileges{
		ObjectMeta: metav1.ObjectMeta{Name: "readers", Namespace: "shop", UID: "dp-uid"},
		Spec: v1alpha1.PostgreSQLDefaultPrivilegesSpec{
			ManagementPolicies: xpv2.ManagementPolicies{xpv2.ManagementActionAll},
			InstanceRef:        v1alpha1.InstanceReference{Name: "main"},
			ForProvider: v1alpha1.PostgreSQLDefaultPrivilegesParameters{
				Role: ptr.To("reader"), Owner: ptr.To("app_owner"), Database: ptr.To("app"), Schema: ptr.To("sales"),
				ObjectType: v1alpha1.DefaultPrivilegesTables, Privileges: []v1alpha1.Privilege{"SELECT"},
			},
		},
	}
	for _, c := range change {
		c(d)
	}
	return d
}

// newExternal returns the external client whose server is db, and the log
// of its status writes, each with the statements sent by then.
func newExternal(db *fakedb.DB) (*external, *statuslog.Log) {
	in := &v1alpha1.PostgreSQLInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "main", UID: "instance-uid"},
		// The database and the owner are shared with the namespace by
		// policy: the boundary reads nothing more (boundary's own tests
		// cover it).
		Spec: v1alpha1.PostgreSQLInstanceSpec{Policy: v1alpha1.InstancePolicy{AllowDatabases: []string{"app"}, AllowMembershipOf: []string{"app_owner"}}},
	}
	kube := &statuslog.Log{Snapshot: decision.Committed(db)}
	return &external{kube: kube, conn: oninstance.NewConnection(in, db, func(string) postgres.DB { return db })}, kube
}

func TestObserveDecisions(t *testing.T) {
	cases := map[string]struct {
		mg         *v1alpha1.PostgreSQLDefaultPrivileges
		answers    []fakedb.Answer
		want       managed.ExternalObservation
		wantErr    string
		wantReason string
	}{
		"NothingGivenIsGranted": {
			mg:         newDefaults(),
			answers:    []fakedb.Answer{defaults(170000, true, true, true)},
			want:       managed.ExternalObservation{ResourceExists: false, ResourceUpToDate: false},
			wantReason: string(v1alpha1.ReasonNotHeld),
		},
		"GivenIsUpToDate": {
			mg: newDefaults(func(d *v1alpha1.PostgreSQLDefaultPrivileges) {
				d.Status.AtProvider.AppliedPrivileges = []string{"SELECT"}
			}),
			answers:    []fakedb.Answer{defaults(170000, true, true, true, "SELECT")},
			want:       managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
			wantReason: string(xpv2.ReasonAvailable),
		},
		"AMissingGranteeWaits": {
			mg:         newDefaults(),
			answers:    []fakedb.Answer{defaults(170000, false, true, true)},
			wantErr:    `waiting for role "reader" to exist`,
			wantReason: string(v1alpha1.ReasonNotHeld),
		},
		"AMissingOwnerWaits": {
			mg:         newDefaults(),
			answers:    []fakedb.Answer{defaults(170000, true, false, true)},
			wantErr:    `waiting for role "app_owner" to exist`,
			wantReason: string(v1alpha1.ReasonNotHeld),
		},
		"AMissingSchemaWaits": {
			mg:         newDefaults(),
			answers:    []fakedb.Answer{defaults(170000, true, true, false)},
			wantErr:    `waiting for schema "sales" in database "app" to exist`,
			wantReason: string(v1alpha1.ReasonNotHeld),
		},
		"MaintainOnSixteenIsRefused": {
			mg: newDefaults(func(d *v1alpha1.PostgreSQLDefaultPrivileges) {
				d.Spec.ForProvider.Privileges = []v1alpha1.Privilege{"MAINTAIN"}
			}),
			answers:    []fakedb.Answer{defaults(160000, true, true, true)},
			wantErr:    "MAINTAIN needs PostgreSQL 17 or newer",
			wantReason: string(v1alpha1.ReasonUnsupported),
		},
		"AnOwnerOfAnotherNamespaceIsRefusedBeforeAnything": {
			mg: newDefaults(func(d *v1alpha1.PostgreSQLDefaultPrivileges) { d.Spec.ForProvider.Owner = ptr.To("postgres") }),
			answers: []fakedb.Answer{defaults(170000, true, true, true),
				{Match: "SELECT rolname, rolsuper, rolcreaterole", Rows: [][]any{{"postgres", true, true, true, true, ""}}}},
			wantErr:    `role "postgres" has SUPERUSER`,
			wantReason: v1alpha1.ReasonPolicyRefused,
		},
		"DeletedWithNothingGivenIsGone": {
			mg: newDefaults(func(d *v1alpha1.PostgreSQLDefaultPrivileges) {
				d.DeletionTimestamp = &metav1.Time{Time: time.Now()}
				ap := &d.Status.AtProvider
				ap.Role, ap.Owner, ap.Database, ap.Schema, ap.AppliedPrivileges = "reader", "app_owner", "app", "sales", []string{"SELECT"}
			}),
			answers: []fakedb.Answer{defaults(170000, true, true, true)},
			want:    managed.ExternalObservation{ResourceExists: false},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			db := fakedb.New(c.answers...)
			e, _ := newExternal(db)
			got, err := e.Observe(context.Background(), c.mg)
			decision.Err(t, "Observe", err, c.wantErr)
			decision.Observed(t, db, c.mg, got, c.want, c.wantReason)
		})
	}
}

func TestCreateDeleteStatements(t *testing.T) {
	cases := map[string]struct {
		mg         *v1alpha1.PostgreSQLDefaultPrivileges
		answers    []fakedb.Answer
		delete     bool
		want       []string
		wantIntent []string
	}{
		"CreateRecordsTheIntentThenGrants": {
			mg:         newDefaults(),
			answers:    []fakedb.Answer{defaults(170000, true, true, true), fakedb.ActsAsAnyRole(170000)},
			want:       []string{`ALTER DEFAULT PRIVILEGES FOR ROLE "app_owner" IN SCHEMA "sales" GRANT SELECT ON TABLES TO "reader"`},
			wantIntent: []string{"SELECT"},
		},
		"AManagedAdminActsAsTheOwner": {
			mg:      newDefaults(),
			answers: []fakedb.Answer{defaults(150000, true, true, true), fakedb.ActsAsNoRole(150000)},
			want: []string{
				`GRANT "app_owner" TO CURRENT_USER`,
				`ALTER DEFAULT PRIVILEGES FOR ROLE "app_owner" IN SCHEMA "sales" GRANT SELECT ON TABLES TO "reader"`,
				`REVOKE "app_owner" FROM CURRENT_USER`,
			},
			wantIntent: []string{"SELECT"},
		},
		"DeleteRevokesOnlyWhatItGave": {
			mg: newDefaults(func(d *v1alpha1.PostgreSQLDefaultPrivileges) {
				d.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
				ap := &d.Status.AtProvider
				ap.Role, ap.Owner, ap.Database, ap.Schema, ap.AppliedPrivileges = "reader", "app_owner", "app", "sales", []string{"SELECT"}
			}),
			answers: []fakedb.Answer{defaults(170000, true, true, true, "SELECT", "INSERT"), fakedb.ActsAsAnyRole(170000)},
			delete:  true,
			want:    []string{`ALTER DEFAULT PRIVILEGES FOR ROLE "app_owner" IN SCHEMA "sales" REVOKE SELECT ON TABLES FROM "reader"`},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			db := fakedb.New(c.answers...)
			e, kube := newExternal(db)
			if _, err := e.Observe(ctx, c.mg); err != nil {
				t.Fatalf("Observe: %v", err)
			}
			plan := c.mg.Status.AtProvider.Plan
			var err error
			if c.delete {
				_, err = e.Delete(ctx, c.mg)
			} else {
				_, err = e.Create(ctx, c.mg)
			}
			if err != nil {
				t.Fatal(err)
			}
			decision.Sent(t, db, c.want)
			decision.Planned(t, plan, c.want)
			if c.wantIntent == nil {
				return
			}
			decision.IntentFirst(t, kube, func(o client.Object) []string {
				return o.(*v1alpha1.PostgreSQLDefaultPrivileges).Status.AtProvider.AppliedPrivileges //nolint:forcetypeassert // Only these are written here.
			}, c.wantIntent)
		})
	}
}
