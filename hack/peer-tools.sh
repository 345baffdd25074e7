#!/usr/bin/env bash
# Builds crossplane-contrib's provider-sql (pinned by tools/provider-sql) from
# the Go module proxy for make bench-peer, with its CRDs beside it, into the tool cache outside the repository.
#
#   hack/peer-tools.sh          build what is missing, print progress
#   hack/peer-tools.sh --dir    print the folder (provider, crds/) and exit
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
module=github.com/crossplane-contrib/provider-sql
version=$("$root/hack/tool-version.sh" provider-sql "$module")
cache=${PROVIDER_POSTGRESQL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/provider-postgresql}
dir="$cache/peer/provider-sql-$version"

if [[ "${1:-}" == "--dir" ]]; then
  echo "$dir"
  exit 0
fi

if [[ -x "$dir/provider" && -d "$dir/crds" ]]; then
  echo "peer-tools: provider-sql $version cached ($dir)"
  exit 0
fi
mkdir -p "$dir"
echo "peer-tools: building provider-sql $version (a cold build takes minutes)..."
start=$SECONDS
cd "$root/tools/provider-sql"
CGO_ENABLED=0 GOFLAGS= go build -trimpath -ldflags "-s -w" -o "$dir/provider.tmp" "$module/cmd/provider"
src=$(GOFLAGS= go list -m -f '{{.Dir}}' "$module")
rm -rf "$dir/crds.tmp" && mkdir -p "$dir/crds.tmp"
# All of them: it starts a controller for each kind it knows, and a
# controller whose CRD is missing stops the whole process.
cp "$src"/package/crds/*.yaml "$dir/crds.tmp/"
chmod -R u+w "$dir/crds.tmp"
rm -rf "$dir/crds" && mv "$dir/crds.tmp" "$dir/crds"
mv "$dir/provider.tmp" "$dir/provider"
echo "peer-tools: built provider-sql in $((SECONDS - start))s ($dir)"
