package tenant

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/resource/composed"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

// Requirement names the function asks Crossplane for.
const (
	requiredDatabase = "registered-database"
	requiredTenants  = "tenants-of-database"
)

// LabelDatabaseRef marks a tenant composite with the registered database it
// is delivered (namespace.name), so that a second tenant of the same
// database can be found and refused.
const LabelDatabaseRef = v1alpha1.Group + "/database-ref"

// Input is the function's input in a Composition step.
type Input struct {
	// DeleteData: see Options.
	DeleteData bool `json:"deleteData,omitempty"`
}

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
	in := Input{}
	if raw := req.GetInput(); raw != nil {
		b, err := raw.MarshalJSON()
		if err == nil {
			err = json.Unmarshal(b, &in)
		}
		if err != nil {
			response.Fatal(rsp, errors.Wrap(err, "cannot read the function's input"))
			return rsp, nil
		}
	}

	var c *Composed
	labels := map[string]string{}
	if s.DatabaseRef != "" {
		var wait bool
		c, wait, err = f.explicit(req, rsp, s)
		if err != nil {
			response.Fatal(rsp, err)
			return rsp, nil
		}
		if wait {
			return rsp, nil
		}
		labels[LabelDatabaseRef] = s.ClaimNamespace + "." + s.DatabaseRef
	} else if c, err = Dynamic(s, Options(in)); err != nil {
		response.Fatal(rsp, err)
		return rsp, nil
	}

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
	if len(labels) > 0 {
		dxr.Resource.SetLabels(labels)
	}
	if err := response.SetDesiredCompositeResource(rsp, dxr); err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot set the desired composite"))
		return rsp, nil
	}
	response.Normalf(rsp, "composed %d resource(s) for database %q", len(c.Resources), c.Status.Database)
	return rsp, nil
}

// explicit composes access to an admin-registered database. It asks
// Crossplane for that database and for the other tenants of it first
// (wait), and refuses a database already delivered to an older tenant.
func (f *Function) explicit(req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse, s Spec) (*Composed, bool, error) {
	rsp.Requirements = &fnv1.Requirements{Resources: map[string]*fnv1.ResourceSelector{
		requiredDatabase: {
			ApiVersion: v1alpha1.SchemeGroupVersion.String(), Kind: v1alpha1.PostgreSQLDatabaseKind,
			Match: &fnv1.ResourceSelector_MatchName{MatchName: s.DatabaseRef}, Namespace: ptr.To(s.ClaimNamespace),
		},
		requiredTenants: {
			ApiVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "XPostgreSQLTenant",
			Match: &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: map[string]string{LabelDatabaseRef: s.ClaimNamespace + "." + s.DatabaseRef}}},
		},
	}}
	dbs, ok, err := request.GetRequiredResource(req, requiredDatabase)
	if err != nil {
		return nil, false, errors.Wrap(err, "cannot read the registered database")
	}
	if !ok {
		return nil, true, nil
	}
	if len(dbs) == 0 {
		return nil, false, fmt.Errorf("spec.databaseRef: PostgreSQLDatabase %s/%s does not exist", s.ClaimNamespace, s.DatabaseRef)
	}
	xr, _ := request.GetObservedCompositeResource(req)
	if others, ok, _ := request.GetRequiredResource(req, requiredTenants); ok {
		if by := deliveredTo(xr.Resource.Object, others); by != "" {
			return nil, false, fmt.Errorf("spec.databaseRef: PostgreSQLDatabase %s/%s is already delivered to tenant %s; a database is delivered to one tenant only", s.ClaimNamespace, s.DatabaseRef, by)
		}
	}
	db := dbs[0].Resource
	r := Registered{}
	r.Instance, _, _ = unstructured.NestedString(db.Object, "spec", "instanceRef", "name")
	r.Database, _, _ = unstructured.NestedString(db.Object, "status", "atProvider", "name")
	r.Owner, _, _ = unstructured.NestedString(db.Object, "status", "atProvider", "owner")
	c, err := Explicit(s, r)
	return c, false, err
}

// deliveredTo returns the claim of another, older tenant among others
// that was delivered the same database, "" when there is none. The oldest
// tenant keeps it (ties broken by UID), so two tenants created together
// never both get it.
func deliveredTo(self map[string]any, others []resource.Required) string {
	me := &unstructured.Unstructured{Object: self}
	var older []string
	for _, o := range others {
		u := o.Resource
		if u.GetUID() == me.GetUID() {
			continue
		}
		a, b := u.GetCreationTimestamp(), me.GetCreationTimestamp()
		if a.Before(&b) || a.Equal(&b) && u.GetUID() < me.GetUID() {
			ns, _, _ := unstructured.NestedString(u.Object, "spec", "claimRef", "namespace")
			name, _, _ := unstructured.NestedString(u.Object, "spec", "claimRef", "name")
			older = append(older, ns+"/"+name)
		}
	}
	slices.Sort(older)
	if len(older) == 0 {
		return ""
	}
	return older[0]
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
		ClaimNamespace: str("spec", "claimRef", "namespace"), ClaimName: str("spec", "claimRef", "name"),
	}
	ext, _, err := unstructured.NestedStringSlice(xr, "spec", "extensions")
	if err != nil {
		return s, errors.Wrap(err, "spec.extensions must be a list of names")
	}
	s.Extensions = ext
	return s, nil
}
