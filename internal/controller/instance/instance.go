// Package instance manages PostgreSQLInstances: it connects to each
// registered server through the shared pool registry and reports its
// version, identity, admin privileges and available extensions.
package instance

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/admintoken"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/controller/activation"
	"github.com/ayatori/provider-postgresql/internal/controller/config"
	"github.com/ayatori/provider-postgresql/internal/controller/oninstance"
	"github.com/ayatori/provider-postgresql/internal/controller/reconciler"
)

const (
	errPool = "cannot get a connection pool"
	// errHeldUnknown: a failed look-up is never taken for "no users".
	errHeldUnknown = "deletion held: cannot tell whether anything still refers to this Instance"
	errObserve     = "cannot observe the server"
	errCreate      = "an Instance registers an existing server: there is nothing to create"
)

const reasonServerChanged event.Reason = "ServerChanged"

// reasonLeftoversRevoked: the admin's temporary memberships that a provider
// killed mid-step left behind were revoked.
const reasonLeftoversRevoked event.Reason = "TemporaryMembershipsRevoked"

// Setup adds the PostgreSQLInstance controller to mgr.
func Setup(mgr ctrl.Manager, c config.Config) error {
	name := managed.ControllerName(v1alpha1.PostgreSQLInstanceGroupKind)
	kube := mgr.GetClient()
	o, err := config.ManagedReconcilerOptions(mgr, c, name, &v1alpha1.PostgreSQLInstanceList{})
	if err != nil {
		return err
	}
	recorder := event.NewAPIRecorder(mgr.GetEventRecorderFor(name)) //nolint:staticcheck // crossplane-runtime's recorder takes record.EventRecorder.
	o = append(o,
		managed.WithTypedExternalConnector[*v1alpha1.PostgreSQLInstance](&connector{kube: kube, namespace: c.Namespace, tokens: c.AdminTokens, pools: c.Pools, record: recorder}),
		// An Instance's name is a Kubernetes name, not an identifier: it
		// has no external name. Its finalizer goes on at first sight, and
		// comes off only once nothing refers to it (deletionHold).
		managed.WithInitializers(newDeletionHold(kube)),
		managed.WithFinalizer(newDeletionHold(kube)),
	)
	r := managed.NewReconciler(mgr, resource.ManagedKind(v1alpha1.PostgreSQLInstanceGroupVersionKind), o...)

	// A changed admin Secret or CA bundle is validated again at once, not
	// at the next poll.
	inNamespace := builder.WithPredicates(predicate.NewPredicateFuncs(func(obj client.Object) bool { return obj.GetNamespace() == c.Namespace }))
	b := ctrl.NewControllerManagedBy(mgr).
		Named(name).
		WithOptions(c.ForManaged()).
		For(&v1alpha1.PostgreSQLInstance{}, reconciler.OwnChanges()).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(usersOf(kube, v1alpha1.CABundleKindSecret)), inNamespace, builder.OnlyMetadata).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(usersOf(kube, v1alpha1.CABundleKindConfigMap)), inNamespace, builder.OnlyMetadata)
	// A held deletion proceeds as soon as the last user goes; a kind of
	// user that is not active has none.
	var watches []activation.Watch
	for _, u := range v1alpha1.KindsWhere(onInstance) {
		watches = append(watches, activation.Watch{
			Object: u.New(), Handler: usersHandler(kube), Predicates: []predicate.Predicate{usersChanged()},
		})
	}
	return activation.Complete(mgr, c.Gate, c.Logger.WithValues("controller", name), b, config.Reconciler(c, r), watches...)
}

// usersOf maps a Secret or ConfigMap to the Instances that read it.
func usersOf(kube client.Reader, kind v1alpha1.CABundleKind) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		l := &v1alpha1.PostgreSQLInstanceList{}
		if err := kube.List(ctx, l); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		for _, in := range l.Items {
			uses := kind == v1alpha1.CABundleKindSecret && slices.Contains(oninstance.AdminSecrets(&in), obj.GetName())
			if ref := in.Spec.CABundleRef; ref != nil && oninstance.CABundleKind(ref) == kind && ref.Name == obj.GetName() {
				uses = true
			}
			if uses {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: in.Name}})
			}
		}
		return reqs
	}
}

