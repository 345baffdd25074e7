package manifest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecode(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    []string
		wantErr bool
	}{
		"Several":       {in: "kind: A\n---\n---\nkind: B\n", want: []string{"A", "B"}},
		"JSON":          {in: `{"kind": "A"}`, want: []string{"A"}},
		"Empty":         {in: "", want: nil},
		"CommentsOnly":  {in: "# nothing\n---\n", want: nil},
		"NotAnObject":   {in: "kind: A\n---\n- a list\n", wantErr: true},
		"BrokenYAMLErr": {in: "kind: [\n", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs, err := Decode([]byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("Decode(...): error %v, want error: %t", err, tc.wantErr)
			}
			var kinds []string
			for _, o := range objs {
				kinds = append(kinds, o.GetKind())
			}
			if diff := cmp.Diff(tc.want, kinds); diff != "" {
				t.Errorf("Decode(...): -want +got:\n%s", diff)
			}
		})
	}
}
