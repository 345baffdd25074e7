package config_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"k8s.io/apimachinery/pkg/types"
	ctrlcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ayatori/provider-postgresql/internal/controller/config"
)

// TestControllersGetTheFairQueue: every controller set up from Config
// gets the provider's queue (queue.Fair), a priority queue to
// controller-runtime, and keeps crossplane-runtime's options; a managed
// controller's queue keeps the global reconcile rate, another's does not.
func TestControllersGetTheFairQueue(t *testing.T) {
	c := config.Config{Options: controller.Options{GlobalRateLimiter: ratelimiter.NewGlobal(10)}}
	cases := map[string]struct {
		options ctrlcontroller.Options
		paced   bool
	}{
		"Managed": {options: c.ForManaged(), paced: true},
		"Other":   {options: c.ForControllerRuntime()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := tc.options
			if o.NewQueue == nil {
				t.Fatal("no NewQueue: controllers get controller-runtime's queue")
			}
			q := o.NewQueue("test", o.RateLimiter)
			defer q.ShutDown()
			if got := fmt.Sprintf("%T", q); got != "*queue.Fair" {
				t.Errorf("NewQueue returns %s, want *queue.Fair", got)
			}
			if _, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); !ok {
				t.Errorf("NewQueue returns %T, which controller-runtime does not take for a priority queue", q)
			}
			if o.RateLimiter == nil || o.MaxConcurrentReconciles != 0 || o.RecoverPanic == nil || !*o.RecoverPanic {
				t.Errorf("crossplane-runtime's options are not kept: %+v", o)
			}
			// The bucket holds ten times the rate: 100 items at 10 per
			// second go at once, the next ones 100 ms apart.
			for i := range 103 {
				q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: fmt.Sprint(i)}})
			}
			start := time.Now()
			for range 103 {
				r, _ := q.Get()
				q.Done(r)
			}
			if paced := time.Since(start) >= 250*time.Millisecond; paced != tc.paced {
				t.Errorf("103 items handed out in %s at 10 per second (a bucket of 100): paced %t, want %t", time.Since(start), paced, tc.paced)
			}
		})
	}
}