// recountAfter is how long a new user waits for its Instance to count it
// (status.usedBy): a burst of thousands costs a recount, with a login to
// the server, every recountAfter, not one each.
const recountAfter = 2 * time.Second

// recountPerUser is how much longer a change in an Instance's users waits
// for a recount for each user it already counts. A recount lists every
// user, so at a fixed interval its cost grew with the users: over a
// wave of 10,000 objects on one Instance, a recount every two seconds
// listed (and copied) all of them each time, with a login to the
// server, 3% of the provider's CPU over the wave. Waiting in proportion keeps the recounts' share of
// the CPU the same at any size: 10,000 users wait 10 s. Only the first
// user (protection from deletion) and the last (a held deletion going
// on) are urgent, and neither waits on a large count: the first waits
// recountAfter, and a user gone from an Instance being deleted wakes it
// at once.
const recountPerUser = time.Millisecond

// recountDelay is how long a change in in's users waits for a recount:
// one come (gone false) or gone. A nil in (not in the cache) is recounted
// at once, as its own reconcile finds it.
func recountDelay(in *v1alpha1.PostgreSQLInstance, gone bool) time.Duration {
	switch {
	case in == nil:
		return 0
	case gone && meta.WasDeleted(in):
		return 0
	case gone:
		return time.Duration(in.Status.UsedBy) * recountPerUser
	}
	return max(recountAfter, time.Duration(in.Status.UsedBy)*recountPerUser)
}

// usersHandler wakes the Instance a user refers to, when recountDelay
// says, reading the Instance (its count and whether it is being deleted)
// through kube, the cache.
func usersHandler(kube client.Reader) handler.EventHandler {
	enqueue := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], gone bool, objs ...client.Object) {
		for _, o := range objs {
			for _, r := range referencedInstance(ctx, o) {
				in := &v1alpha1.PostgreSQLInstance{}
				if err := kube.Get(ctx, r.NamespacedName, in); err != nil {
					in = nil
				}
				q.AddAfter(r, recountDelay(in, gone))
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e ctrlevent.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, false, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e ctrlevent.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, true, e.ObjectOld)
			enqueue(ctx, q, false, e.ObjectNew)
		},
		DeleteFunc: func(ctx context.Context, e ctrlevent.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, true, e.Object)
		},
	}
}

// referencedInstance maps a resource living on an Instance to it.
func referencedInstance(_ context.Context, obj client.Object) []reconcile.Request {
	u, ok := obj.(v1alpha1.InstanceUser)
	if !ok {
		return nil
	}
	name, _ := u.InstanceBinding()
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
}

// usersChanged passes what changes whether an Instance is in use: a user
// come (status.usedBy), or gone, which can end a held deletion,
// or one that now names another Instance or records another's UID. Every
// other update of a user (its status, several times on its way to Ready,
// for each of thousands, its first record of the Instance's UID included)
// would cost the Instance a reconcile, with a fresh login to its server,
// for nothing.
func usersChanged() predicate.Funcs {
	p := reconciler.UpdatesWhere(func(was, now client.Object) bool {
		w, okWas := was.(v1alpha1.InstanceUser)
		n, okNow := now.(v1alpha1.InstanceUser)
		if !okWas || !okNow {
			return false
		}
		wasName, wasUID := w.InstanceBinding()
		nowName, nowUID := n.InstanceBinding()
		return wasName != nowName || wasUID != "" && wasUID != nowUID
	})
	p.DeleteFunc = func(ctrlevent.DeleteEvent) bool { return true }
	// A new user is counted (status.usedBy, which the in-use admission
	// policy reads), a little later (usersHandler).
	p.CreateFunc = func(ctrlevent.CreateEvent) bool { return true }
	return p
}

type connector struct {
	kube      client.Client
	namespace string
	tokens    *admintoken.Sources
	pools     *postgres.Registry
	record    event.Recorder
}

