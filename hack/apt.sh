# Sourced by the hack/ensure-*.sh scripts: installing a missing Debian
# package, as root or through sudo, the one way they all do it.
#
#   apt_install <who> <package>...

# apt_sudo sets SUDO to what runs a command as root ("" when we are root,
# "sudo" when there is one), or says what to run and fails.
apt_sudo() {
  local who=$1
  shift
  if [[ $(id -u) -eq 0 ]]; then
    SUDO=
  elif command -v sudo >/dev/null; then
    SUDO=sudo
  else
    echo "$who: missing; run as root: apt-get install -y $*" >&2
    exit 1
  fi
}

apt_install() {
  local who=$1
  shift
  apt_sudo "$who" "$@"
  echo "$who: installing Debian's $*..." >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
}
