// Package privilege holds what the PostgreSQLGrant and
// PostgreSQLDefaultPrivileges controllers share: their conditions, the
// boundary check of their Instance, and the helpers that plan and apply a
// change of privileges.
package privilege

import (
	"context"
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/controller/boundary"
	"github.com/ayatori/provider-postgresql/internal/controller/oninstance"
	"github.com/ayatori/provider-postgresql/internal/controller/reference"
)

// Errors wrapped around what the server says.
const (
	ErrObserve = "cannot observe the privileges"
	ErrApply   = "cannot grant or revoke"
	ErrRevoke  = "cannot revoke what was granted"
	ErrIntent  = "cannot record the privileges about to be granted"
	// ErrNoRoleSelected: a roleSelector that has matched no role yet.
	ErrNoRoleSelected = "spec.forProvider.roleSelector has not selected a role yet"
)

// Checker checks grants and default privileges on conn's Instance.
func Checker(kube client.Reader, conn *oninstance.Connection) boundary.Checker {
	return boundary.Checker{Kube: kube, Instance: conn.Instance, Q: conn.Pool}
}

// Unsupported sets and returns the condition of privileges the server is
// too old for.
func Unsupported(mg resource.Managed, version int, unsupported []string, on string) error {
	msg := fmt.Sprintf("PostgreSQL %s cannot grant %s on %s (MAINTAIN needs PostgreSQL 17 or newer)", serverVersion(version), strings.Join(unsupported, ", "), on)
	mg.SetConditions(v1alpha1.NotReady(v1alpha1.ReasonUnsupported, msg))
	return errors.New(msg)
}

// Unreachable reports whether err, from entering a grant's database
// (oninstance.Connection.Enter), means there is nothing there for mg: the
// database does not exist, or mg is being deleted and its namespace may no
// longer use the database (its PostgreSQLDatabase gone, the database
// retained), whose privileges are then no longer the namespace's to
// revoke.
func Unreachable(mg resource.Managed, err error) bool {
	return postgres.IsCode(err, postgres.CodeInvalidCatalogName) || meta.WasDeleted(mg) && boundary.IsRefusal(err)
}

// Absent handles a grantee or target that does not exist: nothing is left
// to revoke for a resource being deleted; otherwise it waits.
func Absent(ctx context.Context, mg resource.Managed, conn *oninstance.Connection, what string) (managed.ExternalObservation, error) {
	if meta.WasDeleted(mg) {
		return managed.ExternalObservation{}, nil
	}
	msg := fmt.Sprintf("waiting for %s to exist on PostgreSQLInstance %q", what, conn.Instance.GetName())
	mg.SetConditions(v1alpha1.NotReady(v1alpha1.ReasonNotHeld, msg))
	return managed.ExternalObservation{}, reference.Wait(ctx, errors.New(msg))
}

// ExecAll runs stmts in one transaction; nothing at all when there are
// none.
func ExecAll(ctx context.Context, pool postgres.DB, stmts []string) error {
	if len(stmts) == 0 {
		return nil
	}
	return postgres.Exec(ctx, pool, stmts)
}

// Strings returns privileges as the server names them.
func Strings(ps []v1alpha1.Privilege) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = string(p)
	}
	return out
}

// Revocable returns the applied privileges some object still holds.
func Revocable(applied []string, held []postgres.Held) []string {
	var out []string
	for _, p := range applied {
		for _, h := range held {
			if _, ok := h[p]; ok {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// OrNone lists s for a message, or says none.
func OrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func serverVersion(v int) string {
	return fmt.Sprintf("%d.%d", v/10000, v%10000)
}
