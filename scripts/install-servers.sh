#!/usr/bin/env bash
# Install (or find cached) MySQL 9.x from Debian sid into a private prefix, and MariaDB 10.11.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m tests.support.servers install all
