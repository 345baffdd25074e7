// Package pgctl is what the kubectl pg plugin does: the pending plans of
// a namespace or a cluster as a table, a preview of a change and its
// apply (management policies narrowed to Observe and given back, never
// wider than they were), the drift the provider found, and one view of
// why a resource is as it is. It reads and writes the API server only.
package pgctl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

// CLI runs the plugin's commands.
type CLI struct {
	// Kube reads and writes the cluster.
	Kube client.Client
	// Out is where the command writes.
	Out io.Writer
	// Namespace is the namespace of namespaced resources.
	Namespace string
	// AllNamespaces lists every namespace (plan, drift).
	AllNamespaces bool
	// Output is "" (a table), "json" or "yaml".
	Output string
	// Err is where long commands report their progress (nil: nowhere).
	Err io.Writer
	// Inventory are the flags of kubectl pg inventory.
	Inventory InventoryOptions
}

// Usage is the plugin's help.
const Usage = `kubectl pg: plans, previews, drift and tenants of provider-postgresql

Usage:
  kubectl pg plan [-A] [KIND/NAME]      pending statements, as a table (one resource: its statements)
  kubectl pg preview KIND/NAME          stop sending: managementPolicies [Observe], the plan shows what a change would send
  kubectl pg apply KIND/NAME            send it: the management policies the preview saved, never more
  kubectl pg drift [-A]                 the last change made on the server outside the provider, per resource
  kubectl pg why KIND/NAME              conditions, the plan and the last events, in one view
  kubectl pg trace tenant/NAME          a claim (or namespaced Tenant) down to its credential: binding, database, owner role, login role, Secret or vault path
  kubectl pg inventory --instance NAME --dir DIR [--mapping FILE] [--provider-namespace NS] [--dsn DSN] [--include-managed]
                                        read a running server (its roles, databases, schemas, extensions) and write
                                        one Observe-only manifest per object, with a summary of what was skipped and why
  kubectl pg version                    the plugin's version

KIND is a kind (PostgreSQLRole), its short name (pgrole) or a plain word (role, database, schema, grant,
defaultprivileges, binding, instance, tenant). Flags: -n NAMESPACE, -A, -o json|yaml, --kubeconfig, --context.
`

// Run runs the command args names.
func (c *CLI) Run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		_, err := io.WriteString(c.Out, Usage)
		return err
	}
	arg := func() (string, error) {
		if len(args) != 2 {
			return "", errors.Errorf("kubectl pg %s takes one KIND/NAME", args[0])
		}
		return args[1], nil
	}
	switch args[0] {
	case "plan":
		if len(args) > 2 {
			return errors.Errorf("kubectl pg plan takes at most one KIND/NAME")
		}
		if len(args) == 2 {
			return c.planOf(ctx, args[1])
		}
		return c.plans(ctx)
	case "preview", "apply", "why", "trace":
		a, err := arg()
		if err != nil {
			return err
		}
		switch args[0] {
		case "preview":
			return c.preview(ctx, a)
		case "apply":
			return c.apply(ctx, a)
		case "why":
			return c.why(ctx, a)
		default:
			return c.trace(ctx, a)
		}
	case "inventory":
		if len(args) != 1 {
			return errors.Errorf("kubectl pg inventory takes flags only (--instance, --dir, --mapping, --provider-namespace, --dsn, --include-managed)")
		}
		return c.inventory(ctx)
	case "drift":
		if len(args) != 1 {
			return errors.Errorf("kubectl pg drift takes no argument")
		}
		return c.drift(ctx)
	case "help", "-h", "--help":
		_, err := io.WriteString(c.Out, Usage)
		return err
	}
	return errors.Errorf("unknown command %q; kubectl pg help lists them", args[0])
}

// words are the names a kind answers to, besides its own.
func words(k v1alpha1.KindInfo) []string {
	kind := strings.ToLower(k.Kind)
	short := strings.TrimPrefix(kind, "postgresql")
	return []string{kind, kind + "s", short, short + "s", "pg" + short, "pg" + short + "s"}
}

// resolve reads KIND/NAME.
func resolve(arg string) (v1alpha1.KindInfo, string, error) {
	kind, name, ok := strings.Cut(arg, "/")
	if !ok || kind == "" || name == "" {
		return v1alpha1.KindInfo{}, "", errors.Errorf("%q is not KIND/NAME (for example role/app or pgdatabase/orders)", arg)
	}
	for _, k := range v1alpha1.Kinds {
		if slices.Contains(words(k), strings.ToLower(kind)) {
			return k, name, nil
		}
	}
	return v1alpha1.KindInfo{}, "", errors.Errorf("%q is not a kind of provider-postgresql", kind)
}

// get reads the object KIND/NAME names.
func (c *CLI) get(ctx context.Context, arg string) (v1alpha1.KindInfo, v1alpha1.Object, error) {
	k, name, err := resolve(arg)
	if err != nil {
		return k, nil, err
	}
	o := k.New()
	key := client.ObjectKey{Name: name}
	if !k.Cluster {
		key.Namespace = c.Namespace
	}
	if err := c.Kube.Get(ctx, key, o); err != nil {
		return k, nil, errors.Wrapf(err, "cannot get %s %s", k.Kind, name)
	}
	return k, o, nil
}

// list lists the objects of k in the command's namespaces.
func (c *CLI) list(ctx context.Context, k v1alpha1.KindInfo) ([]v1alpha1.Object, error) {
	l := k.NewList()
	var opts []client.ListOption
	if !k.Cluster && !c.AllNamespaces {
		opts = append(opts, client.InNamespace(c.Namespace))
	}
	if err := c.Kube.List(ctx, l, opts...); err != nil {
		return nil, errors.Wrapf(err, "cannot list %ss", k.Kind)
	}
	var out []v1alpha1.Object
	err := forEach(l, func(o v1alpha1.Object) { out = append(out, o) })
	return out, err
}

// print writes v as -o asks, or the table rows (headers first) make.
func (c *CLI) print(v any, rows func() [][]string) error {
	switch c.Output {
	case "json":
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(c.Out, string(b))
		return err
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = c.Out.Write(b)
		return err
	case "":
		w := tabwriter.NewWriter(c.Out, 0, 4, 3, ' ', 0)
		for _, r := range rows() {
			if _, err := fmt.Fprintln(w, strings.Join(r, "\t")); err != nil {
				return err
			}
		}
		return w.Flush()
	}
	return errors.Errorf("-o %s: json or yaml", c.Output)
}
