// Package tenant is the composition logic behind the PostgreSQLTenant
// claim: from a tenant's spec it derives the managed resources that give an
// application namespace a database, a login role and a credentials Secret.
// It is pure: the composition function (function.go) reads the request and
// writes the response around it.
package tenant

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	input "github.com/ayatori/provider-postgresql/apis/tenant/v1alpha1"
)

// Names of the composed resources within the pipeline.
const (
	// Binding is the tenant's request for its database. It is all the
	// tenant gets until the database is bound to it.
	Binding   = "binding"
	LoginRole = "login-role"
	// Credentials is the ExternalSecret that projects the login's
	// credentials from OpenBao into the claim's namespace (OpenBao
	// delivery).
	Credentials = "credentials"
	// CredentialsOrder is the Crossplane Usage that keeps the
	// ExternalSecret until the login role is gone (OpenBao delivery).
	CredentialsOrder = "credentials-order"
)

// Delivery is how a tenant's credentials reach its namespace; the
// Composition's input names it.
type Delivery = input.Delivery

// Deliveries.
const (
	// DeliveryInstance (the default): through the Instance's
	// credentialVault where it names one (OpenBao), else a Secret the
	// provider writes (Secret).
	DeliveryInstance Delivery = ""
	// DeliverySecret: the provider writes a Secret in the claim's
	// namespace.
	DeliverySecret Delivery = "Secret"
	// DeliveryOpenBao: the provider writes the credentials to the
	// Instance's credentialVault, and an ExternalSecret projects them.
	DeliveryOpenBao Delivery = "OpenBao"
	// DeliveryMoving is shown in a claim's status.delivery while its
	// credentials move from the Secret to the vault: both deliver until
	// status.secretDeliveryEnds and the ExternalSecret has synced.
	DeliveryMoving Delivery = "SecretAndOpenBao"
)

// Defaults of the OpenBao delivery.
const (
	DefaultSecretStore       = "postgresql"
	DefaultRefreshInterval   = "1m"
	DefaultSecretGracePeriod = 24 * time.Hour
)

// OpenBao is the platform's store for OpenBao delivery (the input's
// openBao).
type OpenBao = input.OpenBao

// StoreRef names an External Secrets Operator store.
type StoreRef = input.StoreRef

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
	// RotateCredentials, when set, asks for a rotation each time it
	// changes (the login role's rotate-password annotation).
	RotateCredentials string
	// Authentication is how the login role logs in: "" or Password, or
	// Certificate.
	Authentication string
	// ClaimNamespace and ClaimName come from spec.claimRef, or, for a
	// namespaced Tenant, its own metadata.
	ClaimNamespace string
	ClaimName      string
}

// Options are the platform's choices, set in the Composition's input.
type Options struct {
	// DeleteData makes a provisioned database and its owner role Delete
	// when their record is deleted (the database's reclaim policy, fixed
	// at provisioning). By default they are retained, and Released when
	// the tenant goes.
	DeleteData bool
	// CredentialRotation is the login role's passwordRotation: when and
	// how tenants' credentials rotate. Unset, they rotate only when the
	// tenant asks (spec.rotateCredentials), in place.
	CredentialRotation *v1alpha1.PasswordRotation
	// Delivery is how credentials reach the claim's namespace: by
	// default through the Instance's credentialVault where it names one,
	// else a Secret; Secret or OpenBao whatever the Instance names.
	Delivery Delivery
	// OpenBao is the store OpenBao delivery reads through.
	OpenBao *OpenBao
}

// Status is what the claim's status shows.
type Status struct {
	Instance string `json:"instance,omitempty"`
	// DatabaseRef is the PostgreSQLDatabase bound to the tenant.
	DatabaseRef *ObjectRef `json:"databaseRef,omitempty"`
	// Database is the database's name on the server.
	Database   string `json:"database,omitempty"`
	LoginRole  string `json:"loginRole,omitempty"`
	SecretName string `json:"secretName,omitempty"`
	// Delivery is how the credentials reach the Secret: Secret, OpenBao,
	// or SecretAndOpenBao while they move from the first to the second.
	Delivery Delivery `json:"delivery,omitempty"`
	// SecretDeliveryEnds is, while the credentials move to the vault,
	// when the provider stops writing the Secret and the ExternalSecret
	// takes it over (once it has synced).
	SecretDeliveryEnds *metav1.Time `json:"secretDeliveryEnds,omitempty"`
	// CredentialURL is the OpenBao API URL of the credential (OpenBao
	// delivery), without any token.
	CredentialURL string `json:"credentialURL,omitempty"`
	// Extensions are those installed in the database: the claim can no
	// longer remove them from spec.extensions.
	Extensions []string `json:"extensions,omitempty"`
	// Plan is what the provider would send next for the tenant: its
	// binding's provisioning, then its login role.
	Plan *v1alpha1.ProvisioningPlan `json:"plan,omitempty"`
}

