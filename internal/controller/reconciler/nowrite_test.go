package reconciler

import (
	"context"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/fixture/controlplane"
	"github.com/ayatori/provider-postgresql/internal/fixture/tier"
)

// countingTransport counts the status writes that reach the API server.
type countingTransport struct {
	next          http.RoundTripper
	statusUpdates atomic.Int64
	// updates: of anything but a status.
	updates atomic.Int64
}

// wrap makes t count the requests of cfg.
func (t *countingTransport) wrap(cfg *rest.Config) {
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { t.next = rt; return t }
}

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPut {
		if strings.HasSuffix(r.URL.Path, "/status") {
			t.statusUpdates.Add(1)
		} else {
			t.updates.Add(1)
		}
	}
	return t.next.RoundTrip(r)
}

// lagging is a cache that, while held is set, answers with that version of
// the object: one that has not seen the latest write yet.
type lagging struct {
	client.Reader
	held atomic.Pointer[v1alpha1.PostgreSQLRole]
}

func (l *lagging) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if h := l.held.Load(); h != nil {
		if r, ok := obj.(*v1alpha1.PostgreSQLRole); ok {
			h.DeepCopyInto(r)
			return nil
		}
	}
	return l.Reader.Get(ctx, key, obj, opts...)
}

// cachedClient takes the package's API server (with the provider's CRDs) and returns
// the manager's client over an informer cache of it, as a provider builds
// it, with the config changed by adjust and cache reads going through
// reader (each when not nil), and the API server with the scheme.
func cachedClient(ctx context.Context, t *testing.T, adjust func(*rest.Config), reader func(client.Reader) client.Reader) (client.Client, *controlplane.ControlPlane, *runtime.Scheme) {
	t.Helper()
	cp, s := startControlPlane(ctx, t)
	cfg := rest.CopyConfig(cp.Config)
	if adjust != nil {
		adjust(cfg)
	}
	cached, err := cache.New(cfg, cache.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = cached.Start(ctx) }()
	// As the manager's client is built (manager.Options).
	o := client.Options{Scheme: s, Cache: &client.CacheOptions{Reader: cached}}
	if reader != nil {
		o.Cache.Reader = reader(cached)
	}
	kube, err := NewClient(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	return kube, cp, s
}

// apiClient is a client straight to the API server, without a cache:
// what tests read through it is what is stored.
func apiClient(t *testing.T, cp *controlplane.ControlPlane, s *runtime.Scheme) client.Client {
	t.Helper()
	api, err := client.New(cp.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return api
}

// createRole creates a role named name straight through the API server
// (not through the manager's client, whose ledger it would enter).
func createRole(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane, s *runtime.Scheme, name string) *v1alpha1.PostgreSQLRole {
	t.Helper()
	api := apiClient(t, cp, s)
	role := &v1alpha1.PostgreSQLRole{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace(ctx, t)}, Spec: v1alpha1.PostgreSQLRoleSpec{InstanceRef: v1alpha1.InstanceReference{Name: "main"}}}
	if err := api.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	return role
}

// TestUnchangedStatusIsNotSent: through the manager's client, a managed
// resource's status write that would change nothing (a poll of an
// up-to-date resource) reaches no API server, while every write that
// could matter still does: a changed status, a write from a version the
// cache does not hold, and a write from the version before the provider's
// own last write (the server refuses both as conflicts, and the reconcile
// runs again on the newer version).
func TestUnchangedStatusIsNotSent(t *testing.T) {
	tier.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	counter := &countingTransport{}
	var lag *lagging
	kube, cp, s := cachedClient(ctx, t, counter.wrap,
		func(r client.Reader) client.Reader { lag = &lagging{Reader: r}; return lag })
	role := createRole(ctx, t, cp, s, "quiet")
	// read returns the role as the cache holds it, once it holds version rv
	// (any version when rv is "").
	read := func(t *testing.T, rv string) *v1alpha1.PostgreSQLRole {
		t.Helper()
		got := &v1alpha1.PostgreSQLRole{}
		deadline := time.Now().Add(30 * time.Second)
		for {
			err := kube.Get(ctx, client.ObjectKeyFromObject(role), got)
			if err == nil && (rv == "" || got.ResourceVersion == rv) {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("the cache does not show version %q of the role: %v", rv, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	write := func(t *testing.T, r *v1alpha1.PostgreSQLRole) (sent int64, err error) {
		t.Helper()
		counter.statusUpdates.Store(0)
		err = kube.Status().Update(ctx, r)
		return counter.statusUpdates.Load(), err
	}

	// A changed status is sent, and stored.
	r := read(t, role.ResourceVersion)
	r.SetConditions(xpv2.Available())
	if sent, err := write(t, r); err != nil || sent != 1 {
		t.Fatalf("a changed status: %d writes sent (%v), want 1", sent, err)
	}
	written := r.ResourceVersion
	if written == role.ResourceVersion {
		t.Fatal("the changed status did not change the role")
	}

	// A cache that has not seen that write yet hands a reconcile the
	// version before it; the same status as that version's is sent, and
	// refused.
	lag.held.Store(role.DeepCopy())
	if sent, err := write(t, read(t, role.ResourceVersion)); !kerrors.IsConflict(err) || sent != 1 {
		t.Errorf("a write from the version before the provider's own: %d sent (%v), want 1 and a conflict", sent, err)
	}
	lag.held.Store(nil)

	// A version the cache does not hold is sent, and refused.
	old := role.DeepCopy()
	if sent, err := write(t, old); !kerrors.IsConflict(err) || sent != 1 {
		t.Errorf("a write from a version the cache does not hold: %d sent (%v), want 1 and a conflict", sent, err)
	}

	// Once the cache shows the write, the same status again is not sent.
	r = read(t, written)
	r.SetConditions(xpv2.Available())
	if sent, err := write(t, r); err != nil || sent != 0 {
		t.Errorf("an unchanged status: %d writes sent (%v), want none", sent, err)
	}
	if r.ResourceVersion != written {
		t.Errorf("an unchanged status moved the version from %s to %s", written, r.ResourceVersion)
	}

	// A status that differs from the cached one in any field is sent.
	r = read(t, written)
	r.SetConditions(xpv2.ReconcileError(context.DeadlineExceeded))
	if sent, err := write(t, r); err != nil || sent != 1 {
		t.Errorf("a changed condition: %d writes sent (%v), want 1", sent, err)
	}
	if r.ResourceVersion == written {
		t.Error("the changed condition did not change the role")
	}
}

// TestWriteLedger: a write is waited for until the cache shows its version,
// then forgotten; writes of objects never read again (deleted) leave the
// ledger after ledgerSweepAfter.
func TestWriteLedger(t *testing.T) {
	now := time.Unix(0, 0)
	l := newWriteLedger(func() time.Time { return now })
	l.sweepSize = 3
	obj := func(uid, rv string) client.Object {
		return &v1alpha1.PostgreSQLRole{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), ResourceVersion: rv}}
	}
	if !l.settled("a", "1") {
		t.Error("an object never written: not settled")
	}
	l.wrote(obj("a", "2"), "1")
	if l.settled("a", "1") {
		t.Error("the cache at the version before the write: settled")
	}
	if !l.settled("a", "2") {
		t.Error("the cache at the written version: not settled")
	}
	if _, ok := l.last["a"]; ok {
		t.Error("a write the cache has shown is still kept")
	}
	l.wrote(obj("gone-1", "5"), "")
	l.wrote(obj("gone-2", "6"), "")
	now = now.Add(ledgerSweepAfter + 2*time.Minute)
	l.wrote(obj("b", "7"), "")
	if diff := cmp.Diff([]types.UID{"b"}, slices.Sorted(maps.Keys(l.last))); diff != "" {
		t.Errorf("kept after a sweep (-want +got):\n%s", diff)
	}
}

// TestWriteLedgerBehind: the versions a cache may show that are certainly
// older than the provider's own last write of an object are those its own
// consecutive writes replaced, and no other.
func TestWriteLedgerBehind(t *testing.T) {
	type write struct{ base, version string }
	obj := func(rv string) client.Object {
		return &v1alpha1.PostgreSQLRole{ObjectMeta: metav1.ObjectMeta{UID: "a", ResourceVersion: rv}}
	}
	cases := map[string]struct {
		writes []write
		// cached: the version the cache shows, and whether it is behind.
		cached map[string]bool
	}{
		"NeverWritten": {
			cached: map[string]bool{"1": false},
		},
		"OneWrite": {
			writes: []write{{"1", "2"}},
			cached: map[string]bool{"1": true, "2": false, "3": false},
		},
		"ConsecutiveWrites": {
			// A create: finalizer, create pending, create succeeded, status.
			writes: []write{{"1", "2"}, {"2", "3"}, {"3", "4"}, {"4", "5"}},
			cached: map[string]bool{"1": true, "2": true, "3": true, "4": true, "5": false, "6": false},
		},
		"AWriteFromAnotherVersionStartsOver": {
			// Version 3 is someone else's: 2 may or may not be behind it.
			writes: []write{{"1", "2"}, {"3", "4"}},
			cached: map[string]bool{"1": false, "2": false, "3": true, "4": false},
		},
		"AWriteWithoutAVersion": {
			// A patch of an object read from nowhere: nothing is known.
			writes: []write{{"", "2"}},
			cached: map[string]bool{"1": false, "2": false},
		},
		"ALongChainIsBounded": {
			writes: func() []write {
				var w []write
				for i := range 20 {
					w = append(w, write{strconv.Itoa(i), strconv.Itoa(i + 1)})
				}
				return w
			}(),
			cached: map[string]bool{"1": false, "11": false, "12": true, "19": true, "20": false},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := newWriteLedger(time.Now)
			for _, w := range tc.writes {
				l.wrote(obj(w.version), w.base)
			}
			got := map[string]bool{}
			for v := range tc.cached {
				got[v] = l.behind("a", v)
			}
			if diff := cmp.Diff(tc.cached, got); diff != "" {
				t.Errorf("behind, by cached version (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadsWaitForOwnWrites: through the manager's client, a read from a
// cache that still shows the version the provider's own last write
// replaced waits until the cache shows that write (then the reconcile's
// status write is from the current version, and not refused as a
// conflict); a cache that never catches up is given up on after
// maxCatchUp; and a read of any other version does not wait. The writes
// and the conflict are a real API server's.
func TestReadsWaitForOwnWrites(t *testing.T) {
	tier.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var lag *lagging
	kube, cp, s := cachedClient(ctx, t, nil, func(r client.Reader) client.Reader { lag = &lagging{Reader: r}; return lag })
	role := createRole(ctx, t, cp, s, "caughtup")
	key := client.ObjectKeyFromObject(role)
	// read reads the role through the manager's client, and how long
	// that took.
	read := func(t *testing.T) (*v1alpha1.PostgreSQLRole, time.Duration) {
		t.Helper()
		got := &v1alpha1.PostgreSQLRole{}
		start := time.Now()
		if err := kube.Get(ctx, key, got); err != nil {
			t.Fatal(err)
		}
		return got, time.Since(start)
	}
	if err := waitFor(ctx, func() bool { r, _ := read(t); return r.ResourceVersion == role.ResourceVersion }); err != nil {
		t.Fatal("the cache never showed the new role")
	}
	before := role.DeepCopy()

	// The provider writes the status; the cache still shows the version
	// before, until released 200 ms later.
	r, _ := read(t)
	r.SetConditions(xpv2.Creating())
	if err := kube.Status().Update(ctx, r); err != nil {
		t.Fatal(err)
	}
	lag.held.Store(before.DeepCopy())
	go func() {
		time.Sleep(200 * time.Millisecond)
		lag.held.Store(nil)
	}()
	got, took := read(t)
	if got.ResourceVersion != r.ResourceVersion {
		t.Errorf("read version %s, want the provider's own write %s", got.ResourceVersion, r.ResourceVersion)
	}
	if took < 150*time.Millisecond || took > maxCatchUp {
		t.Errorf("the read took %s: want it to wait for the cache (200 ms), within %s", took, maxCatchUp)
	}
	// What it read is current: the next status write is not refused.
	got.SetConditions(xpv2.Available())
	if err := kube.Status().Update(ctx, got); err != nil {
		t.Errorf("a status write from the version read: %v", err)
	}

	// A cache that never shows the write is given up on: the older
	// version is read, and the write from it is refused as before.
	lag.held.Store(got.DeepCopy())
	got.SetConditions(xpv2.ReconcileError(context.DeadlineExceeded))
	if err := kube.Status().Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	stuck, took := read(t)
	if took < maxCatchUp || took > maxCatchUp+time.Second {
		t.Errorf("a cache that never catches up: the read took %s, want about %s", took, maxCatchUp)
	}
	if err := kube.Status().Update(ctx, stuck); !kerrors.IsConflict(err) {
		t.Errorf("a status write from the outdated version: got %v, want a conflict", err)
	}

	// A version the provider did not replace is read at once, even when
	// the provider wrote the object since: here, the cache has not seen
	// the role at all beyond its creation, which the provider did not make
	// from any version.
	other := before.DeepCopy()
	other.ResourceVersion = "1"
	lag.held.Store(other)
	if _, took := read(t); took > 50*time.Millisecond {
		t.Errorf("a version the provider did not replace: the read took %s, want no wait", took)
	}
	lag.held.Store(nil)
}

// waitFor polls cond until it holds or 30 s pass.
func waitFor(ctx context.Context, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// TestStateMetricsListWithoutCopies: the state metrics recorder's lists,
// every few seconds of every managed resource, hand out what the cache
// holds rather than a deep copy of each object.
func TestStateMetricsListWithoutCopies(t *testing.T) {
	tier.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kube, _, _ := cachedClient(ctx, t, nil, nil)
	ns := testNamespace(ctx, t)
	role := &v1alpha1.PostgreSQLRole{ObjectMeta: metav1.ObjectMeta{Name: "counted", Namespace: ns, Labels: map[string]string{"a": "b"}}, Spec: v1alpha1.PostgreSQLRoleSpec{InstanceRef: v1alpha1.InstanceReference{Name: "main"}}}
	if err := kube.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	list := func(c client.Client) *v1alpha1.PostgreSQLRoleList {
		t.Helper()
		l := &v1alpha1.PostgreSQLRoleList{}
		deadline := time.Now().Add(30 * time.Second)
		for {
			if err := c.List(ctx, l, client.InNamespace(ns)); err == nil && len(l.Items) == 1 {
				return l
			}
			if time.Now().After(deadline) {
				t.Fatal("the cache does not show the role")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	labels := func(l *v1alpha1.PostgreSQLRoleList) uintptr { return reflect.ValueOf(l.Items[0].Labels).Pointer() }
	if a, b := list(UncopiedLists{kube}), list(UncopiedLists{kube}); labels(a) != labels(b) {
		t.Error("two lists through UncopiedLists hold different copies of the role")
	}
	// The test can tell: the manager's client alone copies.
	if a, b := list(kube), list(kube); labels(a) == labels(b) {
		t.Error("two lists through the manager's client share the role: this test cannot tell a copy")
	}
}
