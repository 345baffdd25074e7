// Package credential holds what a PostgreSQLRole's credential is, apart
// from the controller that reconciles the role: whether the provider
// manages its password, where that password comes from (a Secret the
// tenant names, the one already delivered, a new one on the rotation
// schedule or on request), the connection details handed out in every
// form clients take, and the memo of passwords verified by logging in.
//
// It imports nothing of the role controller, so its decisions are tested
// as tables without a role controller, an API server or a database.
package credential

import (
	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

// Keys of the connection details that carry the login; the others are
// host, hostaddr, port, database, sslmode, uri, jdbc-url, pgpass,
// pg_service.conf and ca.crt.
const (
	KeyUsername = "username"
	KeyPassword = "password"
)

// Login reports whether mg is a role that logs in.
func Login(mg *v1alpha1.PostgreSQLRole) bool {
	return mg.Spec.ForProvider.Login != nil && *mg.Spec.ForProvider.Login
}

// Publishes reports whether mg delivers its connection details anywhere:
// a connection Secret, a vault path, or both.
func Publishes(mg *v1alpha1.PostgreSQLRole) bool {
	return mg.Spec.WriteConnectionSecretToReference != nil || mg.Spec.WriteConnectionDetailsToVault != nil
}

// Generated reports whether mg gets a generated password: a login role
// without passwordSecretRef that delivers its details somewhere (a
// password nobody could read is never made) and logs in with a password,
// not a certificate.
func Generated(mg *v1alpha1.PostgreSQLRole) bool {
	return Login(mg) && mg.Spec.ForProvider.PasswordSecretRef == nil && Publishes(mg) && !Certificate(mg)
}

// Managed reports whether the provider gives mg its password, from
// passwordSecretRef or generated.
func Managed(mg *v1alpha1.PostgreSQLRole) bool {
	return Login(mg) && (mg.Spec.ForProvider.PasswordSecretRef != nil || Generated(mg))
}
