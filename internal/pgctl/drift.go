package pgctl

import (
	"context"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

// A Drifted resource is one whose object was changed on the server
// outside the provider.
type Drifted struct {
	Namespace string         `json:"namespace,omitempty"`
	Kind      string         `json:"kind"`
	Name      string         `json:"name"`
	Drift     v1alpha1.Drift `json:"drift"`
}

// lastDrift reads status.atProvider.lastDrift of any kind that has one.
func lastDrift(o v1alpha1.Object) *v1alpha1.Drift {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil
	}
	status, _ := u["status"].(map[string]any)
	at, _ := status["atProvider"].(map[string]any)
	raw, ok := at["lastDrift"].(map[string]any)
	if !ok {
		return nil
	}
	d := &v1alpha1.Drift{}
	if runtime.DefaultUnstructuredConverter.FromUnstructured(raw, d) != nil {
		return nil
	}
	return d
}

// drift prints the last drift of every resource that has one.
func (c *CLI) drift(ctx context.Context) error {
	var out []Drifted
	for _, k := range v1alpha1.KindsWhere(func(k v1alpha1.KindInfo) bool { return k.Managed }) {
		objs, err := c.list(ctx, k)
		if err != nil {
			return err
		}
		for _, o := range objs {
			if d := lastDrift(o); d != nil {
				out = append(out, Drifted{Namespace: o.GetNamespace(), Kind: k.Kind, Name: o.GetName(), Drift: *d})
			}
		}
	}
	return c.print(out, func() [][]string {
		if len(out) == 0 {
			return [][]string{{"No drift found."}}
		}
		rows := [][]string{{"NAMESPACE", "KIND", "NAME", "DETECTED", "STATE", "CHANGED"}}
		for _, d := range out {
			state := "stands"
			if d.Drift.CorrectedAt != nil {
				state = "put back " + d.Drift.CorrectedAt.UTC().Format(time.RFC3339)
			}
			var fields []string
			for _, f := range d.Drift.Fields {
				fields = append(fields, f.Field+": "+f.Was+" -> "+f.Found)
			}
			rows = append(rows, []string{d.Namespace, d.Kind, d.Name, d.Drift.DetectedAt.UTC().Format(time.RFC3339), state, strings.Join(fields, "; ")})
		}
		return rows
	})
}
