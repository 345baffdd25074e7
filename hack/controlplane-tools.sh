#!/usr/bin/env bash
# Builds the local control-plane binaries (etcd, kube-apiserver,
# kube-controller-manager, kubectl) from the Go module proxy, using the
# wrapper modules under tools/, and caches them outside the repository keyed
# by version. A cold build takes several minutes on 2 cores; a warm one is
# instant. The folder it fills is what envtest expects in KUBEBUILDER_ASSETS.
# Binaries a user already has (KUBEBUILDER_ASSETS pointing elsewhere, as
# setup-envtest leaves it) are linked instead of built when they are of this
# Kubernetes minor version; what they lack (setup-envtest ships no
# kube-controller-manager) is built.
#
#   hack/controlplane-tools.sh           build what is missing, print progress
#   hack/controlplane-tools.sh --dir     print the assets folder and exit
#   hack/controlplane-tools.sh --floor [--dir]
#                                        the same for the oldest supported
#                                        kube-apiserver (tools/kubernetes-floor),
#                                        beside this version's other binaries
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# Pinned by the wrapper modules' go.mod, and nowhere else.
ETCD_VERSION=$("$root/hack/tool-version.sh" etcd go.etcd.io/etcd/server/v3)
K8S_VERSION=$("$root/hack/tool-version.sh" kubernetes k8s.io/kubernetes)
cache=${PROVIDER_POSTGRESQL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/provider-postgresql}
assets="$cache/controlplane/k8s-${K8S_VERSION}-etcd-${ETCD_VERSION}"

floor=
if [[ "${1:-}" == "--floor" ]]; then
  shift
  K8S_FLOOR_VERSION=$("$root/hack/tool-version.sh" kubernetes-floor k8s.io/kubernetes)
  floor="$cache/controlplane/floor-k8s-${K8S_FLOOR_VERSION}-with-${K8S_VERSION}-etcd-${ETCD_VERSION}"
fi

if [[ "${1:-}" == "--dir" ]]; then
  echo "${floor:-$assets}"
  exit 0
fi

mkdir -p "$assets"

# ldflags <version>: the version kube-apiserver and its peers report.
ldflags() {
  local minor=${1#v1.}
  minor=${minor%%.*}
  echo "-s -w -X k8s.io/component-base/version.gitVersion=$1 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor} -X k8s.io/component-base/version.gitTreeState=clean"
}
k8s_ldflags=$(ldflags "$K8S_VERSION")

# shellcheck source=hack/build-tool.sh
source "$root/hack/build-tool.sh"

# theirs is the folder of control-plane binaries the user already has
# (KUBEBUILDER_ASSETS, as setup-envtest fills it), when it is not ours.
theirs=
if [[ -n "${KUBEBUILDER_ASSETS:-}" && "${KUBEBUILDER_ASSETS%/}" != "$assets" && -d "$KUBEBUILDER_ASSETS" ]]; then
  theirs=${KUBEBUILDER_ASSETS%/}
fi

# reusable <name>: the user's binary of that name answers for this
# Kubernetes minor version (etcd: 3.5 or 3.6).
reusable() {
  local f="$theirs/$1" v
  [[ -n "$theirs" && -x "$f" && ! -L "$f" ]] || return 1
  case $1 in
    etcd) v=$("$f" --version 2>/dev/null | head -1) && [[ $v =~ 3\.[56]\. ]] ;;
    kubectl) v=$("$f" version --client 2>/dev/null | head -1) && [[ $v == *"${K8S_VERSION%.*}."* ]] ;;
    *) v=$("$f" --version 2>/dev/null | head -1) && [[ $v == *"${K8S_VERSION%.*}."* ]] ;;
  esac
}

# build <name> <wrapper module dir> <package> <ldflags> [<dir>]
build() {
  local out="${5:-$assets}/$1"
  if [[ -z "${5:-}" && ! -x "$out" ]] && reusable "$1"; then
    ln -sf "$theirs/$1" "$out"
    echo "controlplane-tools: $1 taken from KUBEBUILDER_ASSETS ($theirs)"
    return
  fi
  build_tool controlplane-tools "$1" "$out" "$root/tools/$2" "$3" "$4"
}

build etcd etcd go.etcd.io/etcd/server/v3 "-s -w"
build kube-apiserver kubernetes k8s.io/kubernetes/cmd/kube-apiserver "$k8s_ldflags"
build kube-controller-manager kubernetes k8s.io/kubernetes/cmd/kube-controller-manager "$k8s_ldflags"
build kubectl kubernetes k8s.io/kubernetes/cmd/kubectl "$k8s_ldflags"

if [[ -n "$floor" ]]; then
  mkdir -p "$floor"
  build kube-apiserver kubernetes-floor k8s.io/kubernetes/cmd/kube-apiserver "$(ldflags "$K8S_FLOOR_VERSION")" "$floor"
  # The rest of the control plane is this version's: the floor is what the
  # API server accepts, and the tests that run there use only the garbage
  # collector and namespace controller of kube-controller-manager.
  for b in etcd kube-controller-manager kubectl; do ln -sf "$assets/$b" "$floor/$b"; done
  assets=$floor
fi

echo "controlplane-tools: ready; export KUBEBUILDER_ASSETS=$assets"
