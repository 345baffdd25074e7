#!/usr/bin/env bash
# Makes sure jq is installed: the tests of docs/install.md and
# docs/operations.md run their shell blocks as written, and those use it.
set -euo pipefail

command -v jq >/dev/null && exit 0
. "$(dirname "$0")/apt.sh"
apt_install ensure-jq jq
command -v jq >/dev/null || { echo "ensure-jq: jq is still missing after the install" >&2; exit 1; }
