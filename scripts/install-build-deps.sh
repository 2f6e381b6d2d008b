#!/usr/bin/env bash
# What pip needs to build from source: mysqlclient (the Airflow MySQL provider) links MariaDB's
# client library, found through pkg-config. Debian stable's packages, installed once.
set -euo pipefail
if pkg-config --exists mariadb 2>/dev/null || pkg-config --exists mysqlclient 2>/dev/null; then
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "install-build-deps: run as root, or: apt-get install libmariadb-dev pkg-config" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends libmariadb-dev pkg-config >/dev/null
echo "build deps: libmariadb-dev $(pkg-config --modversion mariadb)"
