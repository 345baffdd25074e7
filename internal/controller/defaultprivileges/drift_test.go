package defaultprivileges_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/drift"
)

// TestDefaultPrivilegesDrift: a default privilege revoked by hand is
// reported with what was held before and after, granted again, and
// counted once.
func TestDefaultPrivilegesDrift(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	env.AdminSQL(ctx, t, "postgres", "CREATE ROLE o458d; CREATE ROLE g458d")
	sql(ctx, t, "CREATE SCHEMA s458d AUTHORIZATION o458d")
	d := newDefaults("drifted", v1alpha1.PostgreSQLDefaultPrivilegesParameters{
		Role: ptr.To("g458d"), Owner: ptr.To("o458d"), Database: ptr.To("postgres"), Schema: ptr.To("s458d"),
		ObjectType: v1alpha1.DefaultPrivilegesTables, Privileges: privileges("SELECT", "INSERT"),
	})
	env.CreateForTest(ctx, t, d)
	env.Ready(ctx, t, d, corev1.ConditionTrue, xpv2.ReasonAvailable)
	before := testutil.ToFloat64(drift.Detected.WithLabelValues(v1alpha1.PostgreSQLDefaultPrivilegesKind, "privileges"))
	time.Sleep(3 * time.Second) // One more poll: the baseline.
	sql(ctx, t, "ALTER DEFAULT PRIVILEGES FOR ROLE o458d IN SCHEMA s458d REVOKE INSERT ON TABLES FROM g458d")

	msg := env.WaitEvent(ctx, t, ns, "drifted", string(drift.ReasonDetected), 30*time.Second)
	if want := "privileges: INSERT,SELECT → SELECT, changed on the server"; !strings.Contains(msg, want) {
		t.Errorf("DriftDetected says %q, want it to contain %q", msg, want)
	}
	env.WaitEvent(ctx, t, ns, "drifted", string(drift.ReasonCorrected), 30*time.Second)
	sql(ctx, t, "SET ROLE o458d; CREATE TABLE s458d.later (id int); RESET ROLE")
	if !env.Holds(ctx, t, "has_table_privilege('g458d', 's458d.later', 'SELECT, INSERT')") {
		t.Error("the default privilege revoked by hand was not granted again")
	}
	if got := testutil.ToFloat64(drift.Detected.WithLabelValues(v1alpha1.PostgreSQLDefaultPrivilegesKind, "privileges")) - before; got != 1 {
		t.Errorf("drift counted %v times, want once", got)
	}
}
