// Package role manages PostgreSQLRoles: roles on a PostgreSQL server, their
// attributes, memberships and settings, and for login roles a password
// published with the connection details in a Secret.
package role

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/kubetoken"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/controller/boundary"
	"github.com/ayatori/provider-postgresql/internal/controller/config"
	"github.com/ayatori/provider-postgresql/internal/controller/conflict"
	"github.com/ayatori/provider-postgresql/internal/controller/drift"
	"github.com/ayatori/provider-postgresql/internal/controller/index"
	"github.com/ayatori/provider-postgresql/internal/controller/management"
	"github.com/ayatori/provider-postgresql/internal/controller/oninstance"
	"github.com/ayatori/provider-postgresql/internal/controller/pending"
	"github.com/ayatori/provider-postgresql/internal/controller/reconciler"
	"github.com/ayatori/provider-postgresql/internal/controller/role/credential"
	"github.com/ayatori/provider-postgresql/internal/controller/secretmemo"
	"github.com/ayatori/provider-postgresql/internal/controller/serverobject"
)

const (
	errObserve  = "cannot observe the role"
	errRoleGone = "the role disappeared"
	errCreate   = "cannot create the role"
	errUpdate   = "cannot update the role"
	errDelete   = "cannot drop the role"
	errPassword = "cannot determine the role's password"
)

// Setup adds the PostgreSQLRole controller to mgr.
func Setup(mgr ctrl.Manager, c config.Config) error {
	name := managed.ControllerName(v1alpha1.PostgreSQLRoleGroupKind)
	kube := mgr.GetClient()
	// Login roles' Secrets, read by the password check and again by the
	// publisher, once per version (secretmemo.ConnectionSecrets).
	secrets, err := secretmemo.ConnectionSecrets(mgr, kube)
	if err != nil {
		return err
	}
	// The token and CA Secrets are read through the reader Instances'
	// admin Secrets are: once per version.
	vaults := credential.NewVaults(kube, c.InstanceSecrets, c.Namespace, kubetoken.New(mgr.GetClient(), c.ServiceAccountTokenFile))
	passwords := &credential.Verified{}
	removed := &sync.Map{}
	authorities := credential.NewAuthorities(c.InstanceSecrets, c.Namespace)
	if err := indexPasswordSecrets(mgr.GetCache()); err != nil {
		return err
	}
	if err := indexHeirs(mgr.GetCache()); err != nil {
		return err
	}
	// The privilege boundary looks roles' markers up by UID.
	if err := boundary.IndexUID(mgr.GetCache(), &v1alpha1.PostgreSQLRole{}); err != nil {
		return err
	}
	recorder := event.NewAPIRecorder(mgr.GetEventRecorderFor(name)) //nolint:staticcheck // crossplane-runtime's recorder takes record.EventRecorder.
	sinks := &credential.Sinks{Secrets: secrets, Vaults: vaults, Events: recorder}
	drifts := drift.Recorder{Kind: v1alpha1.PostgreSQLRoleKind, Events: recorder}
	drifts.Declare(slices.Sorted(maps.Keys(kind{}.DriftFields(&v1alpha1.PostgreSQLRole{}, &postgres.ObservedRole{})))...)
	whose := boundary.Whose(kube, v1alpha1.PostgreSQLRoleKind, func() client.ObjectList { return &v1alpha1.PostgreSQLRoleList{} })
	return oninstance.Setup(mgr, c, oninstance.Kind[*v1alpha1.PostgreSQLRole]{
		GroupVersionKind: v1alpha1.PostgreSQLRoleGroupVersionKind,
		New:              func() *v1alpha1.PostgreSQLRole { return &v1alpha1.PostgreSQLRole{} },
		NewList:          func() resource.ManagedList { return &v1alpha1.PostgreSQLRoleList{} },
		External: func(conn *oninstance.Connection) managed.TypedExternalClient[*v1alpha1.PostgreSQLRole] {
			return &external{kube: secrets, pools: c.Pools, conn: conn, delivery: sinks.Reconcile(), verified: passwords, removed: removed, authorities: authorities, events: recorder, whose: whose, drift: drifts}
		},
		Options: []managed.ReconcilerOption{
			managed.WithInitializers(oninstance.ExternalNameInitializer(kube, (*v1alpha1.PostgreSQLRole).RoleName)),
			managed.WithFinalizer(heirFinalizer{Finalizer: reconciler.Finalizer(kube), kube: kube, vaults: vaults}),
			// A rotation step due before the next poll (the end of a grace
			// period, a scheduled rotation) is not left waiting for it.
			managed.WithPollIntervalHook(c.PollIntervalHook(func(mg resource.Managed, now time.Time) time.Duration {
				r, ok := mg.(*v1alpha1.PostgreSQLRole)
				if !ok {
					return 0
				}
				return wakeAfter(r, now)
			})),
		},
		// crossplane-runtime publishes the connection details after every
		// observation with its own publisher, built on the manager's
		// client: given secrets instead, its read of the Secret, to
		// compare, is the memo's too. Every other kind passes through
		// secrets unchanged.
		Client: secrets,
		Watch: func(b *builder.Builder) *builder.Builder {
			return b.
				// A changed passwordSecretRef Secret is applied at once, and a
				// changed Instance (endpoint, CA) rewrites connection Secrets at
				// once, not at the next poll.
				// Metadata only: the provider caches no Secret data (manager.ClientOptions).
				Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(rolesUsingSecret(kube)), builder.OnlyMetadata).
				Watches(&v1alpha1.PostgreSQLInstance{}, handler.EnqueueRequestsFromMapFunc(rolesOnInstance(kube)), builder.WithPredicates(oninstance.InstanceChanges())).
				// A role whose deletion waits for another to hand it its objects
				// goes on as soon as that one is gone.
				Watches(&v1alpha1.PostgreSQLRole{}, handler.EnqueueRequestsFromMapFunc(heirsOf(kube)))
		},
	})
}