func (c *connector) Connect(ctx context.Context, mg *v1alpha1.PostgreSQLInstance) (managed.TypedExternalClient[*v1alpha1.PostgreSQLInstance], error) {
	kube := c.kube
	e := &external{pools: c.pools, record: c.record, references: func(ctx context.Context, in *v1alpha1.PostgreSQLInstance) ([]string, error) {
		return References(ctx, kube, in)
	}}
	if meta.WasDeleted(mg) {
		// Letting go of an Instance needs neither its server nor its
		// credentials: an unreachable server or a deleted Secret must not
		// make it undeletable.
		return e, nil
	}
	mg.SetConditions(serverVerified(mg.Spec.Endpoint.SSLMode))
	t, err := oninstance.ConnectionTarget(ctx, c.kube, c.namespace, c.tokens, mg, mg.Spec.Endpoint.Database)
	if err != nil {
		validationFailed(mg, v1alpha1.ReasonCredentialsUnavailable, err.Error())
		return nil, err
	}
	e.target = t
	if e.pool, err = c.pools.Pool(ctx, t); err != nil {
		return nil, errors.Wrap(err, errPool)
	}
	return e, nil
}

// sessions is what an Instance's external client needs of the pool
// registry (postgres.Registry): a fresh login, and letting go of the
// Instance's pools once it is gone.
type sessions interface {
	Authenticate(ctx context.Context, t postgres.Target) error
	CloseInstance(uid string)
}

type external struct {
	// references lists what refers to an Instance (References).
	references func(context.Context, *v1alpha1.PostgreSQLInstance) ([]string, error)
	pools      sessions
	pool       postgres.DB
	target     postgres.Target
	record     event.Recorder
}

func (e *external) Observe(ctx context.Context, mg *v1alpha1.PostgreSQLInstance) (managed.ExternalObservation, error) {
	if meta.WasDeleted(mg) {
		mg.Status.Phase = v1alpha1.InstancePhaseDeleting
		// Deletion waits while anything refers to the Instance; a failed
		// look-up is not "no references". Nothing is cascaded, and nothing
		// exists on the server for an Instance, so nothing is deleted there.
		users, err := e.references(ctx, mg)
		if err != nil {
			err = errors.Wrap(err, errHeldUnknown)
			mg.SetConditions(xpv2.Deleting().WithMessage(err.Error()))
			return managed.ExternalObservation{}, err
		}
		if len(users) > 0 {
			msg := heldMessage(users)
			mg.SetConditions(xpv2.Deleting().WithMessage(msg))
			// Reported as existing so that Delete is called and refuses,
			// keeping the finalizer with back-off.
			return managed.ExternalObservation{ResourceExists: true}, nil
		}
		mg.SetConditions(xpv2.Deleting())
		e.pools.CloseInstance(string(mg.GetUID()))
		return managed.ExternalObservation{ResourceExists: false}, nil
	}
	// What the in-use admission policy reads: counted before the server
	// is reached, so that an Instance whose server is down is protected
	// too. A failed count keeps the last one.
	if users, err := e.references(ctx, mg); err == nil {
		mg.Status.UsedBy = int32(min(len(users), math.MaxInt32))
	}

	// A fresh login first: Ready must mean the Secret's credential works
	// now, which the pool's long-lived sessions cannot show once the
	// password has changed on the server.
	if err := e.pools.Authenticate(ctx, e.target); err != nil {
		msg := err.Error()
		if errors.Is(err, postgres.ErrPasswordRejected) {
			msg = "the admin credentials Secret's password does not log in (changed on the server, or a wrong one in the Secret): " +
				"sessions opened before may still work, but every new connection fails. Put the current password in the Secret; the Instance is checked again at once (" + err.Error() + ")"
		}
		validationFailed(mg, v1alpha1.ReasonUnreachable, msg)
		return managed.ExternalObservation{}, errors.Wrap(err, errObserve)
	}
	info, err := postgres.ObserveServer(ctx, e.pool)
	if err != nil {
		validationFailed(mg, v1alpha1.ReasonUnreachable, err.Error())
		return managed.ExternalObservation{}, errors.Wrap(err, errObserve)
	}

	if old := mg.Status.SystemIdentifier; old != "" && old != info.SystemIdentifier {
		// Resources bound to the old server compare their recorded
		// identity and report Conflict; the Instance reports what it sees.
		e.record.Event(mg, event.Warning(reasonServerChanged, errors.Errorf(
			"the server at %s (%s:%d) has system identifier %s, not %s as before: it is a different server",
			mg.Spec.Endpoint.Host, mg.Spec.Endpoint.Hostaddr, mg.Spec.Endpoint.Port, info.SystemIdentifier, old)))
	}
	mg.Status.PostgreSQLVersion = info.Version
	mg.Status.SystemIdentifier = info.SystemIdentifier
	mg.Status.AdminPrivileges = &v1alpha1.AdminPrivileges{
		Superuser: info.Superuser, CreateDB: info.CreateDB, CreateRole: info.CreateRole, Sufficient: info.Sufficient(),
	}
	mg.Status.AvailableExtensions = make([]v1alpha1.AvailableExtension, len(info.Extensions))
	for i, x := range info.Extensions {
		mg.Status.AvailableExtensions[i] = v1alpha1.AvailableExtension{Name: x.Name, DefaultVersion: x.DefaultVersion}
	}
	recordConnections(mg, info)
	// Temporary memberships left by a provider killed mid-step are
	// revoked by Update.
	upToDate := sharedDatabases(mg, info) && len(info.LeftoverMemberships) == 0
	mg.Status.ObservedGeneration = mg.GetGeneration()

	if !info.Sufficient() {
		validationFailed(mg, v1alpha1.ReasonInsufficientPrivileges, fmt.Sprintf(
			"the admin role can connect but cannot do what the provider needs: it must be a superuser, or have CREATEDB and CREATEROLE (has createdb=%t, createrole=%t)",
			info.CreateDB, info.CreateRole))
	} else {
		mg.Status.Phase = v1alpha1.InstancePhaseReady
		mg.SetConditions(xpv2.Available())
	}
	return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: upToDate}, nil
}

