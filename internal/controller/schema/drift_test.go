package schema_test

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
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/controller/drift"
)

// TestSchemaDrift: a comment changed and a privilege granted to PUBLIC by
// hand are reported with their values, put back, and counted once each.
func TestSchemaDrift(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	s := newSchema("drifted", "postgres", func(s *v1alpha1.PostgreSQLSchema) {
		s.Spec.ForProvider.Comment = ptr.To("kept")
		s.Spec.ForProvider.RevokePublicPrivileges = true
	})
	env.CreateForTest(ctx, t, s)
	env.Ready(ctx, t, s, corev1.ConditionTrue, xpv2.ReasonAvailable)
	counted := func(field string) float64 {
		return testutil.ToFloat64(drift.Detected.WithLabelValues(v1alpha1.PostgreSQLSchemaKind, field))
	}
	comments, publics := counted("comment"), counted("publicPrivileges")
	time.Sleep(3 * time.Second) // One more poll: the baseline.
	// The ownership marker stays: without it the schema would be no
	// longer this resource's (a Conflict), not changed.
	env.AdminSQL(ctx, t, "postgres", "COMMENT ON SCHEMA drifted IS "+postgres.QuoteLiteral(postgres.WithMarker("by hand", postgres.Mark{UID: string(s.UID)}))+"; GRANT USAGE ON SCHEMA drifted TO PUBLIC")

	msg := env.WaitEvent(ctx, t, ns, "drifted", string(drift.ReasonDetected), 30*time.Second)
	for _, want := range []string{"comment: kept → by hand", `publicPrivileges: "" → USAGE`, "changed on the server"} {
		if !strings.Contains(msg, want) {
			t.Errorf("DriftDetected says %q, want it to contain %q", msg, want)
		}
	}
	env.WaitEvent(ctx, t, ns, "drifted", string(drift.ReasonCorrected), 30*time.Second)
	_, comment, public, _ := schemaState(ctx, t, "postgres", "drifted")
	if !strings.HasPrefix(comment, "kept\n") || len(public) != 0 {
		t.Errorf("after the correction: comment %q, PUBLIC holds %v", comment, public)
	}
	if c, p := counted("comment")-comments, counted("publicPrivileges")-publics; c != 1 || p != 1 {
		t.Errorf("drift counted %v times for comment and %v for publicPrivileges, want once each", c, p)
	}
}