// passwordSecretIndex is the cache's field index of PostgreSQLRoles by the
// Secret their passwordSecretRef names.
const passwordSecretIndex = "spec.forProvider.passwordSecretRef.name"

// indexPasswordSecrets adds passwordSecretIndex to informers.
func indexPasswordSecrets(informers cache.Informers) error {
	err := index.Field(context.Background(), informers, &v1alpha1.PostgreSQLRole{}, passwordSecretIndex, func(o client.Object) []string {
		if r, ok := o.(*v1alpha1.PostgreSQLRole); ok && r.Spec.ForProvider.PasswordSecretRef != nil {
			return []string{r.Spec.ForProvider.PasswordSecretRef.Name}
		}
		return nil
	})
	return errors.Wrap(err, "cannot index PostgreSQLRoles by their password Secret")
}

// rolesUsingSecret maps a Secret to the roles of its namespace whose
// passwordSecretRef names it. They are found through an index: every
// login role writes its connection Secret, so in a wave of thousands of
// roles a list of the namespace per Secret event made the provider's CPU
// grow with the square of the roles.
func rolesUsingSecret(kube client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		l := &v1alpha1.PostgreSQLRoleList{}
		if err := kube.List(ctx, l, client.InNamespace(obj.GetNamespace()), client.MatchingFields{passwordSecretIndex: obj.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(l.Items))
		for _, r := range l.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: r.GetNamespace(), Name: r.GetName()}})
		}
		return reqs
	}
}

// rolesOnInstance maps an Instance to the roles that live on it.
func rolesOnInstance(kube client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		l := &v1alpha1.PostgreSQLRoleList{}
		if err := kube.List(ctx, l, client.UnsafeDisableDeepCopy); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		for _, r := range l.Items {
			if r.Spec.InstanceRef.Name == obj.GetName() {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: r.GetNamespace(), Name: r.GetName()}})
			}
		}
		return reqs
	}
}

type external struct {
	kube  client.Client
	pools *postgres.Registry
	conn  *oninstance.Connection
	// delivery is what this reconcile reads of and writes to where the
	// role's credential goes.
	delivery *credential.Delivery
	verified *credential.Verified
	// removed holds the UIDs of the certificate logins whose password
	// this process removed (passwordLeft).
	removed *sync.Map
	// authorities sign the certificates of roles that log in with one.
	authorities *credential.Authorities
	events      event.Recorder
	// whose tells whose another resource's ownership marker is (Foreign).
	whose boundary.Lookup
	// drift reports changes made to the role on the server.
	drift drift.Recorder
	// note is why the last plan sets the password (kind.Note).
	note string
}

// Observe, Create and Update deliver what each step returns to the vault
// and the connection Secret (credential.Delivery.Deliver), at the points
// crossplane-runtime would publish it.
func (e *external) Observe(ctx context.Context, mg *v1alpha1.PostgreSQLRole) (managed.ExternalObservation, error) {
	obs, err := e.observe(ctx, mg)
	if err != nil || !obs.ResourceExists {
		// A missing role's details are staged in its Secret already when
		// it is to be created (absent); one that may not be created has
		// none to publish.
		return obs, err
	}
	return obs, e.delivery.Deliver(ctx, mg, obs.ConnectionDetails)
}

func (e *external) Create(ctx context.Context, mg *v1alpha1.PostgreSQLRole) (managed.ExternalCreation, error) {
	c, err := e.create(ctx, mg)
	if err != nil {
		return c, err
	}
	return c, e.delivery.Deliver(ctx, mg, c.ConnectionDetails)
}

func (e *external) Update(ctx context.Context, mg *v1alpha1.PostgreSQLRole) (managed.ExternalUpdate, error) {
	u, err := e.update(ctx, mg)
	if err != nil {
		return u, err
	}
	return u, e.delivery.Deliver(ctx, mg, u.ConnectionDetails)
}

func (e *external) observe(ctx context.Context, mg *v1alpha1.PostgreSQLRole) (managed.ExternalObservation, error) {
	if meta.WasDeleted(mg) {
		if err := e.holdForHeirs(ctx, mg); err != nil {
			return managed.ExternalObservation{}, err
		}
	} else {
		if err := e.delivery.Release(ctx, mg); err != nil {
			return managed.ExternalObservation{}, err
		}
		if credential.Publishes(mg) && !management.ObserveOnly(mg) {
			// Before anything is published into it (the publisher, as
			// crossplane-runtime's, takes over a connection Secret that has
			// no controller; a vault path another wrote is refused likewise).
			if _, err := e.delivery.Published(ctx, mg); err != nil {
				return managed.ExternalObservation{}, err
			}
		}
	}
	got, obs, done, err := serverobject.Observe[*v1alpha1.PostgreSQLRole, postgres.ObservedRole](ctx, kind{e}, e.conn.Instance, mg)
	if done {
		if err == nil && !obs.ResourceExists && !meta.WasDeleted(mg) && management.Creates(mg) && !alternating(mg) {
			// To be created, and allowed to be: see absent.
			return e.absent(ctx, mg)
		}
		return obs, err
	}
	return e.observeDrift(ctx, mg, got)
}

