package pgctl

import (
	"context"
	"fmt"
	"strconv"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/management"
)

// A Pending is one resource's plan.
type Pending struct {
	Namespace string `json:"namespace,omitempty"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	// ObserveOnly: nothing is sent; widening the policies sends the plan.
	ObserveOnly bool          `json:"observeOnly"`
	Plan        v1alpha1.Plan `json:"plan"`
}

func forEach(l runtime.Object, f func(v1alpha1.Object)) error {
	items, err := apimeta.ExtractList(l)
	if err != nil {
		return err
	}
	for _, i := range items {
		if o, ok := i.(v1alpha1.Object); ok {
			f(o)
		}
	}
	return nil
}

// pending is every plan of the kinds that plan, in the command's
// namespaces.
func (c *CLI) pending(ctx context.Context) ([]Pending, error) {
	var out []Pending
	for _, k := range v1alpha1.KindsWhere(func(k v1alpha1.KindInfo) bool { return k.Planned }) {
		objs, err := c.list(ctx, k)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if p := pendingOf(k, o); p != nil {
				out = append(out, *p)
			}
		}
	}
	return out, nil
}

func pendingOf(k v1alpha1.KindInfo, o v1alpha1.Object) *Pending {
	pl, ok := o.(v1alpha1.Planned)
	if !ok || pl.GetPlan() == nil {
		return nil
	}
	mg, _ := o.(resource.Managed)
	return &Pending{Namespace: o.GetNamespace(), Kind: k.Kind, Name: o.GetName(), ObserveOnly: mg != nil && management.ObserveOnly(mg), Plan: *pl.GetPlan()}
}

// plans prints every pending plan as a table.
func (c *CLI) plans(ctx context.Context) error {
	ps, err := c.pending(ctx)
	if err != nil {
		return err
	}
	return c.print(ps, func() [][]string {
		if len(ps) == 0 {
			return [][]string{{"Nothing pending."}}
		}
		rows := [][]string{{"NAMESPACE", "KIND", "NAME", "ACTION", "STATEMENTS", "SENT", "SUMMARY"}}
		for _, p := range ps {
			sent := "next reconcile"
			if p.ObserveOnly {
				sent = "when widened"
			}
			rows = append(rows, []string{p.Namespace, p.Kind, p.Name, string(p.Plan.Action), strconv.Itoa(len(p.Plan.Statements) + int(p.Plan.Omitted)), sent, p.Plan.Summary})
		}
		return rows
	})
}

// planOf prints one resource's plan, statement by statement.
func (c *CLI) planOf(ctx context.Context, arg string) error {
	k, o, err := c.get(ctx, arg)
	if err != nil {
		return err
	}
	if !k.Planned {
		return errors.Errorf("a %s has no plan of its own", k.Kind)
	}
	p := pendingOf(k, o)
	if p == nil {
		p = &Pending{Namespace: o.GetNamespace(), Kind: k.Kind, Name: o.GetName()}
	}
	return c.print(p, func() [][]string {
		if len(p.Plan.Statements) == 0 {
			return [][]string{{fmt.Sprintf("%s %s: nothing pending.", k.Kind, o.GetName())}}
		}
		when := "The next reconcile sends:"
		if p.ObserveOnly {
			when = "Nothing is sent while managementPolicies is [Observe]; `kubectl pg apply " + arg + "` sends:"
		}
		rows := [][]string{{p.Plan.Summary}, {when}}
		for i, s := range p.Plan.Statements {
			rows = append(rows, []string{fmt.Sprintf("  %d. %s", i+1, s)})
		}
		if p.Plan.Omitted > 0 {
			rows = append(rows, []string{fmt.Sprintf("  … and %d more", p.Plan.Omitted)})
		}
		return rows
	})
}
