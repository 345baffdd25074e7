package role

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/controller/conflict"
	"github.com/ayatori/provider-postgresql/internal/controller/oninstance"
	"github.com/ayatori/provider-postgresql/internal/controller/pending"
	"github.com/ayatori/provider-postgresql/internal/controller/role/credential"
	"github.com/ayatori/provider-postgresql/internal/controller/serverobject"
)

// Steps of an Alternating rotation after which a provider may stop: the
// tests stop it there (see stepHook) and check that it converges.
const (
	// StepPasswordSet: the idle login has its new password on the server;
	// the Secret still holds the active one.
	StepPasswordSet = "password-set"
	// StepSecretSwitched: the Secret holds the new login; the status does
	// not say so yet.
	StepSecretSwitched = "secret-switched"
)

// stepHook, when set (by tests only), runs after each step of a rotation;
// an error stops the rotation there, as a crash would.
var stepHook atomic.Pointer[func(ctx context.Context, step string) error]

func afterStep(ctx context.Context, step string) error {
	if h := stepHook.Load(); h != nil {
		return (*h)(ctx, step)
	}
	return nil
}

// defaultGracePeriod is how long the previous login accepts new logins
// after a rotation, unless spec.passwordRotation.gracePeriod says.
const defaultGracePeriod = time.Hour

// Events of a rotation.
const (
	reasonRotated       event.Reason = "RotatedCredential"
	reasonRetired       event.Reason = "RetiredLogin"
	reasonEndedSessions event.Reason = "EndedSessions"
	reasonRepaired      event.Reason = "RepairedLogin"
)

func alternating(mg *v1alpha1.PostgreSQLRole) bool {
	r := mg.Spec.PasswordRotation
	return r != nil && r.Mode == v1alpha1.RotationAlternating
}

// loginNames are the two login roles of an Alternating role.
func loginNames(base string) [2]string { return [2]string{base + "_a", base + "_b"} }

func gracePeriod(mg *v1alpha1.PostgreSQLRole) time.Duration {
	if r := mg.Spec.PasswordRotation; r != nil && r.GracePeriod != nil {
		return r.GracePeriod.Duration
	}
	return defaultGracePeriod
}

// wakeAfter is how long until the next step of mg's rotation is due (0
// when none is): the rotation, the renewal of a client certificate, the
// end of the previous login's grace, or the end of its sessions. The poll waits no longer than that.
func wakeAfter(mg *v1alpha1.PostgreSQLRole, now time.Time) time.Duration {
	c := mg.Status.AtProvider.Credential
	if c == nil {
		return 0
	}
	var soonest time.Duration
	consider := func(t *metav1.Time) {
		if t == nil {
			return
		}
		// A second late, so that what is due is due when it runs.
		d := t.Sub(now) + time.Second
		if d > 0 && (soonest == 0 || d < soonest) {
			soonest = d
		}
	}
	consider(c.NextRotation)
	if c.Certificate != nil {
		consider(&c.Certificate.RenewAt)
	}
	if c.PreviousLogin != "" {
		consider(c.PreviousLoginUntil)
		if c.PreviousSessions > 0 {
			consider(c.PreviousSessionsEndAt)
		}
	}
	return soonest
}

// logins is what an Alternating role's rotation works from: its two login
// roles (and the role itself) as observed, and the connection Secret.
type logins struct {
	base  string
	names [2]string
	roles map[string]postgres.ObservedLogin
	// user and password are the connection Secret's.
	user, password string
	// mark is the role's own marker (sealed); zero: ownMark.
	mark postgres.Mark
	// was is the UID of the resource this one succeeded, restored from a
	// backup (the role's marker names it, sealed for this resource): the
	// logins it marked are this resource's, and are marked again.
	was string
}

// baseMark is the marker the role itself carries.
func (l *logins) baseMark(mg *v1alpha1.PostgreSQLRole) postgres.Mark {
	if l == nil || l.mark.UID == "" {
		return ownMark(mg)
	}
	return l.mark
}

// ours reports whether a login marked owner is mg's.
func (l *logins) ours(mg *v1alpha1.PostgreSQLRole, owner string) bool {
	return owner == string(mg.GetUID()) || l.was != "" && owner == l.was
}