// absent observes a role that is about to be created with the connection
// details it is created with, its generated password staged in the
// Secret already (see password), so that the Secret is written once with
// everything in it.
func (e *external) absent(ctx context.Context, mg *v1alpha1.PostgreSQLRole) (managed.ExternalObservation, error) {
	if credential.Certificate(mg) {
		// Its certificate is issued once the role exists (create).
		return managed.ExternalObservation{}, nil
	}
	pw, err := e.password(ctx, mg, true)
	if err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, errPassword)
	}
	return managed.ExternalObservation{ConnectionDetails: e.details(mg, mg.RoleName(), pw)}, nil
}

// kind adapts roles to the contract of server objects.
type kind struct{ e *external }

// mark is the ownership marker mg writes on its role. An Alternating
// role's logins carry an unsealed one (ownMark): they are known as a
// restored role's by the marker of the role itself (logins.was).
func (e *external) mark(mg *v1alpha1.PostgreSQLRole) postgres.Mark {
	return e.conn.Mark(mg, sealed(mg))
}

// sealed is what mg's marker is sealed for: an owner role provisioned with
// a tenant's database has that database's origin (its annotation), so
// that a new tenant of a released one's name never takes its role.
func sealed(mg *v1alpha1.PostgreSQLRole) oninstance.Sealed {
	return oninstance.Sealed{Kind: v1alpha1.PostgreSQLRoleKind, Object: mg.RoleName(), Origin: mg.GetAnnotations()[v1alpha1.AnnotationProvisionedFor]}
}

// ownMark is a marker naming mg, without a seal: an Alternating role's
// logins'.
func ownMark(mg *v1alpha1.PostgreSQLRole) postgres.Mark {
	return postgres.Mark{UID: string(mg.GetUID())}
}

func (kind) Noun() string                            { return "role" }
func (kind) Name(mg *v1alpha1.PostgreSQLRole) string { return mg.RoleName() }

func (k kind) Observe(ctx context.Context, mg *v1alpha1.PostgreSQLRole) (serverobject.Observed[postgres.ObservedRole], error) {
	got, system, err := postgres.ObserveRole(ctx, k.e.conn.Pool, mg.RoleName(), k.e.readsVerifier(mg))
	if err != nil {
		return serverobject.Observed[postgres.ObservedRole]{}, errors.Wrap(err, errObserve)
	}
	o := serverobject.Observed[postgres.ObservedRole]{Object: got, System: system}
	if got != nil {
		o.Marker = got.Owner
		o.Successor = k.e.conn.Succeeds(mg, sealed(mg), postgres.Mark{UID: got.Owner, Seal: got.Seal})
	}
	return o, nil
}

func (kind) Binding(mg *v1alpha1.PostgreSQLRole) (*string, *string) {
	return &mg.Status.AtProvider.InstanceUID, &mg.Status.AtProvider.SystemIdentifier
}

func (k kind) CheckCreate(ctx context.Context, mg *v1alpha1.PostgreSQLRole) error {
	return k.e.checkBoundary(ctx, mg)
}

// Foreign offers the statement that marks an unmarked role as this
// resource's only when the resource leaves the role's password alone
// (neither passwordSecretRef nor connection details to publish): taking
// over a role whose password the resource manages replaces that password,
// which whoever uses it now relies on (docs/credentials.md says how an
// admin adopts a login role on purpose, from an import). A role that is
// another resource's is never offered (conflict.Foreign).
func (k kind) Foreign(ctx context.Context, mg *v1alpha1.PostgreSQLRole, _ *postgres.ObservedRole, marker string) (conflict.Object, error) {
	name := mg.RoleName()
	whose, err := k.e.whose(ctx, marker)
	o := conflict.Object{
		Noun: "role", Name: name, In: fmt.Sprintf("on PostgreSQLInstance %q", k.e.conn.Instance.GetName()), Kind: v1alpha1.PostgreSQLRoleKind,
		MarkedBy: whose, Check: "psql -c '\\du+ " + name + "'",
	}
	// The marker goes with the comment the spec asks for, so that the
	// statement leaves the resource nothing to send (the server's own
	// comment is not copied into a message).
	if !credential.Managed(mg) && !credential.Publishes(mg) {
		o.Adopt = "COMMENT ON ROLE " + postgres.QuoteIdentifier(name) + " IS " + postgres.QuoteLiteralOneLine(postgres.WithMarker(ptr.Deref(mg.Spec.ForProvider.Comment, ""), k.e.mark(mg)))
	}
	return o, err
}

func (k kind) Record(mg *v1alpha1.PostgreSQLRole, got *postgres.ObservedRole) { k.e.record(mg, got) }

func (kind) Plan(mg *v1alpha1.PostgreSQLRole) **v1alpha1.Plan { return &mg.Status.AtProvider.Plan }

