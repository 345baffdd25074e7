package role

import (
	"context"
	"fmt"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/controller/pending"
	"github.com/ayatori/provider-postgresql/internal/controller/role/credential"
	"github.com/ayatori/provider-postgresql/internal/controller/serverobject"
)

const (
	errCertificate = "cannot deliver the role's client certificate"
	// reasonIssuedCertificate is the event of a new client certificate.
	reasonIssuedCertificate event.Reason = "IssuedCertificate"
)

// certificateState is what an observation of a role that logs in with a
// client certificate found of its credential.
type certificateState struct {
	ca *credential.Authority
	// cur is the certificate delivered, while it still logs in; due says
	// a new one is to be issued (none yet, near its expiry, or a rotation
	// asked for with the rotate-password annotation).
	cur *credential.IssuedCertificate
	due bool
	// published is what was delivered, from which a stale password is
	// taken out.
	published map[string][]byte
	// passwordLeft: the role may still have a password.
	passwordLeft bool
}

// observeCertificate reads the CA of the role's Instance and the
// certificate delivered, and says whether the role still has a password
// (passwordLeft).
func (e *external) observeCertificate(ctx context.Context, mg *v1alpha1.PostgreSQLRole, got *postgres.ObservedRole) (certificateState, error) {
	ca, err := e.authorities.Of(ctx, e.conn.Instance)
	if err != nil {
		return certificateState{}, err
	}
	data, err := e.delivery.Published(ctx, mg)
	if err != nil {
		return certificateState{}, err
	}
	_, renewBefore := credential.Lifetime(mg)
	cur, due := ca.Current(data, mg.RoleName(), renewBefore, time.Now())
	c := credential.Status(mg)
	c.ActiveLogin = mg.RoleName()
	c.NextRotation = nil
	if cur != nil {
		c.Certificate = cur.Observation(renewBefore)
	}
	return certificateState{ca: ca, cur: cur, due: due || credential.Requested(mg), published: data, passwordLeft: e.passwordLeft(mg, got)}, nil
}

// passwordLeft says whether a role that logs in with a certificate may
// still have a password: a superuser admin reads it; any other admin
// knows only that it removed it, or created the role without one
// (status.atProvider.credential.passwordRemoved, and the memo of this
// process: the status written with a create can be lost to the write of
// its annotations, and the password would be removed once more).
func (e *external) passwordLeft(mg *v1alpha1.PostgreSQLRole, got *postgres.ObservedRole) bool {
	if got.VerifierRead {
		return got.Verifier != ""
	}
	if _, ok := e.removed.Load(mg.GetUID()); ok {
		return false
	}
	c := mg.Status.AtProvider.Credential
	return c == nil || !c.PasswordRemoved
}

// passwordRemoved records that mg's role has no password.
func (e *external) passwordRemoved(mg *v1alpha1.PostgreSQLRole) {
	credential.Status(mg).PasswordRemoved = true
	e.removed.Store(mg.GetUID(), true)
}

// observeCertificateRole ends the observation of an owned role that logs
// in with a certificate: stmts (its attributes' changes) and the removal
// of a password it still has are the plan; a certificate due makes it
// not up to date, so that Update issues the next one. What is published
// meanwhile is the certificate that still logs in, never a Secret
// without one.
func (e *external) observeCertificateRole(ctx context.Context, mg *v1alpha1.PostgreSQLRole, got *postgres.ObservedRole, stmts []string) (managed.ExternalObservation, error) {
	st, err := e.observeCertificate(ctx, mg, got)
	if err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, errCertificate)
	}
	mg.SetConditions(xpv2.Available())
	if st.passwordLeft {
		stmts = append(stmts, postgres.RemovePasswordStatement(mg.RoleName()))
	}
	pending.Set(mg, &mg.Status.AtProvider.Plan, v1alpha1.PlanUpdate, stmts)
	serverobject.Drifted[*v1alpha1.PostgreSQLRole, postgres.ObservedRole](kind{e}, mg, got, len(stmts) == 0)
	obs := managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: len(stmts) == 0 && !st.due}
	if st.cur != nil {
		obs.ConnectionDetails, err = e.certificateDetails(mg, st.cur, st.published)
	}
	return obs, err
}

