package credential

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/controller/conflict"
	"github.com/ayatori/provider-postgresql/internal/controller/management"
	"github.com/ayatori/provider-postgresql/internal/controller/oninstance"
)

// Sinks are where roles' credentials are delivered, shared by every
// reconcile: connection Secrets and the Instances' vaults.
type Sinks struct {
	// Secrets reads and writes the tenants' Secrets: connection Secrets
	// and passwordSecretRef Secrets.
	Secrets client.Client
	// Vaults reach the Instances' credentialVaults.
	Vaults *Vaults
	// Events announce a connection Secret let go of.
	Events event.Recorder
}

// A Delivery is what one reconcile of a role reads of and writes to where
// its credential goes. The vault path is read once per reconcile: the
// observation, the password check and the delivery share the read.
type Delivery struct {
	sinks *Sinks
	vault *vaultPath
}

// Reconcile returns the delivery of one reconcile.
func (s *Sinks) Reconcile() *Delivery { return &Delivery{sinks: s} }

// Delivering reports whether r delivers to a vault and may write there:
// not an Observe-only import, which publishes nothing, and not a role
// being deleted, whose path only waits to be destroyed.
func Delivering(r *v1alpha1.PostgreSQLRole) bool {
	return r.Spec.WriteConnectionDetailsToVault != nil && !management.ObserveOnly(r) && !meta.WasDeleted(r)
}

// DeliveredTo names where r's credentials go, for messages.
func DeliveredTo(r *v1alpha1.PostgreSQLRole) string {
	if p := r.Spec.WriteConnectionDetailsToVault; p != nil {
		return fmt.Sprintf("the vault path %s/%s/%s of the Instance's credentialVault", r.Spec.InstanceRef.Name, r.GetNamespace(), p.Name)
	}
	if s := r.Spec.WriteConnectionSecretToReference; s != nil {
		return "connection Secret " + s.Name
	}
	return "nothing"
}

// Published returns r's connection details as delivered: its vault
// path's, or its connection Secret's data (empty before the first
// delivery). A role moving from its Secret to the vault (both set) reads
// the Secret until the vault holds the credential, so the first delivery
// copies the current credential there instead of making a new one.
func (d *Delivery) Published(ctx context.Context, r *v1alpha1.PostgreSQLRole) (map[string][]byte, error) {
	var secret, vault map[string][]byte
	if r.Spec.WriteConnectionSecretToReference != nil {
		s, err := d.Secret(ctx, r)
		if err != nil {
			return nil, err
		}
		secret = s.Data
	}
	if r.Spec.WriteConnectionDetailsToVault != nil {
		w, err := d.path(ctx, r)
		if err != nil {
			return nil, err
		}
		vault = w.data()
	}
	return published(r, secret, vault), nil
}

// published is which delivery holds r's credential, given what its
// connection Secret and its vault path hold (nil or empty: nothing yet):
// the vault's when r delivers there and the vault holds one or r writes
// no Secret; the Secret's otherwise. Never nil for a role that delivers
// somewhere.
func published(r *v1alpha1.PostgreSQLRole, secret, vault map[string][]byte) map[string][]byte {
	toSecret, toVault := r.Spec.WriteConnectionSecretToReference != nil, r.Spec.WriteConnectionDetailsToVault != nil
	switch {
	case toVault && (len(vault) > 0 || !toSecret):
		return nonNil(vault)
	case toSecret:
		return nonNil(secret)
	}
	return nil
}

func nonNil(m map[string][]byte) map[string][]byte {
	if m == nil {
		return map[string][]byte{}
	}
	return m
}

// path is r's vault path as this reconcile read it.
func (d *Delivery) path(ctx context.Context, r *v1alpha1.PostgreSQLRole) (*vaultPath, error) {
	if d.vault == nil {
		w, err := d.sinks.Vaults.current(ctx, r)
		if err != nil {
			return nil, err
		}
		d.vault = w
	}
	return d.vault, nil
}

// Publish delivers details where r's go: its vault path, then its
// connection Secret; a role moving from its Secret to the vault writes
// both, the vault first, so the Secret never holds a credential the vault
// lacks. A new password is staged through it before the server is
// changed, so that a crash in between leaves it where the next reconcile
// reads it.
func (d *Delivery) Publish(ctx context.Context, r *v1alpha1.PostgreSQLRole, details managed.ConnectionDetails) error {
	if r.Spec.WriteConnectionDetailsToVault != nil {
		w, err := d.path(ctx, r)
		if err != nil {
			return err
		}
		if err := w.publish(ctx, r, details); err != nil {
			return err
		}
	}
	return d.publishSecret(ctx, r, details)
}

