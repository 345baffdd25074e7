package grant

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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

// The decisions of the grant controller on table privileges, against a
// scripted database: what Observe reports for what the grantee holds,
// which statements Create, Update and Delete send, and that the intent is
// recorded before anything is granted. The SQL is proven against real
// servers in grant_test.go.

const grantSystem = "7301234567890123456"

// object is one table as ObserveGrant's query reports it: its name,
// whether it exists, the grantee's privileges on it ("+" for grant
// option) and its owner.
type object struct {
	name   string
	found  bool
	held   []string
	owners string
}

// grantRows answers ObserveGrant's query on a server of version: one row
// per object (or one with NULL object columns when there are none). The
// columns: system identifier, server version, grantee exists, schema
// exists, schema owner, object name, its catalog name, argument types,
// found, the grantee's privileges, the object's owner.
func grantRows(version int, roleExists bool, objects ...object) fakedb.Answer {
	head := []any{grantSystem, version, roleExists, true, "alice"}
	var rows [][]any
	for _, o := range objects {
		held := o.held
		if held == nil {
			held = []string{}
		}
		rows = append(rows, append(append([]any{}, head...), o.name, o.name, []string{}, o.found, held, o.owners))
	}
	if len(rows) == 0 {
		rows = [][]any{append(append([]any{}, head...), nil, nil, []string{}, false, []string{}, "")}
	}
	return fakedb.Answer{Match: "LEFT JOIN (SELECT s.name, s.name AS objname", Rows: rows}
}

func newGrant(change ...func(*v1alpha1.PostgreSQLGrant)) *v1alpha1.PostgreSQLGrant {
	g := &v1alpha1.PostgreSQLGrant{
		ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: "shop", UID: "grant-uid"},
		Spec: v1alpha1.PostgreSQLGrantSpec{
			ManagementPolicies: xpv2.ManagementPolicies{xpv2.ManagementActionAll},
			InstanceRef:        v1alpha1.InstanceReference{Name: "main"},
			ForProvider: v1alpha1.PostgreSQLGrantParameters{
				Role: ptr.To("reader"), ObjectType: v1alpha1.GrantObjectTable, Database: ptr.To("app"), Schema: ptr.To("sales"),
				Objects: []string{"orders"}, Privileges: []v1alpha1.Privilege{"SELECT"},
			},
		},
	}
	for _, c := range change {
		c(g)
	}
	return g
}

// newExternal returns the external client of a grant whose server is db,
// and the log of its status writes, each with the statements sent by then.
func newExternal(db *fakedb.DB) (*external, *statuslog.Log) {
	in := &v1alpha1.PostgreSQLInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "main", UID: "instance-uid"},
		// Database app is shared with the namespace by policy: the
		// boundary reads nothing more (boundary's own tests cover it).
		Spec: v1alpha1.PostgreSQLInstanceSpec{Policy: v1alpha1.InstancePolicy{AllowDatabases: []string{"app"}}},
	}
	kube := &statuslog.Log{Snapshot: decision.Committed(db)}
	return &external{kube: kube, conn: oninstance.NewConnection(in, db, func(string) postgres.DB { return db })}, kube
}

