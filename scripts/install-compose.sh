#!/usr/bin/env bash
# The Docker Compose v2 plugin, from Debian sid into the cache (never onto the system), for
# `docker compose config` in tests/test_compose.py. Prints the DOCKER_CONFIG directory that uses it:
#   DOCKER_CONFIG=$(bash scripts/install-compose.sh) docker compose config
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m tests.support.compose install
