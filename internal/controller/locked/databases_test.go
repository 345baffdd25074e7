package locked_test

import (
	"context"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ayatori/provider-postgresql/internal/controller/locked"
	"github.com/ayatori/provider-postgresql/internal/controller/manager"
	"github.com/ayatori/provider-postgresql/internal/fixture/controlplane"
	"github.com/ayatori/provider-postgresql/internal/fixture/tier"
)

// TestLockedDatabasesWithoutTheDatabaseKind: on an API server that does
// not serve PostgreSQLDatabases (the kind not activated, under Crossplane's
// safe-start), nothing is locked, rather than every destructive option
// failing.
func TestLockedDatabasesWithoutTheDatabaseKind(t *testing.T) {
	tier.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp, err := controlplane.Start(ctx, controlplane.Options{NoCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop() //nolint:errcheck // Test.
	s, err := manager.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	kube, err := client.New(cp.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	got, err := locked.Databases(ctx, kube, "some-instance-uid")
	if err != nil || len(got) != 0 {
		t.Errorf("LockedDatabases = %v, %v; want no locks and no error", got, err)
	}
}
