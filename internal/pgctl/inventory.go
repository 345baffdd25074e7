package pgctl

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/clients/postgres"
	"github.com/ayatori/provider-postgresql/internal/controller/oninstance"
	"github.com/ayatori/provider-postgresql/internal/inventory"
)

// InventoryOptions are the flags of kubectl pg inventory.
type InventoryOptions struct {
	// Instance is the PostgreSQLInstance whose server is read, with its
	// admin credentials.
	Instance string
	// ProviderNamespace holds the Instance's admin Secret.
	ProviderNamespace string
	// DSN, instead of an Instance's credentials: a libpq connection
	// string or URL without a password (PGPASSWORD or ~/.pgpass give it);
	// the manifests then name Instance.
	DSN string
	// Dir is the folder the manifests are written to; it must not exist
	// or be empty.
	Dir string
	// MappingFile places the objects in namespaces; without it every
	// object goes to the CLI's namespace.
	MappingFile string
	// IncludeManaged describes the objects this provider manages too.
	IncludeManaged bool
}

// DefaultProviderNamespace is where Crossplane installs the provider.
const DefaultProviderNamespace = "crossplane-system"

// inventory reads a server and writes its objects as Observe-only
// manifests.
func (c *CLI) inventory(ctx context.Context) error {
	o := c.Inventory
	if o.Instance == "" {
		return errors.New("kubectl pg inventory needs --instance NAME: the PostgreSQLInstance the manifests name (and, without --dsn, whose server and admin credentials are used)")
	}
	if o.Dir == "" {
		return errors.New("kubectl pg inventory needs --dir DIR: the folder to write the manifests to")
	}
	mapping, err := c.mapping()
	if err != nil {
		return err
	}
	open, home, err := c.opener(ctx)
	if err != nil {
		return err
	}
	// Checked before the server is read; created only once the flags
	// and the credentials are known to be usable.
	if err := emptyDir(o.Dir); err != nil {
		return err
	}
	progress := func(format string, args ...any) {
		_, _ = fmt.Fprintf(c.errOut(), "inventory: "+format+"\n", args...) // Progress only: a closed stderr loses nothing.
	}
	start := time.Now()
	opts := inventory.Options{Instance: o.Instance, Mapping: mapping, Home: home, IncludeManaged: o.IncludeManaged}
	srv, err := inventory.Read(ctx, open, home, opts.Reads, progress)
	if err != nil {
		return err
	}
	took, read := time.Since(start), srv.Objects()
	progress("read %d objects of PostgreSQL %d in %s (%.0f objects/s)", read, srv.Version/10000, took.Round(time.Millisecond), float64(read)/max(took.Seconds(), 0.001))
	inv := inventory.Describe(srv, opts)
	if err := writeInventory(o.Dir, inv); err != nil {
		return err
	}
	return summarize(c.Out, o.Dir, inv)
}

func (c *CLI) errOut() io.Writer {
	if c.Err == nil {
		return io.Discard
	}
	return c.Err
}

// mapping reads the mapping file, or places everything in the CLI's
// namespace.
func (c *CLI) mapping() (inventory.Mapping, error) {
	if c.Inventory.MappingFile == "" {
		if c.Namespace == "" {
			return inventory.Mapping{}, errors.New("kubectl pg inventory needs a namespace (-n) or a mapping file (--mapping)")
		}
		return inventory.Everything(c.Namespace), nil
	}
	b, err := os.ReadFile(c.Inventory.MappingFile)
	if err != nil {
		return inventory.Mapping{}, errors.Wrap(err, "cannot read the mapping file")
	}
	var m inventory.Mapping
	if err := yaml.UnmarshalStrict(b, &m); err != nil {
		return inventory.Mapping{}, errors.Wrapf(err, "the mapping file %s", c.Inventory.MappingFile)
	}
	return m, errors.Wrapf(m.Validate(), "the mapping file %s", c.Inventory.MappingFile)
}

