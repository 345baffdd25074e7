package pgctl

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

// AnnotationPreviewedFrom holds, while a resource is previewed, the
// management policies it had (JSON): what kubectl pg apply gives back.
const AnnotationPreviewedFrom = v1alpha1.Group + "/previewed-from"

var observeOnly = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}

func (c *CLI) managed(ctx context.Context, arg string) (resource.Managed, error) {
	k, o, err := c.get(ctx, arg)
	if err != nil {
		return nil, err
	}
	mg, ok := o.(resource.Managed)
	if !ok {
		return nil, errors.Errorf("a %s has no management policies to preview with", k.Kind)
	}
	return mg, nil
}

// preview narrows arg's management policies to [Observe], keeping what
// they were in AnnotationPreviewedFrom: the provider sends nothing, and
// the plan shows what it would send. The provider writes the resource
// too: a write that meets its newer version reads it again and retries.
func (c *CLI) preview(ctx context.Context, arg string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error { return c.previewOnce(ctx, arg) })
}

func (c *CLI) previewOnce(ctx context.Context, arg string) error {
	mg, err := c.managed(ctx, arg)
	if err != nil {
		return err
	}
	was := mg.GetManagementPolicies()
	if _, ok := mg.GetAnnotations()[AnnotationPreviewedFrom]; ok {
		return errors.Errorf("%s is in preview already: change its spec and read `kubectl pg plan %s`, then `kubectl pg apply %s`", arg, arg, arg)
	}
	if slices.Equal(was, observeOnly) {
		return errors.Errorf("%s is observed read-only already (an import?): there is nothing to preview and no policies to give back", arg)
	}
	if len(was) == 0 {
		was = xpv2.ManagementPolicies{xpv2.ManagementActionAll}
	}
	saved, err := json.Marshal(was)
	if err != nil {
		return err
	}
	patch := client.MergeFromWithOptions(mg.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{}) //nolint:forcetypeassert // A copy has its original's type.
	meta.AddAnnotations(mg, map[string]string{AnnotationPreviewedFrom: string(saved)})
	mg.SetManagementPolicies(observeOnly)
	if err := c.Kube.Patch(ctx, mg, patch); err != nil {
		return errors.Wrapf(err, "cannot preview %s", arg)
	}
	_, err = fmt.Fprintf(c.Out, "%s: previewing (managementPolicies [Observe]; it had %s). Nothing is sent now.\n"+
		"Change its spec, read `kubectl pg plan %s`, and `kubectl pg apply %s` to send exactly that.\n", arg, saved, arg, arg)
	return err
}

// apply gives arg back the management policies its preview saved: never
// more than it had. Like preview, it retries over the provider's writes.
func (c *CLI) apply(ctx context.Context, arg string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error { return c.applyOnce(ctx, arg) })
}

func (c *CLI) applyOnce(ctx context.Context, arg string) error {
	mg, err := c.managed(ctx, arg)
	if err != nil {
		return err
	}
	saved, ok := mg.GetAnnotations()[AnnotationPreviewedFrom]
	if !ok {
		return errors.Errorf("%s is not in preview (no %s annotation): nothing to give back; `kubectl pg preview %s` starts one", arg, AnnotationPreviewedFrom, arg)
	}
	var was xpv2.ManagementPolicies
	if err := json.Unmarshal([]byte(saved), &was); err != nil || len(was) == 0 {
		return errors.Errorf("%s's %s annotation %q is not a list of management policies: set spec.managementPolicies yourself", arg, AnnotationPreviewedFrom, saved)
	}
	if !slices.Equal(mg.GetManagementPolicies(), observeOnly) {
		return errors.Errorf("%s's managementPolicies changed since its preview (now %v): nothing was changed; set them yourself", arg, mg.GetManagementPolicies())
	}
	patch := client.MergeFromWithOptions(mg.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{}) //nolint:forcetypeassert // A copy has its original's type.
	meta.RemoveAnnotations(mg, AnnotationPreviewedFrom)
	mg.SetManagementPolicies(was)
	if err := c.Kube.Patch(ctx, mg, patch); err != nil {
		return errors.Wrapf(err, "cannot apply %s", arg)
	}
	_, err = fmt.Fprintf(c.Out, "%s: applying (managementPolicies %s again): the provider sends the plan it showed.\n", arg, saved)
	return err
}
