package instance

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres/fakedb"
)

// The decisions of the Instance controller, against a scripted server:
// what Observe reports and records for each answer a server gives. Real
// logins, TLS and the deletion hold are proven in instance_test.go.

// login is a registry whose fresh login gives err.
type login struct{ err error }

func (l login) Authenticate(context.Context, postgres.Target) error { return l.err }
func (login) CloseInstance(string)                                  {}

// events records the events the controller emits.
type events struct{ got []event.Event }

func (e *events) Event(_ runtime.Object, ev event.Event)   { e.got = append(e.got, ev) }
func (e *events) WithAnnotations(...string) event.Recorder { return e }

// system is the answering server's system identifier.
const system = "7301234567890123456"

// server answers ObserveServer's query: server_version, its number, the
// system identifier, the admin's SUPERUSER, CREATEDB and CREATEROLE, the
// available extensions' names and default versions, max_connections
// (100), superuser_reserved_connections (3), reserved_connections (none),
// whether the admin may use them, the shared databases PUBLIC may
// connect to (both, as on a stock server), and the temporary memberships
// left to the admin (none).
func server(superuser, createdb, createrole bool) fakedb.Answer {
	return serverWith(superuser, createdb, createrole, 0, false, []string{"postgres", "template1"})
}

// serverWith is server with reserved_connections, the admin's membership
// of pg_use_reserved_connections and the databases PUBLIC may connect to.
func serverWith(superuser, createdb, createrole bool, reserved int32, useReserved bool, public []string, leftovers ...string) fakedb.Answer {
	if leftovers == nil {
		leftovers = []string{}
	}
	return fakedb.Answer{Match: "FROM pg_catalog.pg_available_extensions", Rows: [][]any{{
		"17.10 (Debian 17.10-1)", 170010, system, superuser, createdb, createrole, []string{"pgcrypto", "postgres_fdw"}, []string{"1.3", ""},
		int32(100), int32(3), reserved, useReserved, public, leftovers,
	}}}
}

