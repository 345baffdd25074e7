package install

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/ayatori/provider-postgresql/cluster"
	"github.com/ayatori/provider-postgresql/configuration"
	"github.com/ayatori/provider-postgresql/internal/fixture/controlplane"
	"github.com/ayatori/provider-postgresql/internal/fixture/crossplane"
	"github.com/ayatori/provider-postgresql/internal/fixture/pgserver"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
	"github.com/ayatori/provider-postgresql/internal/fixture/registry"
	"github.com/ayatori/provider-postgresql/internal/fixture/runbook"
	"github.com/ayatori/provider-postgresql/internal/fixture/tier"
)

// providerName is the Provider package object's name (docs/install.md says why).
const providerName = "ayatori-provider-postgresql"

// serviceAccount is the name the runtime config pins.
const serviceAccount = "provider-postgresql"

// TestInstallGuide follows docs/install.md from an empty cluster to an
// uninstall, running each of its shell blocks as written and checking
// after each what the guide promises.
func TestInstallGuide(t *testing.T) {
	tier.Server(t)
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	steps, err := runbook.Read(filepath.Join(root, "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range steps {
		names = append(names, s.Name)
	}
	// The checks below follow these steps; a new step needs its checks.
	if diff := cmp.Diff([]string{"own-registry", "runtime-config", "install-provider", "activate", "cluster-manifests", "register-instance", "first-claim", "lock", "activate-later", "upgrade", "uninstall"}, names); diff != "" {
		t.Fatalf("the guide's steps changed (-checked +guide):\n%s", diff)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	out := packages(t)
	tools, err := crossplane.Tools()
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()

	// The guide's step 0 pushes v0.1.0 of the packages to the registry;
	// the upgrade's v0.2.0 is the same build under a version label, which
	// gives it its own digest, so Crossplane sees an upgrade. The
	// Configuration's function-auto-ready dependency, which a cluster
	// fetches from the Crossplane registry, is served here too.
	reg, err := registry.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Stop()
	for _, p := range []struct{ file, repo, tag string }{
		{filepath.Join(out, "provider-postgresql.xpkg"), "ayatori/provider-postgresql", "v0.2.0"},
		{autoReadyPackage(t, root, tools, work), "crossplane-contrib/function-auto-ready", "v0.7.0"},
	} {
		if err := reg.Push(ctx, p.file, p.repo, p.tag, p.tag); err != nil {
			t.Fatal(err)
		}
	}

	if err := os.MkdirAll(filepath.Join(work, "controlplane"), 0o700); err != nil {
		t.Fatal(err)
	}
	cp, err := controlplane.Start(ctx, controlplane.Options{NoCRDs: true, ControllerManager: true, Dir: filepath.Join(work, "controlplane")})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop() //nolint:errcheck // Best effort.
	pg, err := pgserver.Start(ctx, pgserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Stop() //nolint:errcheck // Best effort.
	core, err := crossplane.Start(ctx, crossplane.Options{Config: cp.Config, Kubeconfig: cp.Kubeconfig, Dir: filepath.Join(work, "crossplane"), RBACManager: true, NoDefaultActivation: true})
	if err != nil {
		t.Fatal(err)
	}
	defer core.Stop()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, extv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	kube, err := client.New(cp.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	kc := kubernetes.NewForConfigOrDie(cp.Config)
	for prefix, to := range map[string]string{"xpkg.crossplane.io/crossplane-contrib/": reg.Host + "/crossplane-contrib/"} {
		ic := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "pkg.crossplane.io/v1beta1", "kind": "ImageConfig",
			"metadata": map[string]any{"generateName": "loopback-"},
			"spec": map[string]any{
				"matchImages":  []any{map[string]any{"type": "Prefix", "prefix": prefix}},
				"rewriteImage": map[string]any{"prefix": to},
			},
		}}
		if err := kube.Create(ctx, ic); err != nil {
			t.Fatal(err)
		}
	}

	// The packaged binaries run here, not copies built on the side.
	providerBin := writeExecutable(t, work, "provider", packageFiles(t, filepath.Join(out, "provider-postgresql.xpkg"))["usr/local/bin/provider"])
	functionBin := writeExecutable(t, work, "function-tenant", packageFiles(t, filepath.Join(out, "function-postgresql-tenant.xpkg"))["usr/local/bin/function-tenant"])

	kl := &kubelet{kc: kc, cfg: cp.Config, provider: providerName, bin: providerBin, dir: filepath.Join(work, "kubelet")}
	if err := os.MkdirAll(kl.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	klCtx, stopKubelet := context.WithCancel(ctx)
	klDone := make(chan struct{})
	go func() { kl.run(klCtx); close(klDone) }()
	defer func() { stopKubelet(); <-klDone }()
	// A provider that exits on its own is restarted, as in a cluster; say
	// so, and why, whatever the outcome.
	defer func() {
		for _, c := range kl.crashes() {
			t.Logf("the provider exited on its own and was restarted after its back-off: %s", c)
		}
	}()

	sh := shell(t, root, work, cp.Kubeconfig, tools, pg, reg.Host+"/ayatori")
	diagnose := func() string {
		b, _ := sh(ctx, "kubectl get providers.pkg.crossplane.io,providerrevisions.pkg.crossplane.io,deployments -A -o yaml | grep -B2 -A6 'message:\\|type: ' || true")
		// What of the product's objects is left, and why it stays: a
		// step that waits for a deletion fails here first.
		objs, _ := sh(ctx, `for k in postgresqlroles postgresqldatabases postgresqlschemas postgresqlbindings postgresqlgrants postgresqldefaultprivileges postgresqlinstances; do
  kubectl get "$k.database.ayatori.ddupan.top" -A --no-headers 2>/dev/null \
    -o custom-columns='KIND:.kind,NS:.metadata.namespace,NAME:.metadata.name,DELETING:.metadata.deletionTimestamp,FINALIZERS:.metadata.finalizers,SYNCED:.status.conditions[?(@.type=="Synced")].message'
done
kubectl get events -A --field-selector type=Warning --sort-by=.lastTimestamp 2>/dev/null | tail -15
true`)
		return "\npackages:\n" + string(b) + "\nobjects of the product, and Warning events:\n" + string(objs) + "\nprovider (stand-in kubelet: " + kl.status() + ") log:\n" + kl.logTail() + "\ncore log:\n" + core.LogTail()
	}
	run := func(name string) {
		t.Helper()
		for _, s := range steps {
			if s.Name == name {
				start := time.Now()
				b, err := sh(ctx, s.Script)
				if err != nil {
					t.Fatalf("step %s of docs/install.md failed: %v\n%s%s", name, err, b, diagnose())
				}
				t.Logf("step %s (%s):\n%s", name, time.Since(start).Round(100*time.Millisecond), b)
				return
			}
		}
		t.Fatalf("no step %s", name)
	}

	run("own-registry")
	checkPushed(ctx, t, reg, []string{"provider-postgresql", "function-postgresql-tenant", "configuration-postgresql-tenant"}, "v0.1.0")
	run("runtime-config")
	run("install-provider")
	rev := activeRevision(ctx, t, kube, "ProviderRevision", providerName)
	// The package declares safe-start: with no policy activating them, the
	// kinds are inactive MRDs and nothing is served.
	checkActivation(ctx, t, kube, root, nil)
	dep := deploymentOf(ctx, t, kube, rev.GetName())
	if sa := dep.Spec.Template.Spec.ServiceAccountName; sa != serviceAccount {
		t.Errorf("the Deployment runs as ServiceAccount %q, want the pinned %q", sa, serviceAccount)
	}
	if args := strings.Join(dep.Spec.Template.Spec.Containers[0].Args, " "); !strings.Contains(args, "--poll=1m") || !strings.Contains(args, "--max-conns=20") {
		t.Errorf("the Deployment's args %q miss the runtime config's flags", args)
	}
	checkPodMonitor(t, root, dep)
	// Crossplane's RBAC manager binds the pinned ServiceAccount to the
	// provider's own CRDs, and nothing more (cluster/rbac.yaml adds the
	// rest, later).
	waitAllowed(ctx, t, kc, "system:serviceaccount:crossplane-system:"+serviceAccount,
		authzv1.ResourceAttributes{Group: "database.ayatori.ddupan.top", Resource: "postgresqldatabases", Verb: "update", Namespace: "shop"})
	if sa, err := kl.ready(ctx, 1, 2*time.Minute); err != nil {
		t.Fatalf("the provider did not become ready as its Deployment's ServiceAccount: %v%s", err, diagnose())
	} else {
		t.Logf("the packaged provider runs as ServiceAccount %s with %v", sa, dep.Spec.Template.Spec.Containers[0].Args)
	}
	checkControllers(ctx, t, kl, 1, nil, diagnose)

	run("activate")
	active := map[string]bool{
		"postgresqlinstances": true, "postgresqlbindings": true, "postgresqldatabases": true, "postgresqlroles": true,
		"locks": true, "clusterlocks": true,
	}
	checkActivation(ctx, t, kube, root, active)
	checkControllers(ctx, t, kl, 1, active, diagnose)

	// A plain package install: Locks cannot be enforced yet, and a Lock
	// says so with the one command; the guide's next step grants the
	// same files, and the running provider installs the policy and the
	// Lock turns Active, without a restart.
	probe := lockProbe(ctx, t, kube, sh)
	run("cluster-manifests")
	for _, ra := range []authzv1.ResourceAttributes{
		{Group: "database.ayatori.ddupan.top", Resource: "postgresqltenants", Verb: "patch", Namespace: "shop"},
		{Group: "protection.crossplane.io", Resource: "usages", Verb: "create", Namespace: "shop"},
		{Resource: "namespaces", Verb: "list"},
	} {
		waitAllowed(ctx, t, kc, "system:serviceaccount:crossplane-system:"+serviceAccount, ra)
	}
	probe(ctx)
	checkControllers(ctx, t, kl, 1, active, diagnose)

	run("register-instance")

	// Core runs functions with the External runtime here: serve the two
	// functions once the Configuration's dependencies are installed.
	fnErr := make(chan error, 2)
	go func() {
		fnErr <- core.RunInstalledFunction(ctx, kube, configuration.FunctionTenant, functionBin, work)
	}()
	go func() {
		fnErr <- core.RunInstalledFunction(ctx, kube, configuration.FunctionAutoReady, filepath.Join(tools, "function-auto-ready"), work)
	}()
	run("first-claim")
	for range 2 {
		if err := <-fnErr; err != nil {
			t.Fatal(err)
		}
	}
	secret := &corev1.Secret{}
	if err := kube.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "main-orders-postgresql"}, secret); err != nil {
		t.Fatal(err)
	}
	// The personas as the guide sets them up: the shop team (edit) claims
	// and reads Secrets but touches none of the managed kinds; the platform
	// team manages them.
	group := "database.ayatori.ddupan.top"
	dev, platform := []string{"shop-developers", "system:authenticated"}, []string{"platform-team", "system:authenticated"}
	for _, a := range []struct {
		groups  []string
		ra      authzv1.ResourceAttributes
		allowed bool
	}{
		{dev, authzv1.ResourceAttributes{Group: group, Resource: "postgresqltenants", Verb: "create", Namespace: "shop"}, true},
		{dev, authzv1.ResourceAttributes{Resource: "secrets", Verb: "get", Namespace: "shop"}, true},
		{dev, authzv1.ResourceAttributes{Group: group, Resource: "postgresqldatabases", Verb: "create", Namespace: "shop"}, false},
		{dev, authzv1.ResourceAttributes{Group: group, Resource: "postgresqldatabases", Verb: "update", Namespace: "shop"}, false},
		{dev, authzv1.ResourceAttributes{Group: group, Resource: "postgresqlroles", Verb: "create", Namespace: "shop"}, false},
		{dev, authzv1.ResourceAttributes{Group: group, Resource: "postgresqlbindings", Verb: "create", Namespace: "shop"}, false},
		{dev, authzv1.ResourceAttributes{Group: group, Resource: "postgresqltenants", Verb: "create", Namespace: "default"}, false},
		{platform, authzv1.ResourceAttributes{Group: group, Resource: "postgresqldatabases", Verb: "update", Namespace: "shop"}, true},
		{platform, authzv1.ResourceAttributes{Group: group, Resource: "postgresqlinstances", Verb: "create"}, true},
	} {
		waitAccess(ctx, t, kc, "someone", a.groups, a.ra, a.allowed)
	}
	db := &unstructured.Unstructured{}
	db.SetAPIVersion("database.ayatori.ddupan.top/v1alpha1")
	db.SetKind("PostgreSQLDatabase")
	if err := kube.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "orders"}, db); err != nil {
		t.Fatalf("the claim's database has no PostgreSQLDatabase: %v", err)
	}
	if phase, _, _ := unstructured.NestedString(db.Object, "status", "binding", "phase"); phase != "Bound" || len(db.GetOwnerReferences()) != 0 {
		t.Errorf("the claim's database is %q with owners %v; want Bound and owned by nothing", phase, db.GetOwnerReferences())
	}
	conn, err := providertest.ConnectWithSecret(ctx, secret.Data, "")
	if err != nil {
		t.Fatalf("the tenant cannot log in with its Secret: %v", err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE orders (id int PRIMARY KEY); INSERT INTO orders VALUES (42)"); err != nil {
		t.Fatalf("the tenant cannot create a table: %v", err)
	}
	_ = conn.Close(ctx)

	run("lock")

	// A kind activated later starts its controller in the running
	// provider (still its first start), and the others stay off.
	run("activate-later")
	active["postgresqlschemas"] = true
	checkActivation(ctx, t, kube, root, active)
	checkControllers(ctx, t, kl, 1, active, diagnose)

	run("upgrade")
	rev2 := activeRevision(ctx, t, kube, "ProviderRevision", providerName)
	if rev2.GetName() == rev.GetName() {
		t.Fatalf("the active revision is still %s after the upgrade", rev.GetName())
	}
	if img, _, _ := unstructured.NestedString(rev2.Object, "spec", "image"); !strings.HasSuffix(img, ":v0.2.0") {
		t.Errorf("the active revision's image is %s, want v0.2.0", img)
	}
	if sa, err := kl.ready(ctx, 2, 2*time.Minute); err != nil {
		t.Fatalf("the upgraded provider did not become ready: %v%s", err, diagnose())
	} else if sa != serviceAccount {
		t.Errorf("after the upgrade the provider runs as %q, want the pinned %q", sa, serviceAccount)
	}
	// The MRDs keep their states across the upgrade, and the new process
	// starts the controllers of the active kinds only.
	checkActivation(ctx, t, kube, root, active)
	checkControllers(ctx, t, kl, 2, active, diagnose)
	// One provider of that source, not a second copy installed by the
	// dependency resolver while the revision was replaced.
	providers := &unstructured.UnstructuredList{}
	providers.SetAPIVersion("pkg.crossplane.io/v1")
	providers.SetKind("ProviderList")
	if err := kube.List(ctx, providers); err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	for _, p := range providers.Items {
		pkgs = append(pkgs, p.GetName())
	}
	if diff := cmp.Diff([]string{providerName}, pkgs); diff != "" {
		t.Errorf("Providers after the upgrade (-want +got):\n%s", diff)
	}
	// The upgraded provider reconciles what the old one created.
	waitReady(ctx, t, kube, "database.ayatori.ddupan.top/v1alpha1", "PostgreSQLInstance", "", "main")
	waitReady(ctx, t, kube, "database.ayatori.ddupan.top/v1alpha1", "PostgreSQLTenant", "shop", "orders")

	run("uninstall")
	for _, kind := range []string{"Provider", "Function", "Configuration"} {
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion("pkg.crossplane.io/v1")
		l.SetKind(kind + "List")
		if err := kube.List(ctx, l); err != nil {
			t.Fatal(err)
		}
		for _, p := range l.Items {
			t.Errorf("the uninstall left %s %s behind", kind, p.GetName())
		}
	}
	// What is left, said precisely: a failure here on a loaded machine
	// must show whether the CRDs (and what holds them) or the process
	// outlived the uninstall.
	var left []string
	if err := providertest.Wait(ctx, 3*time.Minute, func(ctx context.Context) (bool, error) {
		crds := &extv1.CustomResourceDefinitionList{}
		if err := kube.List(ctx, crds); err != nil {
			return false, err
		}
		left = nil
		for _, c := range crds.Items {
			if c.Spec.Group == "database.ayatori.ddupan.top" {
				var owners []string
				for _, o := range c.GetOwnerReferences() {
					owners = append(owners, o.Kind+"/"+o.Name)
				}
				left = append(left, fmt.Sprintf("CRD %s (deleting since %v, finalizers %v, owners %v)", c.Name, c.GetDeletionTimestamp(), c.GetFinalizers(), owners))
			}
		}
		if kl.running() {
			left = append(left, "the provider process ("+kl.status()+")")
		}
		return len(left) == 0, nil
	}); err != nil {
		t.Errorf("outlived the uninstall: %s: %v%s", strings.Join(left, "; "), err, diagnose())
	}
	// Nothing of value was lost: the tenant's data and its owner remain;
	// only its login is gone.
	admin, err := pg.Connect(ctx, "orders")
	if err != nil {
		t.Fatalf("the tenant's database is gone: %v", err)
	}
	defer admin.Close(ctx) //nolint:errcheck // Best effort.
	var id int
	if err := admin.QueryRow(ctx, "SELECT id FROM orders").Scan(&id); err != nil || id != 42 {
		t.Errorf("the tenant's row: %d, %v", id, err)
	}
	var roles []string
	rows, err := admin.Query(ctx, "SELECT rolname FROM pg_roles WHERE rolname LIKE 'orders%' ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			t.Fatal(err)
		}
		roles = append(roles, r)
	}
	if diff := cmp.Diff([]string{"orders_owner"}, roles); diff != "" {
		t.Errorf("roles after the uninstall (-want +got):\n%s", diff)
	}
}

