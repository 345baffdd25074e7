package grant_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/drift"
)

// TestGrantDrift: a privilege revoked by hand is reported with what the
// grantee held before and after, and granted again.
func TestGrantDrift(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	sql(ctx, t, "CREATE DATABASE ddrift")
	sql(ctx, t, "CREATE ROLE rdrift; REVOKE ALL ON DATABASE ddrift FROM PUBLIC")
	g := newGrant("drift", v1alpha1.PostgreSQLGrantParameters{
		Role: ptr.To("rdrift"), ObjectType: v1alpha1.GrantObjectDatabase, Database: ptr.To("ddrift"), Privileges: privileges("CONNECT", "TEMPORARY"),
	})
	env.Create(ctx, t, g)
	env.Ready(ctx, t, g, corev1.ConditionTrue, xpv2.ReasonAvailable)
	time.Sleep(3 * time.Second) // One more poll: the baseline.
	sql(ctx, t, "REVOKE TEMPORARY ON DATABASE ddrift FROM rdrift")

	msg := env.WaitEvent(ctx, t, ns, "drift", string(drift.ReasonDetected), 30*time.Second)
	if want := "privileges: CONNECT,TEMPORARY → CONNECT, changed on the server"; !strings.Contains(msg, want) {
		t.Errorf("DriftDetected says %q, want it to contain %q", msg, want)
	}
	env.WaitEvent(ctx, t, ns, "drift", string(drift.ReasonCorrected), 30*time.Second)
	waitHolds(ctx, t, "has_database_privilege('rdrift', 'ddrift', 'TEMPORARY')", true)
}