// emptyDir creates dir, or accepts it when it exists and is empty:
// nothing already there is overwritten.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case os.IsNotExist(err):
		return errors.Wrap(os.MkdirAll(dir, 0o750), "cannot create the inventory's folder")
	case err != nil:
		return errors.Wrap(err, "cannot read the inventory's folder")
	case len(entries) > 0:
		return errors.Errorf("%s is not empty: the inventory writes into a new or empty folder, so that nothing of yours is overwritten", dir)
	}
	return nil
}

// opener connects as the Instance's admin, or with the DSN; home is the
// database it starts from.
func (c *CLI) opener(ctx context.Context) (inventory.Opener, string, error) {
	o := c.Inventory
	if o.DSN != "" {
		if hasPassword(o.DSN) {
			return nil, "", errors.New("--dsn holds a password: give it in PGPASSWORD or ~/.pgpass instead, where other users of this machine cannot read it in the process list")
		}
		cfg, err := pgx.ParseConfig(o.DSN)
		if err != nil {
			// pgx quotes the string in its errors; say only which flag.
			return nil, "", errors.New("--dsn is not a connection string or URL libpq would take")
		}
		// libpq's hostaddr, which pgx does not know: dial that address,
		// and check the certificate against the host's name.
		if addr, ok := cfg.RuntimeParams["hostaddr"]; ok {
			delete(cfg.RuntimeParams, "hostaddr")
			ip := net.ParseIP(addr)
			if ip == nil {
				return nil, "", errors.Errorf("--dsn: hostaddr %q is not an IP address", addr)
			}
			cfg.LookupFunc = func(context.Context, string) ([]string, error) { return []string{ip.String()}, nil }
		}
		home := cfg.Database
		return func(_ context.Context, db string) (*pgx.ConnConfig, error) {
			c := cfg.Copy()
			c.Database = db
			return c, nil
		}, home, nil
	}
	if c.Kube == nil {
		return nil, "", errors.New("kubectl pg inventory --instance needs the cluster: the Instance and its admin Secret are read there")
	}
	in := &v1alpha1.PostgreSQLInstance{}
	if err := c.Kube.Get(ctx, client.ObjectKey{Name: o.Instance}, in); err != nil {
		return nil, "", errors.Wrapf(err, "cannot get PostgreSQLInstance %s", o.Instance)
	}
	ns := o.ProviderNamespace
	if ns == "" {
		ns = DefaultProviderNamespace
	}
	home := in.Spec.Endpoint.Database
	if home == "" {
		home = "postgres"
	}
	if in.Spec.AdminTokenSource != nil {
		// Its token comes from a command or file in the provider's pod,
		// which this machine has not.
		return nil, "", errors.Errorf("PostgreSQLInstance %s logs its admin in with a token (spec.adminTokenSource), which only the provider's pod can get: pass --dsn with a login of your own", o.Instance)
	}
	t, err := oninstance.ConnectionTarget(ctx, c.Kube, ns, nil, in, home)
	if err != nil {
		return nil, "", err
	}
	return func(_ context.Context, db string) (*pgx.ConnConfig, error) {
		ep := t.Endpoint
		ep.Database = db
		return postgres.ConnConfig(ep, t.Credentials)
	}, home, nil
}

// hasPassword reports whether a connection string or URL carries a
// password.
func hasPassword(dsn string) bool {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		_, set := u.User.Password()
		return set || u.Query().Has("password")
	}
	return passwordKeyword.MatchString(dsn)
}

// passwordKeyword finds password in a keyword/value connection string,
// where spaces around the = are allowed.
var passwordKeyword = regexp.MustCompile(`(^|\s)password\s*=`)

