package pgctl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
	"github.com/ayatori/provider-postgresql/internal/pgctl"
)

const ns = "plugin"

var env *providertest.Env

// Drift is found within a poll: every 2 s here.
var suite = providertest.Suite(providertest.Options{PollInterval: 2 * time.Second, Instance: "main", Namespaces: []string{ns}},
	func(e *providertest.Env) { env = e })

func TestMain(m *testing.M) { os.Exit(suite.Run(m)) }

// run runs kubectl pg args in namespace ns (-A and -o as the plugin's
// flags) and returns what it printed.
func run(ctx context.Context, t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	c := &pgctl.CLI{Kube: env.Kube, Out: &out, Namespace: ns}
	var rest []string
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "-A":
			c.AllNamespaces = true
		case args[i] == "-o" && i+1 < len(args):
			c.Output = args[i+1]
			i++
		default:
			rest = append(rest, args[i])
		}
	}
	err := c.Run(ctx, rest)
	return out.String(), err
}

func must(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	out, err := run(ctx, t, args...)
	if err != nil {
		t.Fatalf("kubectl pg %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func connLimit(ctx context.Context, t *testing.T) int {
	t.Helper()
	var n int
	if err := env.Connect(ctx, t, "postgres").QueryRow(ctx, "SELECT rolconnlimit FROM pg_roles WHERE rolname = 'plugged'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPreviewPlanApply is the README's preview flow through the plugin,
// with the provider running: preview narrows the policies and sends
// nothing, plan shows the statement a change would send, apply gives the
// policies back and the provider sends exactly that; why and drift show
// what the provider found.
func TestPreviewPlanApply(t *testing.T) {
	suite.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := providertest.Role(ns, "main", "plugged")
	r.Spec.ForProvider.Login = ptr.To(false)
	r.Spec.ForProvider.ConnectionLimit = ptr.To[int32](3)
	env.Create(ctx, t, r)
	env.Ready(ctx, t, r, corev1.ConditionTrue, xpv2.ReasonAvailable)
	policies := r.Spec.ManagementPolicies

	if out := must(ctx, t, "preview", "role/plugged"); !strings.Contains(out, "previewing") {
		t.Errorf("preview says: %s", out)
	}
	if _, err := run(ctx, t, "preview", "pgrole/plugged"); err == nil || !strings.Contains(err.Error(), "in preview already") {
		t.Errorf("a second preview: %v, want it refused as in preview already", err)
	}
	providertest.Update(ctx, t, env, r, func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.ConnectionLimit = ptr.To[int32](7) })
	err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), r)
		return err == nil && r.Status.AtProvider.Plan != nil, err
	})
	if err != nil {
		t.Fatalf("no plan for the previewed change: %v", err)
	}
	table := must(ctx, t, "plan")
	if !strings.Contains(table, "PostgreSQLRole") || !strings.Contains(table, "plugged") || !strings.Contains(table, "when widened") {
		t.Errorf("the plan table does not list the previewed role:\n%s", table)
	}
	one := must(ctx, t, "plan", "role/plugged")
	if !strings.Contains(one, `ALTER ROLE "plugged"`) || !strings.Contains(one, "CONNECTION LIMIT 7") || !strings.Contains(one, "kubectl pg apply role/plugged") {
		t.Errorf("the role's plan does not show the statement and how to send it:\n%s", one)
	}
	var pending []pgctl.Pending
	if err := json.Unmarshal([]byte(must(ctx, t, "plan", "-o", "json")), &pending); err != nil || len(pending) != 1 || pending[0].Name != "plugged" || !pending[0].ObserveOnly {
		t.Errorf("plan -o json: %+v (%v), want the previewed role", pending, err)
	}
	if n := connLimit(ctx, t); n != 3 {
		t.Errorf("a preview sent its change: the connection limit is %d, want 3", n)
	}

	if out := must(ctx, t, "apply", "role/plugged"); !strings.Contains(out, "applying") {
		t.Errorf("apply says: %s", out)
	}
	if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), r); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(policies, r.Spec.ManagementPolicies); diff != "" {
		t.Errorf("apply did not give back the policies before the preview (-before +after):\n%s", diff)
	}
	if _, ok := r.GetAnnotations()[pgctl.AnnotationPreviewedFrom]; ok {
		t.Error("apply left the preview's annotation")
	}
	err = providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) { return connLimit(ctx, t) == 7, nil })
	if err != nil {
		t.Errorf("after apply the provider did not send the plan: %v", err)
	}
	if _, err := run(ctx, t, "apply", "role/plugged"); err == nil || !strings.Contains(err.Error(), "not in preview") {
		t.Errorf("apply without a preview: %v, want it refused", err)
	}

	why := must(ctx, t, "why", "role/plugged")
	for _, want := range []string{"PostgreSQLRole plugin/plugged", "Ready", "Available", "PLAN: nothing pending", "LAST EVENTS"} {
		if !strings.Contains(why, want) {
			t.Errorf("why does not show %q:\n%s", want, why)
		}
	}

	// A change by hand, once the provider holds the applied spec as what
	// the role should be: drift lists it.
	err = providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), r)
		b := r.Status.AtProvider.DriftBaseline
		return err == nil && b != nil && b.Generation == r.GetGeneration() && b.Fields["connectionLimit"] == "7", err
	})
	if err != nil {
		t.Fatalf("the provider never recorded the applied role as its baseline: %v", err)
	}
	env.AdminSQL(ctx, t, "postgres", `ALTER ROLE plugged CONNECTION LIMIT 9`)
	var drift string
	err = providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		drift, err = run(ctx, t, "drift")
		return err == nil && strings.Contains(drift, "plugged") && strings.Contains(drift, "connectionLimit: 7 -> 9"), err
	})
	if err != nil {
		t.Errorf("drift does not list the change made by hand: %v\n%s", err, drift)
	}
}

