package role_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
	"github.com/ayatori/provider-postgresql/internal/fixture/tier"
)

// TestPlanIsTheTruth: a change applied with managementPolicies [Observe]
// shows its plan and sends nothing; widened, the provider sends the plan,
// statement for statement, passwords redacted on both sides.
func TestPlanIsTheTruth(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	env.AdminSQL(ctx, t, "postgres", "CREATE ROLE readers_p NOLOGIN")
	cases := map[string]providertest.PlanCase[*v1alpha1.PostgreSQLRole]{
		"Create": {
			Change: func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.ConnectionLimit = ptr.To[int32](3) },
			Says:   []string{"CREATE ROLE", "CONNECTION LIMIT 3"},
		},
		"CreateLogin": {
			Change: func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.Login = ptr.To(true) },
			Says:   []string{"CREATE ROLE", "LOGIN", "PASSWORD '<redacted>'"},
		},
		"Attributes": {
			Existing: func(r *v1alpha1.PostgreSQLRole) {},
			Change: func(r *v1alpha1.PostgreSQLRole) {
				r.Spec.ForProvider.ConnectionLimit = ptr.To[int32](4)
				r.Spec.ForProvider.CreateDB = ptr.To(true)
			},
			Says: []string{"CREATEDB", "CONNECTION LIMIT 4"},
		},
		"LoginAttributes": {
			// A login whose password is as its Secret holds: widened, the
			// change sends the connection limit and leaves the password.
			Existing: func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.Login = ptr.To(true) },
			Change:   func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.ConnectionLimit = ptr.To[int32](5) },
			Says:     []string{"CONNECTION LIMIT 5"},
			Lacks:    []string{"PASSWORD"},
		},
		"AlternatingRotation": {
			// The rotation's next step: the login the Secret does not
			// use gets a new password and takes over.
			Existing: func(r *v1alpha1.PostgreSQLRole) {
				r.Spec.ForProvider.Login = ptr.To(true)
				r.Spec.PasswordRotation = &v1alpha1.PasswordRotation{Mode: v1alpha1.RotationAlternating, GracePeriod: &metav1.Duration{Duration: time.Hour}}
			},
			Change: func(r *v1alpha1.PostgreSQLRole) {
				r.SetAnnotations(map[string]string{v1alpha1.AnnotationRotatePassword: "preview"})
			},
			Says: []string{`"rp_alternatingrotation_b"`, "PASSWORD '<redacted>'"},
		},
		"Membership": {
			Existing: func(r *v1alpha1.PostgreSQLRole) {},
			Change:   func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.MemberOf = []string{"readers_p"} },
			Says:     []string{`GRANT "readers_p" TO`},
		},
	}
	if !tier.ManagedAdmin() {
		// A managed-service admin cannot read the stored verifier: a
		// password checked once is remembered, and one changed by hand
		// shows at the next rotation, not here.
		cases["LoginPasswordChangedByHand"] = providertest.PlanCase[*v1alpha1.PostgreSQLRole]{
			// Someone changed the password on the server meanwhile: the
			// plan sets the delivered one again (and its summary says why).
			Existing: func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.Login = ptr.To(true) },
			Change: func(r *v1alpha1.PostgreSQLRole) {
				env.AdminSQL(ctx, t, "postgres", `ALTER ROLE "rp_loginpasswordchangedbyhand" PASSWORD 'changed-by-hand'`)
				r.Spec.ForProvider.ConnectionLimit = ptr.To[int32](6)
			},
			Says: []string{"CONNECTION LIMIT 6", "PASSWORD '<redacted>'"},
		}
	}
	providertest.PlanCases(ctx, t, env, cases, planRole(""))
}

// planRole names each plan case's role after the case: a role rp_<case>,
// not a login, on the Instance instance ("" for the suite's own).
func planRole(instance string) func(name string) (*v1alpha1.PostgreSQLRole, string) {
	return func(name string) (*v1alpha1.PostgreSQLRole, string) {
		role := "rp_" + strings.ToLower(name)
		return newRole(strings.ReplaceAll(role, "_", "-"), func(r *v1alpha1.PostgreSQLRole) {
			if instance != "" {
				r.Spec.InstanceRef.Name = instance
			}
			r.Spec.ForProvider.Name = ptr.To(role)
			r.Spec.ForProvider.Login = ptr.To(false)
		}), role
	}
}

// TestDeletePlanIsTheTruth: a role whose drop is refused while it owns a
// table (ownedObjectsOnDelete Refuse) shows the drop it retries, and
// sends exactly that once the table is gone.
func TestDeletePlanIsTheTruth(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	r := newRole("rp-drop", func(r *v1alpha1.PostgreSQLRole) {
		r.Spec.ForProvider.Name = ptr.To("rp_drop")
		r.Spec.ForProvider.Login = ptr.To(false)
		r.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
	})
	env.CreateForTest(ctx, t, r)
	env.Ready(ctx, t, r, corev1.ConditionTrue, xpv2.ReasonAvailable)
	env.AdminSQL(ctx, t, "postgres", "CREATE TABLE rp_drop_kept (id int); ALTER TABLE rp_drop_kept OWNER TO rp_drop")
	plan := env.DeletePlanIsTheTruth(ctx, t, r, func() { env.AdminSQL(ctx, t, "postgres", "DROP TABLE rp_drop_kept") }, `"rp_drop"`)
	if diff := cmp.Diff([]string{`DROP ROLE IF EXISTS "rp_drop"`}, plan); diff != "" {
		t.Errorf("the drop's plan (-want +got):\n%s", diff)
	}
}

