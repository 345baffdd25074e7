package role

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/activation"
)

var (
	descCredentialAge = prometheus.NewDesc("provider_postgresql_role_credential_age_seconds",
		"Age of the password of the login a PostgreSQLRole's connection Secret holds.", []string{"namespace", "name", "login"}, nil)
	descNextRotation = prometheus.NewDesc("provider_postgresql_role_credential_next_rotation_seconds",
		"Seconds until a PostgreSQLRole's password is rotated by its schedule (negative when overdue).", []string{"namespace", "name"}, nil)
	descPreviousSessions = prometheus.NewDesc("provider_postgresql_role_previous_login_sessions",
		"Sessions the previous login of an Alternating PostgreSQLRole still has.", []string{"namespace", "name", "login"}, nil)
)

// CredentialMetrics reports the credentials of login PostgreSQLRoles, read
// from their status at each scrape: nothing to keep in step with
// reconciles, and a deleted role simply stops being reported.
type CredentialMetrics struct {
	// Roles lists PostgreSQLRoles; the manager's cache in the provider.
	Roles client.Reader
}

// Describe implements prometheus.Collector.
func (m CredentialMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- descCredentialAge
	ch <- descNextRotation
	ch <- descPreviousSessions
}

// Collect implements prometheus.Collector.
func (m CredentialMetrics) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l := &v1alpha1.PostgreSQLRoleList{}
	// Read only, at every scrape: no copy of the cached roles.
	if err := activation.List(ctx, m.Roles, l, client.UnsafeDisableDeepCopy); err != nil {
		ch <- prometheus.NewInvalidMetric(descCredentialAge, err)
		return
	}
	now := time.Now()
	for _, r := range l.Items {
		c := r.Status.AtProvider.Credential
		if c == nil {
			continue
		}
		if c.ActiveLogin != "" && c.ActiveSince != nil {
			ch <- prometheus.MustNewConstMetric(descCredentialAge, prometheus.GaugeValue, now.Sub(c.ActiveSince.Time).Seconds(), r.GetNamespace(), r.GetName(), c.ActiveLogin)
		}
		if c.NextRotation != nil {
			ch <- prometheus.MustNewConstMetric(descNextRotation, prometheus.GaugeValue, c.NextRotation.Sub(now).Seconds(), r.GetNamespace(), r.GetName())
		}
		if c.PreviousLogin != "" {
			ch <- prometheus.MustNewConstMetric(descPreviousSessions, prometheus.GaugeValue, float64(c.PreviousSessions), r.GetNamespace(), r.GetName(), c.PreviousLogin)
		}
	}
}