// shell returns a runner of the guide's blocks: bash, from the repository
// root, with kubectl, the crossplane CLI, Go and make on PATH, the test
// cluster's kubeconfig, the caches of a reader's machine (Go's, and the
// tools this repository builds), and the registry and server variables the
// guide asks the reader to set.
func shell(t *testing.T, root, work, kubeconfig, tools string, pg *pgserver.Server, registry string) func(context.Context, string) ([]byte, error) {
	t.Helper()
	bin := filepath.Join(work, "bin")
	if err := os.MkdirAll(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{
		"kubectl":    filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"),
		"crossplane": filepath.Join(tools, "crossplane-cli"),
	} {
		if err := os.Symlink(target, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	ca := filepath.Join(work, "db-ca.crt")
	if err := os.WriteFile(ca, pg.CA.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(work, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is not on PATH: %v", err)
	}
	env := []string{
		"PATH=" + bin + ":" + filepath.Dir(goBin) + ":/usr/bin:/bin",
		"REGISTRY=" + registry,
		"HOME=" + home,
		"KUBECONFIG=" + kubeconfig,
		"PG_HOST=" + pg.Host,
		"PG_HOSTADDR=" + pg.Hostaddr,
		"PG_PORT=" + strconv.Itoa(pg.Port),
		"PG_CA_FILE=" + ca,
		"PG_ADMIN_USER=" + pg.AdminUser,
		"PG_ADMIN_PASSWORD=" + pg.AdminPassword,
	}
	for _, v := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOPROXY", "GOFLAGS"} {
		b, err := exec.Command("go", "env", v).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", v, err)
		}
		env = append(env, v+"="+strings.TrimSpace(string(b)))
	}
	if c := os.Getenv("PROVIDER_POSTGRESQL_CACHE"); c != "" {
		env = append(env, "PROVIDER_POSTGRESQL_CACHE="+c)
	} else {
		env = append(env, "PROVIDER_POSTGRESQL_CACHE="+filepath.Dir(filepath.Dir(tools)))
	}
	return func(ctx context.Context, script string) ([]byte, error) {
		out, err := runbook.Run(ctx, root, env, script)
		// The admin password is an input of one step; it never shows.
		return bytes.ReplaceAll(out, []byte(pg.AdminPassword), []byte("<redacted>")), err
	}
}

// autoReadyPackage builds a Function package of the function-auto-ready
// binary hack/crossplane-tools.sh built, like its upstream package.
func autoReadyPackage(t *testing.T, root, tools, work string) string {
	t.Helper()
	img := filepath.Join(work, "function-auto-ready-image.tar")
	pkg := filepath.Join(work, "function-auto-ready.xpkg")
	for _, args := range [][]string{
		{"go", "run", "./hack/image", "--binary", filepath.Join(tools, "function-auto-ready"), "--name", "function-auto-ready", "--tag", "function-auto-ready:v0.7.0", "--out", img},
		{filepath.Join(tools, "crossplane-cli"), "xpkg", "build", "--package-root=e2e/install/testdata/function-auto-ready", "--embed-runtime-image-tarball=" + img, "-o", pkg},
	} {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, b)
		}
	}
	return pkg
}