// readLogins observes mg's logins (one round trip) and reads its Secret.
// A login role this resource did not create is a conflict: taking it
// over would hand its holders the role's privileges.
func (e *external) readLogins(ctx context.Context, mg *v1alpha1.PostgreSQLRole) (*logins, error) {
	base := mg.RoleName()
	l := &logins{base: base, names: loginNames(base), roles: map[string]postgres.ObservedLogin{}, mark: e.mark(mg)}
	got, err := postgres.ObserveLogins(ctx, e.conn.Pool, []string{l.names[0], l.names[1], base}, e.readsVerifier(mg))
	if err != nil {
		return nil, err
	}
	for _, o := range got {
		l.roles[o.Name] = o
	}
	if r := l.roles[base].Role; r != nil && e.conn.Succeeds(mg, sealed(mg), postgres.Mark{UID: r.Owner, Seal: r.Seal}) {
		l.was = r.Owner
	}
	for _, n := range l.names {
		if r := l.roles[n].Role; r != nil && !l.ours(mg, r.Owner) {
			msg := conflict.Message{
				Target:    fmt.Sprintf("role %q on PostgreSQLInstance %q", n, e.conn.Instance.GetName()),
				Found:     fmt.Sprintf("exists but was not created by this PostgreSQLRole as one of its login roles (its comment carries no ownership marker for UID %s)", mg.GetUID()),
				Step:      "alternating rotation, before the login is made a member of " + strconv.Quote(base),
				Confirmed: "the role exists and is not one of this resource's logins",
				Uncertain: "who made it and who holds its password: making it a member would hand them the role's privileges",
				Check:     "psql -c '\\du+ " + n + "'",
				Next:      "An admin must drop or rename it",
			}.String()
			mg.SetConditions(v1alpha1.Conflict(msg))
			return nil, errors.Errorf("%w: %s", oninstance.ErrConflict, msg)
		}
	}
	d, err := e.delivery.Published(ctx, mg)
	if err != nil {
		return nil, err
	}
	l.user, l.password = string(d[credential.KeyUsername]), string(d[credential.KeyPassword])
	return l, nil
}

// active is the login the Secret holds, "" when it holds neither of the
// two (a new role, or one that had its own login before Alternating).
func (l *logins) active() string {
	if (l.user == l.names[0] || l.user == l.names[1]) && l.password != "" {
		return l.user
	}
	return ""
}

func (l *logins) other(n string) string {
	if n == l.names[0] {
		return l.names[1]
	}
	return l.names[0]
}

// inGrace: login n is the previous one and still accepts new logins.
func inGrace(c *v1alpha1.CredentialObservation, n string, now time.Time) bool {
	return c.PreviousLogin == n && c.PreviousLoginUntil != nil && now.Before(c.PreviousLoginUntil.Time)
}

// track brings the credential status in line with the Secret and the
// server. A Secret that holds another login than the status says switched
// without the status following (a provider stopped in between): the
// switch counts from now, so the previous login gets its whole grace
// period, and the request it answered counts as handled.
func track(mg *v1alpha1.PostgreSQLRole, l *logins, now time.Time) error {
	c := credential.Status(mg)
	if a := l.active(); a != "" && c.ActiveLogin != a {
		if c.ActiveLogin != "" {
			switched(mg, c.ActiveLogin, now)
		}
		c.ActiveLogin, c.ActiveSince = a, &metav1.Time{Time: now}
		mg.Status.AtProvider.PasswordRotation = mg.GetAnnotations()[v1alpha1.AnnotationRotatePassword]
	}
	if c.ActiveLogin == "" && l.user == l.base {
		c.ActiveLogin, c.ActiveSince = l.base, &metav1.Time{Time: now}
	}
	if c.PreviousLogin != "" {
		c.PreviousLoginState = v1alpha1.PreviousLoginRetired
		if inGrace(c, c.PreviousLogin, now) {
			c.PreviousLoginState = v1alpha1.PreviousLoginGrace
		}
		c.PreviousSessions = int32(l.roles[c.PreviousLogin].Sessions) //nolint:gosec // a session count fits.
	}
	return credential.SetNext(mg)
}