// publishSecret writes details into r's connection Secret, creating it
// when it is absent, and writes nothing when it holds them already or
// there are none (crossplane-runtime wrote an empty Secret). It is
// crossplane-runtime's publisher but for the comparison: that one compares
// the data by reflection, byte by byte, which took about 4 ms of CPU for
// a Secret holding a CA bundle, at every poll of every login role; this
// one compares bytes.
func (d *Delivery) publishSecret(ctx context.Context, r *v1alpha1.PostgreSQLRole, details managed.ConnectionDetails) error {
	if r.Spec.WriteConnectionSecretToReference == nil || len(details) == 0 {
		return nil
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       r.GetNamespace(),
			Name:            r.Spec.WriteConnectionSecretToReference.Name,
			OwnerReferences: []metav1.OwnerReference{meta.AsController(meta.TypedReferenceTo(r, v1alpha1.PostgreSQLRoleGroupVersionKind))},
		},
		Type: resource.SecretTypeConnection,
		Data: details,
	}
	err := resource.NewApplicatorWithRetry(resource.NewAPIPatchingApplicator(d.sinks.Secrets), resource.IsAPIErrorWrapped, nil).Apply(ctx, s,
		resource.ConnectionSecretMustBeControllableBy(r.GetUID()),
		resource.AllowUpdateIf(func(current, _ runtime.Object) bool {
			c, ok := current.(*corev1.Secret)
			return !ok || !SameData(c.Data, details)
		}))
	if resource.IsNotAllowed(err) {
		return nil
	}
	return errors.Wrap(err, "cannot write the connection Secret")
}

// SameData reports whether two Secrets' data are the same, an absent map
// or value being the same as an empty one.
func SameData(a, b map[string][]byte) bool {
	return maps.EqualFunc(a, b, bytes.Equal)
}

// Deliver publishes the details of an observation, a create or an update
// to r's vault path and to its connection Secret, where crossplane-runtime
// would publish them to the Secret, and writes nothing where they are
// already. crossplane-runtime's publisher cannot be replaced for
// namespaced kinds, so the role tells it it has no Secret
// (+mrgen:delivers-own-secret) and delivers to both itself; its finalizer
// destroys the path, and the Secret goes with the role (garbage
// collection). A role being deleted, or an Observe-only import, publishes
// nothing.
func (d *Delivery) Deliver(ctx context.Context, r *v1alpha1.PostgreSQLRole, details managed.ConnectionDetails) error {
	if Delivering(r) {
		w, err := d.path(ctx, r)
		if err == nil {
			err = w.publish(ctx, r, details)
		}
		if err != nil {
			return errors.Wrap(err, "cannot deliver the connection details to the vault")
		}
	}
	if meta.WasDeleted(r) {
		return nil
	}
	return d.publishSecret(ctx, r, details)
}

// FromSecretRef returns the password r's passwordSecretRef names.
func (d *Delivery) FromSecretRef(ctx context.Context, r *v1alpha1.PostgreSQLRole) (string, error) {
	ref := r.Spec.ForProvider.PasswordSecretRef
	s := &corev1.Secret{}
	if err := d.sinks.Secrets.Get(ctx, types.NamespacedName{Namespace: r.GetNamespace(), Name: ref.Name}, s); err != nil {
		return "", errors.Wrapf(err, "cannot read passwordSecretRef Secret %s/%s", r.GetNamespace(), ref.Name)
	}
	pw := string(s.Data[ref.Key])
	if pw == "" {
		return "", errors.Errorf("passwordSecretRef Secret %s/%s has no key %q, or it is empty", r.GetNamespace(), ref.Name, ref.Key)
	}
	return pw, nil
}