func writeExecutable(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	if len(b) == 0 {
		t.Fatalf("the package holds no %s binary", name)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

// activeRevision returns the active revision of a package.
func activeRevision(ctx context.Context, t *testing.T, kube client.Client, kind, pkg string) *unstructured.Unstructured {
	t.Helper()
	var active *unstructured.Unstructured
	if err := providertest.Wait(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("pkg.crossplane.io/v1")
		list.SetKind(kind + "List")
		if err := kube.List(ctx, list, client.MatchingLabels{"pkg.crossplane.io/package": pkg}); err != nil {
			return false, err
		}
		for i := range list.Items {
			if s, _, _ := unstructured.NestedString(list.Items[i].Object, "spec", "desiredState"); s == "Active" && conditionTrue(&list.Items[i], "RevisionHealthy") {
				active = &list.Items[i]
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("no healthy active %s of %s: %v", kind, pkg, err)
	}
	return active
}

func conditionTrue(u *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ && m["status"] == "True" {
			return true
		}
	}
	return false
}

// checkActivation checks that Crossplane made a ManagedResourceDefinition
// of every CRD in package/crds, and that exactly the kinds in active
// (by plural) are Active and served, their CRDs established.
func checkActivation(ctx context.Context, t *testing.T, kube client.Client, root string, active map[string]bool) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(root, "package", "crds"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		group, plural, _ := strings.Cut(strings.TrimSuffix(e.Name(), ".yaml"), "_")
		name := plural + "." + group
		want := "Inactive"
		if active[plural] {
			want = "Active"
		}
		mrd := &unstructured.Unstructured{}
		mrd.SetAPIVersion("apiextensions.crossplane.io/v1alpha1")
		mrd.SetKind("ManagedResourceDefinition")
		var state string
		if err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
			if err := kube.Get(ctx, client.ObjectKey{Name: name}, mrd); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			state, _, _ = unstructured.NestedString(mrd.Object, "spec", "state")
			return state == want, nil
		}); err != nil {
			t.Errorf("ManagedResourceDefinition %s is %q, want %s: %v", name, state, want, err)
			continue
		}
		crd := &extv1.CustomResourceDefinition{}
		if !active[plural] {
			if err := kube.Get(ctx, client.ObjectKey{Name: name}, crd); !kerrors.IsNotFound(err) {
				t.Errorf("kind %s is not activated, yet its CRD is served (%v)", name, err)
			}
			continue
		}
		if err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
			if err := kube.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			for _, c := range crd.Status.Conditions {
				if c.Type == extv1.Established && c.Status == extv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		}); err != nil {
			t.Errorf("CRD %s not established: %v", name, err)
		}
	}
}

