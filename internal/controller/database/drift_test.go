package database_test

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

// TestDatabaseDrift: settings changed by hand on a managed database are
// reported with each field and its values, and put back.
func TestDatabaseDrift(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	d := newDatabase("drifted", func(d *v1alpha1.PostgreSQLDatabase) {
		d.Spec.ForProvider.ConnectionLimit = ptr.To[int32](20)
	})
	if err := env.Kube.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	waitReady(ctx, t, d, corev1.ConditionTrue, xpv2.ReasonAvailable)
	time.Sleep(3 * time.Second) // One more poll: the baseline.
	env.AdminSQL(ctx, t, "postgres", `ALTER DATABASE drifted CONNECTION LIMIT 2; ALTER DATABASE drifted IS_TEMPLATE true`)

	msg := env.WaitEvent(ctx, t, ns, "drifted", string(drift.ReasonDetected), 30*time.Second)
	for _, want := range []string{"connectionLimit: 20 → 2", "isTemplate: false → true", "changed on the server"} {
		if !strings.Contains(msg, want) {
			t.Errorf("DriftDetected says %q, want it to contain %q", msg, want)
		}
	}
	env.WaitEvent(ctx, t, ns, "drifted", string(drift.ReasonCorrected), 30*time.Second)
	var limit int
	var template bool
	if err := env.Connect(ctx, t, "postgres").QueryRow(ctx, "SELECT datconnlimit, datistemplate FROM pg_database WHERE datname = 'drifted'").Scan(&limit, &template); err != nil {
		t.Fatal(err)
	}
	if limit != 20 || template {
		t.Errorf("after the correction: connection limit %d, template %t; want 20, false", limit, template)
	}
}