// ObjectRef names an object of the claim's namespace, and which one.
type ObjectRef struct {
	Name string `json:"name"`
	UID  string `json:"uid"`
}

// Composed is the result of a composition.
type Composed struct {
	Resources map[string]client.Object
	Status    Status
	// Again is how soon the composition should run again, unasked (0:
	// when Crossplane would anyway): the end of a grace period.
	Again time.Duration
}

// Seen is what the function observed of the tenant's composed resources.
type Seen struct {
	// Login is the login role, nil before it exists.
	Login *v1alpha1.PostgreSQLRole
	// CredentialsSynced: the ExternalSecret has projected the credential
	// into the Secret (its Ready condition).
	CredentialsSynced bool
}

// Request composes a tenant's binding: for a dynamic request, one that
// provisions a database on the Instance (a PostgreSQLDatabase named after
// the claim, reserved for this binding, not owned by the claim, so it
// outlives it); for an explicit one, a request for the admin-registered
// PostgreSQLDatabase. Nothing else is composed before the binding is Bound.
func Request(s Spec, o Options) (*v1alpha1.PostgreSQLBinding, error) {
	if s.ClaimNamespace == "" || s.ClaimName == "" {
		return nil, errors.New("spec.claimRef is not set: the tenant composition serves PostgreSQLTenant claims")
	}
	b := &v1alpha1.PostgreSQLBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ClaimNamespace, Name: s.ClaimName},
		Spec:       v1alpha1.PostgreSQLBindingSpec{Tenant: s.ClaimName},
	}
	switch {
	case s.DatabaseRef != "":
		b.Spec.DatabaseRef = v1alpha1.LocalReference{Name: s.DatabaseRef}
	case s.InstanceRef != "":
		policies := xpv2.ManagementPolicies{xpv2.ManagementActionObserve, xpv2.ManagementActionCreate, xpv2.ManagementActionUpdate, xpv2.ManagementActionLateInitialize}
		if o.DeleteData {
			policies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
		}
		b.Spec.DatabaseRef = v1alpha1.LocalReference{Name: s.ClaimName}
		b.Spec.Provision = &v1alpha1.BindingProvision{
			InstanceRef: v1alpha1.InstanceReference{Name: s.InstanceRef}, Database: def(s.Database, s.ClaimName),
			Extensions: s.Extensions, ManagementPolicies: policies,
		}
	default:
		return nil, errors.New("set spec.instanceRef or spec.databaseRef")
	}
	return b, nil
}