// controllersOf are the controllers the provider runs for each kind (by
// plural), by their controller-runtime names.
var controllersOf = map[string][]string{
	"postgresqlinstances":         {"managed/postgresqlinstance.database.ayatori.ddupan.top"},
	"postgresqldatabases":         {"managed/postgresqldatabase.database.ayatori.ddupan.top", "binding/postgresqldatabase"},
	"postgresqlbindings":          {"binding/postgresqlbinding"},
	"postgresqlroles":             {"managed/postgresqlrole.database.ayatori.ddupan.top"},
	"postgresqlschemas":           {"managed/postgresqlschema.database.ayatori.ddupan.top"},
	"postgresqlgrants":            {"managed/postgresqlgrant.database.ayatori.ddupan.top"},
	"postgresqldefaultprivileges": {"managed/postgresqldefaultprivileges.database.ayatori.ddupan.top"},
	"locks":                       {"lock"},
	"clusterlocks":                {"clusterlock"},
}

// checkControllers waits until the provider, at its starts-th start, runs
// the controllers of the kinds in active, and checks that it runs none of
// the other kinds'.
func checkControllers(ctx context.Context, t *testing.T, kl *kubelet, starts int, active map[string]bool, diagnose func() string) {
	t.Helper()
	var want, unwanted []string
	for plural, names := range controllersOf {
		if active[plural] {
			want = append(want, names...)
		} else {
			unwanted = append(unwanted, names...)
		}
	}
	var running []string
	var n int
	err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		var err error
		if running, n, err = kl.controllers(ctx); err != nil {
			return false, nil //nolint:nilerr // Not listening yet: try again.
		}
		for _, w := range want {
			if !slices.Contains(running, w) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the provider does not run the controllers of the active kinds %v; it runs %v: %v%s", want, running, err, diagnose())
	}
	if n != starts {
		t.Errorf("the provider was started %d times, want %d: activating a kind must not need a restart", n, starts)
	}
	for _, u := range unwanted {
		if slices.Contains(running, u) {
			t.Errorf("the provider runs controller %s, whose kind is not active", u)
		}
	}
}