func TestObserveDecisions(t *testing.T) {
	cases := map[string]struct {
		before     v1alpha1.PostgreSQLInstanceStatus
		spec       v1alpha1.PostgreSQLInstanceSpec
		login      error
		answers    []fakedb.Answer
		want       managed.ExternalObservation
		wantErr    string
		wantReason xpv2.ConditionReason
		wantPhase  v1alpha1.InstancePhase
		wantAdmin  *v1alpha1.AdminPrivileges
		wantEvents int
		// wantSlots and wantShared are the reasons of AdminSlotsReserved
		// and SharedDatabasesRestricted, when the server answered;
		// wantConnections the status.connections recorded.
		wantSlots, wantShared xpv2.ConditionReason
		wantConnections       *v1alpha1.InstanceConnections
	}{
		"ASuperuserIsReady": {
			answers:         []fakedb.Answer{server(true, true, true)},
			want:            managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
			wantReason:      xpv2.ReasonAvailable,
			wantPhase:       v1alpha1.InstancePhaseReady,
			wantAdmin:       &v1alpha1.AdminPrivileges{Superuser: true, CreateDB: true, CreateRole: true, Sufficient: true},
			wantSlots:       v1alpha1.ReasonSuperuserReserved,
			wantShared:      v1alpha1.ReasonPublicConnectKept,
			wantConnections: &v1alpha1.InstanceConnections{Max: 100, ReservedForAdmin: 3, DefaultRoleConnectionLimit: 25},
		},
		"AManagedServiceAdminIsReady": {
			answers:         []fakedb.Answer{server(false, true, true)},
			want:            managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
			wantReason:      xpv2.ReasonAvailable,
			wantPhase:       v1alpha1.InstancePhaseReady,
			wantAdmin:       &v1alpha1.AdminPrivileges{CreateDB: true, CreateRole: true, Sufficient: true},
			wantSlots:       v1alpha1.ReasonNoReservedSlots,
			wantShared:      v1alpha1.ReasonPublicConnectKept,
			wantConnections: &v1alpha1.InstanceConnections{Max: 100, DefaultRoleConnectionLimit: 25},
		},
		"AManagedAdminMayUseTheReservedSlots": {
			answers:         []fakedb.Answer{serverWith(false, true, true, 5, true, nil)},
			want:            managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
			wantReason:      xpv2.ReasonAvailable,
			wantPhase:       v1alpha1.InstancePhaseReady,
			wantAdmin:       &v1alpha1.AdminPrivileges{CreateDB: true, CreateRole: true, Sufficient: true},
			wantSlots:       v1alpha1.ReasonReservedConnections,
			wantShared:      v1alpha1.ReasonPublicConnectRevoked,
			wantConnections: &v1alpha1.InstanceConnections{Max: 100, ReservedForAdmin: 5, DefaultRoleConnectionLimit: 25},
		},
		"SlotsReservedForOthersAreNotTheAdmins": {
			answers:         []fakedb.Answer{serverWith(false, true, true, 5, false, nil)},
			want:            managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
			wantReason:      xpv2.ReasonAvailable,
			wantPhase:       v1alpha1.InstancePhaseReady,
			wantAdmin:       &v1alpha1.AdminPrivileges{CreateDB: true, CreateRole: true, Sufficient: true},
			wantSlots:       v1alpha1.ReasonNoReservedSlots,
			wantShared:      v1alpha1.ReasonPublicConnectRevoked,
			wantConnections: &v1alpha1.InstanceConnections{Max: 100, DefaultRoleConnectionLimit: 25},
		},
		"APolicyDefaultConnectionLimitIsRecorded": {
			spec:            v1alpha1.PostgreSQLInstanceSpec{Policy: v1alpha1.InstancePolicy{DefaultConnectionLimit: ptr.To[int32](7)}},
			answers:         []fakedb.Answer{server(true, true, true)},
			want:            managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
			wantReason:      xpv2.ReasonAvailable,
			wantPhase:       v1alpha1.InstancePhaseReady,
			wantAdmin:       &v1alpha1.AdminPrivileges{Superuser: true, CreateDB: true, CreateRole: true, Sufficient: true},
			wantSlots:       v1alpha1.ReasonSuperuserReserved,
			wantShared:      v1alpha1.ReasonPublicConnectKept,
			wantConnections: &v1alpha1.InstanceConnections{Max: 100, ReservedForAdmin: 3, DefaultRoleConnectionLimit: 7},
		},
		"RevokingPublicConnectIsAnUpdate": {
			spec:            v1alpha1.PostgreSQLInstanceSpec{SharedDatabases: v1alpha1.SharedDatabases{RevokePublicConnect: true}},
			answers:         []fakedb.Answer{server(true, true, true)},
			want:            managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: false},
			wantReason:      xpv2.ReasonAvailable,
			wantPhase:       v1alpha1.InstancePhaseReady,
			wantAdmin:       &v1alpha1.AdminPrivileges{Superuser: true, CreateDB: true, CreateRole: true, Sufficient: true},
			wantSlots:       v1alpha1.ReasonSuperuserReserved,
			wantConnections: &v1alpha1.InstanceConnections{Max: 100, ReservedForAdmin: 3, DefaultRoleConnectionLimit: 25},
		},
		"MembershipsLeftByAKilledProviderAreAnUpdate": {
			answers:         []fakedb.Answer{serverWith(false, true, true, 0, false, []string{"postgres", "template1"}, "app_owner")},
			want:            managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: false},
			wantReason:      xpv2.ReasonAvailable,
			wantPhase:       v1alpha1.InstancePhaseReady,
			wantAdmin:       &v1alpha1.AdminPrivileges{CreateDB: true, CreateRole: true, Sufficient: true},
			wantSlots:       v1alpha1.ReasonNoReservedSlots,
			wantShared:      v1alpha1.ReasonPublicConnectKept,
			wantConnections: &v1alpha1.InstanceConnections{Max: 100, DefaultRoleConnectionLimit: 25},
		},
		"AnAdminWithoutCreateRoleIsNotEnough": {
			answers:         []fakedb.Answer{server(false, true, false)},
			want:            managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
			wantReason:      v1alpha1.ReasonInsufficientPrivileges,
			wantPhase:       v1alpha1.InstancePhaseValidating,
			wantAdmin:       &v1alpha1.AdminPrivileges{CreateDB: true},
			wantSlots:       v1alpha1.ReasonNoReservedSlots,
			wantShared:      v1alpha1.ReasonPublicConnectKept,
			wantConnections: &v1alpha1.InstanceConnections{Max: 100, DefaultRoleConnectionLimit: 25},
		},
		"AnAdminWithoutCreateDBIsNotEnough": {
			answers:         []fakedb.Answer{server(false, false, true)},
			want:            managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
			wantReason:      v1alpha1.ReasonInsufficientPrivileges,
			wantPhase:       v1alpha1.InstancePhaseValidating,
			wantAdmin:       &v1alpha1.AdminPrivileges{CreateRole: true},
			wantSlots:       v1alpha1.ReasonNoReservedSlots,
			wantShared:      v1alpha1.ReasonPublicConnectKept,
			wantConnections: &v1alpha1.InstanceConnections{Max: 100, DefaultRoleConnectionLimit: 25},
		},
		"ARejectedPasswordSaysToFixTheSecret": {
			login:      errors.Wrap(postgres.ErrPasswordRejected, "login as admin"),
			wantErr:    "the admin credentials Secret's password does not log in",
			wantReason: v1alpha1.ReasonUnreachable,
			wantPhase:  v1alpha1.InstancePhaseValidating,
		},
		"AnotherServerIsReportedAndRecorded": {
			before:          v1alpha1.PostgreSQLInstanceStatus{SystemIdentifier: "6999999999999999999", Phase: v1alpha1.InstancePhaseReady},
			answers:         []fakedb.Answer{server(true, true, true)},
			want:            managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
			wantReason:      xpv2.ReasonAvailable,
			wantPhase:       v1alpha1.InstancePhaseReady,
			wantAdmin:       &v1alpha1.AdminPrivileges{Superuser: true, CreateDB: true, CreateRole: true, Sufficient: true},
			wantEvents:      1,
			wantSlots:       v1alpha1.ReasonSuperuserReserved,
			wantShared:      v1alpha1.ReasonPublicConnectKept,
			wantConnections: &v1alpha1.InstanceConnections{Max: 100, ReservedForAdmin: 3, DefaultRoleConnectionLimit: 25},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			mg := &v1alpha1.PostgreSQLInstance{ObjectMeta: metav1.ObjectMeta{Name: "main", UID: "instance-uid"}, Spec: c.spec, Status: c.before}
			mg.Spec.Endpoint.Database = "postgres"
			rec := &events{}
			e := &external{pools: login{err: c.login}, pool: fakedb.New(c.answers...), record: rec, references: func(context.Context, *v1alpha1.PostgreSQLInstance) ([]string, error) {
				return []string{"PostgreSQLRole app/one", "PostgreSQLDatabase app/two"}, nil
			}}
			got, err := e.Observe(context.Background(), mg)
			if c.wantErr == "" && err != nil {
				t.Fatalf("Observe: %v", err)
			}
			if c.wantErr != "" && (err == nil || !strings.Contains(mg.GetCondition(xpv2.TypeReady).Message, c.wantErr)) {
				t.Fatalf("Observe: error %v, Ready message %q, want one saying %q", err, mg.GetCondition(xpv2.TypeReady).Message, c.wantErr)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("observation (-want +got):\n%s", diff)
			}
			if got := mg.GetCondition(xpv2.TypeReady).Reason; got != c.wantReason {
				t.Errorf("Ready reason %q, want %q", got, c.wantReason)
			}
			if mg.Status.Phase != c.wantPhase {
				t.Errorf("phase %q, want %q", mg.Status.Phase, c.wantPhase)
			}
			if diff := cmp.Diff(c.wantAdmin, mg.Status.AdminPrivileges); diff != "" {
				t.Errorf("status.adminPrivileges (-want +got):\n%s", diff)
			}
			if c.answers != nil && (mg.Status.PostgreSQLVersion != "17.10" || mg.Status.SystemIdentifier != system || len(mg.Status.AvailableExtensions) != 2) {
				t.Errorf("server facts not recorded: version %q, system %q, extensions %v", mg.Status.PostgreSQLVersion, mg.Status.SystemIdentifier, mg.Status.AvailableExtensions)
			}
			if got := mg.GetCondition(v1alpha1.TypeAdminSlotsReserved).Reason; got != c.wantSlots {
				t.Errorf("AdminSlotsReserved reason %q, want %q", got, c.wantSlots)
			}
			if got := mg.GetCondition(v1alpha1.TypeSharedDatabasesRestricted).Reason; got != c.wantShared {
				t.Errorf("SharedDatabasesRestricted reason %q, want %q", got, c.wantShared)
			}
			if diff := cmp.Diff(c.wantConnections, mg.Status.Connections); diff != "" {
				t.Errorf("status.connections (-want +got):\n%s", diff)
			}
			if len(rec.got) != c.wantEvents {
				t.Errorf("%d events, want %d: %v", len(rec.got), c.wantEvents, rec.got)
			}
			// Counted whatever the server answers: an Instance whose
			// server is down is protected from deletion too.
			if mg.Status.UsedBy != 2 {
				t.Errorf("status.usedBy = %d, want the 2 resources that refer to it", mg.Status.UsedBy)
			}
		})
	}
}
