package boundary_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/manager"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
)

// secrets are what namespace victims holds on the server that no other
// namespace may learn: its database's and schema's comments and owner,
// which of its roles holds what, that its table exists, its role's
// settings, and who it is.
var secrets = []string{"xa-db-comment-secret", "xa-schema-comment-secret", "xa_owner", "xa_reader", "ledger", "4242s", "victims", "xa-db"}

// leaks returns, of the secrets, those text holds that xb did not write
// itself (in spec, or as a name).
func leaks(text, written string) []string {
	var out []string
	for _, secret := range secrets {
		if !strings.Contains(written, secret) && strings.Contains(text, secret) {
			out = append(out, secret)
		}
	}
	return out
}

// TestNothingCrossesNamespaces: namespace victims keeps a database closed
// to PUBLIC, with a schema, a table only its reader may read, default
// privileges and a role setting. A namespace editor in xb creates, of
// every kind a namespace may create on an Instance (read from the scheme,
// so that a new kind needs a case here), a read-only import and a managed
// resource naming victims' database, schema, table and roles. Each is
// refused, says why, and nothing of victims' (owner, comments, privileges,
// the table's existence, settings, its namespace) appears in the status,
// the events or the change log entries of xb's resources, or in a label of
// the provider's metrics, beyond the names xb itself wrote.
func TestNothingCrossesNamespaces(t *testing.T) {
	suite.Matrix(t)
	ctx := context.Background()
	const a, b = "victims", "xb"
	if err := env.Namespace(ctx, b); err != nil && !kerrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	in := v1alpha1.InstanceReference{Name: env.Main.Name}
	local := func(name string) *v1alpha1.LocalReference { return &v1alpha1.LocalReference{Name: name} }

	// Victims' side.
	owner := providertest.Role(a, in.Name, "xa_owner")
	owner.Spec.ForProvider.ConfigurationParameters = []v1alpha1.ConfigurationParameter{{Name: "statement_timeout", Value: "4242s"}}
	reader := providertest.Role(a, in.Name, "xa_reader")
	db := &v1alpha1.PostgreSQLDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: a, Name: "xa-db"}, Spec: v1alpha1.PostgreSQLDatabaseSpec{InstanceRef: in,
		ForProvider: v1alpha1.PostgreSQLDatabaseParameters{Name: ptr.To("xa_db"), OwnerRef: local(owner.Name), Comment: ptr.To("xa-db-comment-secret"), RevokePublicPrivileges: true}}}
	schema := &v1alpha1.PostgreSQLSchema{ObjectMeta: metav1.ObjectMeta{Namespace: a, Name: "xa-app"}, Spec: v1alpha1.PostgreSQLSchemaSpec{InstanceRef: in,
		ForProvider: v1alpha1.PostgreSQLSchemaParameters{Name: ptr.To("xa_app"), DatabaseRef: local(db.Name), OwnerRef: local(owner.Name), Comment: ptr.To("xa-schema-comment-secret")}}}
	env.Create(ctx, t, schema, db, reader, owner)
	env.Ready(ctx, t, schema, corev1.ConditionTrue, xpv2.ReasonAvailable)
	env.SQL(ctx, t, "xa_db", "CREATE TABLE xa_app.ledger (); ALTER TABLE xa_app.ledger OWNER TO xa_owner; GRANT SELECT ON xa_app.ledger TO xa_reader; "+
		"ALTER DEFAULT PRIVILEGES FOR ROLE xa_owner IN SCHEMA xa_app GRANT SELECT ON TABLES TO xa_reader")

	// xb's side: for each kind, a read-only import and a managed resource.
	readOnly := xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
	type attempt struct {
		obj providertest.Conditioned
		// refusedBy is the object whose Ready condition says why (obj
		// itself but for a binding, whose provisioned database it is).
		refusedBy providertest.Conditioned
	}
	both := func(make func(name string, policies xpv2.ManagementPolicies) providertest.Conditioned) []attempt {
		imp, managed := make("import", readOnly), make("managed", nil)
		return []attempt{{obj: imp, refusedBy: imp}, {obj: managed, refusedBy: managed}}
	}
	meta := func(kind, name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: b, Name: strings.ToLower(strings.TrimPrefix(kind, "PostgreSQL")) + "-" + name}
	}
	xbRole := providertest.Role(b, in.Name, "xb_role")
	env.Create(ctx, t, xbRole)
	env.Ready(ctx, t, xbRole, corev1.ConditionTrue, xpv2.ReasonAvailable)
	cases := map[string][]attempt{
		v1alpha1.PostgreSQLDatabaseKind: both(func(n string, p xpv2.ManagementPolicies) providertest.Conditioned {
			return &v1alpha1.PostgreSQLDatabase{ObjectMeta: meta(v1alpha1.PostgreSQLDatabaseKind, n), Spec: v1alpha1.PostgreSQLDatabaseSpec{InstanceRef: in, ManagementPolicies: p,
				ForProvider: v1alpha1.PostgreSQLDatabaseParameters{Name: ptr.To("xa_db"), Extensions: []v1alpha1.Extension{{Name: "citext"}}}}}
		}),
		v1alpha1.PostgreSQLRoleKind: both(func(n string, p xpv2.ManagementPolicies) providertest.Conditioned {
			r := providertest.Role(b, in.Name, "xa_owner")
			r.ObjectMeta, r.Spec.ManagementPolicies = meta(v1alpha1.PostgreSQLRoleKind, n), p
			return r
		}),
		v1alpha1.PostgreSQLSchemaKind: both(func(n string, p xpv2.ManagementPolicies) providertest.Conditioned {
			return &v1alpha1.PostgreSQLSchema{ObjectMeta: meta(v1alpha1.PostgreSQLSchemaKind, n), Spec: v1alpha1.PostgreSQLSchemaSpec{InstanceRef: in, ManagementPolicies: p,
				ForProvider: v1alpha1.PostgreSQLSchemaParameters{Name: ptr.To("xa_app"), Database: ptr.To("xa_db")}}}
		}),
		v1alpha1.PostgreSQLGrantKind: slices.Concat(
			both(func(n string, p xpv2.ManagementPolicies) providertest.Conditioned {
				return &v1alpha1.PostgreSQLGrant{ObjectMeta: meta(v1alpha1.PostgreSQLGrantKind, "table-"+n), Spec: v1alpha1.PostgreSQLGrantSpec{InstanceRef: in, ManagementPolicies: p,
					ForProvider: v1alpha1.PostgreSQLGrantParameters{Role: ptr.To("xa_reader"), ObjectType: v1alpha1.GrantObjectTable, Database: ptr.To("xa_db"), Schema: ptr.To("xa_app"),
						Objects: []string{"ledger"}, Privileges: []v1alpha1.Privilege{"SELECT"}}}}
			}),
			both(func(n string, p xpv2.ManagementPolicies) providertest.Conditioned {
				return &v1alpha1.PostgreSQLGrant{ObjectMeta: meta(v1alpha1.PostgreSQLGrantKind, "database-"+n), Spec: v1alpha1.PostgreSQLGrantSpec{InstanceRef: in, ManagementPolicies: p,
					ForProvider: v1alpha1.PostgreSQLGrantParameters{RoleRef: local(xbRole.Name), ObjectType: v1alpha1.GrantObjectDatabase, Database: ptr.To("xa_db"),
						Privileges: []v1alpha1.Privilege{"CONNECT"}}}}
			}),
			both(func(n string, p xpv2.ManagementPolicies) providertest.Conditioned {
				return &v1alpha1.PostgreSQLGrant{ObjectMeta: meta(v1alpha1.PostgreSQLGrantKind, "membership-"+n), Spec: v1alpha1.PostgreSQLGrantSpec{InstanceRef: in, ManagementPolicies: p,
					ForProvider: v1alpha1.PostgreSQLGrantParameters{RoleRef: local(xbRole.Name), ObjectType: v1alpha1.GrantObjectMembership, MemberOf: ptr.To("xa_owner")}}}
			}),
		),
		v1alpha1.PostgreSQLDefaultPrivilegesKind: both(func(n string, p xpv2.ManagementPolicies) providertest.Conditioned {
			return &v1alpha1.PostgreSQLDefaultPrivileges{ObjectMeta: meta(v1alpha1.PostgreSQLDefaultPrivilegesKind, n), Spec: v1alpha1.PostgreSQLDefaultPrivilegesSpec{InstanceRef: in, ManagementPolicies: p,
				ForProvider: v1alpha1.PostgreSQLDefaultPrivilegesParameters{Role: ptr.To("xa_reader"), Owner: ptr.To("xa_owner"), Database: ptr.To("xa_db"), Schema: ptr.To("xa_app"),
					ObjectType: v1alpha1.DefaultPrivilegesTables, Privileges: []v1alpha1.Privilege{"SELECT"}}}}
		}),
	}
	// A binding in xb provisioning a database of victims' database's name:
	// its provisioned PostgreSQLDatabase is refused.
	binding := &v1alpha1.PostgreSQLBinding{ObjectMeta: meta(v1alpha1.PostgreSQLBindingKind, "provision"), Spec: v1alpha1.PostgreSQLBindingSpec{
		Tenant: "thief", DatabaseRef: v1alpha1.LocalReference{Name: "binding-db"},
		Provision: &v1alpha1.BindingProvision{InstanceRef: in, Database: "xa_db"},
	}}
	provisioned := &v1alpha1.PostgreSQLDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: b, Name: "binding-db"}}
	cases[v1alpha1.PostgreSQLBindingKind] = []attempt{{obj: binding, refusedBy: provisioned}}

	// Every kind a namespace may create on an Instance has its case.
	s, err := manager.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	for gvk := range s.AllKnownTypes() {
		if gvk.Group != v1alpha1.Group || strings.HasSuffix(gvk.Kind, "List") {
			continue
		}
		o, err := s.New(gvk)
		if err != nil {
			t.Fatal(err)
		}
		if _, onInstance := o.(v1alpha1.InstanceUser); onInstance && cases[gvk.Kind] == nil {
			t.Errorf("kind %s lives on an Instance but has no case here: add a read-only import and a managed resource naming victims' objects", gvk.Kind)
		}
	}

	var all []attempt
	for _, kind := range slices.Sorted(func(yield func(string) bool) {
		for k := range cases {
			if !yield(k) {
				return
			}
		}
	}) {
		for _, at := range cases[kind] {
			env.Create(ctx, t, at.obj)
			all = append(all, at)
		}
	}
	refused := func(c xpv2.Condition, synced xpv2.Condition) bool {
		for _, m := range []string{c.Message, synced.Message} {
			if strings.Contains(m, "managed from another namespace") || strings.Contains(m, "is not managed from namespace "+b) {
				return true
			}
		}
		return false
	}
	for _, at := range all {
		o := at.refusedBy
		err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
			if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			return refused(o.GetCondition(xpv2.TypeReady), o.GetCondition(xpv2.TypeSynced)), nil
		})
		if err != nil {
			t.Errorf("%s %s is not refused as another namespace's within a minute (Ready %+v, Synced %+v)", kindOf(t, at.obj), at.obj.GetName(),
				o.GetCondition(xpv2.TypeReady), o.GetCondition(xpv2.TypeSynced))
		}
	}
	// Two polls more: whatever a reconcile records, it has recorded.
	time.Sleep(2 * poll)

	events := &corev1.EventList{}
	if err := env.Kube.List(ctx, events, client.InNamespace(b)); err != nil {
		t.Fatal(err)
	}
	for _, at := range append(all, attempt{obj: provisioned}) {
		o := at.obj
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatal(err)
		}
		raw, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		var whole map[string]any
		if err := json.Unmarshal(raw, &whole); err != nil {
			t.Fatal(err)
		}
		spec, _ := json.Marshal(whole["spec"])
		status, _ := json.Marshal(whole["status"])
		var said []string
		for _, e := range events.Items {
			if e.InvolvedObject.UID == o.GetUID() {
				said = append(said, e.Reason+": "+e.Message)
			}
		}
		written := string(spec) + " " + o.GetName()
		if l := leaks(string(status), written); len(l) > 0 {
			t.Errorf("%s %s/%s records victims' %q in its status: %s", kindOf(t, o), b, o.GetName(), l, status)
		}
		for _, e := range said {
			if l := leaks(e, written); len(l) > 0 {
				t.Errorf("%s %s/%s has an event that tells victims' %q: %s", kindOf(t, o), b, o.GetName(), l, e)
			}
		}
		// Its names are xb's alone: an entry is one of its own, and
		// nothing was changed for any of them.
		for _, e := range changes.Of(kindOf(t, o), o.GetName()) {
			t.Errorf("%s %s/%s has a change log entry, though nothing was changed for it (victims' %q in it): %s", kindOf(t, o), b, o.GetName(), leaks(protojson.Format(e), written), protojson.Format(e))
		}
	}
	// The provider's metrics are the platform's, but their labels name
	// no tenant's owner, comment, table or setting.
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if found := leaks(l.GetValue(), "victims xa-db"); len(found) > 0 {
					t.Errorf("metric %s has a label %s=%q that tells victims' %q", f.GetName(), l.GetName(), l.GetValue(), found)
				}
			}
		}
	}
}

// kindOf is o's kind, from the scheme.
func kindOf(t *testing.T, o client.Object) string {
	t.Helper()
	gvks, _, err := env.Kube.Scheme().ObjectKinds(o)
	if err != nil || len(gvks) == 0 {
		return "object"
	}
	return gvks[0].Kind
}