// CreateStatements are create's: CREATE ROLE with the password the role
// gets, redacted (an Alternating role's logins follow in the next
// reconcile).
func (k kind) CreateStatements(_ context.Context, mg *v1alpha1.PostgreSQLRole) ([]string, error) {
	if alternating(mg) {
		return postgres.CreateRoleStatements(mg.RoleName(), baseDesired(mg, k.e.conn.Instance, nil, time.Now()), "", k.e.mark(mg)), nil
	}
	verifier := ""
	if credential.Managed(mg) {
		verifier = pending.Redacted
	}
	return postgres.CreateRoleStatements(mg.RoleName(), desired(mg, k.e.conn.Instance), verifier, k.e.mark(mg)), nil
}

// UpdateStatements are what taking over a role observed read-only would
// change: its attributes, and the password the provider delivers. An
// Observe-only resource never logs in as the role to check that password,
// so the plan lists it even when the server may have it already. (A
// managed role's plan comes from observeDrift, with that check.)
func (k kind) UpdateStatements(ctx context.Context, mg *v1alpha1.PostgreSQLRole, got *postgres.ObservedRole) ([]string, error) {
	if alternating(mg) && got.Owner == string(mg.GetUID()) {
		// A role of its own, observed read-only for a while: the plan is
		// the rotation's next step too.
		return k.e.previewAlternating(ctx, mg, got)
	}
	// The plan is what the spec would change: the marker is the admin's
	// to write, by the hand-over docs/credentials.md describes.
	g := scoped(mg, *got)
	g.Owner, g.Seal = string(mg.GetUID()), k.e.mark(mg).Seal
	if alternating(mg) {
		// An import: its logins are not read.
		return postgres.UpdateRoleStatements(mg.RoleName(), baseDesired(mg, k.e.conn.Instance, nil, time.Now()), g, k.e.mark(mg)), nil
	}
	stmts := postgres.UpdateRoleStatements(mg.RoleName(), desired(mg, k.e.conn.Instance), g, k.e.mark(mg))
	k.e.note = ""
	if credential.Certificate(mg) {
		// A certificate login keeps no password (updateCertificateRole).
		if k.e.passwordLeft(mg, got) {
			stmts = append(stmts, postgres.RemovePasswordStatement(mg.RoleName()))
		}
		return stmts, nil
	}
	if !credential.Managed(mg) {
		return stmts, nil
	}
	if why, err := k.passwordSet(ctx, mg, got); err != nil || why != "" {
		k.e.note = why
		stmts = append(stmts, postgres.SetPasswordStatement(mg.RoleName(), pending.Redacted))
		return stmts, err
	}
	return stmts, nil
}

// passwordSet says why widening the policies of a login role previewed
// read-only would set its password ("" when it would not). An import's
// is set: the provider does not know what it has. A role of the
// provider's own keeps the password it delivered unless none was, a
// rotation is asked for or due, or the stored verifier (read by a
// superuser admin) says the server's is another. A preview never logs in
// as the role to find out.
func (k kind) passwordSet(ctx context.Context, mg *v1alpha1.PostgreSQLRole, got *postgres.ObservedRole) (string, error) {
	if got.Owner != string(mg.GetUID()) {
		return "an imported role is given the password the provider delivers", nil
	}
	pw, err := k.e.password(ctx, mg, false)
	switch {
	case err != nil:
		return "", errors.Wrap(err, errPassword)
	case pw == "" && credential.Generated(mg):
		return "a new password is set: none was delivered yet, or a rotation is asked for or due", nil
	case pw != "" && got.VerifierRead && !postgres.VerifierMatches(got.Verifier, pw):
		return "the password is set again: the server's is not the one delivered", nil
	}
	return "", nil
}

// Note says why the plan UpdateStatements just made sets the password.
func (k kind) Note(*v1alpha1.PostgreSQLRole) string {
	return k.e.note
}

func (k kind) Drift(mg *v1alpha1.PostgreSQLRole) (*v1alpha1.DriftStatus, drift.Recorder) {
	return &mg.Status.AtProvider.DriftStatus, k.e.drift
}

// DriftFields are the role's attributes as the spec names them, with
// only the memberships it manages (scoped). Never its password.
func (kind) DriftFields(mg *v1alpha1.PostgreSQLRole, got *postgres.ObservedRole) drift.Fields {
	r := scoped(mg, *got)
	f := drift.Fields{
		"login": strconv.FormatBool(r.Login), "inherit": strconv.FormatBool(r.Inherit),
		"createDb": strconv.FormatBool(r.CreateDB), "createRole": strconv.FormatBool(r.CreateRole),
		"replication": strconv.FormatBool(r.Replication), "bypassRls": strconv.FormatBool(r.BypassRLS),
		"connectionLimit": strconv.Itoa(int(r.ConnectionLimit)),
		"memberOf":        strings.Join(r.MemberOf, ","),
		"comment":         r.Comment,
	}
	if r.ValidUntil != nil {
		f["validUntil"] = r.ValidUntil.UTC().Format(time.RFC3339)
	}
	for k, v := range r.Config {
		f["configurationParameters["+k+"]"] = v
	}
	return f
}