// deploymentOf returns the Deployment Crossplane made for a revision.
func deploymentOf(ctx context.Context, t *testing.T, kube client.Client, rev string) *appsv1.Deployment {
	t.Helper()
	var dep *appsv1.Deployment
	if err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		list := &appsv1.DeploymentList{}
		if err := kube.List(ctx, list, client.InNamespace(crossplane.Namespace)); err != nil {
			return false, err
		}
		for i := range list.Items {
			if s := list.Items[i].Spec.Selector; s != nil && s.MatchLabels["pkg.crossplane.io/revision"] == rev {
				dep = &list.Items[i]
			}
		}
		return dep != nil, nil
	}); err != nil {
		t.Fatalf("no Deployment for revision %s: %v", rev, err)
	}
	return dep
}

// waitAllowed waits until user may do what ra says (the RBAC manager works
// asynchronously).
func waitAllowed(ctx context.Context, t *testing.T, kc kubernetes.Interface, user string, ra authzv1.ResourceAttributes) {
	t.Helper()
	waitAccess(ctx, t, kc, user, []string{"system:serviceaccounts", "system:serviceaccounts:crossplane-system", "system:authenticated"}, ra, true)
}

// waitAccess waits until the authorizer answers allowed for user in
// groups (aggregated roles take a moment to fill).
func waitAccess(ctx context.Context, t *testing.T, kc kubernetes.Interface, user string, groups []string, ra authzv1.ResourceAttributes, allowed bool) {
	t.Helper()
	if err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		r, err := kc.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
			User: user, Groups: groups, ResourceAttributes: &ra,
		}}, metav1.CreateOptions{})
		return err == nil && r.Status.Allowed == allowed, err
	}); err != nil {
		t.Errorf("%s (groups %v) may %s %s.%s in %q: want %t: %v", user, groups, ra.Verb, ra.Resource, ra.Group, ra.Namespace, allowed, err)
	}
}

