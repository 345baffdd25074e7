package database

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres/fakedb"
	"github.com/ayatori/provider-postgresql/internal/controller/conflict"
	"github.com/ayatori/provider-postgresql/internal/controller/oninstance"
	"github.com/ayatori/provider-postgresql/internal/fixture/decision"
)

// The decisions of the database controller, against a scripted database:
// what Observe reports for each state of the catalog, which statements
// Create, Update and Delete send, and the conditions they leave. The SQL
// is proven against real servers in database_test.go.

const (
	dbUID    = "5c4e0b8e-0000-4000-8000-000000000002"
	dbSystem = "7301234567890123456"
)

// observed is a database as ObserveDatabase's query returns it.
type observed struct {
	owner, comment string
	connLimit      int32
	public         []string
	adminConnects  bool
	ownerPowers    []string
}

// row answers ObserveDatabase's query; nil for a database that does not
// exist. The columns: system identifier, exists, owner, encoding, collate,
// ctype, connection limit, allow connections, is template, comment,
// PUBLIC's privileges, whether the admin may connect, the owner's powers.
func (o *observed) row() fakedb.Answer {
	r := []any{dbSystem, false, "", "", "", "", int32(-1), false, false, "", []string{}, true, []string{}}
	if o != nil {
		nonNil := func(s []string) []string {
			if s == nil {
				return []string{}
			}
			return s
		}
		r = []any{dbSystem, true, o.owner, "UTF8", "C.UTF-8", "C.UTF-8", o.connLimit, true, false, o.comment,
			nonNil(o.public), o.adminConnects, nonNil(o.ownerPowers)}
	}
	return fakedb.Answer{Match: "LEFT JOIN pg_catalog.pg_database d", Rows: [][]any{r}}
}

// sessions answers DatabaseSessions' query: n sessions connected, of
// roles (none named when the admin may end any session).
func sessions(n int32, roles ...string) fakedb.Answer {
	if roles == nil {
		roles = []string{}
	}
	return fakedb.Answer{Match: "FROM pg_catalog.pg_stat_activity", Rows: [][]any{{n, roles}}}
}

// owned is the database as this resource left it.
func owned(change ...func(*observed)) *observed {
	o := &observed{owner: "alice", comment: postgres.WithMarker("orders", postgres.Mark{UID: dbUID}), connLimit: -1, public: []string{"CONNECT", "TEMPORARY"}, adminConnects: true}
	for _, c := range change {
		c(o)
	}
	return o
}

// roleExists answers whether the owner role exists.
func roleExists(ok bool) fakedb.Answer {
	return fakedb.Answer{Match: "SELECT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = $1)", Rows: [][]any{{ok}}}
}

// unprivileged answers the boundary's question about the owner: a role
// without powers and without an ownership marker... which the boundary
// then looks up in the namespace; noRole says it does not exist yet, which
// the boundary allows.
var noRole = fakedb.Answer{Match: "SELECT rolname, rolsuper, rolcreaterole"}

// notStaged says no create of this resource was cut short: there is no
// staging database.
var notStaged = fakedb.Answer{Match: "AND NOT d.datallowconn"}

// staged is the staging database a create cut short left: the admin's,
// closed, unmarked.
var staged = fakedb.Answer{Match: "AND NOT d.datallowconn", Rows: [][]any{{true, ""}}}

// staging is the resource's staging database's name, quoted.
var staging = postgres.QuoteIdentifier(postgres.StagingDatabaseName(dbUID))

func newDatabase(change ...func(*v1alpha1.PostgreSQLDatabase)) *v1alpha1.PostgreSQLDatabase {
	d := &v1alpha1.PostgreSQLDatabase{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop", UID: dbUID},
		Spec: v1alpha1.PostgreSQLDatabaseSpec{
			ManagementPolicies: xpv2.ManagementPolicies{xpv2.ManagementActionAll},
			InstanceRef:        v1alpha1.InstanceReference{Name: "main"},
			ForProvider:        v1alpha1.PostgreSQLDatabaseParameters{Owner: ptr.To("alice"), Comment: ptr.To("orders")},
		},
	}
	for _, c := range change {
		c(d)
	}
	return d
}