// Describe names a role observed read-only. An import's says why it has
// no connection Secret: an observe-only import publishes nothing, as the
// provider does not know its password and must not hand out a half
// credential. A role of the provider's own, previewed read-only, keeps
// what it delivered.
func (k kind) Describe(mg *v1alpha1.PostgreSQLRole, ours bool) string {
	d := fmt.Sprintf("role %q", mg.RoleName())
	switch {
	case ours && credential.Publishes(mg):
		d += " (created by this resource: the credentials it delivered stay as they are, and no password is set or rotated until the policies widen)"
	case credential.Publishes(mg):
		d += fmt.Sprintf(" (an imported role publishes no connection details: its password is not the provider's to hand out; "+
			"to deliver credentials, manage a login role of your own, or have an admin adopt this one: COMMENT ON ROLE %s IS %s, "+
			"then managementPolicies back to the default, and the provider rotates a generated password into the Secret; see docs/credentials.md)",
			postgres.QuoteIdentifier(mg.RoleName()), postgres.QuoteLiteralOneLine(postgres.WithMarker(ptr.Deref(mg.Spec.ForProvider.Comment, ""), k.e.mark(mg))))
	}
	return d
}

// observeDrift compares an owned role with its spec: what differs is
// checked against the boundary before Update may change it; an expired
// password is reported rather than re-set.
func (e *external) observeDrift(ctx context.Context, mg *v1alpha1.PostgreSQLRole, got *postgres.ObservedRole) (managed.ExternalObservation, error) {
	if alternating(mg) {
		return e.observeAlternating(ctx, mg, got)
	}
	name := mg.RoleName()
	stmts := postgres.UpdateRoleStatements(name, desired(mg, e.conn.Instance), scoped(mg, *got), e.mark(mg))
	if len(stmts) > 0 {
		// Checked before any change, against the catalog as it is now.
		if err := e.checkBoundary(ctx, mg); err != nil {
			return managed.ExternalObservation{}, err
		}
	}
	if credential.Certificate(mg) {
		return e.observeCertificateRole(ctx, mg, got, stmts)
	}
	if exp := got.ValidUntil; credential.Login(mg) && exp != nil && !exp.After(time.Now()) {
		// The server refuses every login now, the right password included:
		// checking it by logging in would fail and re-set it every poll.
		pw, err := e.password(ctx, mg, false)
		if err != nil {
			return managed.ExternalObservation{}, errors.Wrap(err, errPassword)
		}
		mg.SetConditions(expired(name, *exp))
		pending.Set(mg, &mg.Status.AtProvider.Plan, v1alpha1.PlanUpdate, stmts)
		serverobject.Drifted[*v1alpha1.PostgreSQLRole, postgres.ObservedRole](kind{e}, mg, got, len(stmts) == 0)
		return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: len(stmts) == 0, ConnectionDetails: e.observedDetails(mg, name, pw)}, nil
	}
	mg.SetConditions(xpv2.Available())
	pw, pwOK, err := e.passwordUpToDate(ctx, mg, got)
	if err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, errPassword)
	}
	if credential.Generated(mg) && pw != "" {
		if err := credential.TrackInPlace(mg, time.Now(), false); err != nil {
			return managed.ExternalObservation{}, err
		}
	}
	if !pwOK {
		stmts = append(stmts, postgres.SetPasswordStatement(name, pending.Redacted))
	}
	pending.Set(mg, &mg.Status.AtProvider.Plan, v1alpha1.PlanUpdate, stmts)
	serverobject.Drifted[*v1alpha1.PostgreSQLRole, postgres.ObservedRole](kind{e}, mg, got, len(stmts) == 0)
	return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: len(stmts) == 0, ConnectionDetails: e.observedDetails(mg, name, pw)}, nil
}

// observedDetails are the details an observation publishes: none while a
// generated password is to be made (a rotation asked for, or none
// delivered yet), so that what clients read keeps the password that works
// (a uri without one would be published, and then written again) until
// Update stages the new one.
func (e *external) observedDetails(mg *v1alpha1.PostgreSQLRole, name, pw string) managed.ConnectionDetails {
	if pw == "" && credential.Generated(mg) {
		return nil
	}
	return e.details(mg, name, pw)
}

// expired is the Ready condition of a login role whose validUntil has
// passed on the server.
func expired(name string, at time.Time) xpv2.Condition {
	return v1alpha1.NotReady(v1alpha1.ReasonPasswordExpired,
		fmt.Sprintf("role %q's password expired at %s (validUntil): the server refuses every login with it, and the provider does not re-set it. "+
			"Move spec.forProvider.validUntil forward, or remove it, to let the role log in again", name, at.UTC().Format(time.RFC3339)))
}

func (e *external) create(ctx context.Context, mg *v1alpha1.PostgreSQLRole) (managed.ExternalCreation, error) {
	if alternating(mg) {
		// The role holds privileges and ownership and does not log in;
		// the next reconcile makes its first login.
		stmts := postgres.CreateRoleStatements(mg.RoleName(), baseDesired(mg, e.conn.Instance, nil, time.Now()), "", e.mark(mg))
		if err := e.guarded(ctx, mg, stmts); err != nil {
			return managed.ExternalCreation{}, errors.Wrap(err, errCreate)
		}
		applied(mg)
		pending.Sent(mg, &mg.Status.AtProvider.Plan)
		return managed.ExternalCreation{}, nil
	}
	if credential.Certificate(mg) {
		return e.createCertificateRole(ctx, mg)
	}
	pw, err := e.password(ctx, mg, true)
	if err != nil {
		return managed.ExternalCreation{}, errors.Wrap(err, errPassword)
	}
	verifier := ""
	if pw != "" {
		if verifier, err = postgres.SCRAMVerifier(pw); err != nil {
			return managed.ExternalCreation{}, errors.Wrap(err, errPassword)
		}
	}
	stmts := postgres.CreateRoleStatements(mg.RoleName(), desired(mg, e.conn.Instance), verifier, e.mark(mg))
	if err := e.guarded(ctx, mg, stmts); err != nil {
		return managed.ExternalCreation{}, errors.Wrap(err, errCreate)
	}
	applied(mg)
	pending.Sent(mg, &mg.Status.AtProvider.Plan)
	e.verified.Set(mg.GetUID(), pw)
	mg.Status.AtProvider.PasswordRotation = mg.GetAnnotations()[v1alpha1.AnnotationRotatePassword]
	return managed.ExternalCreation{ConnectionDetails: e.details(mg, mg.RoleName(), pw)}, nil
}

