#!/usr/bin/env bash
# Makes sure jq is installed: the tests of docs/install.md and
# docs/operations.md run their shell blocks as written, and those use it.
set -euo pipefail

command -v jq >/dev/null && exit 0
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null; then SUDO=sudo; else
    echo "ensure-jq: jq is missing; run as root: apt-get install -y jq" >&2
    exit 1
  fi
else
  SUDO=
fi
echo "ensure-jq: installing Debian's jq..." >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq jq >/dev/null
command -v jq >/dev/null || { echo "ensure-jq: jq is still missing after the install" >&2; exit 1; }
