package pgctl_test

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ayatori/provider-postgresql/apis/database/v1alpha1"
	"github.com/ayatori/provider-postgresql/internal/fixture/providertest"
	"github.com/ayatori/provider-postgresql/internal/pgctl"
)

// TestInventoryFlags runs kubectl pg inventory the two ways it logs in:
// with the Instance's admin Secret, and with a connection string whose
// password is in PGPASSWORD. A password on the command line is refused
// without being repeated, and a folder that holds something is refused
// with what it holds untouched.
func TestInventoryFlags(t *testing.T) {
	suite.Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env.SQL(ctx, t, "postgres", "CREATE ROLE inventory_probe LOGIN CONNECTION LIMIT 3")
	pg := env.Postgres
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, pg.CA.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	dsn := url.URL{Scheme: "postgresql", User: url.User(pg.AdminUser), Host: fmt.Sprintf("%s:%d", pg.Host, pg.Port), Path: "/postgres",
		RawQuery: url.Values{"sslmode": {"verify-full"}, "sslrootcert": {ca}, "hostaddr": {pg.Hostaddr}}.Encode()}
	inventory := func(o pgctl.InventoryOptions) (string, error) {
		var out, progress bytes.Buffer
		c := &pgctl.CLI{Kube: env.Kube, Out: &out, Err: &progress, Namespace: ns, Inventory: o}
		err := c.Run(ctx, []string{"inventory"})
		return out.String() + progress.String(), err
	}
	probe := func(dir string) string {
		b, err := os.ReadFile(filepath.Join(dir, ns, "roles", "inventory-probe.yaml"))
		if err != nil {
			t.Fatalf("the probe role's manifest: %v", err)
		}
		return string(b)
	}

	t.Run("TheInstancesAdminSecret", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "adopted")
		out, err := inventory(pgctl.InventoryOptions{Instance: "main", ProviderNamespace: providertest.Namespace, Dir: dir})
		if err != nil {
			t.Fatalf("kubectl pg inventory --instance main: %v\n%s", err, out)
		}
		m := probe(dir)
		for _, want := range []string{"name: inventory_probe", "- Observe", "connectionLimit: 3", "name: main"} {
			if !strings.Contains(m, want) {
				t.Errorf("the probe role's manifest lacks %q:\n%s", want, m)
			}
		}
		if !strings.Contains(out, "inventory: read") || !strings.Contains(out, "Wrote ") {
			t.Errorf("no progress or summary:\n%s", out)
		}
	})

	t.Run("AConnectionString", func(t *testing.T) {
		t.Setenv("PGPASSWORD", pg.AdminPassword)
		dir := t.TempDir()
		out, err := inventory(pgctl.InventoryOptions{Instance: "main", DSN: dsn.String(), Dir: dir})
		if err != nil {
			t.Fatalf("kubectl pg inventory --dsn: %v\n%s", err, out)
		}
		if m := probe(dir); !strings.Contains(m, "name: inventory_probe") {
			t.Errorf("the probe role's manifest:\n%s", m)
		}
	})

	t.Run("APasswordOnTheCommandLine", func(t *testing.T) {
		withPassword := dsn
		withPassword.User = url.UserPassword(pg.AdminUser, "s3cret-on-the-command-line")
		dir := filepath.Join(t.TempDir(), "adopted")
		out, err := inventory(pgctl.InventoryOptions{Instance: "main", DSN: withPassword.String(), Dir: dir})
		if err == nil || !strings.Contains(err.Error(), "PGPASSWORD") {
			t.Fatalf("a password in --dsn: %v", err)
		}
		if strings.Contains(err.Error()+out, "s3cret") {
			t.Errorf("the refusal repeats the password: %v %s", err, out)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("a refused inventory created its folder: %v", err)
		}
	})

	t.Run("AnInstanceWithATokenNeedsADSN", func(t *testing.T) {
		in := env.Main.DeepCopy()
		in.ObjectMeta = metav1.ObjectMeta{Name: "inventory-token"}
		in.Status = v1alpha1.PostgreSQLInstanceStatus{}
		in.Spec.AdminCredentialRef = nil
		in.Spec.AdminTokenSource = &v1alpha1.AdminTokenSource{Username: "admin", File: &v1alpha1.TokenFile{Path: "/var/run/tokens/admin"}}
		env.CreateForTest(ctx, t, in)
		dir := filepath.Join(t.TempDir(), "adopted")
		_, err := inventory(pgctl.InventoryOptions{Instance: in.Name, ProviderNamespace: providertest.Namespace, Dir: dir})
		if err == nil || !strings.Contains(err.Error(), "pass --dsn") {
			t.Errorf("an Instance whose admin logs in with a token, without --dsn: %v", err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("a refused inventory created its folder: %v", err)
		}
	})

	t.Run("AFolderThatHoldsSomething", func(t *testing.T) {
		dir := t.TempDir()
		mine := filepath.Join(dir, "kustomization.yaml")
		if err := os.WriteFile(mine, []byte("resources: []\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := inventory(pgctl.InventoryOptions{Instance: "main", ProviderNamespace: providertest.Namespace, Dir: dir})
		if err == nil || !strings.Contains(err.Error(), "is not empty") {
			t.Fatalf("a folder that holds a file: %v", err)
		}
		if b, _ := os.ReadFile(mine); string(b) != "resources: []\n" {
			t.Errorf("the file in the folder was changed: %q", b)
		}
	})

	t.Run("AMappingWithAMistake", func(t *testing.T) {
		mapping := filepath.Join(t.TempDir(), "mapping.yaml")
		if err := os.WriteFile(mapping, []byte("namespaces:\n- namespace: shop\n  database: [orders]\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := inventory(pgctl.InventoryOptions{Instance: "main", ProviderNamespace: providertest.Namespace, Dir: t.TempDir(), MappingFile: mapping})
		if err == nil || !strings.Contains(err.Error(), `unknown field "database"`) {
			t.Fatalf("a mapping with a misspelt field: %v", err)
		}
	})
}
