// Command krew builds the kubectl pg plugin's release archives and renders
// its krew manifest from .krew.yaml, the template krew-release-bot renders
// on a release: {{ .TagName }} is the version, and addURIAndSha gives an
// archive's address and the SHA-256 of the archive built here.
//
//	go run ./hack/krew -version v0.1.0 [-out _output/krew] [-platforms linux/amd64,darwin/arm64]
//
// It writes kubectl-pg_<version>_<os>_<arch>.tar.gz (the binary and the
// licence) for each platform and kubectl-pg.yaml, the manifest. With
// -platforms, the manifest names only the platforms built.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/template"

	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// allPlatforms are the platforms a release ships.
const allPlatforms = "linux/amd64,linux/arm64,darwin/amd64,darwin/arm64"

// version is what a release's tag looks like.
var version = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)

func main() {
	ver := flag.String("version", "", "the release's version, such as v0.1.0")
	out := flag.String("out", "_output/krew", "where the archives and the manifest go")
	platforms := flag.String("platforms", allPlatforms, "os/arch pairs to build, comma-separated")
	tmpl := flag.String("template", ".krew.yaml", "the manifest's template")
	flag.Parse()
	if err := run(*ver, *out, *platforms, *tmpl); err != nil {
		fmt.Fprintln(os.Stderr, "krew:", err)
		os.Exit(1)
	}
}

func run(ver, out, platforms, tmpl string) error {
	if !version.MatchString(ver) {
		return errors.Errorf("-version %q is not a release version such as v0.1.0 (krew needs semantic versions)", ver)
	}
	if err := os.MkdirAll(out, 0o750); err != nil {
		return err
	}
	built := map[string]string{}
	for _, p := range strings.Split(platforms, ",") {
		goos, goarch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok || !slices.Contains(strings.Split(allPlatforms, ","), p) {
			return errors.Errorf("-platforms: %q is not one of %s", p, allPlatforms)
		}
		name := fmt.Sprintf("kubectl-pg_%s_%s_%s.tar.gz", ver, goos, goarch)
		fmt.Printf("krew: building %s\n", name)
		sum, err := archive(ver, goos, goarch, filepath.Join(out, name))
		if err != nil {
			return errors.Wrapf(err, "cannot build %s", name)
		}
		built[name] = sum
	}
	manifest, err := render(tmpl, ver, built)
	if err != nil {
		return err
	}
	dst := filepath.Join(out, "kubectl-pg.yaml")
	if err := os.WriteFile(dst, manifest, 0o600); err != nil {
		return err
	}
	fmt.Printf("krew: wrote %s (install it with: kubectl krew install --manifest=%s --archive=<the archive of your platform>)\n", dst, dst)
	return nil
}

// archive builds the plugin for goos/goarch into a .tar.gz at dst, with
// the licence beside it, and returns the archive's SHA-256. The archive
// carries no timestamps or owners of this machine.
func archive(ver, goos, goarch, dst string) (string, error) {
	bin := filepath.Join(filepath.Dir(dst), "kubectl-pg-"+goos+"-"+goarch)
	defer os.Remove(bin) //nolint:errcheck // A build product.
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X github.com/ayatori/provider-postgresql/internal/version.Version="+ver, "-o", bin, "./cmd/kubectl-pg")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	if b, err := build.CombinedOutput(); err != nil {
		return "", errors.Errorf("go build: %v\n%s", err, b)
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range []struct {
		src, name string
		mode      int64
	}{{bin, "kubectl-pg", 0o755}, {"LICENSE", "LICENSE", 0o644}} {
		b, err := os.ReadFile(f.src)
		if err != nil {
			return "", err
		}
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(b)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return "", err
		}
		if _, err := tw.Write(b); err != nil {
			return "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	if err := gz.Close(); err != nil {
		return "", err
	}
	sum := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(sum[:]), os.WriteFile(dst, buf.Bytes(), 0o600)
}

// unbuilt marks a platform whose archive was not built (-platforms).
const unbuilt = "NOT-BUILT"

// render renders the template as krew-release-bot does, with the
// archives built here, and drops the platforms not built.
func render(file, ver string, built map[string]string) ([]byte, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	tag := struct{ TagName string }{ver}
	t, err := template.New(file).Funcs(template.FuncMap{
		"addURIAndSha": func(url, tagName string) (string, error) {
			var u bytes.Buffer
			ut, err := template.New("uri").Parse(url)
			if err != nil {
				return "", err
			}
			if err := ut.Execute(&u, struct{ TagName string }{tagName}); err != nil {
				return "", err
			}
			sum, ok := built[path.Base(u.String())]
			if !ok {
				sum = unbuilt
			}
			// The bot's layout: the checksum under the address.
			return fmt.Sprintf("uri: %s\n    sha256: %q", u.String(), sum), nil
		},
	}).Parse(string(b))
	if err != nil {
		return nil, errors.Wrapf(err, "cannot parse %s", file)
	}
	var rendered bytes.Buffer
	if err := t.Execute(&rendered, tag); err != nil {
		return nil, errors.Wrapf(err, "cannot render %s", file)
	}
	var m map[string]any
	if err := yaml.UnmarshalStrict(rendered.Bytes(), &m); err != nil {
		return nil, errors.Wrapf(err, "%s does not render to YAML", file)
	}
	spec, _ := m["spec"].(map[string]any)
	ps, _ := spec["platforms"].([]any)
	var kept []any
	for _, p := range ps {
		if pm, ok := p.(map[string]any); ok && pm["sha256"] != unbuilt {
			kept = append(kept, p)
		}
	}
	if len(kept) == 0 {
		return nil, errors.Errorf("%s names none of the platforms built", file)
	}
	spec["platforms"] = kept
	return yaml.Marshal(m)
}
