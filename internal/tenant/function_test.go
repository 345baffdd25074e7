package tenant

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"
)

const claimXR = `{
  "apiVersion": "database.ayatori.ddupan.top/v1alpha1", "kind": "XPostgreSQLTenant",
  "metadata": {"name": "orders-x7k2p", "uid": "uid-new", "creationTimestamp": "2026-11-29T10:00:00Z"},
  "spec": {%s, "claimRef": {"apiVersion": "database.ayatori.ddupan.top/v1alpha1", "kind": "PostgreSQLTenant", "namespace": "shop", "name": "orders"}}
}`

func runRequest(spec string, required map[string]*fnv1.Resources) *fnv1.RunFunctionRequest {
	return &fnv1.RunFunctionRequest{
		Observed:          &fnv1.State{Composite: &fnv1.Resource{Resource: resource.MustStructJSON(strings.Replace(claimXR, "%s", spec, 1))}},
		RequiredResources: required,
	}
}

func fatal(rsp *fnv1.RunFunctionResponse) string {
	for _, r := range rsp.GetResults() {
		if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
			return r.GetMessage()
		}
	}
	return ""
}

func desiredNames(rsp *fnv1.RunFunctionResponse) []string {
	var out []string
	for n := range rsp.GetDesired().GetResources() {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func TestRunFunctionDynamic(t *testing.T) {
	rsp, err := (&Function{}).RunFunction(context.Background(), runRequest(`"instanceRef": {"name": "main"}, "extensions": ["pgcrypto"]`, nil))
	if err != nil {
		t.Fatal(err)
	}
	if msg := fatal(rsp); msg != "" {
		t.Fatalf("fatal: %s", msg)
	}
	if diff := cmp.Diff([]string{Database, LoginRole, OwnerRole}, desiredNames(rsp)); diff != "" {
		t.Errorf("composed (-want +got):\n%s", diff)
	}
	st := rsp.GetDesired().GetComposite().GetResource().GetFields()["status"].GetStructValue().AsMap()
	if diff := cmp.Diff(map[string]any{"instance": "main", "database": "orders", "loginRole": "orders", "secretName": "main-orders-postgresql"}, st); diff != "" {
		t.Errorf("composite status (-want +got):\n%s", diff)
	}
	db := rsp.GetDesired().GetResources()[Database].GetResource().AsMap()
	if db["kind"] != "PostgreSQLDatabase" || db["apiVersion"] != "database.ayatori.ddupan.top/v1alpha1" {
		t.Errorf("database resource %v", db)
	}
	if _, ok := db["status"]; ok {
		t.Error("a composed resource carries a status")
	}
}

func TestRunFunctionInput(t *testing.T) {
	req := runRequest(`"instanceRef": {"name": "main"}`, nil)
	req.Input = resource.MustStructJSON(`{"apiVersion": "tenant.fn.database.ayatori.ddupan.top/v1alpha1", "kind": "Input", "deleteData": true}`)
	rsp, err := (&Function{}).RunFunction(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	pol, _, _ := unstructured.NestedSlice(rsp.GetDesired().GetResources()[Database].GetResource().AsMap(), "spec", "managementPolicies")
	if diff := cmp.Diff([]any{"*"}, pol); diff != "" {
		t.Errorf("deleteData: database policies (-want +got):\n%s", diff)
	}
}

func registered(owner string) *fnv1.Resources {
	status := `"status": {"atProvider": {"name": "legacy_db", "owner": "` + owner + `"}}`
	if owner == "" {
		status = `"status": {}`
	}
	return &fnv1.Resources{Items: []*fnv1.Resource{{Resource: resource.MustStructJSON(`{
	  "apiVersion": "database.ayatori.ddupan.top/v1alpha1", "kind": "PostgreSQLDatabase",
	  "metadata": {"name": "legacy", "namespace": "shop"},
	  "spec": {"instanceRef": {"name": "main"}}, ` + status + `}`)}}}
}

func tenantXR(uid, created, ns, name string) *fnv1.Resource {
	return &fnv1.Resource{Resource: resource.MustStructJSON(`{
	  "apiVersion": "database.ayatori.ddupan.top/v1alpha1", "kind": "XPostgreSQLTenant",
	  "metadata": {"name": "x", "uid": "` + uid + `", "creationTimestamp": "` + created + `"},
	  "spec": {"claimRef": {"namespace": "` + ns + `", "name": "` + name + `"}}}`)}
}

func TestRunFunctionExplicit(t *testing.T) {
	spec := `"databaseRef": {"name": "legacy"}`
	t.Run("AsksForTheDatabaseFirst", func(t *testing.T) {
		rsp, err := (&Function{}).RunFunction(context.Background(), runRequest(spec, nil))
		if err != nil {
			t.Fatal(err)
		}
		sel := rsp.GetRequirements().GetResources()[requiredDatabase]
		if sel.GetMatchName() != "legacy" || sel.GetNamespace() != "shop" || sel.GetKind() != "PostgreSQLDatabase" {
			t.Errorf("requirement %v", sel)
		}
		if len(rsp.GetDesired().GetResources()) != 0 || fatal(rsp) != "" {
			t.Errorf("composed before knowing the database: %v %s", desiredNames(rsp), fatal(rsp))
		}
	})
	t.Run("ComposesOnlyTheLoginRole", func(t *testing.T) {
		rsp, err := (&Function{}).RunFunction(context.Background(), runRequest(spec, map[string]*fnv1.Resources{
			requiredDatabase: registered("legacy_owner"), requiredTenants: {Items: []*fnv1.Resource{tenantXR("uid-new", "2026-11-29T10:00:00Z", "shop", "orders")}},
		}))
		if err != nil {
			t.Fatal(err)
		}
		if msg := fatal(rsp); msg != "" {
			t.Fatalf("fatal: %s", msg)
		}
		if diff := cmp.Diff([]string{LoginRole}, desiredNames(rsp)); diff != "" {
			t.Errorf("composed (-want +got):\n%s", diff)
		}
		if l, _, _ := unstructured.NestedStringMap(rsp.GetDesired().GetComposite().GetResource().AsMap(), "metadata", "labels"); l[LabelDatabaseRef] != "shop.legacy" {
			t.Errorf("composite labels %v", l)
		}
	})
	t.Run("RefusesADatabaseDeliveredToAnOlderTenant", func(t *testing.T) {
		rsp, err := (&Function{}).RunFunction(context.Background(), runRequest(spec, map[string]*fnv1.Resources{
			requiredDatabase: registered("legacy_owner"),
			requiredTenants: {Items: []*fnv1.Resource{
				tenantXR("uid-new", "2026-11-29T10:00:00Z", "shop", "orders"),
				tenantXR("uid-old", "2026-11-28T10:00:00Z", "shop", "billing"),
			}},
		}))
		if err != nil {
			t.Fatal(err)
		}
		if msg := fatal(rsp); !strings.Contains(msg, "already delivered to tenant shop/billing") {
			t.Errorf("fatal %q", msg)
		}
		if len(rsp.GetDesired().GetResources()) != 0 {
			t.Errorf("composed %v for a database delivered elsewhere", desiredNames(rsp))
		}
	})
	t.Run("WaitsForTheOwner", func(t *testing.T) {
		rsp, err := (&Function{}).RunFunction(context.Background(), runRequest(spec, map[string]*fnv1.Resources{requiredDatabase: registered("")}))
		if err != nil {
			t.Fatal(err)
		}
		if msg := fatal(rsp); !strings.Contains(msg, "waiting for PostgreSQLDatabase shop/legacy") {
			t.Errorf("fatal %q", msg)
		}
	})
	t.Run("MissingDatabase", func(t *testing.T) {
		rsp, err := (&Function{}).RunFunction(context.Background(), runRequest(spec, map[string]*fnv1.Resources{requiredDatabase: {}}))
		if err != nil {
			t.Fatal(err)
		}
		if msg := fatal(rsp); !strings.Contains(msg, "spec.databaseRef: PostgreSQLDatabase shop/legacy does not exist") {
			t.Errorf("fatal %q", msg)
		}
	})
}