// Secret returns r's connection Secret as it is, an empty one when it
// does not exist yet. A Secret of that name that this PostgreSQLRole did
// not create (its controller is another object, or it has none) is
// refused: its password never becomes the role's (whoever can create
// Secrets in the namespace could otherwise choose the password of a login
// they cannot read), and the role's credentials are never written into
// it. passwordSecretRef is the one way to bring a password.
func (d *Delivery) Secret(ctx context.Context, r *v1alpha1.PostgreSQLRole) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	name := r.Spec.WriteConnectionSecretToReference.Name
	err := d.sinks.Secrets.Get(ctx, types.NamespacedName{Namespace: r.GetNamespace(), Name: name}, s)
	if kerrors.IsNotFound(err) {
		return &corev1.Secret{}, nil
	}
	if err != nil {
		return nil, errors.Wrap(err, "cannot read the connection Secret")
	}
	if metav1.IsControlledBy(s, r) {
		return s, nil
	}
	whose := "it has no controller: someone created it by hand or with another tool"
	if c := metav1.GetControllerOf(s); c != nil {
		whose = fmt.Sprintf("its controller is %s %s", c.Kind, c.Name)
	}
	msg := conflict.Message{
		Target:    fmt.Sprintf("The connection Secret %s/%s", r.GetNamespace(), name),
		Found:     fmt.Sprintf("exists, but this PostgreSQLRole did not create it (%s)", whose),
		Step:      "observe, before the role's credentials are read or published",
		Confirmed: "nothing was read from the Secret and nothing was written to it or to the server; a Secret the provider did not create is never taken as a credential source nor given credentials",
		Uncertain: "who created it and what they expect of it",
		Check:     fmt.Sprintf("kubectl -n %s get secret %s -o jsonpath='{.metadata.ownerReferences}'", r.GetNamespace(), name),
		Next:      "Delete that Secret or choose another spec.writeConnectionSecretToRef.name; to bring a password of your own, use spec.forProvider.passwordSecretRef",
	}.String()
	r.SetConditions(v1alpha1.Conflict(msg))
	return nil, errors.Errorf("%w: %s", oninstance.ErrConflict, msg)
}

// Release lets go of the connection Secret r wrote when
// spec.writeConnectionSecretToRef no longer names it (removed, as at the
// end of a move to the vault, or renamed): r stays one of the Secret's
// owners, so it still goes with r, but no longer its controller, so
// another controller may take it over. An ExternalSecret projecting the
// same credential into the same name does, and the Secret never goes
// missing on the way. Nothing in the Secret changes.
func (d *Delivery) Release(ctx context.Context, r *v1alpha1.PostgreSQLRole) error {
	want := ""
	if ref := r.Spec.WriteConnectionSecretToReference; ref != nil {
		want = ref.Name
	}
	had := r.Status.AtProvider.ConnectionSecret
	if had != "" && had != want {
		s := &corev1.Secret{}
		err := d.sinks.Secrets.Get(ctx, types.NamespacedName{Namespace: r.GetNamespace(), Name: had}, s)
		switch {
		case kerrors.IsNotFound(err):
		case err != nil:
			return errors.Wrapf(err, "cannot read connection Secret %s, which this role no longer writes", had)
		case metav1.IsControlledBy(s, r):
			refs := s.GetOwnerReferences()
			for i := range refs {
				if refs[i].UID == r.GetUID() {
					refs[i].Controller = nil
				}
			}
			s.SetOwnerReferences(refs)
			if err := d.sinks.Secrets.Update(ctx, s); err != nil {
				return errors.Wrapf(err, "cannot let go of connection Secret %s, which this role no longer writes", had)
			}
			d.sinks.Events.Event(r, event.Normal("ReleasedConnectionSecret", fmt.Sprintf(
				"no longer writes connection Secret %s: it keeps its data and still goes with this role, and another controller may take it over", had)))
		}
	}
	r.Status.AtProvider.ConnectionSecret = want
	return nil
}

// Password returns the password r should have, or "" when the provider
// does not manage it (not a login role, or nowhere to publish a generated
// one). details are r's connection details with a given password.
//
// With passwordSecretRef it is that Secret's value. Otherwise the connection
// Secret is the source of truth: its password is kept, and a new one is
// generated only when it has none or a rotation is requested. A new
// password is written to the connection Secret before the server is
// changed (when generate is true), so that a crash in between leaves a
// Secret whose password the next reconcile sets on the server: Secret and
// server never disagree for longer than one reconcile.
func (d *Delivery) Password(ctx context.Context, mg *v1alpha1.PostgreSQLRole, generate bool, details func(pw string) managed.ConnectionDetails) (string, error) {
	var published string
	if Generated(mg) && mg.Spec.ForProvider.PasswordSecretRef == nil {
		data, err := d.Published(ctx, mg)
		if err != nil {
			return "", err
		}
		published = string(data[KeyPassword])
	}
	src, err := SourceOf(mg, published, time.Now())
	if err != nil {
		return "", err
	}
	switch src {
	case FromSecretRef:
		return d.FromSecretRef(ctx, mg)
	case KeepPublished:
		return published, nil
	case GenerateNew:
		if !generate {
			return "", nil
		}
	default:
		return "", nil
	}
	pw, err := postgres.GeneratePassword()
	if err != nil {
		return "", err
	}
	if err := d.Publish(ctx, mg, details(pw)); err != nil {
		return "", errors.Wrap(err, "cannot deliver the new password before setting it")
	}
	if err := TrackInPlace(mg, time.Now(), true); err != nil {
		return "", err
	}
	return pw, nil
}
