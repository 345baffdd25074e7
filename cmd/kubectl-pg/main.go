// kubectl-pg is a kubectl plugin for provider-postgresql: plans, previews,
// drift and tenants. Install it with
//
//	go install github.com/ayatori/provider-postgresql/cmd/kubectl-pg@latest
//
// (or with krew: .krew.yaml is its manifest's template, which
// `make krew` renders with the archives of a release) and run
// `kubectl pg help`.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/ayatori/provider-postgresql/internal/controller/manager"
	"github.com/ayatori/provider-postgresql/internal/pgctl"
	"github.com/ayatori/provider-postgresql/internal/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "kubectl pg:", err)
		stop()
		os.Exit(1) //nolint:gocritic // stop ran.
	}
}

// flags are the plugin's flags, anywhere among its arguments, as kubectl
// takes them.
type flags struct {
	namespace, output, kubeconfig, context string
	all                                    bool
	inventory                              pgctl.InventoryOptions
	args                                   []string
}

func parse(args []string) (flags, error) {
	var f flags
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(a, "=")
		take := func() (string, error) {
			if hasValue {
				return value, nil
			}
			if i+1 >= len(args) {
				return "", errors.Errorf("%s needs a value", name)
			}
			i++
			return args[i], nil
		}
		var err error
		switch name {
		case "-n", "--namespace":
			f.namespace, err = take()
		case "-o", "--output":
			f.output, err = take()
		case "--kubeconfig":
			f.kubeconfig, err = take()
		case "--context":
			f.context, err = take()
		case "--instance":
			f.inventory.Instance, err = take()
		case "--provider-namespace":
			f.inventory.ProviderNamespace, err = take()
		case "--dsn":
			f.inventory.DSN, err = take()
		case "--dir":
			f.inventory.Dir, err = take()
		case "--mapping":
			f.inventory.MappingFile, err = take()
		case "--include-managed":
			f.inventory.IncludeManaged = true
		case "-A", "--all-namespaces":
			f.all = true
		default:
			if strings.HasPrefix(a, "-") && a != "-h" && a != "--help" {
				return f, errors.Errorf("unknown flag %s; kubectl pg help lists them", a)
			}
			f.args = append(f.args, a)
		}
		if err != nil {
			return f, err
		}
	}
	return f, nil
}

func run(ctx context.Context, args []string) error {
	f, err := parse(args)
	if err != nil {
		return err
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: f.context})
	cli := &pgctl.CLI{Out: os.Stdout, Err: os.Stderr, Namespace: f.namespace, AllNamespaces: f.all, Output: f.output, Inventory: f.inventory}
	if len(f.args) == 0 || f.args[0] == "help" || f.args[0] == "-h" || f.args[0] == "--help" {
		return cli.Run(ctx, nil)
	}
	if f.args[0] == "version" {
		_, err := fmt.Fprintln(os.Stdout, "kubectl-pg", version.Version)
		return err
	}
	if f.args[0] == "inventory" && f.inventory.DSN != "" {
		// Reading a server through a connection string needs no cluster:
		// the manifests go to a folder, for Git.
		if cli.Namespace == "" {
			cli.Namespace, _, _ = cc.Namespace()
		}
		return cli.Run(ctx, f.args)
	}
	if cli.Namespace == "" {
		if cli.Namespace, _, err = cc.Namespace(); err != nil {
			return errors.Wrap(err, "cannot read the kubeconfig's namespace")
		}
	}
	cfg, err := cc.ClientConfig()
	if err != nil {
		return errors.Wrap(err, "cannot read the kubeconfig")
	}
	s, err := manager.Scheme()
	if err != nil {
		return err
	}
	if cli.Kube, err = client.New(cfg, client.Options{Scheme: s}); err != nil {
		return errors.Wrap(err, "cannot reach the cluster")
	}
	return cli.Run(ctx, f.args)
}
