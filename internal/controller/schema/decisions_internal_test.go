package schema

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres/fakedb"
	"github.com/ayatori/provider-postgresql/internal/controller/conflict"
	"github.com/ayatori/provider-postgresql/internal/controller/oninstance"
	"github.com/ayatori/provider-postgresql/internal/fixture/decision"
)

// The decisions of the schema controller, against a scripted database:
// what Observe reports for each state of the catalog, which statements
// Create, Update and Delete send, and which condition each leaves. The SQL
// itself is proven against real servers in schema_test.go.

const (
	uid    = "5c4e0b8e-0000-4000-8000-000000000001"
	system = "7301234567890123456"
)

// noRoles answers the privilege boundary's question about the roles a
// schema is handed to: none of them exists yet, so none has powers or
// belongs to another namespace.
var noRoles = fakedb.Answer{Match: "SELECT rolname, rolsuper, rolcreaterole"}

// schemaRow is the answer to ObserveSchema's query: the server's system
// identifier, whether the schema exists, its owner, its stored comment and
// PUBLIC's privileges on it.
func schemaRow(exists bool, owner, comment string, public ...string) fakedb.Answer {
	if public == nil {
		public = []string{}
	}
	return fakedb.Answer{Match: "LEFT JOIN pg_catalog.pg_namespace n", Rows: [][]any{{system, exists, owner, comment, public}}}
}

func newSchema(change ...func(*v1alpha1.PostgreSQLSchema)) *v1alpha1.PostgreSQLSchema {
	s := &v1alpha1.PostgreSQLSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "sales", Namespace: "shop", UID: uid},
		Spec: v1alpha1.PostgreSQLSchemaSpec{
			ManagementPolicies: xpv2.ManagementPolicies{xpv2.ManagementActionAll},
			InstanceRef:        v1alpha1.InstanceReference{Name: "main"},
			ForProvider:        v1alpha1.PostgreSQLSchemaParameters{Database: ptr.To("app"), Owner: ptr.To("alice"), Comment: ptr.To("sales data")},
		},
	}
	s.Status.AtProvider.Database = "app"
	for _, c := range change {
		c(s)
	}
	return s
}

func testInstance() *v1alpha1.PostgreSQLInstance {
	return &v1alpha1.PostgreSQLInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "main", UID: "instance-uid"},
		// The database is shared with the namespace by policy, so the
		// boundary needs no API reads here (boundary's own tests cover it).
		Spec: v1alpha1.PostgreSQLInstanceSpec{Policy: v1alpha1.InstancePolicy{AllowDatabases: []string{"app"}}},
	}
}

// newExternal returns the external client of a schema in database app, whose
// pool is db.
func newExternal(db *fakedb.DB) *external {
	return &external{conn: oninstance.NewConnection(testInstance(), db, func(string) postgres.DB { return db }), whose: whose}
}

// whose stands in for the look-up of a marker's resource: "another-uid"
// is a schema of namespace other.
func whose(_ context.Context, uid string) (conflict.Owner, error) {
	if uid == "another-uid" {
		return conflict.Owner{Kind: "PostgreSQLSchema", Namespace: "other", Name: "sales"}, nil
	}
	return conflict.Owner{}, nil
}

