#!/usr/bin/env bash
# Makes sure PostgreSQL server binaries are installed (Debian's postgresql
# package), installing them with apt-get when they are absent and we may.
set -euo pipefail

if compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null || [[ -n "${PG_BIN_DIR:-}" && -x "${PG_BIN_DIR}/postgres" ]]; then
  echo "ensure-postgresql: PostgreSQL server binaries present"
  exit 0
fi

. "$(dirname "$0")/apt.sh"
apt_sudo ensure-postgresql postgresql postgresql-contrib

# Tests and make dev start their own servers: do not create (and start) the
# package's default cluster on port 5432.
if [[ ! -e /etc/postgresql-common/createcluster.conf ]]; then
  $SUDO mkdir -p /etc/postgresql-common
  echo "create_main_cluster = false" | $SUDO tee /etc/postgresql-common/createcluster.conf >/dev/null
fi
apt_install ensure-postgresql postgresql postgresql-contrib
echo "ensure-postgresql: installed $(ls -d /usr/lib/postgresql/*/bin | head -n1)"