func TestObserveDecisions(t *testing.T) {
	cases := map[string]struct {
		mg         *v1alpha1.PostgreSQLGrant
		answers    []fakedb.Answer
		want       managed.ExternalObservation
		wantErr    string
		wantReason string
		wantHeld   []string
	}{
		"NothingHeldIsGranted": {
			mg:         newGrant(),
			answers:    []fakedb.Answer{grantRows(170000, true, object{name: "orders", found: true, owners: "alice"})},
			want:       managed.ExternalObservation{ResourceExists: false, ResourceUpToDate: false},
			wantReason: string(v1alpha1.ReasonNotHeld),
		},
		"HeldIsUpToDate": {
			mg: newGrant(func(g *v1alpha1.PostgreSQLGrant) {
				g.Status.AtProvider.AppliedPrivileges = []string{"SELECT"}
			}),
			answers:    []fakedb.Answer{grantRows(170000, true, object{name: "orders", found: true, held: []string{"SELECT"}, owners: "alice"})},
			want:       managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
			wantReason: string(xpv2.ReasonAvailable),
			wantHeld:   []string{"SELECT"},
		},
		"HeldWithGrantOptionNotAskedForIsUpdated": {
			mg: newGrant(func(g *v1alpha1.PostgreSQLGrant) {
				g.Status.AtProvider.AppliedPrivileges, g.Status.AtProvider.AppliedGrantOption = []string{"SELECT"}, true
			}),
			answers:    []fakedb.Answer{grantRows(170000, true, object{name: "orders", found: true, held: []string{"SELECT+"}, owners: "alice"})},
			want:       managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: false},
			wantReason: string(xpv2.ReasonAvailable),
			wantHeld:   []string{"SELECT"},
		},
		"AMissingGranteeWaits": {
			mg:         newGrant(),
			answers:    []fakedb.Answer{grantRows(170000, false, object{name: "orders", found: true, owners: "alice"})},
			wantErr:    `waiting for role "reader" to exist`,
			wantReason: string(v1alpha1.ReasonNotHeld),
		},
		"AMissingTableWaits": {
			mg:         newGrant(),
			answers:    []fakedb.Answer{grantRows(170000, true, object{name: "orders"})},
			wantErr:    `waiting for table orders to exist in schema "sales" of database "app"`,
			wantReason: string(v1alpha1.ReasonNotHeld),
		},
		"MaintainOnFifteenIsRefused": {
			mg: newGrant(func(g *v1alpha1.PostgreSQLGrant) {
				g.Spec.ForProvider.Privileges = []v1alpha1.Privilege{"SELECT", "MAINTAIN"}
			}),
			answers:    []fakedb.Answer{grantRows(150000, true, object{name: "orders", found: true, owners: "alice"})},
			wantErr:    "MAINTAIN needs PostgreSQL 17 or newer",
			wantReason: string(v1alpha1.ReasonUnsupported),
		},
		"DeletedWithNothingLeftToRevokeIsGone": {
			mg: newGrant(func(g *v1alpha1.PostgreSQLGrant) {
				g.DeletionTimestamp = &metav1.Time{Time: time.Now()}
				ap := &g.Status.AtProvider
				ap.Role, ap.Database, ap.Schema, ap.AppliedPrivileges = "reader", "app", "sales", []string{"SELECT"}
			}),
			answers: []fakedb.Answer{grantRows(170000, true, object{name: "orders", found: true, owners: "alice"})},
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
			if diff := cmp.Diff(c.wantHeld, c.mg.Status.AtProvider.Privileges); c.wantErr == "" && diff != "" {
				t.Errorf("status.atProvider.privileges (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCreateUpdateDeleteStatements(t *testing.T) {
	cases := map[string]struct {
		mg      *v1alpha1.PostgreSQLGrant
		answers []fakedb.Answer
		delete  bool
		want    []string
		// wantIntent is what status records as applied before anything
		// is sent.
		wantIntent []string
	}{
		"CreateRecordsTheIntentThenGrants": {
			mg:         newGrant(),
			answers:    []fakedb.Answer{grantRows(170000, true, object{name: "orders", found: true, owners: "alice"}), fakedb.ActsAsAnyRole(170000)},
			want:       []string{`GRANT SELECT ON TABLE "sales"."orders" TO "reader"`},
			wantIntent: []string{"SELECT"},
		},
		"AManagedAdminGrantsAsTheOwner": {
			mg:      newGrant(),
			answers: []fakedb.Answer{grantRows(170000, true, object{name: "orders", found: true, owners: "alice"}), fakedb.ActsAsNoRole(170000)},
			want: []string{
				`GRANT "alice" TO CURRENT_USER WITH INHERIT TRUE, SET FALSE`,
				`GRANT SELECT ON TABLE "sales"."orders" TO "reader"`,
				`REVOKE "alice" FROM CURRENT_USER`,
			},
			wantIntent: []string{"SELECT"},
		},
		"AnUnlistedTableIsRevoked": {
			mg: newGrant(func(g *v1alpha1.PostgreSQLGrant) {
				g.Status.AtProvider.AppliedPrivileges, g.Status.AtProvider.AppliedObjects = []string{"SELECT"}, []string{"orders", "refunds"}
			}),
			answers: []fakedb.Answer{grantRows(170000, true,
				object{name: "orders", found: true, held: []string{"SELECT"}, owners: "alice"},
				object{name: "refunds", found: true, held: []string{"SELECT"}, owners: "alice"}), fakedb.ActsAsAnyRole(170000)},
			want:       []string{`REVOKE SELECT ON TABLE "sales"."refunds" FROM "reader"`},
			wantIntent: []string{"SELECT"},
		},
		"DeleteRevokesWhatItGranted": {
			mg: newGrant(func(g *v1alpha1.PostgreSQLGrant) {
				g.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
				ap := &g.Status.AtProvider
				ap.Role, ap.Database, ap.Schema, ap.AppliedPrivileges = "reader", "app", "sales", []string{"SELECT"}
			}),
			answers: []fakedb.Answer{grantRows(170000, true, object{name: "orders", found: true, held: []string{"SELECT", "INSERT"}, owners: "alice"}), fakedb.ActsAsAnyRole(170000)},
			delete:  true,
			want:    []string{`REVOKE SELECT ON TABLE "sales"."orders" FROM "reader"`},
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
				return o.(*v1alpha1.PostgreSQLGrant).Status.AtProvider.AppliedPrivileges //nolint:forcetypeassert // Only these are written here.
			}, c.wantIntent)
		})
	}
}
