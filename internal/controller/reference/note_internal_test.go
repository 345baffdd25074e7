package reference

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestNote: a reconcile is woken by the watches only when everything it
// waited for is a managed resource they watch; one wait for an object on
// the server that nothing stands for needs the short fallback look.
func TestNote(t *testing.T) {
	boom := errors.New("waiting")
	type marks struct{ Waiting, Woken bool }
	cases := map[string]struct {
		marks func(ctx context.Context)
		want  marks
	}{
		"Nothing":             {marks: func(context.Context) {}},
		"AServerObject":       {marks: func(ctx context.Context) { _ = Wait(ctx, boom) }, want: marks{Waiting: true}},
		"AManagedResource":    {marks: func(ctx context.Context) { _ = Awaited(ctx, boom) }, want: marks{Waiting: true, Woken: true}},
		"AManagedResourceNil": {marks: func(ctx context.Context) { _ = Awaited(ctx, nil) }},
		"ManagedThenServer": {marks: func(ctx context.Context) {
			_ = Awaited(ctx, boom)
			_ = Wait(ctx, boom)
		}, want: marks{Waiting: true}},
		"ServerThenManaged": {marks: func(ctx context.Context) {
			_ = Wait(ctx, boom)
			_ = Awaited(ctx, boom)
		}, want: marks{Waiting: true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, n := WithNote(context.Background())
			tc.marks(ctx)
			if diff := cmp.Diff(tc.want, marks{Waiting: n.Waiting(), Woken: n.Woken()}); diff != "" {
				t.Errorf("note (-want +got):\n%s", diff)
			}
		})
	}
}