func (e *external) update(ctx context.Context, mg *v1alpha1.PostgreSQLRole) (managed.ExternalUpdate, error) {
	if alternating(mg) {
		return e.updateAlternating(ctx, mg)
	}
	name := mg.RoleName()
	got, _, err := postgres.ObserveRole(ctx, e.conn.Pool, name, e.readsVerifier(mg))
	if err != nil || got == nil {
		return managed.ExternalUpdate{}, errors.Wrap(errors.Join(err, errors.New(errRoleGone)), errObserve)
	}
	stmts := postgres.UpdateRoleStatements(name, desired(mg, e.conn.Instance), scoped(mg, *got), e.mark(mg))
	if credential.Certificate(mg) {
		return e.updateCertificateRole(ctx, mg, got, stmts)
	}
	pw, err := e.password(ctx, mg, true)
	if err != nil {
		return managed.ExternalUpdate{}, errors.Wrap(err, errPassword)
	}
	if pw != "" {
		ok, err := e.passwordWorks(ctx, mg, name, got, pw)
		if err != nil {
			return managed.ExternalUpdate{}, errors.Wrap(err, errPassword)
		}
		if !ok {
			verifier, err := postgres.SCRAMVerifier(pw)
			if err != nil {
				return managed.ExternalUpdate{}, errors.Wrap(err, errPassword)
			}
			stmts = append(stmts, postgres.SetPasswordStatement(name, verifier))
		}
	}
	if len(stmts) > 0 {
		if err := e.guarded(ctx, mg, stmts); err != nil {
			return managed.ExternalUpdate{}, errors.Wrap(err, errUpdate)
		}
	}
	applied(mg)
	pending.Sent(mg, &mg.Status.AtProvider.Plan)
	e.verified.Set(mg.GetUID(), pw)
	mg.Status.AtProvider.PasswordRotation = mg.GetAnnotations()[v1alpha1.AnnotationRotatePassword]
	return managed.ExternalUpdate{ConnectionDetails: e.details(mg, name, pw)}, nil
}

func (e *external) Delete(ctx context.Context, mg *v1alpha1.PostgreSQLRole) (managed.ExternalDelete, error) {
	mg.SetConditions(xpv2.Deleting())
	// REASSIGN or DROP OWNED may take long in a large database: they get a
	// deadline of their own, detached from the reconcile's (which a
	// shutdown cancels while the server would go on), and the server's
	// statement_timeout follows it.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	// Access ends before anything its holder can make fail: a tenant can
	// keep REASSIGN or DROP OWNED failing in its own database (a lock, a
	// read-only setting, an object it owns), and a role that could still
	// log in meanwhile would outlive its claim.
	if err := e.endAccess(ctx, mg, accessNames(mg)); err != nil {
		return managed.ExternalDelete{}, err
	}
	if alternating(mg) {
		if err := e.dropLogins(ctx, mg); err != nil {
			return managed.ExternalDelete{}, err
		}
	}
	if err := e.releaseOwned(rctx, mg); err != nil {
		return managed.ExternalDelete{}, err
	}
	if err := postgres.Exec(ctx, e.conn.Pool, []string{postgres.DropRoleStatement(mg.RoleName())}); err != nil {
		if postgres.IsCode(err, postgres.CodeDependentObjectsStillExist) {
			return managed.ExternalDelete{}, errors.Wrapf(err, "cannot drop role %q while it still owns objects or holds privileges; nothing was dropped. "+
				"Reassign or drop what it owns (REASSIGN OWNED BY / DROP OWNED BY in each database, or set spec.ownedObjectsOnDelete to Reassign or Drop), then the drop is retried", mg.RoleName())
		}
		return managed.ExternalDelete{}, errors.Wrap(err, errDelete)
	}
	e.verified.Forget(mg.GetUID())
	return managed.ExternalDelete{}, nil
}

func (e *external) Disconnect(context.Context) error { return nil }