// validationFailed records that the Instance could not be validated. The
// status then describes this generation of the spec too; what it said of
// the server stays only while it is about the same spec: after a change
// (a new endpoint, say) the version, identity, privileges and extensions
// of the server reached before would be read as the new one's.
func validationFailed(mg *v1alpha1.PostgreSQLInstance, reason xpv2.ConditionReason, msg string) {
	if mg.Status.ObservedGeneration != mg.GetGeneration() {
		mg.Status.PostgreSQLVersion, mg.Status.SystemIdentifier = "", ""
		mg.Status.AdminPrivileges, mg.Status.AvailableExtensions, mg.Status.Connections = nil, nil, nil
	}
	mg.Status.ObservedGeneration = mg.GetGeneration()
	mg.Status.Phase = v1alpha1.InstancePhaseValidating
	mg.SetConditions(v1alpha1.NotReady(reason, msg))
}

func (e *external) Create(context.Context, *v1alpha1.PostgreSQLInstance) (managed.ExternalCreation, error) {
	// Observe reports an Instance as existing whenever it is not being
	// deleted, so the reconciler never asks for this.
	return managed.ExternalCreation{}, errors.New(errCreate)
}

func (e *external) Update(ctx context.Context, mg *v1alpha1.PostgreSQLInstance) (managed.ExternalUpdate, error) {
	info, err := postgres.ObserveServer(ctx, e.pool)
	if err != nil {
		return managed.ExternalUpdate{}, errors.Wrap(err, errObserve)
	}
	// What a provider killed between granting its admin a temporary
	// membership and revoking it left behind.
	if len(info.LeftoverMemberships) > 0 {
		if err := postgres.RevokeLeftovers(ctx, e.pool, info.LeftoverMemberships); err != nil {
			return managed.ExternalUpdate{}, errors.Wrap(err, "cannot revoke the admin's temporary memberships left by a provider stopped mid-step")
		}
		e.record.Event(mg, event.Normal(reasonLeftoversRevoked, fmt.Sprintf(
			"Revoked the admin's membership of %s, granted for one step by a provider that was stopped before it could revoke it", strings.Join(info.LeftoverMemberships, ", "))))
	}
	// What an Instance writes to its server is the one server-wide change
	// a platform may ask for: PUBLIC's CONNECT on the shared databases.
	if mg.Spec.SharedDatabases.RevokePublicConnect {
		return managed.ExternalUpdate{}, e.restrictSharedDatabases(ctx, mg)
	}
	return managed.ExternalUpdate{}, nil
}

