#!/usr/bin/env bash
# Builds Crossplane core, its RBAC manager (tools/crossplane/rbacmanager: the
# core module's controllers with the metrics listener off), the crossplane
# CLI and function-auto-ready from the
# Go module proxy, using the wrapper modules under tools/, and caches them
# outside the repository keyed by version. Cold builds take several minutes
# on 2 cores; warm ones are instant.
#
#   hack/crossplane-tools.sh           build what is missing, print progress
#   hack/crossplane-tools.sh --dir     print the binaries' folder and exit
#   hack/crossplane-tools.sh --core    only what runs Crossplane (make dev):
#                                      not the CLI, which builds packages
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# Pinned by the wrapper modules' go.mod, and nowhere else.
CROSSPLANE_VERSION=$("$root/hack/tool-version.sh" crossplane github.com/crossplane/crossplane/v2)
CLI_VERSION=$("$root/hack/tool-version.sh" crossplane-cli github.com/crossplane/cli/v2)
AUTO_READY_VERSION=$("$root/hack/tool-version.sh" function-auto-ready github.com/crossplane/function-auto-ready)
cache=${PROVIDER_POSTGRESQL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/provider-postgresql}
bin="$cache/crossplane/core-${CROSSPLANE_VERSION}-cli-${CLI_VERSION}-auto-ready-${AUTO_READY_VERSION}"

if [[ "${1:-}" == "--dir" ]]; then
  echo "$bin"
  exit 0
fi
core=
[[ "${1:-}" == "--core" ]] && core=1

mkdir -p "$bin"

# shellcheck source=hack/build-tool.sh
source "$root/hack/build-tool.sh"

# build <name> <wrapper module dir> <package> <ldflags>
build() {
  build_tool crossplane-tools "$1" "$bin/$1" "$root/tools/$2" "$3" "$4"
}

build crossplane crossplane github.com/crossplane/crossplane/v2/cmd/crossplane \
  "-s -w -X github.com/crossplane/crossplane-runtime/v2/pkg/version.version=${CROSSPLANE_VERSION}"
build rbac-manager crossplane ./rbacmanager "-s -w"
if [[ -z "$core" ]]; then
  build crossplane-cli crossplane-cli github.com/crossplane/cli/v2/cmd/crossplane \
    "-s -w -X github.com/crossplane/crossplane-runtime/v2/pkg/version.version=${CLI_VERSION}"
fi
build function-auto-ready function-auto-ready github.com/crossplane/function-auto-ready "-s -w"

echo "crossplane-tools: ready in $bin"