func waitReady(ctx context.Context, t *testing.T, kube client.Client, apiVersion, kind, ns, name string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	if err := providertest.Wait(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
		if err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return conditionTrue(u, "Ready"), nil
	}); err != nil {
		t.Errorf("%s %s/%s is not Ready: %v", kind, ns, name, err)
	}
}

// lockProbe locks a PostgreSQLInstance of no server (a ClusterLock) on a
// provider installed from its package alone: the Lock says PolicyMissing,
// with the command that grants what a package cannot ask for (for the
// packaged provider's version), and the Instance can still be deleted.
// The function it returns waits, once that is granted, until the Lock is
// Active and the delete is refused, then removes both.
func lockProbe(ctx context.Context, t *testing.T, kube client.Client, sh func(context.Context, string) ([]byte, error)) func(context.Context) {
	t.Helper()
	in := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "database.ayatori.ddupan.top/v1alpha1", "kind": "PostgreSQLInstance",
		"metadata": map[string]any{"name": "lock-probe"},
		"spec": map[string]any{
			"endpoint":           map[string]any{"host": "probe.invalid", "hostaddr": "127.0.0.1"},
			"adminCredentialRef": map[string]any{"name": "lock-probe-admin"},
		},
	}}
	lock := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "database.ayatori.ddupan.top/v1alpha1", "kind": "ClusterLock",
		"metadata": map[string]any{"name": "lock-probe"},
		"spec":     map[string]any{"targetRef": map[string]any{"kind": "PostgreSQLInstance", "name": "lock-probe"}, "reason": "probe"},
	}}
	for _, o := range []client.Object{in, lock} {
		if err := kube.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	ready := func(reason string) string {
		t.Helper()
		var msg, got string
		err := providertest.Wait(ctx, 4*time.Minute, func(ctx context.Context) (bool, error) {
			if err := kube.Get(ctx, client.ObjectKeyFromObject(lock), lock); err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(lock.Object, "status", "conditions")
			for _, c := range conds {
				if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
					got, _ = m["reason"].(string)
					msg, _ = m["message"].(string)
				}
			}
			return got == reason, nil
		})
		if err != nil {
			t.Fatalf("the ClusterLock is %s, not %s: %v (%q)", got, reason, err, msg)
		}
		return msg
	}
	msg := ready("PolicyMissing")
	grant := cluster.GrantCommand("v0.1.0")
	if !strings.Contains(msg, grant) {
		t.Errorf("the Lock's PolicyMissing message does not give the one command %q: %q", grant, msg)
	}
	t.Logf("a Lock after a plain package install: %s", msg)
	return func(ctx context.Context) {
		t.Helper()
		start := time.Now()
		msg := ready("Active")
		t.Logf("the Lock turned Active %s after the grant, without a restart: %s", time.Since(start).Round(time.Second), msg)
		if b, err := sh(ctx, "kubectl delete postgresqlinstances.database.ayatori.ddupan.top lock-probe --dry-run=server"); err == nil {
			t.Errorf("the locked Instance could be deleted: %s", b)
		}
		// The Lock first: its target is deletable once it is gone.
		if err := kube.Delete(ctx, lock); err != nil {
			t.Fatal(err)
		}
		if err := providertest.Wait(ctx, time.Minute, func(ctx context.Context) (bool, error) {
			err := kube.Get(ctx, client.ObjectKeyFromObject(lock), lock)
			return kerrors.IsNotFound(err), client.IgnoreNotFound(err)
		}); err != nil {
			t.Fatalf("the ClusterLock did not go: %v", err)
		}
		if err := kube.Delete(ctx, in); err != nil {
			t.Fatalf("the Instance, no longer locked: %v", err)
		}
	}
}

