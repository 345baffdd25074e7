package changelog_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/apis/changelogs/proto/v1alpha1"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	database "github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/fixture/changelogsink"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

const ns = "changes"

var (
	changes *changelogsink.Sink
	// socket is where the sink listens.
	socket = changelogsink.Path("pgprov-changelog")
	env    *providertest.Env
	main   *database.PostgreSQLInstance
)

var suite = providertest.Suite(providertest.Options{
	PollInterval: 2 * time.Second, Instance: "main", Namespaces: []string{ns}, ChangeLogSocket: socket,
}, func(e *providertest.Env) { env, main = e, e.Main })

// TestMain serves the sink before any test starts the provider: the
// provider's gRPC client connects on its first entry, which may be the
// Instance's.
func TestMain(m *testing.M) {
	os.Exit(changelogsink.Around(socket, func(s *changelogsink.Sink) { changes = s }, func() int { return suite.Run(m) }))
}

// TestEveryChangeIsLoggedOnce: with change logs on, each create, update
// (a changed attribute, a password rotation) and delete the provider makes
// on the server is one entry of the right operation, naming the resource
// and the object on the server; nothing is logged while nothing changes;
// and no entry carries a password, the generated one, the one before a
// rotation, or the admin's.
func TestEveryChangeIsLoggedOnce(t *testing.T) {
	suite.Server(t)
	ctx := context.Background()
	r := &database.PostgreSQLRole{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ledger-login"},
		Spec: database.PostgreSQLRoleSpec{
			ManagementPolicies:               xpv2.ManagementPolicies{xpv2.ManagementActionAll},
			InstanceRef:                      database.InstanceReference{Name: main.Name},
			WriteConnectionSecretToReference: &xpv2.LocalSecretReference{Name: "ledger-login"},
			ForProvider:                      database.PostgreSQLRoleParameters{Name: ptr.To("ledger"), Login: ptr.To(true)},
		},
	}
	db := &database.PostgreSQLDatabase{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ledger"},
		Spec: database.PostgreSQLDatabaseSpec{
			ManagementPolicies: xpv2.ManagementPolicies{xpv2.ManagementActionAll},
			InstanceRef:        database.InstanceReference{Name: main.Name},
		},
	}
	const role, dbKind = "PostgreSQLRole", "PostgreSQLDatabase"
	// ops waits up to 30 s for kind/name's entries to be want, then
	// checks that no other follows within two polls.
	ops := func(t *testing.T, kind, name string, want ...v1alpha1.OperationType) {
		t.Helper()
		got := func() []v1alpha1.OperationType {
			var out []v1alpha1.OperationType
			for _, e := range changes.Of(kind, name) {
				out = append(out, e.GetOperation())
			}
			return out
		}
		err := providertest.Wait(ctx, 30*time.Second, func(context.Context) (bool, error) { return len(got()) >= len(want), nil })
		if err != nil {
			t.Fatalf("%s %s: change log entries %v, want %v", kind, name, got(), want)
		}
		time.Sleep(3 * time.Second) // A poll and more: nothing changes, nothing is logged.
		if g := got(); fmt.Sprint(g) != fmt.Sprint(want) {
			t.Fatalf("%s %s: change log entries %v, want %v", kind, name, g, want)
		}
	}
	password := func() string {
		t.Helper()
		d, err := env.ConnectionSecret(ctx, ns, "ledger-login")
		if err != nil {
			t.Fatal(err)
		}
		return string(d["password"])
	}

	env.Create(ctx, t, r, db)
	env.Ready(ctx, t, r, corev1.ConditionTrue, xpv2.ReasonAvailable)
	env.Ready(ctx, t, db, corev1.ConditionTrue, xpv2.ReasonAvailable)
	create, update, remove := v1alpha1.OperationType_OPERATION_TYPE_CREATE, v1alpha1.OperationType_OPERATION_TYPE_UPDATE, v1alpha1.OperationType_OPERATION_TYPE_DELETE
	ops(t, role, r.Name, create)
	ops(t, dbKind, db.Name, create)
	passwords := []string{password()}

	// An attribute changed in the spec.
	providertest.Update(ctx, t, env, r, func(r *database.PostgreSQLRole) { r.Spec.ForProvider.ConnectionLimit = ptr.To[int32](7) })
	if err := providertest.Wait(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		return env.Holds(ctx, t, "EXISTS (SELECT FROM pg_roles WHERE rolname = 'ledger' AND rolconnlimit = 7)"), nil
	}); err != nil {
		t.Fatalf("the connection limit was not applied: %v", err)
	}
	ops(t, role, r.Name, create, update)

	// A rotation: a new password on the server and in the Secret.
	providertest.Update(ctx, t, env, r, func(r *database.PostgreSQLRole) {
		meta.AddAnnotations(r, map[string]string{database.AnnotationRotatePassword: "1"})
	})
	if err := providertest.Wait(ctx, 30*time.Second, func(context.Context) (bool, error) { return password() != passwords[0], nil }); err != nil {
		t.Fatalf("the password was not rotated: %v", err)
	}
	passwords = append(passwords, password())
	ops(t, role, r.Name, create, update, update)

	for _, o := range []client.Object{r, db} {
		if err := env.Kube.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
		env.Gone(ctx, t, o)
	}
	ops(t, role, r.Name, create, update, update, remove)
	ops(t, dbKind, db.Name, create, remove)

	t.Run("Entries", func(t *testing.T) {
		for _, e := range append(changes.Of(role, r.Name), changes.Of(dbKind, db.Name)...) {
			want := map[string]string{"ledger-login": "ledger", "ledger": "ledger"}[e.GetName()]
			if e.GetExternalName() != want || e.GetProvider() != "provider-postgresql:test" || e.GetApiVersion() != database.SchemeGroupVersion.String() ||
				e.GetErrorMessage() != "" || e.GetSnapshot().GetFields()["spec"] == nil {
				t.Errorf("entry %s %s %s: external name %q, provider %q, apiVersion %q, error %q, snapshot with spec %t",
					e.GetOperation(), e.GetKind(), e.GetName(), e.GetExternalName(), e.GetProvider(), e.GetApiVersion(), e.GetErrorMessage(), e.GetSnapshot().GetFields()["spec"] != nil)
			}
		}
	})

	t.Run("NoSecrets", func(t *testing.T) {
		secrets := append(passwords, env.Postgres.AdminPassword)
		for _, e := range changes.All() {
			text, err := protojson.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range secrets {
				if len(p) < 8 {
					t.Fatalf("secret %d has %d characters: too short to look for", i, len(p))
				}
				if strings.Contains(string(text), p) {
					t.Errorf("the %s entry of %s %s carries secret %d", e.GetOperation(), e.GetKind(), e.GetName(), i)
				}
			}
		}
	})
}
