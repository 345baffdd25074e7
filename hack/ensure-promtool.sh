#!/usr/bin/env bash
# Makes sure promtool is at hand, for the test that checks the alert rules
# of cluster/monitoring/ (`promtool check rules`), and prints its path.
#
# promtool comes from Debian's prometheus package, unpacked into the tool
# cache rather than installed: the package would also install (and on some
# machines start) a Prometheus server, which nothing here needs. PROMTOOL
# names another promtool to use.
set -euo pipefail

if [[ -n "${PROMTOOL:-}" ]]; then
  [[ -x "$PROMTOOL" ]] || { echo "ensure-promtool: PROMTOOL=$PROMTOOL is not an executable" >&2; exit 1; }
  echo "$PROMTOOL"
  exit 0
fi

cache=${PROVIDER_POSTGRESQL_CACHE:-$HOME/.cache/provider-postgresql}/promtool
version=$(apt-cache policy prometheus 2>/dev/null | awk '/Candidate:/ {print $2}')
if [[ -z "$version" || "$version" == "(none)" ]]; then
  if [[ $(id -u) -eq 0 ]]; then
    apt-get update -qq
  elif command -v sudo >/dev/null; then
    sudo apt-get update -qq
  fi
  version=$(apt-cache policy prometheus 2>/dev/null | awk '/Candidate:/ {print $2}')
fi
if [[ -z "$version" || "$version" == "(none)" ]]; then
  echo "ensure-promtool: Debian's prometheus package is not known to apt; run apt-get update, or set PROMTOOL" >&2
  exit 1
fi
dir="$cache/${version//[^A-Za-z0-9._-]/_}"
if [[ -x "$dir/promtool" ]]; then
  echo "$dir/promtool"
  exit 0
fi

echo "ensure-promtool: unpacking promtool from Debian's prometheus $version into $dir..." >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 0777 "$work" # apt's download user writes there.
(cd "$work" && apt-get download -qq "prometheus=$version" 2>/dev/null)
deb=$(ls "$work"/prometheus_*.deb)
dpkg-deb -x "$deb" "$work/root"
mkdir -p "$dir"
install -m 0755 "$work/root/usr/bin/promtool" "$dir/promtool.tmp"
mv "$dir/promtool.tmp" "$dir/promtool"
"$dir/promtool" --version >/dev/null
echo "$dir/promtool"
