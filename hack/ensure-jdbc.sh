#!/usr/bin/env bash
# Makes sure a Java runtime and the PostgreSQL JDBC driver (Debian's
# libpostgresql-jdbc-java) are installed: a test logs in with the connection
# Secret's jdbc-url through the real driver, as a Java application would.
# Prints the driver's jar.
set -euo pipefail

jar=${PGJDBC_JAR:-/usr/share/java/postgresql.jar}
if command -v java >/dev/null && [[ -r "$jar" ]]; then
  echo "$jar"
  exit 0
fi

. "$(dirname "$0")/apt.sh"
apt_install ensure-jdbc default-jre-headless libpostgresql-jdbc-java
[[ -r "$jar" ]] || { echo "ensure-jdbc: $jar is still missing after the install" >&2; exit 1; }
echo "$jar"
