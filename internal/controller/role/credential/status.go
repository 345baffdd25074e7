package credential

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

// Status returns mg's credential status, made on first use.
func Status(mg *v1alpha1.PostgreSQLRole) *v1alpha1.CredentialObservation {
	if mg.Status.AtProvider.Credential == nil {
		mg.Status.AtProvider.Credential = &v1alpha1.CredentialObservation{}
	}
	return mg.Status.AtProvider.Credential
}

// TrackInPlace records, for a role whose own password the Secret holds,
// which login that is and since when; rotated says a new password was
// just set.
func TrackInPlace(mg *v1alpha1.PostgreSQLRole, now time.Time, rotated bool) error {
	c := Status(mg)
	c.ActiveLogin = mg.RoleName()
	if c.ActiveSince == nil || rotated {
		c.ActiveSince = &metav1.Time{Time: now}
	}
	return SetNext(mg)
}

// SetNext records when the active password is rotated next.
func SetNext(mg *v1alpha1.PostgreSQLRole) error {
	c := Status(mg)
	c.NextRotation = nil
	if c.ActiveSince == nil {
		return nil
	}
	next, ok, err := NextRotation(mg.Spec.PasswordRotation, c.ActiveSince.Time)
	if ok {
		c.NextRotation = &metav1.Time{Time: next}
	}
	return err
}