// DeleteStatements are what Delete sends, in its order: for each role
// whose access ends, its sessions ended, then what lets anyone act as it,
// then its sessions ended again (endAccess); an Alternating role's logins
// dropped; the release of what the role owns in each database
// (releaseOf); DROP ROLE.
func (k kind) DeleteStatements(ctx context.Context, mg *v1alpha1.PostgreSQLRole, _ *postgres.ObservedRole) ([]string, error) {
	e := k.e
	got, err := postgres.ObserveLogins(ctx, e.conn.Pool, accessNames(mg), false)
	if err != nil {
		return nil, errors.Wrap(err, errObserve)
	}
	var stmts, drops []string
	for _, o := range got {
		s, acts := endsAccess(mg, o)
		if acts {
			stmts = append(append(append(stmts, postgres.EndSessionsStatement(o.Name)), s...), postgres.EndSessionsStatement(o.Name))
		}
		if o.Name != mg.RoleName() && o.Role != nil && o.Role.Owner == string(mg.GetUID()) {
			drops = append(drops, postgres.DropRoleStatement(o.Name))
		}
	}
	stmts = append(stmts, drops...)
	r, err := e.releaseOf(ctx, mg)
	if err != nil {
		return nil, err
	}
	for range r.dbs {
		stmts = append(stmts, r.stmts...)
	}
	return append(stmts, postgres.DropRoleStatement(mg.RoleName())), nil
}

// checkBoundary refuses, before anything is sent, what the role asks that
// would cross the Instance's privilege boundary: attributes, memberships,
// settings, and the heir of what it owns.
func (e *external) checkBoundary(ctx context.Context, mg *v1alpha1.PostgreSQLRole) error {
	return e.checkBoundaryOn(ctx, mg, e.conn.Pool)
}

// guarded runs stmts for mg in one transaction with the boundary check
// read through it, under the provider's locks of the role names it becomes
// a member of: no role of those names can be created by another of the
// provider's reconciles between the check and the GRANTs
// (postgres.ExecGuarded). Its own name is locked with them, in one ordered
// step, so that two creations can never wait on each other crosswise.
func (e *external) guarded(ctx context.Context, mg *v1alpha1.PostgreSQLRole, stmts []string) error {
	names := append([]string{mg.RoleName()}, mg.Spec.ForProvider.MemberOf...)
	unlock, err := e.conn.LockRoleNames(ctx, names)
	if err != nil {
		return err
	}
	defer unlock()
	return postgres.ExecGuarded(ctx, e.conn.Pool, func(q postgres.TxQuerier) error {
		return e.checkBoundaryOn(ctx, mg, q)
	}, stmts)
}

// checkBoundaryOn is checkBoundary reading the catalog through q.
func (e *external) checkBoundaryOn(ctx context.Context, mg *v1alpha1.PostgreSQLRole, q postgres.RowsQuerier) error {
	p, fp := boundary.PolicyOf(e.conn.Instance), mg.Spec.ForProvider
	asked := map[v1alpha1.PolicyRoleAttribute]string{}
	for a, v := range map[v1alpha1.PolicyRoleAttribute]*bool{
		v1alpha1.PolicyCreateRole: fp.CreateRole, v1alpha1.PolicyReplication: fp.Replication, v1alpha1.PolicyBypassRLS: fp.BypassRLS,
	} {
		if v != nil && *v {
			asked[a] = "spec.forProvider." + map[v1alpha1.PolicyRoleAttribute]string{
				v1alpha1.PolicyCreateRole: "createRole", v1alpha1.PolicyReplication: "replication", v1alpha1.PolicyBypassRLS: "bypassRls",
			}[a]
		}
	}
	if r := p.RoleAttributes(asked); r != nil {
		return boundary.Refuse(mg, r)
	}
	if fp.ConnectionLimit != nil {
		if r := p.ConnectionLimit("spec.forProvider.connectionLimit", *fp.ConnectionLimit); r != nil {
			return boundary.Refuse(mg, r)
		}
	}
	var roles []boundary.Named
	for i, m := range fp.MemberOf {
		roles = append(roles, boundary.Named{Field: fmt.Sprintf("spec.forProvider.memberOf[%d]", i), Name: m})
	}
	if h := mg.Spec.ReassignOwnedTo; h != "" && mg.Spec.OwnedObjectsOnDelete == v1alpha1.OwnedObjectsReassign {
		roles = append(roles, boundary.Named{Field: "spec.reassignOwnedTo", Name: h})
	}
	checker := e.checker()
	checker.Q = q
	if err := checker.Check(ctx, mg, boundary.Named{}, roles...); err != nil {
		return err
	}
	var settings []boundary.Named
	for i, c := range fp.ConfigurationParameters {
		settings = append(settings, boundary.Named{Field: fmt.Sprintf("spec.forProvider.configurationParameters[%d].name", i), Name: c.Name})
	}
	r, err := p.Settings(ctx, boundary.ServerCatalog{Q: q}, settings)
	return boundary.Result(mg, r, err)
}

func (e *external) checker() boundary.Checker {
	return boundary.Checker{Kube: e.kube, Instance: e.conn.Instance, Q: e.conn.Pool}
}

// record writes what was observed into status.atProvider, binding the
// resource to its Instance and server on first sight.
func (e *external) record(mg *v1alpha1.PostgreSQLRole, got *postgres.ObservedRole) {
	ap := &mg.Status.AtProvider
	ap.Name = mg.RoleName()
	ap.Login = got.Login
	ap.MemberOf = got.MemberOf
	// Listed memberships seen held count as applied even when the status
	// write after granting them was lost.
	for _, g := range mg.Spec.ForProvider.MemberOf {
		if slices.Contains(got.MemberOf, g) && !slices.Contains(ap.AppliedMemberOf, g) {
			ap.AppliedMemberOf = append(ap.AppliedMemberOf, g)
		}
	}
	slices.Sort(ap.AppliedMemberOf)
	mg.Status.ObservedGeneration = mg.GetGeneration()
}

