package oninstance

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/controller/reconciler"
)

// InstanceChanges passes what of an Instance concerns the resources living
// on it: its creation, its deletion, and every update but one that only
// recounts its users (status.usedBy). That count moves with every resource
// made or deleted on the Instance; waking all the others each time would
// cost a reconcile of every one of thousands per burst.
func InstanceChanges() predicate.Funcs {
	p := reconciler.UpdatesWhere(func(was, now client.Object) bool {
		w, okWas := was.(*v1alpha1.PostgreSQLInstance)
		n, okNow := now.(*v1alpha1.PostgreSQLInstance)
		if !okWas || !okNow {
			return true
		}
		w, n = w.DeepCopy(), n.DeepCopy()
		for _, in := range []*v1alpha1.PostgreSQLInstance{w, n} {
			in.Status.UsedBy = 0
			in.ResourceVersion, in.ManagedFields = "", nil
		}
		return !equality.Semantic.DeepEqual(w, n)
	})
	p.CreateFunc = func(ctrlevent.CreateEvent) bool { return true }
	p.DeleteFunc = func(ctrlevent.DeleteEvent) bool { return true }
	return p
}
