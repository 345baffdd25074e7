package tenant

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

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

// observedBinding is the tenant's binding as Crossplane observed it.
func observedBinding(status string) map[string]*fnv1.Resource {
	return map[string]*fnv1.Resource{Binding: {Resource: resource.MustStructJSON(`{
	  "apiVersion": "database.ayatori.ddupan.top/v1alpha1", "kind": "PostgreSQLBinding",
	  "metadata": {"name": "orders", "namespace": "shop", "uid": "b-1"},
	  "spec": {"tenant": "orders", "databaseRef": {"name": "orders"}}, "status": ` + status + `}`)}}
}

// withLoginRole adds the tenant's login role, as Crossplane observed it,
// with status.
func withLoginRole(observed map[string]*fnv1.Resource, status string) map[string]*fnv1.Resource {
	observed[LoginRole] = &fnv1.Resource{Resource: resource.MustStructJSON(`{
	  "apiVersion": "database.ayatori.ddupan.top/v1alpha1", "kind": "PostgreSQLRole",
	  "metadata": {"name": "orders-login", "namespace": "shop", "uid": "r-1"},
	  "spec": {"instanceRef": {"name": "main"}, "forProvider": {"name": "orders"}}, "status": ` + status + `}`)}
	return observed
}

// provisioningPlan is a binding's plan: its owner role and database to
// create.
const provisioningPlan = `"plan": {"summary": "Create: 2 statements in 2 resources", "steps": [
    {"kind": "PostgreSQLRole", "name": "orders-owner", "plan": {"action": "Create", "statements": ["CREATE ROLE \"orders_owner\" NOLOGIN"], "summary": "Create: 1 statement"}},
    {"kind": "PostgreSQLDatabase", "name": "orders", "plan": {"action": "Create", "statements": ["CREATE DATABASE \"orders\" OWNER \"orders_owner\""], "summary": "Create: 1 statement"}}]}`

const boundStatus = `{"phase": "Bound", "conditions": [{"type": "Ready", "status": "True", "reason": "Bound", "message": "bound", "lastTransitionTime": "2026-11-29T10:00:00Z"}],
  "database": {"name": "orders", "uid": "d-1", "instance": "main", "database": "orders", "owner": "orders_owner"}}`

func runRequest(spec string, observed map[string]*fnv1.Resource) *fnv1.RunFunctionRequest {
	return &fnv1.RunFunctionRequest{
		Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: resource.MustStructJSON(strings.Replace(claimXR, "%s", spec, 1))}, Resources: observed},
	}
}

func run(t *testing.T, req *fnv1.RunFunctionRequest) *fnv1.RunFunctionResponse {
	t.Helper()
	rsp, err := (&Function{}).RunFunction(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rsp.GetResults() {
		if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
			t.Fatalf("fatal: %s", r.GetMessage())
		}
	}
	return rsp
}