func (e *external) Delete(ctx context.Context, mg *v1alpha1.PostgreSQLInstance) (managed.ExternalDelete, error) {
	// Deleting an Instance never touches its server; it only waits for
	// what refers to it to go first.
	users, err := e.references(ctx, mg)
	if err != nil {
		return managed.ExternalDelete{}, err
	}
	if len(users) > 0 {
		return managed.ExternalDelete{}, errors.New(heldMessage(users))
	}
	return managed.ExternalDelete{}, nil
}

// onInstance selects the kinds that live on an Instance: its users.
func onInstance(k v1alpha1.KindInfo) bool { return k.OnInstance }

// References lists the resources of every kind living on an Instance, in
// every namespace, that refer to it, as "Kind namespace/name".
//
// A resource that never connected to the Instance (not bound to it yet),
// and a tenant's claim, count only from a namespace the Instance's
// namespaceSelector selects: from any other they could never have
// provisioned, and must not keep the platform from retiring the Instance.
// A bound resource counts wherever it is: it may have made something.
func References(ctx context.Context, kube client.Reader, in *v1alpha1.PostgreSQLInstance) ([]string, error) {
	selected, err := selectedNamespaces(ctx, kube, in)
	if err != nil {
		return nil, err
	}
	var users []string
	for _, k := range v1alpha1.KindsWhere(onInstance) {
		l := k.NewList()
		// Read only, every poll of the Instance: no copy of thousands of
		// cached resources.
		if err := activation.List(ctx, kube, l, client.UnsafeDisableDeepCopy); err != nil {
			return nil, errors.Wrapf(err, "cannot list the %ss that may refer to this Instance", k.Kind)
		}
		items, err := apimeta.ExtractList(l)
		if err != nil {
			return nil, errors.Wrapf(err, "cannot read the list of %ss", k.Kind)
		}
		for _, o := range items {
			u, ok := o.(v1alpha1.InstanceUser)
			obj, isObj := o.(client.Object)
			if !ok || !isObj {
				continue
			}
			name, uid := u.InstanceBinding()
			if name != in.GetName() || !boundTo(uid, in) || uid == "" && !selected(obj.GetNamespace()) {
				continue
			}
			users = append(users, k.Kind+" "+obj.GetNamespace()+"/"+obj.GetName())
		}
	}
	tenants, err := tenantComposites(ctx, kube, in, selected)
	if err != nil {
		return nil, err
	}
	users = append(users, tenants...)
	sort.Strings(users)
	return users, nil
}

// TenantCompositeKind is the kind of the tenant composite that the tenant
// Configuration's XRD defines in this group.
const TenantCompositeKind = "XPostgreSQLTenant"

