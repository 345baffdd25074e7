package role

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres/fakedb"
	"github.com/ayatori/provider-postgresql/internal/controller/conflict"
	"github.com/ayatori/provider-postgresql/internal/controller/oninstance"
	"github.com/ayatori/provider-postgresql/internal/controller/role/credential"
	"github.com/ayatori/provider-postgresql/internal/fixture/decision"
)

// The decisions of the role controller for a group role (NOLOGIN, so no
// password or Secret is involved), against a scripted database: what
// Observe reports for each state of the catalog, which statements Create
// and Update send, and the conditions they leave. Logins, passwords and
// rotation are proven against real servers in role_test.go and
// rotation_test.go.

const (
	roleUID    = "5c4e0b8e-0000-4000-8000-000000000003"
	roleSystem = "7301234567890123456"
)

// group is a role as ObserveRole's query returns it.
type group struct {
	inherit, superuser bool
	connLimit          int32
	comment            string
	memberOf           []string
}

// row answers ObserveRole's query; nil for a role that does not exist.
// The columns: system identifier, exists, LOGIN, INHERIT, CREATEDB,
// CREATEROLE, REPLICATION, BYPASSRLS, SUPERUSER, connection limit, valid
// until, settings, comment, memberships, verifier.
func (g *group) row() fakedb.Answer {
	r := []any{roleSystem, false, false, false, false, false, false, false, false, int32(-1), pgtype.Timestamptz{}, []string{}, "", []string{}, nil}
	if g != nil {
		m := g.memberOf
		if m == nil {
			m = []string{}
		}
		r = []any{roleSystem, true, false, g.inherit, false, false, false, false, g.superuser, g.connLimit, pgtype.Timestamptz{}, []string{}, g.comment, m, nil}
	}
	return fakedb.Answer{Match: "LEFT JOIN pg_catalog.pg_roles r ON r.rolname = $1", Rows: [][]any{r}}
}

// ours is the role as this resource left it.
func ours(change ...func(*group)) *group {
	g := &group{inherit: true, connLimit: -1, comment: postgres.WithMarker("", postgres.Mark{UID: roleUID})}
	for _, c := range change {
		c(g)
	}
	return g
}

func newRole(change ...func(*v1alpha1.PostgreSQLRole)) *v1alpha1.PostgreSQLRole {
	r := &v1alpha1.PostgreSQLRole{
		ObjectMeta: metav1.ObjectMeta{Name: "readers", Namespace: "shop", UID: roleUID},
		Spec: v1alpha1.PostgreSQLRoleSpec{
			ManagementPolicies: xpv2.ManagementPolicies{xpv2.ManagementActionAll},
			InstanceRef:        v1alpha1.InstanceReference{Name: "main"},
			ForProvider:        v1alpha1.PostgreSQLRoleParameters{Login: ptr.To(false)},
		},
	}
	for _, c := range change {
		c(r)
	}
	return r
}

func newExternal(db *fakedb.DB) *external {
	in := &v1alpha1.PostgreSQLInstance{ObjectMeta: metav1.ObjectMeta{Name: "main", UID: "instance-uid"}}
	return &external{conn: oninstance.NewConnection(in, db, func(string) postgres.DB { return db }), verified: &credential.Verified{}, whose: noOwner}
}

// noOwner stands in for the look-up of a marker's resource: none exists.
func noOwner(context.Context, string) (conflict.Owner, error) { return conflict.Owner{}, nil }

