// Command image builds a minimal OCI image around one static binary,
// without Docker and without fetching a base image: the binary, the host's
// CA certificates and a passwd entry for a non-root user, written as a
// docker-save tarball that `crossplane xpkg build
// --embed-runtime-image-tarball` embeds into a package.
//
//	go run ./hack/image --binary _output/bin/provider --name provider --tag provider-postgresql:dev --out _output/provider-image.tar
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// User is the non-root user the image runs as (the distroless "nonroot").
const User = "65532"

// caFile is where Debian keeps the CA bundle, copied into the image at the
// same path (Go reads it there).
const caFile = "/etc/ssl/certs/ca-certificates.crt"

func main() {
	bin := flag.String("binary", "", "static binary to run")
	nm := flag.String("name", "", "name of the binary in the image (/usr/local/bin/<name>)")
	tag := flag.String("tag", "", "image reference recorded in the tarball")
	out := flag.String("out", "", "docker-save tarball to write")
	arch := flag.String("arch", runtime.GOARCH, "the binary's architecture, recorded in the image")
	flag.Parse()
	if *bin == "" || *nm == "" || *tag == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "image: --binary, --name, --tag and --out are required")
		os.Exit(2)
	}
	if err := build(*bin, *nm, *tag, *out, *arch); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func build(bin, nm, tag, out, arch string) error {
	exe, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return errors.Errorf("cannot read the CA certificates to embed (install ca-certificates): %w", err)
	}
	files := []file{
		{path: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:" + User + ":" + User + ":nonroot:/home/nonroot:/sbin/nologin\n")},
		{path: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnonroot:x:" + User + ":\n")},
		{path: caFile[1:], mode: 0o644, data: ca},
		{path: "usr/local/bin/" + nm, mode: 0o755, data: exe},
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return layerTar(files) })
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", arch
	cfg.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cfg.Config.Entrypoint = []string{"/usr/local/bin/" + nm}
	cfg.Config.User = User + ":" + User
	cfg.Config.WorkingDir = "/"
	cfg.Config.Env = []string{"SSL_CERT_FILE=" + caFile}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	ref, err := name.ParseReference(tag)
	if err != nil {
		return err
	}
	return tarball.WriteToFile(out, ref, img)
}

type file struct {
	path string
	mode int64
	data []byte
}

// layerTar writes files, with their parent folders, into one layer with
// fixed times so the image is reproducible.
func layerTar(files []file) (io.ReadCloser, error) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	seen := map[string]bool{}
	epoch := time.Unix(0, 0)
	for _, f := range files {
		for _, d := range parents(f.path) {
			if seen[d] {
				continue
			}
			seen[d] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: epoch}); err != nil {
				return nil, err
			}
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.path, Mode: f.mode, Size: int64(len(f.data)), ModTime: epoch}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return io.NopCloser(&b), nil
}

func parents(p string) []string {
	var out []string
	for i := range len(p) {
		if p[i] == '/' {
			out = append(out, p[:i])
		}
	}
	return out
}