// scoped returns got with only the memberships mg manages: those it lists
// or granted before. Others (granted by a PostgreSQLGrant or a person) are
// not its to revoke.
func scoped(mg *v1alpha1.PostgreSQLRole, got postgres.ObservedRole) postgres.ObservedRole {
	var mine []string
	for _, g := range got.MemberOf {
		if slices.Contains(mg.Spec.ForProvider.MemberOf, g) || slices.Contains(mg.Status.AtProvider.AppliedMemberOf, g) {
			mine = append(mine, g)
		}
	}
	got.MemberOf = mine
	return got
}

// applied records that mg's listed memberships are now granted.
func applied(mg *v1alpha1.PostgreSQLRole) {
	mg.Status.AtProvider.AppliedMemberOf = slices.Sorted(slices.Values(mg.Spec.ForProvider.MemberOf))
}

// desired returns the attributes the spec asks for on Instance in, with
// CREATE ROLE's defaults where it is silent, but for the connection limit:
// the Instance's default (PostgreSQLInstance.DefaultConnectionLimit), so
// that no login the provider creates may take every connection slot of a
// shared server. A nil in (a table test) gives CREATE ROLE's -1.
func desired(mg *v1alpha1.PostgreSQLRole, in *v1alpha1.PostgreSQLInstance) postgres.RoleAttributes {
	p := mg.Spec.ForProvider
	a := postgres.DefaultRoleAttributes()
	setBool := func(dst *bool, v *bool) {
		if v != nil {
			*dst = *v
		}
	}
	setBool(&a.Login, p.Login)
	setBool(&a.Inherit, p.Inherit)
	setBool(&a.CreateDB, p.CreateDB)
	setBool(&a.CreateRole, p.CreateRole)
	setBool(&a.Replication, p.Replication)
	setBool(&a.BypassRLS, p.BypassRLS)
	switch {
	case p.ConnectionLimit != nil:
		a.ConnectionLimit = *p.ConnectionLimit
	case in != nil:
		a.ConnectionLimit = in.DefaultConnectionLimit()
	}
	if p.ValidUntil != nil {
		t := p.ValidUntil.UTC()
		a.ValidUntil = &t
	}
	a.Config = map[string]string{}
	for _, c := range p.ConfigurationParameters {
		a.Config[c.Name] = c.Value
	}
	a.MemberOf = slices.Sorted(slices.Values(p.MemberOf))
	if a.MemberOf == nil {
		a.MemberOf = []string{}
	}
	if in != nil {
		// A shared role the policy opens for its privileges, not to act
		// as it (boundary.Policy.WithholdsSet).
		policy, version := boundary.PolicyOf(in), in.ServerVersionNum()
		for _, g := range a.MemberOf {
			if policy.WithholdsSet(g, version) {
				a.WithoutSet = append(a.WithoutSet, g)
			}
		}
	}
	if p.Comment != nil {
		a.Comment = *p.Comment
	}
	return a
}

// password is the role's password (credential.Delivery.Password), its
// details as the role delivers them.
func (e *external) password(ctx context.Context, mg *v1alpha1.PostgreSQLRole, generate bool) (string, error) {
	return e.delivery.Password(ctx, mg, generate, func(pw string) managed.ConnectionDetails { return e.details(mg, mg.RoleName(), pw) })
}

// passwordUpToDate returns the password the role should have (without
// generating one) and whether the server has it.
func (e *external) passwordUpToDate(ctx context.Context, mg *v1alpha1.PostgreSQLRole, got *postgres.ObservedRole) (string, bool, error) {
	pw, err := e.password(ctx, mg, false)
	if err != nil {
		return "", false, err
	}
	if pw == "" {
		// No password yet, or a rotation was asked for: Update makes one
		// for a role that wants a generated password.
		return "", !credential.Generated(mg), nil
	}
	ok, err := e.passwordWorks(ctx, mg, mg.RoleName(), got, pw)
	return pw, ok, err
}

// readsVerifier: a superuser admin reads the role's stored verifier in the
// observation's round trip, for a role whose password the provider manages.
func (e *external) readsVerifier(mg *v1alpha1.PostgreSQLRole) bool {
	p := e.conn.Instance.Status.AdminPrivileges
	return p != nil && p.Superuser && credential.Login(mg)
}

// passwordWorks reports whether the role's password on the server is pw
// (credential.Verified.Works), logging in as user under the global
// connection cap when it must.
func (e *external) passwordWorks(ctx context.Context, mg *v1alpha1.PostgreSQLRole, user string, got *postgres.ObservedRole, pw string) (bool, error) {
	return e.verified.Works(ctx, mg.GetUID(), got, pw, func(ctx context.Context) error {
		t := e.conn.Target
		t.Credentials = postgres.Credentials{Username: user, Password: pw}
		return e.pools.Authenticate(ctx, t)
	})
}

// details are the connection details of the role: everything a client
// needs, in the forms clients take.
func (e *external) details(mg *v1alpha1.PostgreSQLRole, user, pw string) managed.ConnectionDetails {
	if !credential.Publishes(mg) {
		return nil
	}
	return credential.Details(e.conn.Target.Endpoint, mg.Spec.ConnectionDatabase, user, pw)
}
