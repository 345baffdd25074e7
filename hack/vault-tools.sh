#!/usr/bin/env bash
# Builds the KV v2 server the OpenBao delivery tests use (HashiCorp Vault,
# dev mode, from the wrapper module tools/vault) from the Go module proxy,
# and caches it outside the repository keyed by version. OpenBao's own
# server is not served by the proxy; Vault speaks the same KV v2 and auth
# APIs. A cold build downloads some 6 GB of modules and takes about 7
# minutes on 2 cores; a warm one is instant.
#
#   hack/vault-tools.sh          build what is missing, print progress
#   hack/vault-tools.sh --dir    print the binary's folder and exit
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# Pinned by the wrapper module's go.mod, and nowhere else.
VAULT_VERSION=$("$root/hack/tool-version.sh" vault github.com/hashicorp/vault)
cache=${PROVIDER_POSTGRESQL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/provider-postgresql}
bin="$cache/vault/vault-${VAULT_VERSION}"

if [[ "${1:-}" == "--dir" ]]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$bin"
out="$bin/vault"
if [[ -x "$out" ]]; then
  echo "vault-tools: vault cached ($out)"
  exit 0
fi
echo "vault-tools: building vault ${VAULT_VERSION} (a cold build downloads about 6 GB of modules and takes minutes)..."
start=$SECONDS
(cd "$root/tools/vault" && CGO_ENABLED=0 GOFLAGS= go build -trimpath -ldflags "-s -w" -o "$out.tmp" github.com/hashicorp/vault)
mv "$out.tmp" "$out"
echo "vault-tools: built vault in $((SECONDS - start))s, ready in $bin"
