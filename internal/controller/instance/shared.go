package instance

import (
	"context"
	"fmt"
	"strings"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
)

// What an Instance reports of the parts of its server every login shares:
// the connection slots, and the databases PUBLIC may connect to.

// recordConnections records how the server's slots are shared and whether
// some are kept for the admin.
func recordConnections(mg *v1alpha1.PostgreSQLInstance, info *postgres.ServerInfo) {
	mg.Status.Connections = &v1alpha1.InstanceConnections{Max: info.MaxConnections, ReservedForAdmin: info.ReservedForAdmin}
	mg.Status.Connections.DefaultRoleConnectionLimit = mg.DefaultConnectionLimit()
	mg.SetConditions(adminSlots(info))
}

// adminSlots is the AdminSlotsReserved condition: whether the provider
// can still connect once every other login's slots are taken.
func adminSlots(info *postgres.ServerInfo) xpv2.Condition {
	c := xpv2.Condition{Type: v1alpha1.TypeAdminSlotsReserved, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}
	switch {
	case info.ReservedForAdmin > 0 && info.Superuser:
		c.Reason = v1alpha1.ReasonSuperuserReserved
		c.Message = fmt.Sprintf("%d of the server's %d connection slots are kept for superusers, the admin among them", info.ReservedForAdmin, info.MaxConnections)
	case info.ReservedForAdmin > 0:
		c.Reason = v1alpha1.ReasonReservedConnections
		c.Message = fmt.Sprintf("%d of the server's %d connection slots are kept for members of pg_use_reserved_connections, the admin among them", info.ReservedForAdmin, info.MaxConnections)
	default:
		c.Status, c.Reason = corev1.ConditionFalse, v1alpha1.ReasonNoReservedSlots
		c.Message = "no connection slot is kept for the admin: logins that take every other slot leave the provider unable to connect, for every namespace. " +
			"Each role the provider creates gets a connection limit (status.connections.defaultRoleConnectionLimit, spec.policy.defaultConnectionLimit); " + reserveAdvice(info)
	}
	return c
}

// reserveAdvice says how a platform keeps slots for the admin on info's
// server.
func reserveAdvice(info *postgres.ServerInfo) string {
	switch {
	case info.Superuser:
		return "set superuser_reserved_connections above zero (a server restart)"
	case info.VersionNum >= 160000:
		return "on PostgreSQL 16 and later, GRANT pg_use_reserved_connections to the admin role and set reserved_connections above zero (a server restart; a managed service calls it a parameter group or a server flag)"
	default:
		return "PostgreSQL 15 keeps slots for superusers only: keep max_connections well above the sum of the roles' limits"
	}
}

// sharedDatabases sets the SharedDatabasesRestricted condition and
// reports whether the server is as spec.sharedDatabases asks.
func sharedDatabases(mg *v1alpha1.PostgreSQLInstance, info *postgres.ServerInfo) bool {
	open := info.PublicConnect
	switch {
	case len(open) == 0:
		mg.SetConditions(restricted(corev1.ConditionTrue, v1alpha1.ReasonPublicConnectRevoked,
			"PUBLIC may connect neither to template1 nor to "+mg.Spec.Endpoint.Database+": a login connects to the databases it is granted only"))
		return true
	case !mg.Spec.SharedDatabases.RevokePublicConnect:
		mg.SetConditions(restricted(corev1.ConditionFalse, v1alpha1.ReasonPublicConnectKept,
			"every login may connect to "+strings.Join(open, " and ")+" (PUBLIC holds CONNECT); the provider needs nothing there that a login can hold, "+
				"and spec.sharedDatabases.revokePublicConnect revokes it"))
		return true
	default:
		return false
	}
}

// revokePublicConnectStatements give the admin CONNECT on each database
// (so that it keeps it) and take it from PUBLIC.
func revokePublicConnectStatements(databases []string) []string {
	var stmts []string
	for _, d := range databases {
		id := postgres.QuoteIdentifier(d)
		stmts = append(stmts, "GRANT CONNECT ON DATABASE "+id+" TO CURRENT_USER", "REVOKE CONNECT ON DATABASE "+id+" FROM PUBLIC")
	}
	return stmts
}

// restrictSharedDatabases revokes PUBLIC's CONNECT where it still holds.
// A non-owner's GRANT and REVOKE only warn, so the result is read back:
// what is still open is refused, with the statements a database
// administrator can run.
func (e *external) restrictSharedDatabases(ctx context.Context, mg *v1alpha1.PostgreSQLInstance) error {
	info, err := postgres.ObserveServer(ctx, e.pool)
	if err != nil {
		return errors.Wrap(err, errObserve)
	}
	if len(info.PublicConnect) == 0 {
		return nil
	}
	stmts := revokePublicConnectStatements(info.PublicConnect)
	if err := postgres.Exec(ctx, e.pool, stmts); err != nil && !postgres.IsCode(err, postgres.CodeInsufficientPrivilege) {
		return errors.Wrap(err, "cannot revoke PUBLIC's CONNECT on the shared databases")
	}
	after, err := postgres.ObserveServer(ctx, e.pool)
	if err != nil {
		return errors.Wrap(err, errObserve)
	}
	if len(after.PublicConnect) > 0 {
		msg := fmt.Sprintf("spec.sharedDatabases.revokePublicConnect: the admin role may not change the privileges of %s (only their owner or a superuser may): PUBLIC may still connect. "+
			"A database administrator can run: %s", strings.Join(after.PublicConnect, " and "),
			strings.Join(revokePublicConnectStatements(after.PublicConnect), "; ")+" (with the admin role's name for CURRENT_USER)")
		mg.SetConditions(restricted(corev1.ConditionFalse, v1alpha1.ReasonCannotRevoke, msg))
		return errors.New(msg)
	}
	mg.SetConditions(restricted(corev1.ConditionTrue, v1alpha1.ReasonPublicConnectRevoked,
		"PUBLIC may connect neither to template1 nor to "+mg.Spec.Endpoint.Database+": a login connects to the databases it is granted only"))
	e.record.Event(mg, eventPublicConnectRevoked(info.PublicConnect))
	return nil
}

// reasonPublicConnectRevoked is the event of revokePublicConnect's change.
const reasonPublicConnectRevoked event.Reason = "PublicConnectRevoked"

func eventPublicConnectRevoked(databases []string) event.Event {
	return event.Normal(reasonPublicConnectRevoked, "Revoked PUBLIC's CONNECT on "+strings.Join(databases, " and ")+", granted it to the admin role")
}

// restricted is the SharedDatabasesRestricted condition.
func restricted(status corev1.ConditionStatus, reason xpv2.ConditionReason, msg string) xpv2.Condition {
	return xpv2.Condition{Type: v1alpha1.TypeSharedDatabasesRestricted, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.Now()}
}