// updateCertificateRole sends stmts and removes the role's password if it
// has one, then issues the next certificate when one is due. The server
// needs nothing for a new certificate: the CA it trusts signed it, and the
// previous one logs in until it expires.
func (e *external) updateCertificateRole(ctx context.Context, mg *v1alpha1.PostgreSQLRole, got *postgres.ObservedRole, stmts []string) (managed.ExternalUpdate, error) {
	st, err := e.observeCertificate(ctx, mg, got)
	if err != nil {
		return managed.ExternalUpdate{}, errors.Wrap(err, errCertificate)
	}
	// Signed first: a role moving from a password keeps it until there
	// is a certificate to deliver instead.
	cur, next := st.cur, (*credential.IssuedCertificate)(nil)
	if st.due {
		if next, err = e.sign(mg, st.ca); err != nil {
			return managed.ExternalUpdate{}, errors.Wrap(err, errCertificate)
		}
	}
	if st.passwordLeft {
		stmts = append(stmts, postgres.RemovePasswordStatement(mg.RoleName()))
	}
	if len(stmts) > 0 {
		if err := e.guarded(ctx, mg, stmts); err != nil {
			return managed.ExternalUpdate{}, errors.Wrap(err, errUpdate)
		}
	}
	applied(mg)
	pending.Sent(mg, &mg.Status.AtProvider.Plan)
	e.passwordRemoved(mg)
	if next != nil {
		e.issued(mg, next, cur)
		cur = next
	}
	details, err := e.certificateDetails(mg, cur, st.published)
	return managed.ExternalUpdate{ConnectionDetails: details}, err
}

// createCertificateRole issues the first certificate of a role created
// without a password.
func (e *external) createCertificateRole(ctx context.Context, mg *v1alpha1.PostgreSQLRole) (managed.ExternalCreation, error) {
	ca, err := e.authorities.Of(ctx, e.conn.Instance)
	if err != nil {
		// Before the role is created: a role that cannot get its
		// certificate is not made.
		return managed.ExternalCreation{}, errors.Wrap(err, errCertificate)
	}
	cur, err := e.sign(mg, ca)
	if err != nil {
		return managed.ExternalCreation{}, errors.Wrap(err, errCertificate)
	}
	stmts := postgres.CreateRoleStatements(mg.RoleName(), desired(mg, e.conn.Instance), "", e.mark(mg))
	if err := e.guarded(ctx, mg, stmts); err != nil {
		return managed.ExternalCreation{}, errors.Wrap(err, errCreate)
	}
	applied(mg)
	pending.Sent(mg, &mg.Status.AtProvider.Plan)
	e.passwordRemoved(mg)
	e.issued(mg, cur, nil)
	details, err := e.certificateDetails(mg, cur, nil)
	return managed.ExternalCreation{ConnectionDetails: details}, err
}

// sign makes mg's next certificate.
func (e *external) sign(mg *v1alpha1.PostgreSQLRole, ca *credential.Authority) (*credential.IssuedCertificate, error) {
	duration, renewBefore := credential.Lifetime(mg)
	return ca.Issue(mg.RoleName(), duration, renewBefore, time.Now())
}

// issued records c, about to be delivered, in status (never its key) and
// says so in an event; prev is the one it replaces, which logs in until it
// expires.
func (e *external) issued(mg *v1alpha1.PostgreSQLRole, c, prev *credential.IssuedCertificate) {
	_, renewBefore := credential.Lifetime(mg)
	st := credential.Status(mg)
	st.Certificate = c.Observation(renewBefore)
	now := metav1.Now()
	st.ActiveSince = &now
	mg.Status.AtProvider.PasswordRotation = mg.GetAnnotations()[v1alpha1.AnnotationRotatePassword]
	msg := fmt.Sprintf("Issued client certificate %s for role %q, valid until %s", st.Certificate.SerialNumber, mg.RoleName(), c.Leaf.NotAfter.UTC().Format(time.RFC3339))
	if prev != nil {
		msg += fmt.Sprintf("; the previous one (%x) logs in until it expires at %s", prev.Leaf.SerialNumber, prev.Leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	e.events.Event(mg, event.Normal(reasonIssuedCertificate, msg))
}

// certificateDetails are the connection details of a role that logs in
// with c: no password, and the password keys published still holds taken
// out.
func (e *external) certificateDetails(mg *v1alpha1.PostgreSQLRole, c *credential.IssuedCertificate, published map[string][]byte) (managed.ConnectionDetails, error) {
	d := credential.Details(e.conn.Target.Endpoint, mg.Spec.ConnectionDatabase, mg.RoleName(), "")
	d, err := credential.WithCertificate(d, c, credential.MountPath(mg))
	if err != nil {
		return nil, err
	}
	credential.WithoutPassword(d, published)
	return d, nil
}
