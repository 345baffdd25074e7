package manifest

import (
	"os"
	"path/filepath"
	"strings"
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

func TestKindsIn(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a.yaml":         "kind: Role\n---\nkind: Database\n",
		"sub/b.yaml":     "kind: Role\n",
		"sub/notes.txt":  "kind: Ignored\n",
		"sub/empty.yaml": "",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := KindsIn(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"Role": 2, "Database": 1}, got); diff != "" {
		t.Errorf("KindsIn (-want +got):\n%s", diff)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("kind: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := KindsIn(dir); err == nil || !strings.Contains(err.Error(), "bad.yaml") {
		t.Errorf("a file that is not YAML: %v, want an error naming it", err)
	}
}
