#!/usr/bin/env bash
# Builds krew, the kubectl plugin manager (pinned by tools/krew), from the
# Go module proxy into the tool cache outside the repository: the kubectl
# pg plugin's test installs the plugin with it.
#
#   hack/krew-tools.sh          build what is missing, print progress
#   hack/krew-tools.sh --dir    print the folder and exit
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=hack/build-tool.sh
source "$root/hack/build-tool.sh"
module=sigs.k8s.io/krew
version=$("$root/hack/tool-version.sh" krew "$module")
cache=${PROVIDER_POSTGRESQL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/provider-postgresql}
dir="$cache/krew/krew-$version"

if [[ "${1:-}" == "--dir" ]]; then
  echo "$dir"
  exit 0
fi
build_tool krew-tools krew "$dir/krew" "$root/tools/krew" "$module/cmd/krew" "-s -w"
