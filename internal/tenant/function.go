package tenant

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/resource/composed"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	input "github.com/ayatori/provider-postgresql/apis/tenant/v1alpha1"
)

// ConditionDatabaseBound is the condition the function sets on the
// composite and the claim: True once the tenant's binding is Bound, else
// False with the binding's reason (BoundToAnotherTenant, Released,
// NotOffered, ObserveOnly, Conflict, PrivilegedOwner, …) and message.
const ConditionDatabaseBound = "DatabaseBound"

// reasonUnknown is DatabaseBound's reason when the function cannot read
// the tenant's binding.
const reasonUnknown = "Unknown"

// Function is the composition function serving PostgreSQLTenant.
type Function struct {
	fnv1.UnimplementedFunctionRunnerServiceServer
}

func init() {
	if err := v1alpha1.AddToScheme(composed.Scheme); err != nil {
		panic(err)
	}
}

// RunFunction composes a tenant.
func (f *Function) RunFunction(_ context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	rsp := response.To(req, response.DefaultTTL)
	xr, err := request.GetObservedCompositeResource(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot read the composite"))
		return rsp, nil
	}
	s, err := specOf(xr.Resource.Object)
	if err != nil {
		response.Fatal(rsp, err)
		return rsp, nil
	}
	in, err := inputOf(req)
	if err != nil {
		response.Fatal(rsp, err)
		return rsp, nil
	}

	binding, err := Request(s, optionsOf(in))
	if err != nil {
		response.Fatal(rsp, err)
		return rsp, nil
	}
	c := &Composed{Resources: map[string]client.Object{Binding: binding}}
	observed, err := request.GetObservedComposedResources(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot read the observed resources"))
		return rsp, nil
	}
	// Access is composed only once the database is bound to this
	// tenant's binding; a binding that stops being Bound takes it away.
	if bound, reason, msg := boundOf(observed[resource.Name(Binding)]); bound != nil {
		a, err := Access(s, optionsOf(in), *bound, seenOf(observed), time.Now())
		if err != nil {
			response.Fatal(rsp, err)
			return rsp, nil
		}
		if a.Again > 0 && a.Again < response.DefaultTTL {
			// The end of a grace period: composed again then, not a
			// minute later.
			rsp.Meta.Ttl = durationpb.New(a.Again)
		}
		a.Resources[Binding] = binding
		c = a
		response.ConditionTrue(rsp, ConditionDatabaseBound, reason).WithMessage(msg).TargetCompositeAndClaim()
	} else {
		response.ConditionFalse(rsp, ConditionDatabaseBound, reason).WithMessage(msg).TargetCompositeAndClaim()
	}

	c.Status.Plan = planOf(observed)

	desired, err := request.GetDesiredComposedResources(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot read the desired resources"))
		return rsp, nil
	}
	for name, obj := range c.Resources {
		u, err := composed.From(obj)
		if err != nil {
			response.Fatal(rsp, errors.Wrapf(err, "cannot compose %s", name))
			return rsp, nil
		}
		// The desired state says nothing about status, which the provider
		// owns.
		delete(u.Object, "status")
		desired[resource.Name(name)] = &resource.DesiredComposed{Resource: u}
	}
	if err := response.SetDesiredComposedResources(rsp, desired); err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot set the desired resources"))
		return rsp, nil
	}

	dxr, err := request.GetDesiredCompositeResource(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot read the desired composite"))
		return rsp, nil
	}
	st, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&c.Status)
	if err != nil {
		response.Fatal(rsp, err)
		return rsp, nil
	}
	if err := dxr.Resource.SetValue("status", st); err != nil {
		response.Fatal(rsp, err)
		return rsp, nil
	}
	if err := response.SetDesiredCompositeResource(rsp, dxr); err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot set the desired composite"))
		return rsp, nil
	}
	return rsp, nil
}

// boundOf reads the tenant's observed binding: what it delivers once Bound
// (nil before), and the reason and message of its Ready condition.
func boundOf(o resource.ObservedComposed) (*v1alpha1.BoundDatabase, string, string) {
	if o.Resource == nil {
		return nil, string(v1alpha1.ReasonProvisioning), "waiting for the tenant's PostgreSQLBinding to be created"
	}
	b := &v1alpha1.PostgreSQLBinding{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Resource.Object, b); err != nil {
		return nil, reasonUnknown, "cannot read the tenant's PostgreSQLBinding: " + err.Error()
	}
	c := b.GetCondition(xpv2.TypeReady)
	reason, msg := string(c.Reason), c.Message
	if reason == "" {
		reason, msg = string(v1alpha1.ReasonProvisioning), "waiting for the provider to observe the tenant's PostgreSQLBinding"
	}
	if b.Status.Phase != v1alpha1.BindingBound || b.Status.Database == nil || b.GetCondition(xpv2.TypeReady).Status != corev1.ConditionTrue {
		return nil, reason, msg
	}
	return b.Status.Database, reason, msg
}

