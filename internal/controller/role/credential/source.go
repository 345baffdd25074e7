package credential

import (
	"time"

	"github.com/robfig/cron/v3"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

// Source is where the password of a role that keeps its own login (not
// Alternating) comes from.
type Source int

const (
	// None is not a login role, or nowhere to publish a generated password:
	// the provider does not manage it.
	None Source = iota
	// FromSecretRef is spec.forProvider.passwordSecretRef's Secret.
	FromSecretRef
	// KeepPublished is the password already delivered.
	KeepPublished
	// GenerateNew is a new one, delivered before the server is changed
	// (none delivered yet, or a rotation requested or due).
	GenerateNew
)

// SourceOf is the in-place credential lifecycle as a decision: given the
// role and the password delivered for it ("" for none), where its
// password comes from at now.
func SourceOf(mg *v1alpha1.PostgreSQLRole, published string, now time.Time) (Source, error) {
	switch {
	case !Login(mg):
		return None, nil
	case mg.Spec.ForProvider.PasswordSecretRef != nil:
		return FromSecretRef, nil
	case !Generated(mg):
		return None, nil
	}
	due, err := Due(mg, now)
	if err != nil {
		return None, err
	}
	if published != "" && !Requested(mg) && !due {
		return KeepPublished, nil
	}
	return GenerateNew, nil
}

// Requested reports whether mg's rotate-password annotation asks for a
// rotation not handled yet.
func Requested(mg *v1alpha1.PostgreSQLRole) bool {
	return mg.GetAnnotations()[v1alpha1.AnnotationRotatePassword] != mg.Status.AtProvider.PasswordRotation
}

// Due reports whether the schedule says mg's active password is due at
// now.
func Due(mg *v1alpha1.PostgreSQLRole, now time.Time) (bool, error) {
	c := mg.Status.AtProvider.Credential
	if c == nil || c.ActiveSince == nil {
		return false, nil
	}
	next, ok, err := NextRotation(mg.Spec.PasswordRotation, c.ActiveSince.Time)
	return ok && !now.Before(next), err
}

// NextRotation is when the schedule (or maxAge) rotates a password set at
// since; ok is false when there is no schedule.
func NextRotation(r *v1alpha1.PasswordRotation, since time.Time) (next time.Time, ok bool, err error) {
	switch {
	case r == nil:
		return time.Time{}, false, nil
	case r.MaxAge != nil:
		return since.Add(r.MaxAge.Duration), true, nil
	case r.Schedule != "":
		s, err := cron.ParseStandard(r.Schedule)
		if err != nil {
			return time.Time{}, false, errors.Wrapf(err, "spec.passwordRotation.schedule %q is not a cron expression (five fields, or @daily, @weekly, @monthly)", r.Schedule)
		}
		return s.Next(since.UTC()), true, nil
	}
	return time.Time{}, false, nil
}