// newExternal returns the external client of a database whose server is
// db and can install pgcrypto and postgres_fdw.
func newExternal(db *fakedb.DB) *external {
	in := &v1alpha1.PostgreSQLInstance{ObjectMeta: metav1.ObjectMeta{Name: "main", UID: "instance-uid"}}
	in.Status.AvailableExtensions = []v1alpha1.AvailableExtension{{Name: "pgcrypto"}, {Name: "postgres_fdw"}}
	return &external{conn: oninstance.NewConnection(in, db, func(string) postgres.DB { return db }), whose: noOwner}
}

// noOwner stands in for the look-up of a marker's resource: none exists.
func noOwner(context.Context, string) (conflict.Owner, error) { return conflict.Owner{}, nil }

func TestObserveDecisions(t *testing.T) {
	cases := map[string]struct {
		mg         *v1alpha1.PostgreSQLDatabase
		answers    []fakedb.Answer
		want       managed.ExternalObservation
		wantErr    string
		wantReason string
	}{
		"AbsentWithItsOwnerIsCreated": {
			mg:      newDatabase(),
			answers: []fakedb.Answer{(*observed)(nil).row(), roleExists(true), noRole, notStaged},
			want:    managed.ExternalObservation{ResourceExists: false},
		},
		"AbsentWaitsForItsOwnerByName": {
			mg:      newDatabase(),
			answers: []fakedb.Answer{(*observed)(nil).row(), roleExists(false)},
			wantErr: `spec.forProvider.owner: waiting for role "alice" to exist`,
		},
		"AbsentForAPrivilegedOwnerIsRefused": {
			mg: newDatabase(),
			answers: []fakedb.Answer{(*observed)(nil).row(), roleExists(true),
				{Match: "SELECT rolname, rolsuper, rolcreaterole", Rows: [][]any{{"alice", false, true, false, false, ""}}}},
			wantErr:    `role "alice" has CREATEROLE on the server`,
			wantReason: v1alpha1.ReasonPolicyRefused,
		},
		"AbsentWithAnUnavailableExtensionIsRefused": {
			mg: newDatabase(func(d *v1alpha1.PostgreSQLDatabase) {
				d.Spec.ForProvider.Extensions = []v1alpha1.Extension{{Name: "pgcrypt"}}
			}),
			answers:    []fakedb.Answer{(*observed)(nil).row()},
			wantErr:    `cannot install extension(s) "pgcrypt" (did you mean pgcrypto?)`,
			wantReason: string(v1alpha1.ReasonExtensionUnavailable),
		},
		"OwnedAndAsSpecifiedIsUpToDate": {
			mg:         newDatabase(),
			answers:    []fakedb.Answer{owned().row()},
			want:       managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
			wantReason: string(xpv2.ReasonAvailable),
		},
		"ChangedConnectionLimitIsUpdated": {
			mg:         newDatabase(func(d *v1alpha1.PostgreSQLDatabase) { d.Spec.ForProvider.ConnectionLimit = ptr.To[int32](10) }),
			answers:    []fakedb.Answer{owned().row()},
			want:       managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: false},
			wantReason: string(xpv2.ReasonAvailable),
		},
		"PublicStillConnectingIsUpdatedWhenRevoked": {
			mg:         newDatabase(func(d *v1alpha1.PostgreSQLDatabase) { d.Spec.ForProvider.RevokePublicPrivileges = true }),
			answers:    []fakedb.Answer{owned().row()},
			want:       managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: false},
			wantReason: string(xpv2.ReasonAvailable),
		},
		"AnAdminLockedOutIsLetInFirst": {
			mg:      newDatabase(),
			answers: []fakedb.Answer{owned(func(o *observed) { o.adminConnects = false }).row()},
			want:    managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: false},
		},
		"UnmarkedIsAConflict": {
			mg:         newDatabase(),
			answers:    []fakedb.Answer{owned(func(o *observed) { o.comment = "the DBA's" }).row()},
			wantErr:    "was not created by this PostgreSQLDatabase",
			wantReason: v1alpha1.ReasonConflict,
		},
		"BoundToATenantIsNotDeleted": {
			mg: newDatabase(func(d *v1alpha1.PostgreSQLDatabase) {
				d.DeletionTimestamp = &metav1.Time{Time: time.Now()}
				d.Status.Binding = v1alpha1.DatabaseBindingStatus{Phase: v1alpha1.PhaseBound, BoundTo: &v1alpha1.BindingReference{Tenant: "shop/orders"}}
			}),
			wantErr: "deletion held: the database is bound to PostgreSQLTenant shop/orders",
		},
		"DeletedAndAbsentIsGone": {
			mg:      newDatabase(func(d *v1alpha1.PostgreSQLDatabase) { d.DeletionTimestamp = &metav1.Time{Time: time.Now()} }),
			answers: []fakedb.Answer{(*observed)(nil).row(), notStaged},
			want:    managed.ExternalObservation{ResourceExists: false},
		},
		"DeletedWithACreateCutShortIsThereToDrop": {
			mg:      newDatabase(func(d *v1alpha1.PostgreSQLDatabase) { d.DeletionTimestamp = &metav1.Time{Time: time.Now()} }),
			answers: []fakedb.Answer{(*observed)(nil).row(), staged},
			want:    managed.ExternalObservation{ResourceExists: true},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			db := fakedb.New(c.answers...)
			got, err := newExternal(db).Observe(context.Background(), c.mg)
			decision.Err(t, "Observe", err, c.wantErr)
			decision.Observed(t, db, c.mg, got, c.want, c.wantReason)
		})
	}
}

