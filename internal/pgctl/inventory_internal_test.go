package pgctl

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ayatori/provider-postgresql/internal/inventory"
)

func TestHasPassword(t *testing.T) {
	cases := map[string]bool{
		"postgresql://admin@db.example:5432/postgres?sslmode=verify-full": false,
		"postgresql://admin:s3cret@db.example/postgres":                   true,
		"postgres://db.example/postgres?password=s3cret":                  true,
		"host=db.example user=admin dbname=postgres":                      false,
		"host=db.example user=admin password=s3cret":                      true,
		"host=db.example user=admin password = s3cret":                    true, // libpq allows spaces around =
		"host=db.example application_name=passwords":                      false,
	}
	for dsn, want := range cases {
		if got := hasPassword(dsn); got != want {
			t.Errorf("hasPassword(%q) = %v, want %v", dsn, got, want)
		}
	}
}

func TestEmptyDir(t *testing.T) {
	dir := t.TempDir()
	if err := emptyDir(filepath.Join(dir, "new", "folder")); err != nil {
		t.Errorf("a new folder: %v", err)
	}
	if err := emptyDir(dir); err == nil {
		t.Error("a folder with something in it was accepted")
	}
	if err := os.WriteFile(filepath.Join(dir, "new", "folder", "mine.yaml"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := emptyDir(filepath.Join(dir, "new", "folder")); err == nil {
		t.Error("a folder holding a file was accepted: the inventory would overwrite it")
	}
}

// TestSummaryQuotesWhatCannotBePrinted: names come from the server, where
// whoever may create a role or a table chooses them; one with a terminal
// escape or a line break is printed quoted.
func TestSummaryQuotesWhatCannotBePrinted(t *testing.T) {
	var out bytes.Buffer
	inv := inventory.Inventory{Skipped: []inventory.Skip{
		{Kind: inventory.KindRole, Name: "evil\x1b[2J\nWrote 0 manifests", Reason: "its name is outside what the API takes"},
		{Kind: inventory.KindRole, Name: "Plain Name", Reason: "its name is outside what the API takes"},
	}}
	if err := summarize(&out, "adopted", inv); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(out.String(), "\x1b") || strings.Contains(out.String(), "\nWrote 0") {
		t.Errorf("the summary prints a name raw:\n%q", out.String())
	}
	if !strings.Contains(out.String(), `"evil\x1b[2J\nWrote 0 manifests", Plain Name`) {
		t.Errorf("the summary does not show the names, the odd one quoted:\n%s", out.String())
	}
}
