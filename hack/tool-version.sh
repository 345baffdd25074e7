#!/usr/bin/env bash
# Prints the version of a module that a wrapper module under tools/ pins:
#
#   hack/tool-version.sh crossplane github.com/crossplane/crossplane/v2   # v2.3.4
#
# The wrapper modules' go.mod files are the one place tool versions are
# pinned; the build scripts, the Go test fixtures and a test of the README
# read them from there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$1 module=$2
version=$(awk -v m="$module" '$1 == m && $2 ~ /^v/ { print $2; exit }
  $1 == "require" && $2 == m && $3 ~ /^v/ { print $3; exit }' "$root/tools/$dir/go.mod")
if [[ -z "$version" ]]; then
  echo "tool-version: tools/$dir/go.mod does not require $module" >&2
  exit 1
fi
echo "$version"
