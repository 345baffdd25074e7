package instance_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
	"github.com/ayatori/provider-postgresql/internal/fixture/radius"
)

// Figures of TestAdminTokenRotation: a token is issued every rotation and
// valid for tokenLife, so two or three are valid at any time, as a
// cloud's IAM tokens are; the traffic changes something every step.
const (
	rotation  = 15 * time.Second
	tokenLife = 40 * time.Second
	traffic   = 65 * time.Second
	step      = 4 * time.Second
)

// issuer stands in for a cloud's IAM: it issues tokens for one role, each
// valid for tokenLife, and judges the logins PostgreSQL hands it (through
// RADIUS), recording which token each used.
type issuer struct {
	user string
	mu   sync.Mutex
	// tokens in the order issued, with when each was issued and expires.
	tokens  []string
	issued  []time.Time
	expires map[string]time.Time
	// used counts the accepted logins of each token, by its index.
	used    map[int]int
	refused []string
}

func (is *issuer) issue() string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	tok := "iam-" + hex.EncodeToString(b)
	is.mu.Lock()
	defer is.mu.Unlock()
	is.tokens = append(is.tokens, tok)
	is.issued = append(is.issued, time.Now())
	is.expires[tok] = time.Now().Add(tokenLife)
	return tok
}

func (is *issuer) check(user, password string) bool {
	is.mu.Lock()
	defer is.mu.Unlock()
	exp, ok := is.expires[password]
	if user != is.user || !ok || time.Now().After(exp) {
		why := "an unknown token"
		if ok {
			why = "an expired token"
		}
		is.refused = append(is.refused, fmt.Sprintf("%s at %s: %s", user, time.Now().Format(time.StampMilli), why))
		return false
	}
	for i, tok := range is.tokens {
		if tok == password {
			is.used[i]++
		}
	}
	return true
}

