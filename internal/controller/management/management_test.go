package management_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/management"
)

func TestPolicies(t *testing.T) {
	cases := map[string]struct {
		policies             xpv2.ManagementPolicies
		deletes, observeOnly bool
	}{
		"All":               {policies: xpv2.ManagementPolicies{xpv2.ManagementActionAll}, deletes: true},
		"RetainedByDefault": {policies: xpv2.ManagementPolicies{xpv2.ManagementActionObserve, xpv2.ManagementActionCreate, xpv2.ManagementActionUpdate, xpv2.ManagementActionLateInitialize}},
		"ExplicitDelete":    {policies: xpv2.ManagementPolicies{xpv2.ManagementActionObserve, xpv2.ManagementActionDelete}, deletes: true, observeOnly: true},
		"Import":            {policies: xpv2.ManagementPolicies{xpv2.ManagementActionObserve}, observeOnly: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := &v1alpha1.PostgreSQLRole{}
			r.Spec.ManagementPolicies = tc.policies
			got := [2]bool{management.Deletes(r), management.ObserveOnly(r)}
			if diff := cmp.Diff([2]bool{tc.deletes, tc.observeOnly}, got); diff != "" {
				t.Errorf("[Deletes, ObserveOnly] (-want +got):\n%s", diff)
			}
		})
	}
}
