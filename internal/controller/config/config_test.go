package config_test

import (
	"fmt"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ayatori/provider-postgresql/internal/controller/config"
)

// TestControllersGetTheClosingQueue: every controller set up from Config
// gets the provider's queue (queue.New), a priority queue to
// controller-runtime, and keeps crossplane-runtime's options.
func TestControllersGetTheClosingQueue(t *testing.T) {
	o := config.Config{}.ForControllerRuntime()
	if o.NewQueue == nil {
		t.Fatal("ForControllerRuntime sets no NewQueue: controllers get controller-runtime's queue alone")
	}
	q := o.NewQueue("test", o.RateLimiter)
	defer q.ShutDown()
	if got := fmt.Sprintf("%T", q); got != "*queue.closingQueue" {
		t.Errorf("NewQueue returns %s, want the closing queue (*queue.closingQueue)", got)
	}
	if _, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); !ok {
		t.Errorf("NewQueue returns %T, which controller-runtime does not take for a priority queue", q)
	}
	if o.RateLimiter == nil || o.MaxConcurrentReconciles != 0 || o.RecoverPanic == nil || !*o.RecoverPanic {
		t.Errorf("crossplane-runtime's options are not kept: %+v", o)
	}
}