// TestAdminTokenRotation: an Instance whose admin logs in with a token
// from a file, on a server that checks the token the way managed services
// check IAM tokens (PostgreSQL asks RADIUS, over TLS), takes a minute of
// creates, updates and deletes of roles, databases and grants while the
// file is rotated every 15 s, with no failed reconcile and no refused
// login. Sessions are logged in again only when they reconnect: a
// rotation closes none, each new session after it logs in with the new
// token, and every login is one the issuer judged. No token shows in a
// resource, an event, the provider's log or a change log entry.
func TestAdminTokenRotation(t *testing.T) {
	suite.Versions(t)
	ctx := context.Background()
	const admin, ns = "rotating_admin", "token-traffic"
	is := &issuer{user: admin, expires: map[string]time.Time{}, used: map[int]int{}}
	rs, err := radius.Start("radius-shared-"+strings.Repeat("x", 8), is.check)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rs.Close() })

	env.SQL(ctx, t, "postgres", "CREATE ROLE "+admin+" LOGIN CREATEDB CREATEROLE; GRANT CREATE ON DATABASE postgres TO "+admin)
	t.Cleanup(func() {
		env.SQL(context.Background(), t, "postgres", "DROP OWNED BY "+admin+"; DROP ROLE "+admin)
	})
	if err := env.Postgres.AddHBA(ctx, rs.HBA(admin)); err != nil {
		t.Fatal(err)
	}
	// The admin's sessions the server logs from here on are those the
	// issuer judged.
	authFrom := env.ServerLogLen(t)
	if err := os.MkdirAll(tokenDir, 0o700); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(tokenDir, "rotating")
	t.Cleanup(func() { _ = os.Remove(file) })
	rotate := func() {
		t.Helper()
		// As an agent does: a new file renamed over the old one.
		if err := os.WriteFile(file+".new", []byte(is.issue()+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(file+".new", file); err != nil {
			t.Fatal(err)
		}
	}
	rotate()

	if err := env.CASecret(ctx, "rotating-ca"); err != nil {
		t.Fatal(err)
	}
	in := newInstance("rotating", "", "rotating-ca")
	in.Spec.AdminCredentialRef = nil
	in.Spec.AdminTokenSource = &v1alpha1.AdminTokenSource{Username: admin, File: &v1alpha1.TokenFile{Path: file}}
	create(ctx, t, in)
	t.Cleanup(func() { _ = env.Kube.Delete(context.Background(), in) })
	waitReady(ctx, t, in.Name, corev1.ConditionTrue, xpv2.ReasonAvailable, time.Minute)
	if err := env.Namespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	logFrom := env.ServerLogLen(t)
	changesFrom := len(changes.All())

	// The traffic: each step creates a login role, a database it owns and
	// a grant on it; changes the connection limit of the role two steps
	// back; and deletes what was created four steps back.
	local := func(name string) *v1alpha1.LocalReference { return &v1alpha1.LocalReference{Name: name} }
	type set struct {
		role  *v1alpha1.PostgreSQLRole
		db    *v1alpha1.PostgreSQLDatabase
		grant *v1alpha1.PostgreSQLGrant
	}
	var sets []set
	var deleted []client.Object
	limits := map[string]int32{}
	start := time.Now()
	nextRotation := start.Add(rotation)
	// survivors: how many of the admin's sessions begun before each
	// rotation were still there two seconds after it.
	var rotations []time.Time
	var survivors []int
	for k := 0; time.Since(start) < traffic; k++ {
		if time.Now().After(nextRotation) {
			rotate()
			rotations = append(rotations, time.Now())
			nextRotation = nextRotation.Add(rotation)
		}
		if n := len(rotations); n > len(survivors) && time.Since(rotations[n-1]) > 2*time.Second {
			var alive int
			if err := env.Connect(ctx, t, "postgres").QueryRow(ctx,
				"SELECT count(*) FROM pg_stat_activity WHERE usename = $1 AND backend_start < $2", admin, rotations[n-1]).Scan(&alive); err != nil {
				t.Fatal(err)
			}
			survivors = append(survivors, alive)
		}
		name := fmt.Sprintf("rot-%d", k)
		role := providertest.Role(ns, in.Name, strings.ReplaceAll(name, "-", "_"))
		role.Spec.ForProvider.Login = ptr.To(true)
		role.Spec.WriteConnectionSecretToReference = &xpv2.LocalSecretReference{Name: name}
		db := &v1alpha1.PostgreSQLDatabase{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.PostgreSQLDatabaseSpec{
			InstanceRef: v1alpha1.InstanceReference{Name: in.Name},
			ForProvider: v1alpha1.PostgreSQLDatabaseParameters{Name: role.Spec.ForProvider.Name, OwnerRef: local(role.Name)},
		}}
		grant := &v1alpha1.PostgreSQLGrant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.PostgreSQLGrantSpec{
			InstanceRef: v1alpha1.InstanceReference{Name: in.Name},
			ForProvider: v1alpha1.PostgreSQLGrantParameters{RoleRef: local(role.Name), ObjectType: v1alpha1.GrantObjectDatabase,
				DatabaseRef: local(db.Name), Privileges: []v1alpha1.Privilege{"TEMPORARY"}},
		}}
		env.Create(ctx, t, role, db, grant)
		sets = append(sets, set{role, db, grant})
		if k >= 2 {
			r := sets[k-2].role
			limits[r.Name] = int32(k)
			providertest.Update(ctx, t, env, r, func(r *v1alpha1.PostgreSQLRole) { r.Spec.ForProvider.ConnectionLimit = ptr.To(int32(k)) })
		}
		if k >= 4 {
			for _, o := range []client.Object{sets[k-4].grant, sets[k-4].db, sets[k-4].role} {
				if err := env.Kube.Delete(ctx, o); err != nil {
					t.Fatal(err)
				}
				deleted = append(deleted, o)
			}
		}
		time.Sleep(step)
	}
	t.Logf("%d steps in %s, %d rotations", len(sets), time.Since(start).Round(time.Second), len(rotations))
	if len(rotations) < 3 {
		t.Fatalf("%d rotations during the traffic, want at least 3", len(rotations))
	}

	// Everything converges: what is left is Ready with its change made,
	// what was deleted is gone.
	for _, o := range deleted {
		env.Gone(ctx, t, o)
	}
	for _, s := range sets[len(sets)-4:] {
		for _, o := range []providertest.Conditioned{s.role, s.db, s.grant} {
			if err := env.WaitForReady(ctx, o, corev1.ConditionTrue, xpv2.ReasonAvailable, 2*time.Minute); err != nil {
				t.Errorf("%T %s: %v", o, o.GetName(), err)
			}
		}
	}
	for _, s := range sets[len(sets)-4 : len(sets)-2] {
		var limit int32
		if err := env.Connect(ctx, t, "postgres").QueryRow(ctx, "SELECT rolconnlimit FROM pg_roles WHERE rolname = $1", *s.role.Spec.ForProvider.Name).Scan(&limit); err != nil {
			t.Fatal(err)
		}
		if want := limits[s.role.Name]; limit != want {
			t.Errorf("role %s: connection limit %d on the server, want %d", s.role.Name, limit, want)
		}
	}

	t.Run("NoFailedReconcile", func(t *testing.T) {
		// What the traffic's order causes, whatever the login: a database
		// or grant looked at before the informer saw its role ("to be
		// created") or before the role was observed ("to exist"), a
		// binding note on a database being deleted. Anything else is a
		// failure.
		ordering := regexp.MustCompile(`^spec\.forProvider\.\w+: waiting for PostgreSQL\w+ ` + ns + `/rot-\d+ to (exist|be created)$|^the PostgreSQLDatabase is being deleted$`)
		var warnings []string
		for _, namespace := range []string{ns, metav1.NamespaceDefault} {
			l := &corev1.EventList{}
			if err := env.Kube.List(ctx, l, client.InNamespace(namespace)); err != nil {
				t.Fatal(err)
			}
			for _, ev := range l.Items {
				if ev.Type == corev1.EventTypeWarning && (namespace == ns || ev.InvolvedObject.Name == in.Name) && !ordering.MatchString(ev.Message) {
					warnings = append(warnings, fmt.Sprintf("%s %s: %s: %s", ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Reason, ev.Message))
				}
			}
		}
		if len(warnings) > 0 {
			t.Errorf("%d warnings while the token rotated:\n%s", len(warnings), strings.Join(warnings, "\n"))
		}
		got := &v1alpha1.PostgreSQLInstance{}
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(in), got); err != nil {
			t.Fatal(err)
		}
		if c := got.GetCondition(xpv2.TypeReady); c.Status != corev1.ConditionTrue {
			t.Errorf("Instance %s: Ready %s %s: %s", in.Name, c.Status, c.Reason, c.Message)
		}
	})

	t.Run("LoggedInAgainOnlyWhenReconnecting", func(t *testing.T) {
		accepted, rejected, malformed := rs.Counts()
		is.mu.Lock()
		refused, used := append([]string(nil), is.refused...), map[int]int{}
		for i, n := range is.used {
			used[i] = n
		}
		is.mu.Unlock()
		t.Logf("%d logins judged by the issuer, tokens used %v, sessions begun before each rotation alive 2 s after it %v", accepted, used, survivors)
		if rejected > 0 || len(refused) > 0 || len(malformed) > 0 {
			t.Errorf("%d logins refused (%v), %d requests malformed (%v)", rejected, refused, len(malformed), malformed)
		}
		// Every login of the admin went through the issuer: the server
		// logged as many as RADIUS accepted.
		authorized := len(regexp.MustCompile(`connection authorized: user=`+admin+`\b`).FindAllStringIndex(env.ServerLog(t, authFrom), -1))
		if authorized != accepted {
			t.Errorf("the server authorized %d sessions of %s, the issuer accepted %d logins", authorized, admin, accepted)
		}
		// A rotation closes no session: the pool's sessions outlive it.
		for i, n := range survivors {
			if n == 0 {
				t.Errorf("no session of %s begun before rotation %d was left 2 s after it", admin, i+1)
			}
		}
		// After each rotation, new sessions log in with the new token.
		for i := 1; i <= len(rotations); i++ {
			if used[i] == 0 {
				t.Errorf("no login used token %d, issued at rotation %d", i, i)
			}
		}
	})

	t.Run("NoTokenAnywhere", func(t *testing.T) {
		is.mu.Lock()
		tokens := append([]string(nil), is.tokens...)
		is.mu.Unlock()
		var places []string
		look := func(where string, b []byte) {
			for _, tok := range tokens {
				if strings.Contains(string(b), tok) {
					places = append(places, where)
					return
				}
			}
		}
		look("the provider's log", []byte(env.ProviderLog()))
		look("the server's log", []byte(env.ServerLog(t, logFrom)))
		for _, l := range []client.ObjectList{&v1alpha1.PostgreSQLRoleList{}, &v1alpha1.PostgreSQLDatabaseList{}, &v1alpha1.PostgreSQLGrantList{}, &corev1.EventList{}, &corev1.SecretList{}} {
			if err := env.Kube.List(ctx, l, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(l)
			if err != nil {
				t.Fatal(err)
			}
			look(fmt.Sprintf("%T", l), b)
		}
		got := &v1alpha1.PostgreSQLInstance{}
		if err := env.Kube.Get(ctx, client.ObjectKeyFromObject(in), got); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(got)
		look("the Instance", b)
		entries := changes.All()[changesFrom:]
		if len(entries) == 0 {
			t.Error("no change log entries during the traffic: the sink heard nothing")
		}
		for _, e := range entries {
			b, err := protojson.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			look("a change log entry", b)
		}
		if len(places) > 0 {
			t.Errorf("a token shows in %s", strings.Join(places, ", "))
		}
	})
}