// TestRefusals: what the plugin refuses says why, and changes nothing.
func TestRefusals(t *testing.T) {
	suite.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	imp := providertest.Role(ns, "main", "postgres")
	imp.Name = "imported"
	imp.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
	env.Create(ctx, t, imp)
	for args, want := range map[string]string{
		"preview role/imported": "observed read-only already",
		"preview role":          "is not KIND/NAME",
		"preview table/x":       "is not a kind of provider-postgresql",
		"plan lock/x":           "cannot get Lock x",
		"frobnicate":            "unknown command",
		"trace role/x":          "takes tenant/NAME",
	} {
		if _, err := run(ctx, t, strings.Fields(args)...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("kubectl pg %s: %v, want an error saying %q", args, err, want)
		}
	}
	if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(imp), imp); err != nil || imp.GetAnnotations()[pgctl.AnnotationPreviewedFrom] != "" {
		t.Errorf("a refused preview changed the import: %v", imp.GetAnnotations())
	}

	// Someone widened the policies of a previewed resource by hand: apply
	// does not put back what the preview saved over their change.
	r := providertest.Role(ns, "main", "widened")
	r.Spec.ForProvider.Login = ptr.To(false)
	env.Create(ctx, t, r)
	must(ctx, t, "preview", "role/widened")
	providertest.Update(ctx, t, env, r, func(r *v1alpha1.PostgreSQLRole) {
		r.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
	})
	if _, err := run(ctx, t, "apply", "role/widened"); err == nil || !strings.Contains(err.Error(), "changed since its preview") {
		t.Errorf("apply after the policies changed by hand: %v, want it refused", err)
	}
	if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), r); err != nil || r.GetAnnotations()[pgctl.AnnotationPreviewedFrom] == "" {
		t.Errorf("a refused apply changed the role: %v", r.GetAnnotations())
	}
}

// TestPreviewOverAConcurrentWrite: the provider writes a resource while
// the plugin changes it. A real write lands between the plugin's read and
// its patch, which the API server refuses as a conflict: preview and
// apply read again and go through.
func TestPreviewOverAConcurrentWrite(t *testing.T) {
	suite.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := providertest.Role(ns, "main", "contended")
	r.Spec.ForProvider.Login = ptr.To(false)
	env.Create(ctx, t, r)
	direct, err := client.NewWithWatch(env.ControlPlane.Config, client.Options{Scheme: env.Kube.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	writes := 0
	racing := interceptor.NewClient(direct, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if writes < 2 {
				// Another writer, first: the patch's version is stale.
				writes++
				providertest.Update(ctx, t, env, r, func(r *v1alpha1.PostgreSQLRole) {
					meta.AddAnnotations(r, map[string]string{"example.com/writes": strconv.Itoa(writes)})
				})
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	for _, cmd := range []string{"preview", "apply"} {
		var out bytes.Buffer
		if err := (&pgctl.CLI{Kube: racing, Out: &out, Namespace: ns}).Run(ctx, []string{cmd, "role/contended"}); err != nil {
			t.Errorf("kubectl pg %s over a concurrent write: %v", cmd, err)
		}
	}
	if writes != 2 {
		t.Fatalf("%d concurrent writes made, want one before each command's first patch", writes)
	}
	if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(r), r); err != nil || r.GetAnnotations()[pgctl.AnnotationPreviewedFrom] != "" {
		t.Errorf("after preview and apply: %v, annotations %v", err, r.GetAnnotations())
	}
}