// checkPushed fails the test unless each package is in the registry at
// the tag, as the guide's step 0 left it.
func checkPushed(ctx context.Context, t *testing.T, reg *registry.Registry, pkgs []string, tag string) {
	t.Helper()
	for _, p := range pkgs {
		if _, err := reg.Digest(ctx, "ayatori/"+p, tag); err != nil {
			t.Errorf("step own-registry did not push %s:%s: %v", p, tag, err)
		}
	}
}

// checkPodMonitor fails the test unless cluster/monitoring/podmonitor.yaml
// selects the pods of the Deployment Crossplane made for the provider, in
// its namespace, and scrapes a port its container names.
func checkPodMonitor(t *testing.T, root string, dep *appsv1.Deployment) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "cluster", "monitoring", "podmonitor.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pm struct {
		Metadata struct {
			Namespace string `json:"namespace"`
		} `json:"metadata"`
		Spec struct {
			Selector            metav1.LabelSelector `json:"selector"`
			PodMetricsEndpoints []struct {
				Port string `json:"port"`
			} `json:"podMetricsEndpoints"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &pm); err != nil {
		t.Fatal(err)
	}
	if pm.Metadata.Namespace != dep.Namespace {
		t.Errorf("the PodMonitor is in namespace %q, the provider's pods in %q", pm.Metadata.Namespace, dep.Namespace)
	}
	sel, err := metav1.LabelSelectorAsSelector(&pm.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	if sel.Empty() || !sel.Matches(labels.Set(dep.Spec.Template.Labels)) {
		t.Errorf("the PodMonitor's selector %s does not select the provider's pods, labelled %v", sel, dep.Spec.Template.Labels)
	}
	ports := map[string]bool{}
	for _, c := range dep.Spec.Template.Spec.Containers {
		for _, p := range c.Ports {
			ports[p.Name] = true
		}
	}
	if len(pm.Spec.PodMetricsEndpoints) == 0 {
		t.Error("the PodMonitor scrapes no endpoint")
	}
	for _, e := range pm.Spec.PodMetricsEndpoints {
		if !ports[e.Port] {
			t.Errorf("the PodMonitor scrapes port %q, which the provider's container does not name (it names %v)", e.Port, ports)
		}
	}
}