// Access composes the login role of a tenant whose binding is Bound to d
// (and, with OpenBao delivery, once vault says where the login role
// delivered the credentials, the ExternalSecret projecting them):
// a member of the database's owner role whose sessions act as the owner (so
// what the tenant creates belongs to the retained owner), with its
// credentials Secret in the claim's namespace. It is dropped with the
// claim, so the tenant can no longer log in while the data stays.
func Access(s Spec, o Options, d v1alpha1.BoundDatabase, seen Seen, now time.Time) (*Composed, error) {
	if d.Instance == "" || d.Database == "" || d.Owner == "" {
		return nil, errors.New("the bound database's instance, name and owner are not known yet")
	}
	instance := def(s.InstanceRef, d.Instance)
	if len(instance)+len(s.ClaimName) > MaxNames {
		// Admission refuses it (the claim's schema, or for a registered
		// database the tenant policy); this catches a claim created
		// before its database was registered.
		return nil, errors.Errorf("the database's PostgreSQLInstance %q and the claim's name %q together exceed %d characters, so the credentials name "+
			"<instance>-<name>-postgresql would not be a valid name: give the claim a shorter name", instance, s.ClaimName, MaxNames)
	}
	login := def(s.LoginRole, s.ClaimName)
	secret := def(s.SecretName, SecretName(instance, s.ClaimName))
	role := &v1alpha1.PostgreSQLRole{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ClaimNamespace, Name: s.ClaimName + "-login"},
		Spec: v1alpha1.PostgreSQLRoleSpec{
			// Dropped with the claim: the data stays, the access goes.
			ManagementPolicies:               xpv2.ManagementPolicies{xpv2.ManagementActionAll},
			InstanceRef:                      v1alpha1.InstanceReference{Name: d.Instance},
			WriteConnectionSecretToReference: &xpv2.LocalSecretReference{Name: secret},
			ConnectionDatabase:               d.Database,
			// Anything it still owns when dropped goes to the owner role.
			OwnedObjectsOnDelete: v1alpha1.OwnedObjectsReassign,
			ReassignOwnedTo:      d.Owner,
			ForProvider: v1alpha1.PostgreSQLRoleParameters{
				Name: ptr.To(login), Login: ptr.To(true), MemberOf: []string{d.Owner},
				// Sessions act as the owner role, so what the tenant
				// creates belongs to the retained owner, not to this role.
				// No comment: every login on the server reads role
				// comments (\du+), and a tenant learns nothing of
				// another from the shared catalogs.
				ConfigurationParameters: []v1alpha1.ConfigurationParameter{{Name: "role", Value: d.Owner}},
			},
		},
	}
	switch {
	case s.Authentication == string(v1alpha1.AuthenticationCertificate):
		// Renewed before it expires: the platform's password rotation
		// does not apply to a role without a password.
		role.Spec.ForProvider.Authentication = v1alpha1.AuthenticationCertificate
	case o.CredentialRotation != nil:
		role.Spec.PasswordRotation = o.CredentialRotation.DeepCopy()
	}
	if s.RotateCredentials != "" {
		role.SetAnnotations(map[string]string{v1alpha1.AnnotationRotatePassword: s.RotateCredentials})
	}
	c := &Composed{
		Resources: map[string]client.Object{LoginRole: role},
		Status: Status{Instance: d.Instance, DatabaseRef: &ObjectRef{Name: d.Name, UID: d.UID}, Database: d.Database,
			LoginRole: login, SecretName: secret, Delivery: DeliverySecret, Extensions: d.Extensions},
	}
	vault, err := o.toVault(d, seen.Login)
	if err != nil || !vault {
		return c, err
	}
	st, err := o.store()
	if err != nil {
		return nil, err
	}
	throughVault(c, s, st, role, SecretName(instance, s.ClaimName), seen, now)
	return c, nil
}

// throughVault turns c, composed with Secret delivery, into delivery
// through the Instance's credentialVault: the login role writes to the
// vault (under the claim's name), and once it has, the ExternalSecret
// named name projects the credential into the claim's Secret, with the
// Usage that orders their deletion.
func throughVault(c *Composed, s Spec, st store, role *v1alpha1.PostgreSQLRole, name string, seen Seen, now time.Time) {
	secret := role.Spec.WriteConnectionSecretToReference.Name
	role.Spec.WriteConnectionDetailsToVault = &v1alpha1.VaultPath{Name: s.ClaimName}
	c.Status.Delivery = DeliveryOpenBao
	var delivered *v1alpha1.VaultDelivery
	if seen.Login != nil {
		delivered = seen.Login.Status.AtProvider.Vault
	}
	if delivered != nil {
		c.Status.CredentialURL = delivered.URL
	}
	if seen.Login != nil && seen.Login.Spec.WriteConnectionSecretToReference != nil {
		// Moving from the Secret: the login role delivers to both, the
		// vault first, until the grace period has passed since the vault
		// first held the credential and the ExternalSecret, merging into
		// the Secret meanwhile, has synced. Then the role stops writing
		// the Secret and lets go of it, and the ExternalSecret takes it
		// over: the Secret never goes missing, and its credential always
		// logs in.
		var ends *metav1.Time
		if delivered != nil && delivered.Since != nil {
			ends = &metav1.Time{Time: delivered.Since.Add(st.grace)}
		}
		if ends == nil || now.Before(ends.Time) || !seen.CredentialsSynced {
			c.Status.Delivery, c.Status.SecretDeliveryEnds = DeliveryMoving, ends
			if ends != nil && now.Before(ends.Time) {
				c.Again = ends.Sub(now)
			}
			if ends != nil {
				c.Resources[Credentials] = externalSecret(s, st, name, secret, delivered.Path, false)
				c.Resources[CredentialsOrder] = credentialsOrder(s, name, role.GetName())
			}
			return
		}
	}
	role.Spec.WriteConnectionSecretToReference = nil
	if delivered != nil {
		c.Resources[Credentials] = externalSecret(s, st, name, secret, delivered.Path, true)
		c.Resources[CredentialsOrder] = credentialsOrder(s, name, role.GetName())
	}
}