// tenantComposites lists the tenant composites (one per PostgreSQLTenant
// claim) that name in, as "XPostgreSQLTenant name (claim ns/name)". They
// hold the Instance from the moment a claim exists, before anything was
// provisioned for it. Where the XRD is not installed there are none.
func tenantComposites(ctx context.Context, kube client.Reader, in *v1alpha1.PostgreSQLInstance, selected func(namespace string) bool) ([]string, error) {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(v1alpha1.SchemeGroupVersion.WithKind(TenantCompositeKind + "List"))
	// Not installed, or removed with the tenant Configuration.
	if err := activation.List(ctx, kube, l); err != nil {
		return nil, errors.Wrapf(err, "cannot list the %ss that may refer to this Instance", TenantCompositeKind)
	}
	var out []string
	for _, x := range l.Items {
		if name, _, _ := unstructured.NestedString(x.Object, "spec", "instanceRef", "name"); name != in.GetName() {
			continue
		}
		ns, _, _ := unstructured.NestedString(x.Object, "spec", "claimRef", "namespace")
		claim, _, _ := unstructured.NestedString(x.Object, "spec", "claimRef", "name")
		if !selected(ns) {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s (claim %s/%s)", TenantCompositeKind, x.GetName(), ns, claim))
	}
	return out, nil
}

// selectedNamespaces returns whether in's namespaceSelector selects a
// namespace (every namespace when it has none), as the cache sees the
// namespaces: an Instance's deletion waits for the watch either way.
func selectedNamespaces(ctx context.Context, kube client.Reader, in *v1alpha1.PostgreSQLInstance) (func(string) bool, error) {
	if in.Spec.NamespaceSelector == nil {
		return func(string) bool { return true }, nil
	}
	s, err := metav1.LabelSelectorAsSelector(in.Spec.NamespaceSelector)
	if err != nil {
		return nil, errors.Wrap(err, "the Instance's namespaceSelector is invalid")
	}
	l := &corev1.NamespaceList{}
	if err := kube.List(ctx, l, client.UnsafeDisableDeepCopy); err != nil {
		return nil, errors.Wrap(err, "cannot list namespaces to apply the Instance's namespaceSelector")
	}
	set := map[string]bool{}
	for _, ns := range l.Items {
		if s.Matches(labels.Set(ns.GetLabels())) {
			set[ns.Name] = true
		}
	}
	return func(ns string) bool { return set[ns] }, nil
}

// boundTo: a resource not yet bound to any Instance counts as referring to
// whichever carries the name.
func boundTo(uid string, in *v1alpha1.PostgreSQLInstance) bool {
	return uid == "" || uid == string(in.GetUID())
}

func heldMessage(users []string) string {
	const shown = 5
	list := users
	if len(list) > shown {
		list = list[:shown]
	}
	more := ""
	if len(users) > shown {
		more = fmt.Sprintf(" and %d more", len(users)-shown)
	}
	return fmt.Sprintf("deletion held: %d resource(s) still refer to this Instance: %s%s. Delete them first; nothing is cascaded",
		len(users), strings.Join(list, ", "), more)
}

func (e *external) Disconnect(context.Context) error {
	// Pools are shared and outlive a reconcile.
	return nil
}

// serverVerified is the ServerVerified condition for an sslMode: a
// warning, on the operator's own choice, for anything weaker than
// verify-full.
func serverVerified(mode v1alpha1.SSLMode) xpv2.Condition {
	c := xpv2.Condition{Type: v1alpha1.TypeServerVerified, Status: corev1.ConditionFalse, LastTransitionTime: metav1.Now()}
	const choice = " This is the operator's own choice (spec.endpoint.sslMode); verify-full with the server's CA in caBundleRef removes the risk."
	switch cmp.Or(mode, v1alpha1.SSLModeVerifyFull) {
	case v1alpha1.SSLModeVerifyFull:
		c.Status, c.Reason = corev1.ConditionTrue, v1alpha1.ReasonVerifiedFull
		c.Message = "the server's certificate is verified (trusted CA, host in a DNS SAN, hostaddr in an IP SAN) before the admin password is sent"
	case v1alpha1.SSLModeVerifyCA:
		c.Reason = v1alpha1.ReasonNamesNotVerified
		c.Message = "sslMode verify-ca: the certificate must chain to the CA, but its names are not checked, so any server holding a certificate from that CA receives the admin password." + choice
	case v1alpha1.SSLModeRequire:
		c.Reason = v1alpha1.ReasonNotVerified
		c.Message = "sslMode require: the connection is encrypted but the server is not authenticated, so whoever can intercept the connection can pose as the server and receive the admin password." + choice
	default:
		c.Reason = v1alpha1.ReasonClearText
		c.Message = "sslMode disable: the admin login and all data cross the network in clear text." + choice
	}
	return c
}