// switched records that the Secret moved away from login prev at now.
func switched(mg *v1alpha1.PostgreSQLRole, prev string, now time.Time) {
	c := credential.Status(mg)
	c.PreviousLogin = prev
	c.PreviousLoginState = v1alpha1.PreviousLoginGrace
	c.PreviousLoginUntil = &metav1.Time{Time: now.Add(gracePeriod(mg))}
	c.PreviousSessionsEndAt = nil
	if r := mg.Spec.PasswordRotation; r != nil && r.EndSessionsAfter != nil {
		c.PreviousSessionsEndAt = &metav1.Time{Time: now.Add(r.EndSessionsAfter.Duration)}
	}
}

// work is what an Alternating role needs done, in the order Update does
// it.
type work struct {
	// base are the statements for the role itself.
	base []string
	// repair: the active login's password or attributes are not what the
	// Secret and spec say.
	repair bool
	// rotate says why a rotation is due now ("" when none is), and target
	// the login it hands out.
	rotate, target string
	// retire are logins that must stop accepting new logins.
	retire []string
	// endSessions is the previous login whose sessions are to end.
	endSessions string
}

func (w work) none() bool {
	return len(w.base) == 0 && !w.repair && w.rotate == "" && len(w.retire) == 0 && w.endSessions == ""
}

// statements are what updateAlternating sends for w, in its order, with
// the passwords it would generate shown as verifier.
func (w work) statements(mg *v1alpha1.PostgreSQLRole, in *v1alpha1.PostgreSQLInstance, l *logins, verifier string) []string {
	stmts := slices.Clone(w.base)
	if w.repair {
		a := l.active()
		stmts = append(stmts, loginStatements(mg, in, a, verifier, l.roles[a].Role)...)
	}
	if w.rotate != "" {
		stmts = append(stmts, loginStatements(mg, in, w.target, verifier, l.roles[w.target].Role)...)
	}
	for _, n := range w.retire {
		stmts = append(stmts, retireStatements(mg, in, n, l)...)
	}
	if w.endSessions != "" {
		stmts = append(stmts, postgres.EndSessionsStatement(w.endSessions))
	}
	return stmts
}

// loginStatements give login n of mg its attributes and the password
// verifier; got is n as observed, nil when it does not exist.
func loginStatements(mg *v1alpha1.PostgreSQLRole, in *v1alpha1.PostgreSQLInstance, n, verifier string, got *postgres.ObservedRole) []string {
	return postgres.LoginStatements(n, postgres.LoginAttributes(mg.RoleName(), desired(mg, in), true), verifier, got, ownMark(mg))
}

// retireStatements take new logins from login n of mg.
func retireStatements(mg *v1alpha1.PostgreSQLRole, in *v1alpha1.PostgreSQLInstance, n string, l *logins) []string {
	return postgres.UpdateRoleStatements(n, postgres.LoginAttributes(mg.RoleName(), desired(mg, in), false), *l.roles[n].Role, ownMark(mg))
}

// baseDesired are the role's own attributes in Alternating mode: it logs
// in only until the first login is handed out, if it did before (its own
// Secret's clients, or an adopted role's), and during its grace period
// afterwards.
func baseDesired(mg *v1alpha1.PostgreSQLRole, in *v1alpha1.PostgreSQLInstance, l *logins, now time.Time) postgres.RoleAttributes {
	a := desired(mg, in)
	c := credential.Status(mg)
	a.Login = (l != nil && l.active() == "" && l.baseLogsIn()) || inGrace(c, mg.RoleName(), now)
	return a
}

// baseLogsIn: the role itself has LOGIN now.
func (l *logins) baseLogsIn() bool {
	r := l.roles[l.base].Role
	return r != nil && r.Login
}

// workOf works out what an Alternating role needs, at now (plan), with
// the password check it may need: a login with the Secret's password, or
// the stored verifier when the admin may read it.
func (e *external) workOf(ctx context.Context, mg *v1alpha1.PostgreSQLRole, got *postgres.ObservedRole, l *logins, now time.Time) (work, error) {
	return plan(mg, e.conn.Instance, got, l, now, func(login string) (bool, error) {
		return e.passwordWorks(ctx, mg, login, l.roles[login].Role, l.password)
	})
}

