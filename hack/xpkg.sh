#!/usr/bin/env bash
# Builds the packages without Docker: for the provider and the tenant
# composition function, a static linux binary in a minimal runtime image
# (hack/image: no base image is fetched) written as a docker-save tarball
# and embedded by `crossplane xpkg build`; and the tenant Configuration.
#
#   hack/xpkg.sh [output folder]      default: _output/xpkg
#
# GOARCH picks the architecture (default: this machine's); VERSION the
# version stamped into the binaries (default: git describe).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/_output/xpkg}
arch=${GOARCH:-$(go env GOARCH)}
version=${VERSION:-$(cd "$root" && git describe --tags --always --dirty 2>/dev/null || echo dev)}
mkdir -p "$out"
cd "$root"

"$root/hack/crossplane-tools.sh" >/dev/null
cli="$("$root/hack/crossplane-tools.sh" --dir)/crossplane-cli"

# image <name> <package> <binary name>: a static binary in a runtime image.
image() {
  local name=$1 pkg=$2 bin=$3
  echo "xpkg: building $name (linux/$arch, static) and its runtime image"
  CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath -ldflags "-s -w -X github.com/ayatori/provider-postgresql/internal/version.Version=${version}" \
    -o "$out/$bin" "$pkg"
  GOARCH= go run ./hack/image --binary "$out/$bin" --name "$bin" --arch "$arch" --tag "$name:${version}" --out "$out/$name-image.tar"
}

# The examples users see in a package registry are those of examples/:
# the managed resources in the provider's package, the claim in the
# Configuration's. The function has none of its own (the Configuration's
# claim is how it is used).
rm -rf "$out/examples"
mkdir -p "$out/examples/provider" "$out/examples/configuration"
cp -r examples/. "$out/examples/provider/"
rm -rf "$out/examples/provider/tenant"
cp -r examples/tenant/. "$out/examples/configuration/"

image provider-postgresql ./cmd/provider provider
"$cli" xpkg build --package-root=package --examples-root="$out/examples/provider" \
  --embed-runtime-image-tarball="$out/provider-postgresql-image.tar" -o "$out/provider-postgresql.xpkg"

image function-postgresql-tenant ./cmd/function-tenant function-tenant
"$cli" xpkg build --package-root=cmd/function-tenant/package --examples-root="$out/examples/function" \
  --embed-runtime-image-tarball="$out/function-postgresql-tenant-image.tar" -o "$out/function-postgresql-tenant.xpkg"

echo "xpkg: building the tenant Configuration"
"$cli" xpkg build --package-root=configuration --ignore='testdata/*,testdata/*/*' --examples-root="$out/examples/configuration" \
  -o "$out/configuration-postgresql-tenant.xpkg"

for p in provider-postgresql function-postgresql-tenant configuration-postgresql-tenant; do
  echo "xpkg: wrote $out/$p.xpkg ($(du -h "$out/$p.xpkg" | cut -f1))"
done
