#!/usr/bin/env bash
# What pip needs to build from source: mysqlclient (the Airflow MySQL provider) links MariaDB's
# client library, found through pkg-config; binlake's row decoder (a C extension) and mysqlclient
# need a C compiler and Python's headers; npm fetches the data docs' CSS and JavaScript
# (binlake/local/offline_docs.py). Debian stable's packages, installed once.
set -euo pipefail
PYTHON=${PYTHON:-python3}
have_headers() { [ -f "$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')/Python.h" ]; }
if { pkg-config --exists mariadb 2>/dev/null || pkg-config --exists mysqlclient 2>/dev/null; } \
        && command -v cc >/dev/null && command -v npm >/dev/null && have_headers; then
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "install-build-deps: run as root, or: apt-get install libmariadb-dev pkg-config gcc python3-dev npm" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends libmariadb-dev pkg-config gcc python3-dev \
    $(command -v npm >/dev/null || echo npm) >/dev/null
echo "build deps: libmariadb-dev $(pkg-config --modversion mariadb), $(cc --version | head -1)"
