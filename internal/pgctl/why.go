package pgctl

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

// lastEvents is how many of a resource's events why shows.
const lastEvents = 10

// A Why is one view of a resource: its conditions, its plan, its last
// events.
type Why struct {
	Kind       string           `json:"kind"`
	Name       string           `json:"name"`
	Namespace  string           `json:"namespace,omitempty"`
	Conditions []xpv2.Condition `json:"conditions"`
	Plan       *v1alpha1.Plan   `json:"plan,omitempty"`
	Events     []corev1.Event   `json:"events"`
	Drift      *v1alpha1.Drift  `json:"lastDrift,omitempty"`
	Policies   []string         `json:"managementPolicies,omitempty"`
}

type conditioned interface {
	GetCondition(xpv2.ConditionType) xpv2.Condition
}

// conditionsOf reads the conditions of any kind.
func conditionsOf(o v1alpha1.Object) []xpv2.Condition {
	c, ok := o.(conditioned)
	if !ok {
		return nil
	}
	var out []xpv2.Condition
	for _, t := range []xpv2.ConditionType{xpv2.TypeReady, xpv2.TypeSynced, v1alpha1.TypeUpToDate} {
		if got := c.GetCondition(t); got.Reason != "" {
			out = append(out, got)
		}
	}
	return out
}

// why prints arg's conditions, plan, last drift and last events.
func (c *CLI) why(ctx context.Context, arg string) error {
	k, o, err := c.get(ctx, arg)
	if err != nil {
		return err
	}
	w := Why{Kind: k.Kind, Name: o.GetName(), Namespace: o.GetNamespace(), Conditions: conditionsOf(o), Drift: lastDrift(o)}
	if p := pendingOf(k, o); p != nil {
		w.Plan = &p.Plan
	}
	if mg, ok := o.(interface {
		GetManagementPolicies() xpv2.ManagementPolicies
	}); ok {
		for _, p := range mg.GetManagementPolicies() {
			w.Policies = append(w.Policies, string(p))
		}
	}
	events := &corev1.EventList{}
	ns := o.GetNamespace()
	if ns == "" {
		ns = "default" // A cluster-scoped object's events.
	}
	if err := c.Kube.List(ctx, events, client.InNamespace(ns), client.MatchingFields{"involvedObject.uid": string(o.GetUID())}); err != nil {
		return errors.Wrapf(err, "cannot list %s's events", arg)
	}
	sort.Slice(events.Items, func(i, j int) bool { return eventTime(events.Items[i]).After(eventTime(events.Items[j])) })
	w.Events = events.Items[:min(len(events.Items), lastEvents)]
	return c.print(w, func() [][]string {
		rows := [][]string{{fmt.Sprintf("%s %s", k.Kind, qualified(o))}}
		if len(w.Policies) > 0 {
			rows = append(rows, []string{fmt.Sprintf("managementPolicies: %v", w.Policies)})
		}
		rows = append(rows, []string{""}, []string{"CONDITION", "STATUS", "REASON", "SINCE", "MESSAGE"})
		for _, cd := range w.Conditions {
			rows = append(rows, []string{string(cd.Type), string(cd.Status), string(cd.Reason), cd.LastTransitionTime.UTC().Format(time.RFC3339), cd.Message})
		}
		rows = append(rows, []string{""})
		if w.Plan != nil {
			rows = append(rows, []string{"PLAN: " + w.Plan.Summary})
			for i, s := range w.Plan.Statements {
				rows = append(rows, []string{fmt.Sprintf("  %d. %s", i+1, s)})
			}
		} else if k.Planned {
			rows = append(rows, []string{"PLAN: nothing pending"})
		}
		if w.Drift != nil {
			rows = append(rows, []string{fmt.Sprintf("LAST DRIFT: %s, %d field(s)", w.Drift.DetectedAt.UTC().Format(time.RFC3339), len(w.Drift.Fields))})
		}
		rows = append(rows, []string{""}, []string{"LAST EVENTS", "TYPE", "REASON", "MESSAGE"})
		if len(w.Events) == 0 {
			rows = append(rows, []string{"(none)"})
		}
		for _, e := range w.Events {
			rows = append(rows, []string{eventTime(e).UTC().Format(time.RFC3339), e.Type, e.Reason, e.Message})
		}
		return rows
	})
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

func qualified(o v1alpha1.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}
