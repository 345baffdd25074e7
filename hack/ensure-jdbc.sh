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

if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null; then SUDO=sudo; else
    echo "ensure-jdbc: Java or the PostgreSQL JDBC driver is missing; run as root: apt-get install -y default-jre-headless libpostgresql-jdbc-java" >&2
    exit 1
  fi
else
  SUDO=
fi

echo "ensure-jdbc: installing Debian's default-jre-headless and libpostgresql-jdbc-java..." >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq default-jre-headless libpostgresql-jdbc-java >/dev/null
[[ -r "$jar" ]] || { echo "ensure-jdbc: $jar is still missing after the install" >&2; exit 1; }
echo "$jar"
