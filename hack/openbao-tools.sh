#!/usr/bin/env bash
# Builds what the OpenBao delivery tests and `make dev DELIVERY=openbao` run
# beside the control plane, from the Go module proxy, using the wrapper
# modules tools/vault and tools/external-secrets, and caches them outside
# the repository keyed by version:
#   - the KV v2 server: HashiCorp Vault in dev mode (OpenBao's own server is
#     not served by the proxy; Vault speaks the same KV v2 and auth APIs);
#   - the External Secrets Operator, which projects a KV path into a Secret.
# A cold build downloads some 7 GB of modules and takes about 15 minutes on
# 2 cores; a warm one is instant.
#
#   hack/openbao-tools.sh            build what is missing, print progress
#   hack/openbao-tools.sh --dir      print the vault binary's folder and exit
#   hack/openbao-tools.sh --eso-dir  print the operator binary's folder and exit
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# Pinned by the wrapper modules' go.mod, and nowhere else.
VAULT_VERSION=$("$root/hack/tool-version.sh" vault github.com/hashicorp/vault)
ESO_VERSION=$("$root/hack/tool-version.sh" external-secrets github.com/external-secrets/external-secrets)
cache=${PROVIDER_POSTGRESQL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/provider-postgresql}
vault_bin="$cache/vault/vault-${VAULT_VERSION}"
eso_bin="$cache/external-secrets/external-secrets-${ESO_VERSION}"

case "${1:-}" in
  --dir) echo "$vault_bin"; exit 0 ;;
  --eso-dir) echo "$eso_bin"; exit 0 ;;
esac

# shellcheck source=hack/build-tool.sh
source "$root/hack/build-tool.sh"

# build <name> <out dir> <wrapper module dir> <package>
build() {
  build_tool openbao-tools "$1" "$2/$1" "$root/tools/$3" "$4" "-s -w"
}

build vault "$vault_bin" vault github.com/hashicorp/vault
build external-secrets "$eso_bin" external-secrets github.com/external-secrets/external-secrets
echo "openbao-tools: ready"
