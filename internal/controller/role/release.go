package role

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/controller/activation"
	"github.com/ayatori/provider-postgresql/internal/controller/boundary"
	"github.com/ayatori/provider-postgresql/internal/controller/locked"
)

// reasonAccessEnded is the event of a role being deleted that lost LOGIN
// and memberships, and whose sessions were ended.
const reasonAccessEnded event.Reason = "AccessEnded"

// endAccess takes from the roles names that carry mg's marker what lets
// anyone act as them: LOGIN, then the memberships it may revoke, and their
// sessions, ended before it (so that none holds a lock the ALTER waits
// for) and after it (one that logged in meanwhile). It runs in the
// Instance's own database, which no tenant owns.
func (e *external) endAccess(ctx context.Context, mg *v1alpha1.PostgreSQLRole, names []string) error {
	got, err := postgres.ObserveLogins(ctx, e.conn.Pool, names, false)
	if err != nil {
		return err
	}
	for _, o := range got {
		stmts, acts := endsAccess(mg, o)
		if !acts {
			continue
		}
		ended := 0
		err := postgres.ActingAs(ctx, e.conn.Pool, []postgres.RoleNeed{{Role: o.Name, Inherit: true}}, func() error {
			for i := range 2 {
				n, err := postgres.EndSessions(ctx, e.conn.Pool, o.Name)
				if err != nil {
					return err
				}
				ended += n
				if i > 0 {
					continue
				}
				for _, st := range stmts {
					err := postgres.Exec(ctx, e.conn.Pool, []string{st})
					// A membership of a role the admin holds no ADMIN
					// OPTION on (one a DBA granted) cannot be revoked by a
					// managed-service admin; DROP ROLE removes it anyway,
					// and without LOGIN it gives no one anything.
					tolerated := strings.HasPrefix(st, "REVOKE ") && postgres.IsCode(err, postgres.CodeInsufficientPrivilege)
					if err != nil && !tolerated {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			return errors.Wrapf(err, "cannot end the access of role %q before it is released and dropped (NOLOGIN, memberships, sessions); the delete is retried", o.Name)
		}
		e.events.Event(mg, event.Normal(reasonAccessEnded, fmt.Sprintf("role %q can no longer log in or act as another role (%d statement(s)); %d session(s) ended", o.Name, len(stmts), ended)))
	}
	return nil
}

// endsAccess returns the statements that end the access of login o of
// mg, and whether endAccess acts on it at all: a role mg marked, with
// LOGIN, memberships or sessions.
func endsAccess(mg *v1alpha1.PostgreSQLRole, o postgres.ObservedLogin) ([]string, bool) {
	if o.Role == nil || o.Role.Owner != string(mg.GetUID()) {
		return nil, false
	}
	stmts := postgres.EndAccessStatements(o.Name, *o.Role)
	return stmts, len(stmts) > 0 || o.Sessions > 0
}

// accessNames are the roles whose access a deletion of mg ends: the role,
// and an Alternating role's logins.
func accessNames(mg *v1alpha1.PostgreSQLRole) []string {
	names := []string{mg.RoleName()}
	if alternating(mg) {
		l := loginNames(mg.RoleName())
		names = append(names, l[:]...)
	}
	return names
}

// releaseOwned applies ownedObjectsOnDelete before a drop: in the
// maintenance database and in every database a PostgreSQLDatabase manages
// on the same Instance, it reassigns or drops what the role owns there.
func (e *external) releaseOwned(ctx context.Context, mg *v1alpha1.PostgreSQLRole) error {
	if err := e.checkRelease(ctx, mg); err != nil {
		return err
	}
	r, err := e.releaseOf(ctx, mg)
	if err != nil || len(r.dbs) == 0 {
		return err
	}
	return postgres.ActingAs(ctx, e.conn.Pool, r.needs, func() error {
		for _, db := range r.dbs {
			if err := e.releaseIn(ctx, mg, db, r.stmts); err != nil {
				return err
			}
		}
		return nil
	})
}

// A release is what releasing a role's objects sends: stmts in each of
// dbs, with the privileges of needs.
type release struct {
	stmts []string
	dbs   []string
	needs []postgres.RoleNeed
}

// checkRelease refuses the release of what mg owns where the boundary or
// a Lock forbids it, before anything is sent.
func (e *external) checkRelease(ctx context.Context, mg *v1alpha1.PostgreSQLRole) error {
	switch mg.Spec.OwnedObjectsOnDelete {
	case v1alpha1.OwnedObjectsReassign:
		// Handing a role's objects (SECURITY DEFINER functions among them)
		// to a privileged role would run them with its powers.
		return e.checker().Check(ctx, mg, boundary.Named{}, boundary.Named{Field: "spec.reassignOwnedTo", Name: mg.Spec.ReassignOwnedTo})
	case v1alpha1.OwnedObjectsDrop:
		// Checked for every database before anything is dropped in any;
		// only those where the role owns something are at risk.
		protected, err := locked.Databases(ctx, e.kube, string(e.conn.Instance.GetUID()))
		if err != nil {
			return err
		}
		owns, err := postgres.DatabasesOwnedIn(ctx, e.conn.Pool, mg.RoleName())
		if err != nil {
			return err
		}
		for _, db := range owns {
			if names := protected[db]; len(names) > 0 {
				return errors.Errorf("ownedObjectsOnDelete Drop would drop what role %q owns in database %q, which Lock(s) [%s] protect: nothing was dropped, and the role stays. "+
					"Delete the Lock(s), or set spec.ownedObjectsOnDelete to Reassign (with reassignOwnedTo)", mg.RoleName(), db, locked.Format(names))
			}
		}
	}
	return nil
}

// releaseOf works out the release of what mg owns, as its
// ownedObjectsOnDelete asks (checkRelease says whether it may run):
// nothing when the role is to keep its objects (the drop then fails while
// it owns any).
func (e *external) releaseOf(ctx context.Context, mg *v1alpha1.PostgreSQLRole) (release, error) {
	var r release
	switch mg.Spec.OwnedObjectsOnDelete {
	case v1alpha1.OwnedObjectsReassign:
		r.stmts = postgres.ReassignOwnedStatements(mg.RoleName(), mg.Spec.ReassignOwnedTo)
	case v1alpha1.OwnedObjectsDrop:
		r.stmts = postgres.DropOwnedStatements(mg.RoleName())
	default:
		return r, nil
	}
	dbs, err := e.managedDatabases(ctx)
	if err != nil {
		return r, err
	}
	// Only where the role owns or holds something, among those databases:
	// a tenant's database may refuse the admin's connection (CONNECT
	// revoked from PUBLIC), and no connection is opened for nothing.
	deps, err := postgres.DependentDatabases(ctx, e.conn.Pool, mg.RoleName())
	if err != nil {
		return r, err
	}
	// REASSIGN and DROP OWNED ask for the privileges of the role (and of
	// the heir), and a connection to a database the admin may not enter
	// for those of its owner: a non-superuser admin holds them for the
	// release alone.
	r.needs = []postgres.RoleNeed{{Role: mg.RoleName(), Inherit: true}}
	if mg.Spec.OwnedObjectsOnDelete == v1alpha1.OwnedObjectsReassign {
		r.needs = append(r.needs, postgres.RoleNeed{Role: mg.Spec.ReassignOwnedTo, Inherit: true})
	}
	for _, d := range deps {
		if !slices.Contains(dbs, d.Name) {
			continue
		}
		r.dbs = append(r.dbs, d.Name)
		if !d.CanConnect {
			r.needs = append(r.needs, postgres.RoleNeed{Role: d.Owner, Inherit: true})
		}
	}
	return r, nil
}

// releaseIn runs the release statements in database db, with the
// privileges of the owners of what others granted the role there, which
// DROP OWNED revokes as their grantor.
func (e *external) releaseIn(ctx context.Context, mg *v1alpha1.PostgreSQLRole, db string, stmts []string) error {
	p, err := e.pools.Pool(ctx, e.conn.Target.In(db))
	if err != nil {
		return errors.Wrapf(err, "cannot connect to database %q", db)
	}
	grantors, err := postgres.PrivilegeOwners(ctx, p, mg.RoleName())
	if err != nil {
		return err
	}
	err = postgres.ActingAs(ctx, p, grantors, func() error { return postgres.Exec(ctx, p, stmts) })
	return errors.Wrapf(err, "cannot release what role %q owns in database %q (ownedObjectsOnDelete %s)", mg.RoleName(), db, mg.Spec.OwnedObjectsOnDelete)
}

// managedDatabases lists the Instance's maintenance database and the
// databases PostgreSQLDatabases (any namespace) manage on it.
func (e *external) managedDatabases(ctx context.Context) ([]string, error) {
	l := &v1alpha1.PostgreSQLDatabaseList{}
	if err := activation.List(ctx, e.kube, l, client.UnsafeDisableDeepCopy); err != nil {
		return nil, errors.Wrap(err, "cannot list the PostgreSQLDatabases on the Instance")
	}
	dbs := []string{e.conn.Target.Endpoint.Database}
	for _, d := range l.Items {
		ap := d.Status.AtProvider
		if ap.InstanceUID == string(e.conn.Instance.GetUID()) && ap.Name != "" && !slices.Contains(dbs, ap.Name) {
			dbs = append(dbs, ap.Name)
		}
	}
	return dbs, nil
}

// releaseTimeout bounds applying ownedObjectsOnDelete in every database.
const releaseTimeout = 5 * time.Minute