// plan is the credential lifecycle of an Alternating role as a decision
// from what was observed alone: the role and its two logins on the server
// (got, l), what its Secret holds (l), its spec and credential status, and
// the time. It sends nothing and writes nothing: updateAlternating carries
// the work out in the order work lists it, and Observe reports whether
// there is any. works says whether the active login's password is the
// Secret's; it is asked only when nothing else already calls for a repair
// and the role has not expired, because it may cost a login.
//
// The lifecycle: a new role's first login is handed out (rotate, "first
// login"); a requested or scheduled rotation hands out the idle login with
// a new password, unless that login is still in its grace period; a login
// that is neither the active one, the one about to be handed out, nor in
// its grace period is retired (NOLOGIN); the previous login's sessions
// end once endSessionsAfter has passed; a login changed or dropped by
// hand is repaired.
func plan(mg *v1alpha1.PostgreSQLRole, in *v1alpha1.PostgreSQLInstance, got *postgres.ObservedRole, l *logins, now time.Time, works func(login string) (bool, error)) (work, error) {
	var w work
	w.base = postgres.UpdateRoleStatements(l.base, baseDesired(mg, in, l, now), scoped(mg, *got), l.baseMark(mg))
	c := credential.Status(mg)
	active := l.active()
	// Past validUntil the server refuses every login, the right password
	// included: checking it would fail and re-set it at every poll, and a
	// rotation would hand out a login that cannot log in either.
	expired := got.ValidUntil != nil && !got.ValidUntil.After(now)
	var err error
	if w.repair, err = repairNeeded(mg, in, l, expired, works); err != nil {
		return work{}, err
	}
	target := ""
	if !expired {
		if w.rotate, target, err = rotation(mg, l, now); err != nil {
			return work{}, err
		}
		w.target = target
	}
	// The login a rotation is about to hand out is not retired after it
	// (a stop after its password was set leaves it LOGIN, idle).
	for _, n := range l.names {
		if r := l.roles[n].Role; r != nil && r.Login && n != active && n != target && !inGrace(c, n, now) {
			w.retire = append(w.retire, n)
		}
	}
	if p := c.PreviousLogin; p != "" && c.PreviousSessionsEndAt != nil && !now.Before(c.PreviousSessionsEndAt.Time) && l.roles[p].Sessions > 0 && p != active {
		w.endSessions = p
	}
	return w, nil
}

// repairNeeded: the login the Secret holds is missing, or its attributes
// or (unless expired) its password are not what spec and Secret say.
func repairNeeded(mg *v1alpha1.PostgreSQLRole, in *v1alpha1.PostgreSQLInstance, l *logins, expired bool, works func(login string) (bool, error)) (bool, error) {
	active := l.active()
	if active == "" {
		return false, nil
	}
	o := l.roles[active]
	if o.Role == nil {
		return true, nil
	}
	want := postgres.LoginAttributes(l.base, desired(mg, in), true)
	if len(postgres.UpdateRoleStatements(active, want, *o.Role, ownMark(mg))) > 0 {
		return true, nil
	}
	if expired {
		return false, nil
	}
	ok, err := works(active)
	return !ok, err
}

// rotation says why a rotation is due now and which login it hands out
// ("" when none is due, or its target is still in its grace period).
func rotation(mg *v1alpha1.PostgreSQLRole, l *logins, now time.Time) (why, target string, err error) {
	active := l.active()
	due, err := credential.Due(mg, now)
	if err != nil {
		return "", "", err
	}
	switch {
	case active == "":
		why = "first login"
	case credential.Requested(mg):
		why = "requested with the " + v1alpha1.AnnotationRotatePassword + " annotation"
	case due:
		why = "scheduled"
	default:
		return "", "", nil
	}
	target = l.names[0]
	if active != "" {
		target = l.other(active)
	}
	// The login in its grace period may still be in use: it gets no new
	// password before that ends (wakeAfter polls then).
	if inGrace(credential.Status(mg), target, now) {
		return "", "", nil
	}
	return why, target, nil
}

// observeAlternating observes an Alternating role: the role itself, its
// logins and the Secret.
func (e *external) observeAlternating(ctx context.Context, mg *v1alpha1.PostgreSQLRole, got *postgres.ObservedRole) (managed.ExternalObservation, error) {
	now := time.Now()
	l, err := e.readLogins(ctx, mg)
	if err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, errObserve)
	}
	if err := track(mg, l, now); err != nil {
		return managed.ExternalObservation{}, err
	}
	w, err := e.workOf(ctx, mg, got, l, now)
	if err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, errPassword)
	}
	if len(w.base) > 0 {
		if err := e.checkBoundary(ctx, mg); err != nil {
			return managed.ExternalObservation{}, err
		}
	}
	mg.SetConditions(availability(mg, got))
	pending.Set(mg, &mg.Status.AtProvider.Plan, v1alpha1.PlanUpdate, w.statements(mg, e.conn.Instance, l, pending.Redacted))
	serverobject.Drifted[*v1alpha1.PostgreSQLRole, postgres.ObservedRole](kind{e}, mg, got, w.none())
	return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: w.none(), ConnectionDetails: e.activeDetails(mg, l)}, nil
}

