package oninstance

import (
	"testing"

	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
)

func TestInstanceChanges(t *testing.T) {
	base := func() *v1alpha1.PostgreSQLInstance {
		in := &v1alpha1.PostgreSQLInstance{}
		in.SetName("main")
		in.SetResourceVersion("1")
		in.Spec.Endpoint.Host = "db.example"
		in.Status.UsedBy = 3
		return in
	}
	cases := map[string]struct {
		change func(*v1alpha1.PostgreSQLInstance)
		want   bool
	}{
		"OnlyItsUsersRecounted": {change: func(in *v1alpha1.PostgreSQLInstance) { in.Status.UsedBy = 4; in.SetResourceVersion("2") }},
		"ItsEndpoint":           {change: func(in *v1alpha1.PostgreSQLInstance) { in.Spec.Endpoint.Host = "other.example" }, want: true},
		"ItsServer":             {change: func(in *v1alpha1.PostgreSQLInstance) { in.Status.SystemIdentifier = "7" }, want: true},
		"RecountedAndMore": {change: func(in *v1alpha1.PostgreSQLInstance) {
			in.Status.UsedBy = 4
			in.Status.PostgreSQLVersion = "18.1"
		}, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			now := base()
			tc.change(now)
			if got := InstanceChanges().Update(ctrlevent.UpdateEvent{ObjectOld: base(), ObjectNew: now}); got != tc.want {
				t.Errorf("Update(...) = %v, want %v", got, tc.want)
			}
		})
	}
	if !InstanceChanges().Create(ctrlevent.CreateEvent{Object: base()}) || !InstanceChanges().Delete(ctrlevent.DeleteEvent{Object: base()}) {
		t.Error("an Instance made or deleted does not wake what lives on it")
	}
}