// writeInventory writes each manifest to its file, and the skips to
// skipped.yaml.
func writeInventory(dir string, inv inventory.Inventory) error {
	for _, m := range inv.Manifests {
		b, err := manifestYAML(m.Object)
		if err != nil {
			return err
		}
		p := filepath.Join(dir, filepath.FromSlash(m.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			return errors.Wrap(err, "cannot create a folder of the inventory")
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			return errors.Wrap(err, "cannot write a manifest")
		}
	}
	if len(inv.Skipped) == 0 && len(inv.Crossing) == 0 {
		return nil
	}
	b, err := yaml.Marshal(map[string]any{"skipped": inv.Skipped, "beforeWidening": inv.Crossing})
	if err != nil {
		return errors.Wrap(err, "cannot write skipped.yaml")
	}
	header := "# What the inventory did not describe, and why (skipped); what must be allowed or moved before widening (beforeWidening).\n# Not a manifest: apply the namespaces' folders, not this file.\n"
	return errors.Wrap(os.WriteFile(filepath.Join(dir, "skipped.yaml"), append([]byte(header), b...), 0o600), "cannot write skipped.yaml")
}

// manifestYAML is o as a manifest: no status, no empty metadata.
func manifestYAML(o v1alpha1.Object) ([]byte, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, errors.Wrap(err, "cannot convert a manifest")
	}
	delete(u, "status")
	if md, ok := u["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	b, err := yaml.Marshal(u)
	return b, errors.Wrap(err, "cannot write a manifest")
}

// summarize prints what was written and what was skipped, grouped by
// reason.
func summarize(w io.Writer, dir string, inv inventory.Inventory) error {
	written := map[string]int{}
	namespaces := map[string]bool{}
	for _, m := range inv.Manifests {
		written[m.Object.GetObjectKind().GroupVersionKind().Kind]++
		namespaces[m.Object.GetNamespace()] = true
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Wrote %d manifests to %s, managementPolicies [Observe], in %d namespaces:\n", len(inv.Manifests), dir, len(namespaces))
	for _, k := range slices.Sorted(maps.Keys(written)) {
		fmt.Fprintf(&b, "  %-20s %d\n", k, written[k])
	}
	if len(inv.Skipped) > 0 {
		type group struct {
			kind, reason string
			names        []string
		}
		var groups []*group
		for _, s := range inv.Skipped {
			i := slices.IndexFunc(groups, func(g *group) bool { return g.kind == s.Kind && g.reason == s.Reason })
			if i < 0 {
				groups = append(groups, &group{kind: s.Kind, reason: s.Reason})
				i = len(groups) - 1
			}
			groups[i].names = append(groups[i].names, shown(s.Name))
		}
		fmt.Fprintf(&b, "Skipped %d (listed in %s):\n", len(inv.Skipped), filepath.Join(dir, "skipped.yaml"))
		for _, g := range groups {
			names := g.names
			more := ""
			if len(names) > 8 {
				more = fmt.Sprintf(" and %d more", len(names)-8)
				names = names[:8]
			}
			fmt.Fprintf(&b, "  %d %s: %s\n      %s%s\n", len(g.names), plural(g.kind, len(g.names)), g.reason, strings.Join(names, ", "), more)
		}
	}
	if len(inv.Crossing) > 0 {
		fmt.Fprintf(&b, "Before widening, %d cross a namespace's boundary: a role may be a member of, or an object owned by, only a role of its own namespace, "+
			"unless the Instance's spec.policy.allowMembershipOf lists that role. Allow them there, or change the mapping to keep them together:\n", len(inv.Crossing))
		for _, s := range inv.Crossing {
			fmt.Fprintf(&b, "  %s %s: %s\n", s.Kind, shown(s.Name), s.Reason)
		}
	}
	b.WriteString("Apply them, then read the plans: every one must be empty (kubectl pg plan -A).\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// shown is a name read from the server as the summary prints it: quoted
// when it holds a character that is not printable, so that whoever may
// create a role or a table cannot write to the terminal of whoever runs
// the inventory (escape sequences, a line that reads like the summary's).
func shown(name string) string {
	if strings.IndexFunc(name, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return strconv.Quote(name)
	}
	return name
}

func plural(kind string, n int) string {
	if n == 1 {
		return kind
	}
	return kind + "s"
}