func TestCreateUpdateDeleteStatements(t *testing.T) {
	marked := postgres.WithMarker("orders", postgres.Mark{UID: dbUID})
	create := func(ctx context.Context, e *external, mg *v1alpha1.PostgreSQLDatabase) error {
		_, err := e.Create(ctx, mg)
		return err
	}
	update := func(ctx context.Context, e *external, mg *v1alpha1.PostgreSQLDatabase) error {
		_, err := e.Update(ctx, mg)
		return err
	}
	drop := func(ctx context.Context, e *external, mg *v1alpha1.PostgreSQLDatabase) error {
		_, err := e.Delete(ctx, mg)
		return err
	}
	cases := map[string]struct {
		mg      *v1alpha1.PostgreSQLDatabase
		answers []fakedb.Answer
		op      func(context.Context, *external, *v1alpha1.PostgreSQLDatabase) error
		want    []string
		wantErr string
	}{
		"CreateStagesMarksRenamesAndGivesAway": {
			mg:      newDatabase(),
			answers: []fakedb.Answer{(*observed)(nil).row(), roleExists(true), noRole, notStaged, fakedb.ActsAsAnyRole(170000)},
			op:      create,
			want: []string{
				`CREATE DATABASE ` + staging + ` WITH TEMPLATE "template0" ALLOW_CONNECTIONS false`,
				`COMMENT ON DATABASE ` + staging + ` IS '` + marked + `'`,
				`ALTER DATABASE ` + staging + ` RENAME TO "orders"`,
				`ALTER DATABASE "orders" WITH ALLOW_CONNECTIONS true`,
				`ALTER DATABASE "orders" OWNER TO "alice"`,
			},
		},
		"CreateCutShortIsFinished": {
			mg:      newDatabase(),
			answers: []fakedb.Answer{(*observed)(nil).row(), roleExists(true), noRole, staged, fakedb.ActsAsAnyRole(170000)},
			op:      create,
			want: []string{
				`COMMENT ON DATABASE ` + staging + ` IS '` + marked + `'`,
				`ALTER DATABASE ` + staging + ` RENAME TO "orders"`,
				`ALTER DATABASE "orders" WITH ALLOW_CONNECTIONS true`,
				`ALTER DATABASE "orders" OWNER TO "alice"`,
			},
		},
		"CreateByAManagedAdminActsAsTheOwnerAndGivesItBack": {
			mg:      newDatabase(),
			answers: []fakedb.Answer{(*observed)(nil).row(), roleExists(true), noRole, notStaged, fakedb.ActsAsNoRole(150000)},
			op:      create,
			want: []string{
				`GRANT "alice" TO CURRENT_USER`,
				`CREATE DATABASE ` + staging + ` WITH TEMPLATE "template0" ALLOW_CONNECTIONS false`,
				`COMMENT ON DATABASE ` + staging + ` IS '` + marked + `'`,
				`ALTER DATABASE ` + staging + ` RENAME TO "orders"`,
				`ALTER DATABASE "orders" WITH ALLOW_CONNECTIONS true`,
				`ALTER DATABASE "orders" OWNER TO "alice"`,
				`REVOKE "alice" FROM CURRENT_USER`,
			},
		},
		"UpdateSendsOnlyWhatDiffers": {
			mg:      newDatabase(func(d *v1alpha1.PostgreSQLDatabase) { d.Spec.ForProvider.ConnectionLimit = ptr.To[int32](10) }),
			answers: []fakedb.Answer{owned().row(), fakedb.ActsAsAnyRole(170000)},
			op:      update,
			want:    []string{`ALTER DATABASE "orders" WITH CONNECTION LIMIT 10`},
		},
		"UpdateOfAnUpToDateDatabaseSendsNothing": {
			mg:      newDatabase(),
			answers: []fakedb.Answer{owned().row(), fakedb.ActsAsAnyRole(170000)},
			op:      update,
		},
		"DeleteWaitsForSessions": {
			mg:      newDatabase(),
			answers: []fakedb.Answer{owned().row(), sessions(2)},
			op:      drop,
			wantErr: "is not dropped while 2 session(s) are connected to it",
		},
		"DeleteDrops": {
			mg:      newDatabase(),
			answers: []fakedb.Answer{owned().row(), sessions(0), fakedb.ActsAsAnyRole(170000)},
			op:      drop,
			want:    []string{`DROP DATABASE IF EXISTS "orders"`},
		},
		"DeleteWithTerminationForcesTheSessionsOut": {
			mg:      newDatabase(func(d *v1alpha1.PostgreSQLDatabase) { d.Spec.ForProvider.TerminateConnectionsOnDelete = true }),
			answers: []fakedb.Answer{owned().row(), sessions(2), fakedb.ActsAsAnyRole(170000)},
			op:      drop,
			want:    []string{`DROP DATABASE IF EXISTS "orders" WITH (FORCE)`},
		},
		"DeleteWithTerminationByAManagedAdminActsAsTheSessionsRoles": {
			mg:      newDatabase(func(d *v1alpha1.PostgreSQLDatabase) { d.Spec.ForProvider.TerminateConnectionsOnDelete = true }),
			answers: []fakedb.Answer{owned().row(), sessions(2, "bob"), fakedb.ActsAsNoRole(150000)},
			op:      drop,
			// WITH (FORCE) ends only the sessions of roles the admin holds.
			want: []string{
				`GRANT "alice" TO CURRENT_USER`, `GRANT "bob" TO CURRENT_USER`,
				`DROP DATABASE IF EXISTS "orders" WITH (FORCE)`,
				`REVOKE "alice" FROM CURRENT_USER`, `REVOKE "bob" FROM CURRENT_USER`,
			},
		},
		"DeleteOfAnAbsentDatabaseSendsNothing": {
			mg:      newDatabase(),
			answers: []fakedb.Answer{(*observed)(nil).row(), notStaged},
			op:      drop,
		},
		"DeleteOfACreateCutShortDropsTheStagingDatabase": {
			mg:      newDatabase(),
			answers: []fakedb.Answer{(*observed)(nil).row(), staged},
			op:      drop,
			want:    []string{`DROP DATABASE IF EXISTS ` + staging},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			db := fakedb.New(c.answers...)
			e := newExternal(db)
			err := c.op(ctx, e, c.mg)
			decision.Err(t, "the operation", err, c.wantErr)
			decision.Sent(t, db, c.want)
		})
	}
}

// TestCreateReadsTheStagingDatabaseOnce: the Observe that plans a create
// and the Create that follows in the same reconcile read whether a
// staging database is there once, so the plan shown is what is sent.
func TestCreateReadsTheStagingDatabaseOnce(t *testing.T) {
	ctx := context.Background()
	db := fakedb.New((*observed)(nil).row(), roleExists(true), noRole, staged, fakedb.ActsAsAnyRole(170000))
	e := newExternal(db)
	mg := newDatabase()
	if _, err := e.Observe(ctx, mg); err != nil {
		t.Fatalf("Observe: %v", err)
	}
	if _, err := e.Create(ctx, mg); err != nil {
		t.Fatalf("Create: %v", err)
	}
	reads := 0
	for _, q := range db.Queries() {
		if strings.Contains(q, "AND NOT d.datallowconn") {
			reads++
		}
	}
	if reads != 1 {
		t.Errorf("the staging database was read %d times in one reconcile, want once", reads)
	}
}
