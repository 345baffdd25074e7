#!/usr/bin/env bash
# Builds the provider package without Docker: a static linux binary, a
# minimal runtime image around it (hack/image: no base image is fetched),
# written as a docker-save tarball, embedded by `crossplane xpkg build`.
#
#   hack/xpkg.sh [output folder]      default: _output/xpkg
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/_output/xpkg}
version=${VERSION:-$(cd "$root" && git describe --tags --always --dirty 2>/dev/null || echo dev)}
mkdir -p "$out"
cd "$root"

"$root/hack/crossplane-tools.sh" >/dev/null
cli="$("$root/hack/crossplane-tools.sh" --dir)/crossplane-cli"

echo "xpkg: building the provider binary (linux/$(go env GOARCH), static)"
CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags "-s -w -X github.com/ayatori/provider-postgresql/internal/version.Version=${version}" \
  -o "$out/provider" ./cmd/provider
echo "xpkg: building the runtime image"
go run ./hack/image --binary "$out/provider" --name provider --tag "provider-postgresql:${version}" --out "$out/provider-image.tar"
echo "xpkg: building the package"
"$cli" xpkg build --package-root=package --examples-root=package/examples \
  --embed-runtime-image-tarball="$out/provider-image.tar" -o "$out/provider-postgresql.xpkg"
echo "xpkg: wrote $out/provider-postgresql.xpkg ($(du -h "$out/provider-postgresql.xpkg" | cut -f1))"
