package role_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/drift"
)

func events(ctx context.Context, t *testing.T, name, reason string) []string {
	t.Helper()
	return env.Events(ctx, t, ns, name, reason)
}

func waitEvent(ctx context.Context, t *testing.T, name, reason string) string {
	t.Helper()
	return env.WaitEvent(ctx, t, ns, name, reason, 30*time.Second)
}

func connLimit(ctx context.Context, t *testing.T, role string) int {
	t.Helper()
	var limit int
	if err := admin(ctx, t).QueryRow(ctx, "SELECT rolconnlimit FROM pg_roles WHERE rolname = $1", role).Scan(&limit); err != nil {
		t.Fatal(err)
	}
	return limit
}

// TestDriftReportedAndCorrected: a connection limit changed by hand (a
// DBA in psql) is reported within a poll, with the field and both values,
// put back, reported as corrected, counted once, and kept in
// status.atProvider.lastDrift. A spec change is not drift.
func TestDriftReportedAndCorrected(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	r := newRole("drifting", func(r *v1alpha1.PostgreSQLRole) {
		r.Spec.ForProvider.Login = ptr.To(false)
		r.Spec.WriteConnectionSecretToReference = nil
		r.Spec.ForProvider.ConnectionLimit = ptr.To[int32](10)
	})
	if err := env.Kube.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	waitCondition(ctx, t, r, corev1.ConditionTrue, xpv2.ReasonAvailable)
	// One more poll records the baseline in line with the spec.
	time.Sleep(3 * time.Second)
	before := testutil.ToFloat64(drift.Detected.WithLabelValues(v1alpha1.PostgreSQLRoleKind, "connectionLimit"))

	env.AdminSQL(ctx, t, "postgres", `ALTER ROLE drifting CONNECTION LIMIT 5`)
	detected := waitEvent(ctx, t, "drifting", string(drift.ReasonDetected))
	if want := "connectionLimit: 10 → 5, changed on the server"; !strings.Contains(detected, want) {
		t.Errorf("DriftDetected says %q, want it to contain %q", detected, want)
	}
	corrected := waitEvent(ctx, t, "drifting", string(drift.ReasonCorrected))
	if want := "connectionLimit to 10"; !strings.Contains(corrected, want) {
		t.Errorf("DriftCorrected says %q, want it to contain %q", corrected, want)
	}
	if got := connLimit(ctx, t, "drifting"); got != 10 {
		t.Errorf("connection limit %d after the correction, want 10", got)
	}
	if got := testutil.ToFloat64(drift.Detected.WithLabelValues(v1alpha1.PostgreSQLRoleKind, "connectionLimit")) - before; got != 1 {
		t.Errorf("provider_postgresql_drift_detected_total{kind=PostgreSQLRole,field=connectionLimit} grew by %v, want 1", got)
	}
	got := &v1alpha1.PostgreSQLRole{}
	if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), got); err != nil {
		t.Fatal(err)
	}
	d := got.Status.AtProvider.LastDrift
	if d == nil || len(d.Fields) != 1 || d.Fields[0] != (v1alpha1.DriftField{Field: "connectionLimit", Was: "10", Found: "5"}) || d.CorrectedAt == nil {
		t.Errorf("status.atProvider.lastDrift = %+v, want connectionLimit 10 → 5, corrected", d)
	}

	// A spec change is the provider's to apply: no new drift.
	if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), got); err != nil {
		t.Fatal(err)
	}
	got.Spec.ForProvider.ConnectionLimit = ptr.To[int32](7)
	if err := env.Kube.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for connLimit(ctx, t, "drifting") != 7 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(3 * time.Second)
	if n := len(events(ctx, t, "drifting", string(drift.ReasonDetected))); n != 1 {
		t.Errorf("%d DriftDetected events after a spec change, want still 1", n)
	}
}

// TestDriftObserveOnly: an import reports a change made by hand, and
// leaves it.
func TestDriftObserveOnly(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	env.AdminSQL(ctx, t, "postgres", `CREATE ROLE watched NOLOGIN CONNECTION LIMIT 3`)
	r := newRole("watched", func(r *v1alpha1.PostgreSQLRole) {
		r.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
		r.Spec.WriteConnectionSecretToReference = nil
	})
	if err := env.Kube.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	waitCondition(ctx, t, r, corev1.ConditionFalse, v1alpha1.ReasonObserveOnly)
	time.Sleep(3 * time.Second)
	env.AdminSQL(ctx, t, "postgres", `ALTER ROLE watched CONNECTION LIMIT 4`)
	detected := waitEvent(ctx, t, "watched", string(drift.ReasonDetected))
	if want := "connectionLimit: 3 → 4, changed on the server; not corrected"; !strings.Contains(detected, want) {
		t.Errorf("DriftDetected says %q, want it to contain %q", detected, want)
	}
	time.Sleep(3 * time.Second)
	if got := connLimit(ctx, t, "watched"); got != 4 {
		t.Errorf("connection limit %d: an Observe-only role was changed back", got)
	}
	if n := len(events(ctx, t, "watched", string(drift.ReasonCorrected))); n != 0 {
		t.Errorf("%d DriftCorrected events for an Observe-only role, want 0", n)
	}
}