// previewAlternating is what widening the policies of an Alternating role
// observed read-only would send: the same work observeAlternating plans,
// except that a preview never logs in to check the active login's
// password (it is taken to work), and records nothing in status.
func (e *external) previewAlternating(ctx context.Context, mg *v1alpha1.PostgreSQLRole, got *postgres.ObservedRole) ([]string, error) {
	l, err := e.readLogins(ctx, mg)
	if err != nil {
		return nil, errors.Wrap(err, errObserve)
	}
	w, err := plan(mg, e.conn.Instance, got, l, time.Now(), func(string) (bool, error) { return true, nil })
	if err != nil {
		return nil, errors.Wrap(err, errPassword)
	}
	return w.statements(mg, e.conn.Instance, l, pending.Redacted), nil
}

// availability is the Ready condition of an Alternating role.
func availability(mg *v1alpha1.PostgreSQLRole, got *postgres.ObservedRole) xpv2.Condition {
	if exp := got.ValidUntil; exp != nil && !exp.After(time.Now()) {
		return expired(mg.RoleName(), *exp)
	}
	return xpv2.Available()
}

// activeDetails are the connection details of the login the Secret holds,
// nil when it holds neither login yet (nothing new to publish).
func (e *external) activeDetails(mg *v1alpha1.PostgreSQLRole, l *logins) managed.ConnectionDetails {
	if l.active() == "" {
		return nil
	}
	return e.details(mg, l.user, l.password)
}

// updateAlternating does what an Alternating role needs, in an order that
// a stop at any point leaves safe: the Secret only ever names a login
// whose password is on the server, and a login loses its password or its
// LOGIN only once no client should hold it.
func (e *external) updateAlternating(ctx context.Context, mg *v1alpha1.PostgreSQLRole) (managed.ExternalUpdate, error) {
	now := time.Now()
	name := mg.RoleName()
	got, _, err := postgres.ObserveRole(ctx, e.conn.Pool, name, false)
	if err != nil || got == nil {
		return managed.ExternalUpdate{}, errors.Wrap(errors.Join(err, errors.New(errRoleGone)), errObserve)
	}
	l, err := e.readLogins(ctx, mg)
	if err != nil {
		return managed.ExternalUpdate{}, errors.Wrap(err, errObserve)
	}
	if err := track(mg, l, now); err != nil {
		return managed.ExternalUpdate{}, err
	}
	w, err := e.workOf(ctx, mg, got, l, now)
	if err != nil {
		return managed.ExternalUpdate{}, errors.Wrap(err, errPassword)
	}
	if len(w.base) > 0 {
		if err := e.guarded(ctx, mg, w.base); err != nil {
			return managed.ExternalUpdate{}, errors.Wrap(err, errUpdate)
		}
		applied(mg)
	}
	if w.repair {
		a := l.active()
		if err := e.setLogin(ctx, mg, a, l.password, l.roles[a].Role); err != nil {
			return managed.ExternalUpdate{}, err
		}
		e.events.Event(mg, event.Normal(reasonRepaired, fmt.Sprintf("login %q did not have the password or attributes the connection Secret and spec say (changed by hand, or dropped): set again", a)))
	}
	if w.rotate != "" {
		if err := e.rotate(ctx, mg, l, w.rotate, now); err != nil {
			return managed.ExternalUpdate{}, err
		}
	}
	for _, n := range w.retire {
		if err := postgres.Exec(ctx, e.conn.Pool, retireStatements(mg, e.conn.Instance, n, l)); err != nil {
			return managed.ExternalUpdate{}, errors.Wrapf(err, "cannot retire login %q", n)
		}
		e.events.Event(mg, event.Normal(reasonRetired, fmt.Sprintf("login %q takes no new logins (NOLOGIN); %d session(s) of it go on", n, l.roles[n].Sessions)))
	}
	if n := w.endSessions; n != "" {
		var ended int
		err := postgres.ActingAs(ctx, e.conn.Pool, []postgres.RoleNeed{{Role: n, Inherit: true}}, func() error {
			var err error
			ended, err = postgres.EndSessions(ctx, e.conn.Pool, n)
			return err
		})
		if err != nil {
			return managed.ExternalUpdate{}, err
		}
		credential.Status(mg).PreviousSessions = 0
		e.events.Event(mg, event.Normal(reasonEndedSessions, fmt.Sprintf("ended %d session(s) of previous login %q (endSessionsAfter)", ended, n)))
	}
	pending.Sent(mg, &mg.Status.AtProvider.Plan)
	return managed.ExternalUpdate{ConnectionDetails: e.activeDetails(mg, l)}, nil
}

