package pgctl

import (
	"os"
	"path/filepath"
	"testing"
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
