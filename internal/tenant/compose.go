// Package tenant is the composition logic behind the PostgreSQLTenant
// claim: from a tenant's spec it derives the managed resources that give an
// application namespace a database, a login role and a credentials Secret.
// It is pure: the composition function (function.go) reads the request and
// writes the response around it.
package tenant

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

// Names of the composed resources within the pipeline.
const (
	OwnerRole = "owner-role"
	Database  = "database"
	LoginRole = "login-role"
)

// maxIdentifier is PostgreSQL's identifier length.
const maxIdentifier = 63

// ownerSuffix names a tenant's owner role after its database.
const ownerSuffix = "_owner"

// Spec is what a tenant asks for: a PostgreSQLTenant claim's spec as its
// composite carries it.
type Spec struct {
	// InstanceRef names the PostgreSQLInstance of a dynamic request.
	InstanceRef string
	// DatabaseRef names an admin-registered PostgreSQLDatabase in the
	// claim's namespace, instead of a dynamic request.
	DatabaseRef string
	// Database and LoginRole default to the claim's name.
	Database   string
	LoginRole  string
	Extensions []string
	// SecretName defaults to <instance>-<claim>-postgresql.
	SecretName string
	// ClaimNamespace and ClaimName come from spec.claimRef.
	ClaimNamespace string
	ClaimName      string
}

// Options are the platform's choices, set in the Composition's input.
type Options struct {
	// DeleteData makes the database and its owner role go with the claim.
	// By default they are retained, and only the login role is dropped.
	DeleteData bool
}

// Registered is what the explicit path knows of an admin-registered
// PostgreSQLDatabase.
type Registered struct {
	Instance string
	// Database and Owner are the PostgreSQL names the registered resource
	// observed; empty until it has.
	Database string
	Owner    string
}

// Status is what the claim's status shows.
type Status struct {
	Instance   string `json:"instance,omitempty"`
	Database   string `json:"database,omitempty"`
	LoginRole  string `json:"loginRole,omitempty"`
	SecretName string `json:"secretName,omitempty"`
}

// Composed is the result of a composition.
type Composed struct {
	Resources map[string]client.Object
	Status    Status
}

// Dynamic composes a dynamic request: a NOLOGIN owner role and a database it
// owns (retained when the claim goes, unless o.DeleteData), and a login role,
// member of the owner role, whose sessions act as the owner (so what the
// tenant creates belongs to the retained owner), with its credentials
// Secret in the claim's namespace. The login role is dropped with the
// claim, so the tenant can no longer log in while the data stays.
func Dynamic(s Spec, o Options) (*Composed, error) {
	if s.ClaimNamespace == "" || s.ClaimName == "" {
		return nil, fmt.Errorf("spec.claimRef is not set: the tenant composition serves PostgreSQLTenant claims")
	}
	if s.InstanceRef == "" {
		return nil, fmt.Errorf("spec.instanceRef.name is required for a dynamic request")
	}
	db := def(s.Database, s.ClaimName)
	owner := OwnerRoleName(db)
	in := v1alpha1.InstanceReference{Name: s.InstanceRef}
	retain := xpv2.ManagementPolicies{xpv2.ManagementActionObserve, xpv2.ManagementActionCreate, xpv2.ManagementActionUpdate, xpv2.ManagementActionLateInitialize}
	if o.DeleteData {
		retain = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
	}

	ownerRole := &v1alpha1.PostgreSQLRole{
		ObjectMeta: meta(s, s.ClaimName+"-owner"),
		Spec: v1alpha1.PostgreSQLRoleSpec{
			ManagementPolicies: retain, InstanceRef: in,
			ForProvider: v1alpha1.PostgreSQLRoleParameters{
				Name: ptr.To(owner), Login: ptr.To(false),
				Comment: ptr.To(fmt.Sprintf("owner of the tenant database %s (PostgreSQLTenant %s/%s)", db, s.ClaimNamespace, s.ClaimName)),
			},
		},
	}
	database := &v1alpha1.PostgreSQLDatabase{
		ObjectMeta: meta(s, s.ClaimName),
		Spec: v1alpha1.PostgreSQLDatabaseSpec{
			ManagementPolicies: retain, InstanceRef: in,
			ForProvider: v1alpha1.PostgreSQLDatabaseParameters{
				Name: ptr.To(db), OwnerRef: &v1alpha1.LocalReference{Name: ownerRole.Name},
				Extensions: extensions(s.Extensions),
				// Only this tenant connects: not every role on the server.
				RevokePublicPrivileges: true,
			},
		},
	}
	c := access(s, Registered{Instance: s.InstanceRef, Database: db, Owner: owner})
	c.Resources[OwnerRole], c.Resources[Database] = ownerRole, database
	return c, nil
}