// toVault decides whether a tenant's credentials go through the
// Instance's credentialVault. A login role that delivers there keeps
// doing so: its path never moves or goes.
func (o Options) toVault(d v1alpha1.BoundDatabase, login *v1alpha1.PostgreSQLRole) (bool, error) {
	var want bool
	switch o.Delivery {
	case DeliveryInstance:
		want = d.CredentialVault
	case DeliverySecret:
	case DeliveryOpenBao:
		want = true
	default:
		return false, errors.Errorf("the Composition's input delivery is %q: leave it unset (through the Instance's credentialVault where it names one), or set Secret or OpenBao", o.Delivery)
	}
	return want || login != nil && login.Spec.WriteConnectionDetailsToVault != nil, nil
}

// store is the Composition's OpenBao input with its defaults.
type store struct {
	name, kind, refresh string
	grace               time.Duration
}

func (o Options) store() (store, error) {
	in := OpenBao{}
	if o.OpenBao != nil {
		in = *o.OpenBao
	}
	st := store{name: def(in.SecretStoreRef.Name, DefaultSecretStore), kind: def(in.SecretStoreRef.Kind, "SecretStore"),
		refresh: def(in.RefreshInterval, DefaultRefreshInterval), grace: DefaultSecretGracePeriod}
	if st.kind != "SecretStore" {
		return st, errors.Errorf("the Composition's input names a %s as openBao.secretStoreRef.kind: only a SecretStore is taken, one per namespace with a vault role that reads that namespace's paths. "+
			"A ClusterSecretStore's vault role reads every namespace's paths, so whoever may create an ExternalSecret in any namespace would read every tenant's credentials", st.kind)
	}
	if g := in.SecretGracePeriod; g != "" {
		d, err := time.ParseDuration(g)
		if err != nil || d < 0 {
			return st, errors.Errorf("the Composition's input openBao.secretGracePeriod is %q: a duration such as 24h or 30m", g)
		}
		st.grace = d
	}
	return st, nil
}

// credentialsOrder is the Usage that orders a claim's deletion: the
// ExternalSecret (and its Secret) goes only once the login role is gone,
// that is once the login is dropped and its KV path destroyed, so the
// tenant's namespace never loses its credential while the login still
// works, nor keeps one for a path that still exists.
func credentialsOrder(s Spec, externalSecret, login string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "protection.crossplane.io/v1beta1",
		"kind":       "Usage",
		"metadata":   map[string]any{"namespace": s.ClaimNamespace, "name": externalSecret + "-after-login"},
		"spec": map[string]any{
			"of": map[string]any{"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret", "resourceRef": map[string]any{"name": externalSecret}},
			"by": map[string]any{"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": v1alpha1.PostgreSQLRoleKind, "resourceRef": map[string]any{"name": login}},
			// Deleted while the role existed, the ExternalSecret is
			// deleted again once the Usage goes.
			"replayDeletion": true,
		},
	}}
}

// externalSecret projects the KV path into the Secret target, in the
// claim's namespace; it is named <instance>-<claim>-postgresql whatever
// the Secret is named. Owning, the Secret is the ExternalSecret's own: it
// goes with it. Not owning (while the provider still writes the Secret,
// during a move to the vault), it only merges the same keys into it, and
// keeps it when it goes.
func externalSecret(s Spec, st store, name, target, path string, owning bool) *unstructured.Unstructured {
	policy := map[string]any{"name": target, "creationPolicy": "Owner", "deletionPolicy": "Delete"}
	if !owning {
		policy = map[string]any{"name": target, "creationPolicy": "Merge", "deletionPolicy": "Retain"}
	}
	spec := map[string]any{
		"refreshInterval": st.refresh,
		"secretStoreRef":  map[string]any{"name": st.name, "kind": st.kind},
		"target":          policy,
		"dataFrom":        []any{map[string]any{"extract": map[string]any{"key": path}}},
	}
	if s.Authentication == string(v1alpha1.AuthenticationCertificate) {
		// The path holds the JDBC key (binary) in base64: the Secret gets
		// the key itself, where the jdbc-url names it.
		spec["data"] = []any{map[string]any{ //nolint:gosec // Key names, not a credential.
			"secretKey": "tls.key.pk8",
			"remoteRef": map[string]any{"key": path, "property": "tls.key.pk8.base64", "decodingStrategy": "Base64"},
		}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "external-secrets.io/v1",
		"kind":       "ExternalSecret",
		"metadata":   map[string]any{"namespace": s.ClaimNamespace, "name": name},
		"spec":       spec,
	}}
}

// MaxNames is how long an Instance's name and a claim's may be together:
// SecretName adds 12 characters, and an object name has at most 253.
const MaxNames = 241

// SecretName is the default name of a tenant's Secret.
func SecretName(instance, claim string) string {
	return instance + "-" + claim + "-postgresql"
}

func def(v, fallback string) string {
	if v == "" {
		return fallback
	}
	return v
}