// setLogin gives login n its attributes and the password pw.
func (e *external) setLogin(ctx context.Context, mg *v1alpha1.PostgreSQLRole, n, pw string, got *postgres.ObservedRole) error {
	verifier, err := postgres.SCRAMVerifier(pw)
	if err != nil {
		return errors.Wrap(err, errPassword)
	}
	if err := postgres.Exec(ctx, e.conn.Pool, loginStatements(mg, e.conn.Instance, n, verifier, got)); err != nil {
		return errors.Wrapf(err, "cannot set login %q", n)
	}
	e.verified.Set(mg.GetUID(), pw)
	return nil
}

// rotate hands the Secret the idle login with a fresh password: set on
// the server first, then published, then recorded. Stopped after the
// first step, the next reconcile rotates again (the idle login is in no
// one's hands); after the second, track adopts what the Secret says.
func (e *external) rotate(ctx context.Context, mg *v1alpha1.PostgreSQLRole, l *logins, why string, now time.Time) error {
	prev := l.active()
	target := l.names[0]
	if prev != "" {
		target = l.other(prev)
	} else if l.baseLogsIn() {
		// The role logged in itself (before Alternating, or adopted):
		// its clients get the grace period too.
		prev = l.base
	}
	pw, err := postgres.GeneratePassword()
	if err != nil {
		return errors.Wrap(err, errPassword)
	}
	if err := e.setLogin(ctx, mg, target, pw, l.roles[target].Role); err != nil {
		return err
	}
	if err := afterStep(ctx, StepPasswordSet); err != nil {
		return err
	}
	if err := e.delivery.Publish(ctx, mg, e.details(mg, target, pw)); err != nil {
		return errors.Wrapf(err, "cannot switch the connection Secret to login %q (its new password is set; the next reconcile sets another)", target)
	}
	if err := afterStep(ctx, StepSecretSwitched); err != nil {
		return err
	}
	l.user, l.password = target, pw
	c := credential.Status(mg)
	msg := fmt.Sprintf("%s now holds login %q (%s)", credential.DeliveredTo(mg), target, why)
	if prev != "" {
		switched(mg, prev, now)
		msg += fmt.Sprintf("; login %q accepts new logins until %s", prev, c.PreviousLoginUntil.UTC().Format(time.RFC3339))
	}
	c.ActiveLogin, c.ActiveSince = target, &metav1.Time{Time: now}
	mg.Status.AtProvider.PasswordRotation = mg.GetAnnotations()[v1alpha1.AnnotationRotatePassword]
	if err := credential.SetNext(mg); err != nil {
		return err
	}
	e.events.Event(mg, event.Normal(reasonRotated, msg))
	return nil
}

// dropLogins drops an Alternating role's login roles, before the role.
func (e *external) dropLogins(ctx context.Context, mg *v1alpha1.PostgreSQLRole) error {
	names := loginNames(mg.RoleName())
	got, err := postgres.ObserveLogins(ctx, e.conn.Pool, names[:], false)
	if err != nil {
		return err
	}
	for _, o := range got {
		if o.Role == nil || o.Role.Owner != string(mg.GetUID()) {
			continue
		}
		if err := postgres.Exec(ctx, e.conn.Pool, []string{postgres.DropRoleStatement(o.Name)}); err != nil {
			return errors.Wrapf(err, "cannot drop login %q (it owns objects or holds privileges of its own: reassign or drop them, then the drop is retried)", o.Name)
		}
	}
	return nil
}