func TestObserveDecisions(t *testing.T) {
	marked := postgres.WithMarker("sales data", postgres.Mark{UID: uid})
	cases := map[string]struct {
		mg      *v1alpha1.PostgreSQLSchema
		answers []fakedb.Answer
		want    managed.ExternalObservation
		// wantErr is a part of the error, "" for none.
		wantErr    string
		wantReason string
		// wantBound: the resource is bound to the Instance and server.
		wantBound bool
	}{
		"AbsentIsCreated": {
			mg:        newSchema(),
			answers:   []fakedb.Answer{schemaRow(false, "", ""), noRoles},
			want:      managed.ExternalObservation{ResourceExists: false},
			wantBound: true,
		},
		"AbsentForAPrivilegedOwnerIsRefused": {
			mg: newSchema(),
			answers: []fakedb.Answer{schemaRow(false, "", ""),
				{Match: "SELECT rolname, rolsuper, rolcreaterole", Rows: [][]any{{"alice", true, false, false, false, ""}}}},
			wantErr:    `role "alice" has SUPERUSER on the server`,
			wantReason: v1alpha1.ReasonPolicyRefused,
			wantBound:  true,
		},
		"OwnedAndAsSpecifiedIsUpToDate": {
			mg:         newSchema(),
			answers:    []fakedb.Answer{schemaRow(true, "alice", marked)},
			want:       managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
			wantReason: string(xpv2.ReasonAvailable),
			wantBound:  true,
		},
		"ChangedCommentIsUpdated": {
			mg:         newSchema(),
			answers:    []fakedb.Answer{schemaRow(true, "alice", postgres.WithMarker("edited by hand", postgres.Mark{UID: uid}))},
			want:       managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: false},
			wantReason: string(xpv2.ReasonAvailable),
			wantBound:  true,
		},
		"RevokedPublicIsUpdated": {
			mg:         newSchema(func(s *v1alpha1.PostgreSQLSchema) { s.Spec.ForProvider.RevokePublicPrivileges = true }),
			answers:    []fakedb.Answer{schemaRow(true, "alice", marked, "USAGE")},
			want:       managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: false},
			wantReason: string(xpv2.ReasonAvailable),
			wantBound:  true,
		},
		"UnmarkedIsAConflict": {
			mg:         newSchema(),
			answers:    []fakedb.Answer{schemaRow(true, "dba", "made by hand")},
			wantErr:    "was not created by this PostgreSQLSchema",
			wantReason: v1alpha1.ReasonConflict,
			wantBound:  true,
		},
		"AnotherResourcesMarkIsAConflict": {
			mg:         newSchema(),
			answers:    []fakedb.Answer{schemaRow(true, "alice", postgres.WithMarker("", postgres.Mark{UID: "another-uid"}))},
			wantErr:    "exists and is managed from another namespace",
			wantReason: v1alpha1.ReasonConflict,
			wantBound:  true,
		},
		"AnotherServerIsAConflict": {
			mg: newSchema(func(s *v1alpha1.PostgreSQLSchema) {
				s.Status.AtProvider.InstanceUID, s.Status.AtProvider.SystemIdentifier = "instance-uid", "6999999999999999999"
			}),
			answers:    []fakedb.Answer{schemaRow(true, "alice", marked)},
			wantErr:    "now reaches a server with system identifier " + system,
			wantReason: v1alpha1.ReasonConflict,
		},
		"ImportIsObservedOnly": {
			mg: newSchema(func(s *v1alpha1.PostgreSQLSchema) {
				s.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
			}),
			answers: []fakedb.Answer{schemaRow(true, "dba", "made by hand")},
			// Not as the spec asks (its comment differs): the plan says what
			// widening the policies would change, and nothing is sent.
			want:       managed.ExternalObservation{ResourceExists: true},
			wantReason: v1alpha1.ReasonObserveOnly,
			wantBound:  true,
		},
		"MissingDatabaseWaits": {
			mg:      newSchema(),
			answers: []fakedb.Answer{{Match: "pg_catalog.pg_namespace", Err: fakedb.PgError(postgres.CodeInvalidCatalogName, `database "app" does not exist`)}},
			wantErr: `waiting for database "app" to exist`,
		},
		"DeletedWithItsDatabaseIsGone": {
			mg: newSchema(func(s *v1alpha1.PostgreSQLSchema) {
				s.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			}),
			answers: []fakedb.Answer{{Match: "pg_catalog.pg_namespace", Err: fakedb.PgError(postgres.CodeInvalidCatalogName, `database "app" does not exist`)}},
			want:    managed.ExternalObservation{ResourceExists: false},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			db := fakedb.New(c.answers...)
			got, err := newExternal(db).Observe(context.Background(), c.mg)
			decision.Err(t, "Observe", err, c.wantErr)
			decision.Observed(t, db, c.mg, got, c.want, c.wantReason)
			bound := c.mg.Status.AtProvider.InstanceUID == "instance-uid" && c.mg.Status.AtProvider.SystemIdentifier == system
			if bound != c.wantBound {
				t.Errorf("bound to the Instance and server: %t, want %t (%+v)", bound, c.wantBound, c.mg.Status.AtProvider)
			}
		})
	}
}