// planOf gathers what the tenant's observed resources have pending, in
// the order the provider sends it: its binding's provisioning (the owner
// role, then the database), then its login role.
func planOf(observed map[resource.Name]resource.ObservedComposed) *v1alpha1.ProvisioningPlan {
	var steps []*v1alpha1.ProvisioningStep
	if o := observed[resource.Name(Binding)]; o.Resource != nil {
		b := &v1alpha1.PostgreSQLBinding{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Resource.Object, b); err == nil && b.Status.Plan != nil {
			for i := range b.Status.Plan.Steps {
				steps = append(steps, &b.Status.Plan.Steps[i])
			}
		}
	}
	if o := observed[resource.Name(LoginRole)]; o.Resource != nil {
		r := &v1alpha1.PostgreSQLRole{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Resource.Object, r); err == nil {
			steps = append(steps, v1alpha1.StepOf(r, v1alpha1.PostgreSQLRoleKind))
		}
	}
	return v1alpha1.ProvisioningPlanOf(steps...)
}

// seenOf reads what the composition needs of the observed login role and
// ExternalSecret.
func seenOf(observed map[resource.Name]resource.ObservedComposed) Seen {
	var seen Seen
	if o := observed[resource.Name(LoginRole)]; o.Resource != nil {
		r := &v1alpha1.PostgreSQLRole{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Resource.Object, r); err == nil {
			seen.Login = r
		}
	}
	if o := observed[resource.Name(Credentials)]; o.Resource != nil {
		seen.CredentialsSynced = o.Resource.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue
	}
	return seen
}

// specOf reads a tenant composite's spec.
func specOf(xr map[string]any) (Spec, error) {
	str := func(path ...string) string {
		v, _, _ := unstructured.NestedString(xr, path...)
		return v
	}
	s := Spec{
		InstanceRef: str("spec", "instanceRef", "name"), DatabaseRef: str("spec", "databaseRef", "name"),
		Database: str("spec", "database"), LoginRole: str("spec", "loginRole"), SecretName: str("spec", "secretName"),
		RotateCredentials: str("spec", "rotateCredentials"),
		Authentication:    str("spec", "authentication"),
		ClaimNamespace:    str("spec", "claimRef", "namespace"), ClaimName: str("spec", "claimRef", "name"),
	}
	// A namespaced Tenant (Crossplane v2) is its own claim: it has no
	// claimRef, and composes in its own namespace under its own name.
	if s.ClaimNamespace == "" && s.ClaimName == "" {
		s.ClaimNamespace, s.ClaimName = str("metadata", "namespace"), str("metadata", "name")
	}
	ext, _, err := unstructured.NestedStringSlice(xr, "spec", "extensions")
	if err != nil {
		return s, errors.Wrap(err, "spec.extensions must be a list of names")
	}
	s.Extensions = ext
	return s, nil
}

// inputOf reads the Composition step's input. A field the input does not
// have is an error, not ignored: a misspelt deleteData would otherwise
// silently keep its default.
func inputOf(req *fnv1.RunFunctionRequest) (input.Input, error) {
	in := input.Input{}
	raw := req.GetInput()
	if raw == nil {
		return in, nil
	}
	b, err := raw.MarshalJSON()
	if err != nil {
		return in, errors.Wrap(err, "cannot read the function's input")
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&in); err != nil {
		return in, errors.Wrapf(err, "cannot read the function's input (%s)", input.GroupVersionKind.GroupKind())
	}
	if gvk := in.GroupVersionKind(); gvk != input.GroupVersionKind {
		return in, errors.Errorf("the function's input is a %s, want apiVersion %s, kind %s", gvk, input.GroupVersionKind.GroupVersion(), input.Kind)
	}
	return in, nil
}

// optionsOf are the platform's choices an input holds.
func optionsOf(in input.Input) Options {
	return Options{DeleteData: in.DeleteData, CredentialRotation: in.CredentialRotation, Delivery: in.Delivery, OpenBao: in.OpenBao}
}