// TestReassignPlanIsTheTruth: a role deleted with ownedObjectsOnDelete
// Reassign to an heir the Instance's policy no longer shares shows the
// hand-over it will send; once the policy shares the heir again, the
// provider sends exactly that.
func TestReassignPlanIsTheTruth(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	env.AdminSQL(ctx, t, "postgres", "CREATE ROLE rp_heir2 NOLOGIN")
	in := main.DeepCopy()
	share := func(share bool) func(*v1alpha1.PostgreSQLInstance) {
		return func(in *v1alpha1.PostgreSQLInstance) {
			p := &in.Spec.Policy
			p.AllowMembershipOf = slices.DeleteFunc(p.AllowMembershipOf, func(s string) bool { return s == "rp_heir2" })
			if share {
				p.AllowMembershipOf = append(p.AllowMembershipOf, "rp_heir2")
			}
		}
	}
	providertest.Update(ctx, t, env, in, share(true))
	t.Cleanup(func() { providertest.Update(context.WithoutCancel(ctx), t, env, in, share(false)) })
	r := newRole("rp-bequeath", func(r *v1alpha1.PostgreSQLRole) {
		r.Spec.ForProvider.Name = ptr.To("rp_bequeath")
		r.Spec.ForProvider.Login = ptr.To(false)
		r.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
		r.Spec.OwnedObjectsOnDelete = v1alpha1.OwnedObjectsReassign
		r.Spec.ReassignOwnedTo = "rp_heir2"
	})
	env.CreateForTest(ctx, t, r)
	env.Ready(ctx, t, r, corev1.ConditionTrue, xpv2.ReasonAvailable)
	env.AdminSQL(ctx, t, "postgres", "CREATE TABLE rp_bequeathed (id int); ALTER TABLE rp_bequeathed OWNER TO rp_bequeath")
	providertest.Update(ctx, t, env, in, share(false))
	plan := env.DeletePlanIsTheTruth(ctx, t, r, func() { providertest.Update(ctx, t, env, in, share(true)) }, `"rp_bequeath"`)
	want := []string{`REASSIGN OWNED BY "rp_bequeath" TO "rp_heir2"`, `DROP OWNED BY "rp_bequeath"`, `DROP ROLE IF EXISTS "rp_bequeath"`}
	if diff := cmp.Diff(want, plan); diff != "" {
		t.Errorf("the hand-over's plan (-want +got):\n%s", diff)
	}
	var owner string
	if err := env.Connect(ctx, t, "postgres").QueryRow(ctx, "SELECT tableowner FROM pg_tables WHERE tablename = 'rp_bequeathed'").Scan(&owner); err != nil || owner != "rp_heir2" {
		t.Errorf("the table's owner is %q (%v), want the heir", owner, err)
	}
}

// TestPreviewKeepsTheCredentials: a platform team previews a change to a
// login role its applications use, with managementPolicies [Observe].
// While it reads the plan, the applications' credentials stay in their
// Secret, untouched, for an in-place role and an alternating one; widening
// the policies again changes nothing the preview did not plan.
func TestPreviewKeepsTheCredentials(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	for _, mode := range []v1alpha1.RotationMode{v1alpha1.RotationInPlace, v1alpha1.RotationAlternating} {
		t.Run(string(mode), func(t *testing.T) {
			name := "rp-keep-" + strings.ToLower(string(mode))
			r := newRole(name, func(r *v1alpha1.PostgreSQLRole) {
				r.Spec.ForProvider.Name = ptr.To(strings.ReplaceAll(name, "-", "_"))
				r.Spec.PasswordRotation = &v1alpha1.PasswordRotation{Mode: mode}
			})
			env.CreateForTest(ctx, t, r)
			env.Ready(ctx, t, r, corev1.ConditionTrue, xpv2.ReasonAvailable)
			user := r.RoleName()
			if mode == v1alpha1.RotationAlternating {
				user += "_a"
			}
			before := waitSecretUser(ctx, t, r.Spec.WriteConnectionSecretToReference.Name, user)

			base := r.DeepCopy()
			r.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
			r.Spec.ForProvider.ConnectionLimit = ptr.To[int32](7)
			if err := env.Kube.Patch(ctx, r, client.MergeFrom(base)); err != nil {
				t.Fatal(err)
			}
			if plan := strings.Join(env.WaitPlan(ctx, t, r, v1alpha1.PlanUpdate), "\n"); !strings.Contains(plan, "CONNECTION LIMIT 7") {
				t.Errorf("the preview's plan does not say what would change:\n%s", plan)
			}
			if m := r.GetCondition(xpv2.TypeReady).Message; !strings.Contains(m, "created by this resource: the credentials it delivered stay as they are") {
				t.Errorf("the read-only condition does not say the credentials are kept: %q", m)
			}
			// A few observations read-only: the Secret is as it was.
			time.Sleep(3 * time.Second)
			s := &corev1.Secret{}
			if err := env.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: r.Spec.WriteConnectionSecretToReference.Name}, s); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"username", "password"} {
				if string(s.Data[k]) != string(before[k]) {
					t.Errorf("the preview changed the Secret's %s (now %d bytes, was %d)", k, len(s.Data[k]), len(before[k]))
				}
			}
		})
	}
}