func desiredNames(rsp *fnv1.RunFunctionResponse) []string {
	var out []string
	for n := range rsp.GetDesired().GetResources() {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func boundCondition(t *testing.T, rsp *fnv1.RunFunctionResponse) *fnv1.Condition {
	t.Helper()
	for _, c := range rsp.GetConditions() {
		if c.GetType() == ConditionDatabaseBound {
			if c.GetTarget() != fnv1.Target_TARGET_COMPOSITE_AND_CLAIM {
				t.Errorf("condition target %v, want the claim too", c.GetTarget())
			}
			return c
		}
	}
	t.Fatalf("no %s condition in %v", ConditionDatabaseBound, rsp.GetConditions())
	return nil
}

func TestRunFunction(t *testing.T) {
	dynamic := `"instanceRef": {"name": "main"}, "extensions": ["pgcrypto"]`
	cases := map[string]struct {
		reason   string
		spec     string
		observed map[string]*fnv1.Resource
		composed []string
		status   map[string]any
		cond     fnv1.Status
		condWhy  string
	}{
		"FirstRunComposesOnlyTheBinding": {
			reason: "Nothing but the request is composed before the binding exists.", spec: dynamic,
			composed: []string{Binding}, status: map[string]any{}, cond: fnv1.Status_STATUS_CONDITION_FALSE, condWhy: "Provisioning",
		},
		"HeldByAnotherTenant": {
			reason: "A binding that is not Bound gets no login role, no Secret, and its reason on the claim.", spec: dynamic,
			observed: observedBinding(`{"phase": "Pending", "conditions": [{"type": "Ready", "status": "False", "reason": "BoundToAnotherTenant", "message": "bound to shop/billing", "lastTransitionTime": "2026-11-29T10:00:00Z"}]}`),
			composed: []string{Binding}, status: map[string]any{}, cond: fnv1.Status_STATUS_CONDITION_FALSE, condWhy: "BoundToAnotherTenant",
		},
		"BoundDeliversAccess": {
			reason: "Once Bound, the login role is composed for the bound database and its owner.", spec: dynamic,
			observed: observedBinding(boundStatus),
			composed: []string{Binding, LoginRole},
			status:   map[string]any{"instance": "main", "database": "orders", "loginRole": "orders", "secretName": "main-orders-postgresql", "delivery": "Secret", "databaseRef": map[string]any{"name": "orders", "uid": "d-1"}},
			cond:     fnv1.Status_STATUS_CONDITION_TRUE, condWhy: "Bound",
		},
		"ExplicitBound": {
			reason: "The explicit path delivers the same way, once Bound.", spec: `"databaseRef": {"name": "orders"}`,
			observed: observedBinding(boundStatus),
			composed: []string{Binding, LoginRole},
			status:   map[string]any{"instance": "main", "database": "orders", "loginRole": "orders", "secretName": "main-orders-postgresql", "delivery": "Secret", "databaseRef": map[string]any{"name": "orders", "uid": "d-1"}},
			cond:     fnv1.Status_STATUS_CONDITION_TRUE, condWhy: "Bound",
		},
		"ProvisioningPlanOnTheClaim": {
			reason: "What the binding's provisioning has pending shows on the claim, in order, before anything is bound.", spec: dynamic,
			observed: observedBinding(`{"phase": "Pending", "conditions": [{"type": "Ready", "status": "False", "reason": "Provisioning", "message": "not yet", "lastTransitionTime": "2026-11-29T10:00:00Z"}], ` + provisioningPlan + `}`),
			composed: []string{Binding},
			status: map[string]any{"plan": map[string]any{"summary": "Create: 2 statements in 2 resources", "steps": []any{
				map[string]any{"kind": "PostgreSQLRole", "name": "orders-owner", "plan": map[string]any{"action": "Create", "statements": []any{`CREATE ROLE "orders_owner" NOLOGIN`}, "summary": "Create: 1 statement"}},
				map[string]any{"kind": "PostgreSQLDatabase", "name": "orders", "plan": map[string]any{"action": "Create", "statements": []any{`CREATE DATABASE "orders" OWNER "orders_owner"`}, "summary": "Create: 1 statement"}},
			}}},
			cond: fnv1.Status_STATUS_CONDITION_FALSE, condWhy: "Provisioning",
		},
		"LoginRolePlanOnTheClaim": {
			reason: "Once bound, the login role's pending plan shows on the claim.", spec: dynamic,
			observed: withLoginRole(observedBinding(boundStatus), `{"atProvider": {"plan": {"action": "Update", "statements": ["ALTER ROLE \"orders\" PASSWORD '<redacted>'"], "summary": "Update: 1 statement"}}}`),
			composed: []string{Binding, LoginRole},
			status: map[string]any{"instance": "main", "database": "orders", "loginRole": "orders", "secretName": "main-orders-postgresql", "delivery": "Secret", "databaseRef": map[string]any{"name": "orders", "uid": "d-1"}, "plan": map[string]any{
				"summary": "Update: 1 statement in 1 resource", "steps": []any{
					map[string]any{"kind": "PostgreSQLRole", "name": "orders-login", "plan": map[string]any{"action": "Update", "statements": []any{`ALTER ROLE "orders" PASSWORD '<redacted>'`}, "summary": "Update: 1 statement"}},
				}}},
			cond: fnv1.Status_STATUS_CONDITION_TRUE, condWhy: "Bound",
		},
		"UpToDateLoginRoleNoPlan": {
			reason: "A login role with nothing pending adds no plan.", spec: dynamic,
			observed: withLoginRole(observedBinding(boundStatus), `{"atProvider": {"name": "orders"}}`),
			composed: []string{Binding, LoginRole},
			status:   map[string]any{"instance": "main", "database": "orders", "loginRole": "orders", "secretName": "main-orders-postgresql", "delivery": "Secret", "databaseRef": map[string]any{"name": "orders", "uid": "d-1"}},
			cond:     fnv1.Status_STATUS_CONDITION_TRUE, condWhy: "Bound",
		},
		"PhaseWithoutReadyIsNotBound": {
			reason: "A phase alone never proves the binding: the Ready condition must say so too.", spec: dynamic,
			observed: observedBinding(`{"phase": "Bound", "database": {"name": "orders", "uid": "d-1", "instance": "main", "database": "orders", "owner": "orders_owner"}}`),
			composed: []string{Binding}, status: map[string]any{}, cond: fnv1.Status_STATUS_CONDITION_FALSE, condWhy: "Provisioning",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rsp := run(t, runRequest(tc.spec, tc.observed))
			if diff := cmp.Diff(tc.composed, desiredNames(rsp)); diff != "" {
				t.Errorf("%s\ncomposed (-want +got):\n%s", tc.reason, diff)
			}
			st := rsp.GetDesired().GetComposite().GetResource().GetFields()["status"].GetStructValue().AsMap()
			if diff := cmp.Diff(tc.status, st); diff != "" {
				t.Errorf("%s\ncomposite status (-want +got):\n%s", tc.reason, diff)
			}
			c := boundCondition(t, rsp)
			if c.GetStatus() != tc.cond || c.GetReason() != tc.condWhy {
				t.Errorf("%s\ncondition %v %s, want %v %s", tc.reason, c.GetStatus(), c.GetReason(), tc.cond, tc.condWhy)
			}
			b := rsp.GetDesired().GetResources()[Binding].GetResource().AsMap()
			if b["kind"] != "PostgreSQLBinding" || b["apiVersion"] != "database.ayatori.ddupan.top/v1alpha1" {
				t.Errorf("binding resource %v", b)
			}
			if _, ok := b["status"]; ok {
				t.Error("a composed resource carries a status")
			}
		})
	}
}

func TestRunFunctionInput(t *testing.T) {
	req := runRequest(`"instanceRef": {"name": "main"}`, nil)
	req.Input = resource.MustStructJSON(`{"apiVersion": "tenant.fn.database.ayatori.ddupan.top/v1alpha1", "kind": "Input", "deleteData": true}`)
	rsp := run(t, req)
	pol, _, _ := unstructured.NestedSlice(rsp.GetDesired().GetResources()[Binding].GetResource().AsMap(), "spec", "provision", "managementPolicies")
	if diff := cmp.Diff([]any{"*"}, pol); diff != "" {
		t.Errorf("deleteData: provisioned database policies (-want +got):\n%s", diff)
	}
}

// TestRunFunctionRefusesABadInput: an input the function cannot read whole
// fails the step with a message naming what is wrong, instead of composing
// with defaults in place of what the platform meant.
func TestRunFunctionRefusesABadInput(t *testing.T) {
	for name, tc := range map[string]struct{ input, want string }{
		"MisspeltField": {`{"apiVersion": "tenant.fn.database.ayatori.ddupan.top/v1alpha1", "kind": "Input", "deleteDta": true}`, `unknown field "deleteDta"`},
		"WrongKind":     {`{"apiVersion": "tenant.fn.database.ayatori.ddupan.top/v1alpha1", "kind": "Inputs"}`, "want apiVersion tenant.fn.database.ayatori.ddupan.top/v1alpha1, kind Input"},
		"WrongType":     {`{"apiVersion": "tenant.fn.database.ayatori.ddupan.top/v1alpha1", "kind": "Input", "deleteData": "yes"}`, "Input.deleteData"},
	} {
		t.Run(name, func(t *testing.T) {
			req := runRequest(`"instanceRef": {"name": "main"}`, nil)
			req.Input = resource.MustStructJSON(tc.input)
			rsp, err := (&Function{}).RunFunction(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			var msgs []string
			for _, r := range rsp.GetResults() {
				if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
					msgs = append(msgs, r.GetMessage())
				}
			}
			if len(msgs) != 1 || !strings.Contains(msgs[0], tc.want) {
				t.Errorf("fatal results %q, want one saying %q", msgs, tc.want)
			}
			if n := len(rsp.GetDesired().GetResources()); n != 0 {
				t.Errorf("%d resources composed from a bad input", n)
			}
		})
	}
}

// TestRunFunctionMovesToTheVault: on an Instance that gained a
// credentialVault, a claim whose login role writes a Secret keeps that
// Secret and the vault's delivery beside it, is composed again when the
// grace period ends (not a minute later), and once the grace period is
// over and the observed ExternalSecret reports Ready, the login role no
// longer writes the Secret and the ExternalSecret takes it over.
func TestRunFunctionMovesToTheVault(t *testing.T) {
	bound := strings.Replace(boundStatus, `"owner": "orders_owner"`, `"owner": "orders_owner", "credentialVault": true`, 1)
	observed := func(since time.Time, esReady string) map[string]*fnv1.Resource {
		o := observedBinding(bound)
		o[LoginRole] = &fnv1.Resource{Resource: resource.MustStructJSON(`{
		  "apiVersion": "database.ayatori.ddupan.top/v1alpha1", "kind": "PostgreSQLRole",
		  "metadata": {"name": "orders-login", "namespace": "shop", "uid": "r-1"},
		  "spec": {"instanceRef": {"name": "main"}, "writeConnectionSecretToRef": {"name": "main-orders-postgresql"}, "writeConnectionDetailsToVault": {"name": "orders"}},
		  "status": {"atProvider": {"vault": {"path": "postgresql/main/shop/orders", "url": "https://openbao:8200/v1/secret/data/postgresql/main/shop/orders", "since": "` + since.UTC().Format(time.RFC3339) + `"}}}}`)}
		o[Credentials] = &fnv1.Resource{Resource: resource.MustStructJSON(`{
		  "apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret", "metadata": {"name": "main-orders-postgresql", "namespace": "shop"},
		  "status": {"conditions": [{"type": "Ready", "status": "` + esReady + `", "reason": "SecretSynced", "lastTransitionTime": "2026-11-29T10:00:00Z"}]}}`)}
		return o
	}
	input := resource.MustStructJSON(`{"apiVersion": "tenant.fn.database.ayatori.ddupan.top/v1alpha1", "kind": "Input", "openBao": {"secretGracePeriod": "30s"}}`)
	delivery := func(rsp *fnv1.RunFunctionResponse) (toSecret bool, policy string, st map[string]any) {
		r := rsp.GetDesired().GetResources()[LoginRole].GetResource().AsMap()
		_, toSecret, _ = unstructured.NestedMap(r, "spec", "writeConnectionSecretToRef")
		es := rsp.GetDesired().GetResources()[Credentials].GetResource().AsMap()
		policy, _, _ = unstructured.NestedString(es, "spec", "target", "creationPolicy")
		return toSecret, policy, rsp.GetDesired().GetComposite().GetResource().GetFields()["status"].GetStructValue().AsMap()
	}

	req := runRequest(`"instanceRef": {"name": "main"}`, observed(time.Now().Add(-10*time.Second), "True"))
	req.Input = input
	rsp := run(t, req)
	toSecret, policy, st := delivery(rsp)
	if !toSecret || policy != "Merge" || st["delivery"] != string(DeliveryMoving) || st["secretDeliveryEnds"] == nil {
		t.Errorf("within the grace period: Secret %t, ExternalSecret %q, status %v; want the Secret kept, a merging ExternalSecret and the move shown", toSecret, policy, st)
	}
	if ttl := rsp.GetMeta().GetTtl().AsDuration(); ttl <= 0 || ttl > 20*time.Second {
		t.Errorf("composed again after %s, want at the grace period's end, within 20s", ttl)
	}

	req = runRequest(`"instanceRef": {"name": "main"}`, observed(time.Now().Add(-time.Minute), "False"))
	req.Input = input
	if toSecret, policy, _ := delivery(run(t, req)); !toSecret || policy != "Merge" {
		t.Errorf("grace period over, ExternalSecret not synced: Secret %t, ExternalSecret %q; want the Secret kept", toSecret, policy)
	}

	req = runRequest(`"instanceRef": {"name": "main"}`, observed(time.Now().Add(-time.Minute), "True"))
	req.Input = input
	toSecret, policy, st = delivery(run(t, req))
	if toSecret || policy != "Owner" || st["delivery"] != string(DeliveryOpenBao) || st["secretDeliveryEnds"] != nil {
		t.Errorf("grace period over, ExternalSecret synced: Secret %t, ExternalSecret %q, status %v; want the ExternalSecret owning the Secret", toSecret, policy, st)
	}
}

// TestSpecOf: what a claim's composite (or a namespaced Tenant) asks for
// is read from its spec, the tenant's choice of login included.
func TestSpecOf(t *testing.T) {
	cases := map[string]struct {
		xr   map[string]any
		want Spec
	}{
		"Claim": {
			xr: map[string]any{"spec": map[string]any{
				"instanceRef": map[string]any{"name": "main"}, "loginRole": "app", "rotateCredentials": "r1", "authentication": "Certificate",
				"claimRef": map[string]any{"namespace": "shop", "name": "orders"},
			}},
			want: Spec{InstanceRef: "main", LoginRole: "app", RotateCredentials: "r1", Authentication: "Certificate", ClaimNamespace: "shop", ClaimName: "orders"},
		},
		"NamespacedTenant": {
			xr: map[string]any{
				"metadata": map[string]any{"namespace": "shop", "name": "orders"},
				"spec":     map[string]any{"databaseRef": map[string]any{"name": "legacy"}},
			},
			want: Spec{DatabaseRef: "legacy", ClaimNamespace: "shop", ClaimName: "orders"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := specOf(tc.xr)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("specOf (-want +got):\n%s", diff)
			}
		})
	}
}