// Explicit composes access to an admin-registered database: only the login
// role, member of the database's owner role, and its Secret. Nothing is
// composed until the registered database has observed its owner.
func Explicit(s Spec, r Registered) (*Composed, error) {
	if s.ClaimNamespace == "" || s.ClaimName == "" {
		return nil, fmt.Errorf("spec.claimRef is not set: the tenant composition serves PostgreSQLTenant claims")
	}
	if r.Database == "" || r.Owner == "" {
		return nil, fmt.Errorf("waiting for PostgreSQLDatabase %s/%s to observe its database and owner", s.ClaimNamespace, s.DatabaseRef)
	}
	return access(s, r), nil
}

// access composes the login role of a tenant of database r.
func access(s Spec, r Registered) *Composed {
	login := def(s.LoginRole, s.ClaimName)
	secret := def(s.SecretName, SecretName(r.Instance, s.ClaimName))
	role := &v1alpha1.PostgreSQLRole{
		ObjectMeta: meta(s, s.ClaimName+"-login"),
		Spec: v1alpha1.PostgreSQLRoleSpec{
			// Dropped with the claim: the data stays, the access goes.
			ManagementPolicies:               xpv2.ManagementPolicies{xpv2.ManagementActionAll},
			InstanceRef:                      v1alpha1.InstanceReference{Name: r.Instance},
			WriteConnectionSecretToReference: &xpv2.LocalSecretReference{Name: secret},
			ConnectionDatabase:               r.Database,
			// Anything it still owns when dropped goes to the owner role.
			OwnedObjectsOnDelete: v1alpha1.OwnedObjectsReassign,
			ReassignOwnedTo:      r.Owner,
			ForProvider: v1alpha1.PostgreSQLRoleParameters{
				Name: ptr.To(login), Login: ptr.To(true), MemberOf: []string{r.Owner},
				// Sessions act as the owner role, so what the tenant
				// creates belongs to the retained owner, not to this role.
				ConfigurationParameters: []v1alpha1.ConfigurationParameter{{Name: "role", Value: r.Owner}},
				Comment:                 ptr.To(fmt.Sprintf("login of PostgreSQLTenant %s/%s", s.ClaimNamespace, s.ClaimName)),
			},
		},
	}
	return &Composed{
		Resources: map[string]client.Object{LoginRole: role},
		Status:    Status{Instance: r.Instance, Database: r.Database, LoginRole: login, SecretName: secret},
	}
}

// OwnerRoleName is the owner role of database db: db_owner, shortened to
// fit an identifier.
func OwnerRoleName(db string) string {
	if len(db) > maxIdentifier-len(ownerSuffix) {
		db = db[:maxIdentifier-len(ownerSuffix)]
	}
	return db + ownerSuffix
}

// SecretName is the default name of a tenant's Secret.
func SecretName(instance, claim string) string {
	return instance + "-" + claim + "-postgresql"
}

func meta(s Spec, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: s.ClaimNamespace, Name: name}
}

func extensions(names []string) []v1alpha1.Extension {
	var out []v1alpha1.Extension
	for _, n := range names {
		out = append(out, v1alpha1.Extension{Name: n})
	}
	return out
}

func def(v, fallback string) string {
	if v == "" {
		return fallback
	}
	return v
}