func TestCreateUpdateDeleteStatements(t *testing.T) {
	marked := postgres.WithMarker("sales data", postgres.Mark{UID: uid})
	cases := map[string]struct {
		mg      *v1alpha1.PostgreSQLSchema
		answers []fakedb.Answer
		// op runs the operation under test on e.
		op      func(ctx context.Context, e *external, mg *v1alpha1.PostgreSQLSchema) error
		want    []string
		wantErr string
	}{
		"CreateNamesItsOwnerAndMarksIt": {
			mg:      newSchema(),
			answers: []fakedb.Answer{schemaRow(false, "", ""), noRoles, fakedb.ActsAsAnyRole(170000)},
			op: observeThen(func(ctx context.Context, e *external, mg *v1alpha1.PostgreSQLSchema) error {
				_, err := e.Create(ctx, mg)
				return err
			}),
			want: []string{`CREATE SCHEMA "sales" AUTHORIZATION "alice"`, `COMMENT ON SCHEMA "sales" IS '` + marked + `'`},
		},
		"CreateByAManagedAdminActsAsTheOwner": {
			mg:      newSchema(),
			answers: []fakedb.Answer{schemaRow(false, "", ""), noRoles, fakedb.ActsAsNoRole(170000)},
			op: observeThen(func(ctx context.Context, e *external, mg *v1alpha1.PostgreSQLSchema) error {
				_, err := e.Create(ctx, mg)
				return err
			}),
			want: []string{
				`GRANT "alice" TO CURRENT_USER WITH INHERIT TRUE, SET TRUE`,
				`CREATE SCHEMA "sales" AUTHORIZATION "alice"`, `COMMENT ON SCHEMA "sales" IS '` + marked + `'`,
				`REVOKE "alice" FROM CURRENT_USER`,
			},
		},
		"UpdateSendsOnlyWhatDiffers": {
			mg:      newSchema(),
			answers: []fakedb.Answer{schemaRow(true, "alice", postgres.WithMarker("edited by hand", postgres.Mark{UID: uid})), fakedb.ActsAsAnyRole(170000)},
			op: observeThen(func(ctx context.Context, e *external, mg *v1alpha1.PostgreSQLSchema) error {
				_, err := e.Update(ctx, mg)
				return err
			}),
			want: []string{`COMMENT ON SCHEMA "sales" IS '` + marked + `'`},
		},
		"UpdateOfAnUpToDateSchemaSendsNothing": {
			mg:      newSchema(),
			answers: []fakedb.Answer{schemaRow(true, "alice", marked), fakedb.ActsAsAnyRole(170000)},
			op: observeThen(func(ctx context.Context, e *external, mg *v1alpha1.PostgreSQLSchema) error {
				_, err := e.Update(ctx, mg)
				return err
			}),
		},
		"UpdateOfAVanishedSchemaFails": {
			mg:      newSchema(),
			answers: []fakedb.Answer{schemaRow(false, "", "")},
			op: func(ctx context.Context, e *external, mg *v1alpha1.PostgreSQLSchema) error {
				pool, _ := e.conn.Database(ctx, "app")
				e.seen.Keep(&observation{pool: pool})
				_, err := e.Update(ctx, mg)
				return err
			},
			wantErr: "the schema disappeared",
		},
		"DeleteDropsOnlyWhenEmpty": {
			mg:      newSchema(func(s *v1alpha1.PostgreSQLSchema) { s.Status.AtProvider.Owner = "alice" }),
			answers: []fakedb.Answer{schemaRow(true, "alice", marked), fakedb.ActsAsAnyRole(170000)},
			op: observeThen(func(ctx context.Context, e *external, mg *v1alpha1.PostgreSQLSchema) error {
				_, err := e.Delete(ctx, mg)
				return err
			}),
			want: []string{`DROP SCHEMA IF EXISTS "sales" RESTRICT`},
		},
		"DeleteOfASchemaHoldingObjectsSaysHowToGoOn": {
			mg: newSchema(func(s *v1alpha1.PostgreSQLSchema) { s.Status.AtProvider.Owner = "alice" }),
			answers: []fakedb.Answer{
				{Match: "DROP SCHEMA", Err: fakedb.PgError(postgres.CodeDependentObjectsStillExist, "cannot drop schema sales because other objects depend on it")},
				schemaRow(true, "alice", marked), fakedb.ActsAsAnyRole(170000),
			},
			op: observeThen(func(ctx context.Context, e *external, mg *v1alpha1.PostgreSQLSchema) error {
				_, err := e.Delete(ctx, mg)
				return err
			}),
			wantErr: "cascadeOnDelete: true",
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			db := fakedb.New(c.answers...)
			err := c.op(context.Background(), newExternal(db), c.mg)
			decision.Err(t, "the operation", err, c.wantErr)
			decision.Sent(t, db, c.want)
		})
	}
}

// observeThen observes first, as the reconciler does before it creates,
// updates or deletes (Observe finds the schema's database pool), then runs
// op.
func observeThen(op func(context.Context, *external, *v1alpha1.PostgreSQLSchema) error) func(context.Context, *external, *v1alpha1.PostgreSQLSchema) error {
	return func(ctx context.Context, e *external, mg *v1alpha1.PostgreSQLSchema) error {
		if _, err := e.Observe(ctx, mg); err != nil {
			return errors.Wrap(err, "Observe")
		}
		return op(ctx, e, mg)
	}
}