func TestObserveDecisions(t *testing.T) {
	cases := map[string]struct {
		mg         *v1alpha1.PostgreSQLRole
		answers    []fakedb.Answer
		want       managed.ExternalObservation
		wantErr    string
		wantReason string
	}{
		"AbsentIsCreated": {
			mg:      newRole(),
			answers: []fakedb.Answer{(*group)(nil).row()},
			want:    managed.ExternalObservation{ResourceExists: false},
		},
		"AbsentAskingForCreateRoleIsRefused": {
			mg:         newRole(func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.CreateRole = ptr.To(true) }),
			answers:    []fakedb.Answer{(*group)(nil).row()},
			wantErr:    "spec.forProvider.createRole",
			wantReason: v1alpha1.ReasonPolicyRefused,
		},
		"AbsentJoiningAPredefinedRoleIsRefused": {
			mg:         newRole(func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.MemberOf = []string{"pg_read_server_files"} }),
			answers:    []fakedb.Answer{(*group)(nil).row()},
			wantErr:    `"pg_read_server_files" is a predefined role`,
			wantReason: v1alpha1.ReasonPolicyRefused,
		},
		"OwnedAndAsSpecifiedIsUpToDate": {
			mg:         newRole(),
			answers:    []fakedb.Answer{ours().row()},
			want:       managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
			wantReason: string(xpv2.ReasonAvailable),
		},
		"AChangedConnectionLimitIsUpdated": {
			mg:         newRole(),
			answers:    []fakedb.Answer{ours(func(g *group) { g.connLimit = 3 }).row()},
			want:       managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: false},
			wantReason: string(xpv2.ReasonAvailable),
		},
		// Memberships the spec never asked for are the DBA's business.
		"AMembershipGivenByHandIsLeftAlone": {
			mg:         newRole(),
			answers:    []fakedb.Answer{ours(func(g *group) { g.memberOf = []string{"dba"} }).row()},
			want:       managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
			wantReason: string(xpv2.ReasonAvailable),
		},
		"AMembershipDroppedFromTheSpecIsRevoked": {
			mg:         newRole(func(r *v1alpha1.PostgreSQLRole) { r.Status.AtProvider.AppliedMemberOf = []string{"analysts"} }),
			answers:    []fakedb.Answer{ours(func(g *group) { g.memberOf = []string{"analysts"} }).row()},
			want:       managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: false},
			wantReason: string(xpv2.ReasonAvailable),
		},
		"UnmarkedIsAConflict": {
			mg:         newRole(),
			answers:    []fakedb.Answer{ours(func(g *group) { g.comment = "the DBA's" }).row()},
			wantErr:    "was not created by this PostgreSQLRole",
			wantReason: v1alpha1.ReasonConflict,
		},
		"ImportIsObservedOnly": {
			mg: newRole(func(r *v1alpha1.PostgreSQLRole) {
				r.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
			}),
			answers: []fakedb.Answer{ours(func(g *group) { g.comment = "the DBA's"; g.superuser = true }).row()},
			// Not as the spec asks (its comment differs): the plan says what
			// widening the policies would change, and nothing is sent.
			want:       managed.ExternalObservation{ResourceExists: true},
			wantReason: v1alpha1.ReasonObserveOnly,
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

func TestCreateUpdateStatements(t *testing.T) {
	marked := postgres.QuoteLiteral(postgres.WithMarker("", postgres.Mark{UID: roleUID}))
	cases := map[string]struct {
		mg      *v1alpha1.PostgreSQLRole
		answers []fakedb.Answer
		create  bool
		want    []string
		wantErr string
	}{
		"CreateMarksTheRoleInTheSameTransaction": {
			mg:      newRole(func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.ConnectionLimit = ptr.To[int32](5) }),
			answers: []fakedb.Answer{(*group)(nil).row()},
			create:  true,
			want:    []string{postgres.NoSelfGrantSQL, `CREATE ROLE "readers" WITH CONNECTION LIMIT 5`, `COMMENT ON ROLE "readers" IS ` + marked},
		},
		"CreateJoiningARoleNoOneOwnsGrantsIt": {
			mg: newRole(func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.MemberOf = []string{"analysts"} }),
			answers: []fakedb.Answer{(*group)(nil).row(),
				// analysts does not exist yet: the boundary lets the
				// resource wait for it rather than refuse.
				{Match: "SELECT rolname, rolsuper, rolcreaterole"}},
			create: true,
			want: []string{postgres.NoSelfGrantSQL, `CREATE ROLE "readers"`, `COMMENT ON ROLE "readers" IS ` + marked,
				`GRANT "analysts" TO "readers"`},
		},
		"CreateJoiningASuperuserRoleSendsNothing": {
			mg: newRole(func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.MemberOf = []string{"analysts"} }),
			answers: []fakedb.Answer{(*group)(nil).row(),
				{Match: "SELECT rolname, rolsuper, rolcreaterole", Rows: [][]any{{"analysts", true, false, false, false, ""}}}},
			create:  true,
			wantErr: `role "analysts" has SUPERUSER on the server`,
		},
		"UpdateRevokesAMembershipDroppedFromTheSpec": {
			mg:      newRole(func(r *v1alpha1.PostgreSQLRole) { r.Status.AtProvider.AppliedMemberOf = []string{"analysts"} }),
			answers: []fakedb.Answer{ours(func(g *group) { g.memberOf = []string{"analysts"} }).row()},
			want:    []string{`REVOKE "analysts" FROM "readers"`},
		},
		"UpdateSendsOnlyWhatDiffers": {
			mg:      newRole(),
			answers: []fakedb.Answer{ours(func(g *group) { g.connLimit = 3 }).row()},
			want:    []string{`ALTER ROLE "readers" WITH CONNECTION LIMIT -1`},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			db := fakedb.New(c.answers...)
			e := newExternal(db)
			mg := c.mg
			if _, err := e.Observe(ctx, mg); err != nil && !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("Observe: %v", err)
			}
			var err error
			if c.create {
				_, err = e.Create(ctx, mg)
			} else {
				_, err = e.Update(ctx, mg)
			}
			decision.Err(t, "the operation", err, c.wantErr)
			decision.Sent(t, db, c.want)
		})
	}
}
