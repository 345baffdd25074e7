package v1alpha1

import (
	"fmt"
	"slices"
	"strings"
)

// StepOf is the pending plan of mg, a resource of kind, as one step of a
// provisioning plan; nil when it has nothing pending. The step holds a
// copy: a claim's or binding's status never shares the resource's.
func StepOf(mg interface {
	GetName() string
	Planned
}, kind string,
) *ProvisioningStep {
	p := mg.GetPlan()
	if p == nil {
		return nil
	}
	return &ProvisioningStep{Kind: kind, Name: mg.GetName(), Plan: *p.DeepCopy()}
}

// ProvisioningPlanOf gathers the pending plans of several resources, in
// the order the provider sends them, with a summary over all of them; nil
// when none has anything pending. A resource's statements are already
// bounded by its own plan, so the whole is bounded by the number of
// resources.
func ProvisioningPlanOf(steps ...*ProvisioningStep) *ProvisioningPlan {
	p := &ProvisioningPlan{}
	var actions []string
	n := 0
	for _, s := range steps {
		if s == nil {
			continue
		}
		p.Steps = append(p.Steps, *s)
		if a := string(s.Plan.Action); !slices.Contains(actions, a) {
			actions = append(actions, a)
		}
		n += len(s.Plan.Statements) + int(s.Plan.Omitted)
	}
	if len(p.Steps) == 0 {
		return nil
	}
	p.Summary = fmt.Sprintf("%s: %s in %s", strings.Join(actions, ", "), Statements(n), plural(len(p.Steps), "resource"))
	return p
}

// Statements says how many statements n is, as a plan's summary does:
// "1 statement", "3 statements".
func Statements(n int) string { return plural(n, "statement") }

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
