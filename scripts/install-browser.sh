#!/usr/bin/env bash
# Debian's Chromium for the browser tests (data docs, the Airflow UI), driven by Playwright's
# Python client through /usr/bin/chromium: no browser download from elsewhere.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
    echo "chromium: $(chromium --version 2>/dev/null | head -1)"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "binlake: the browser tests need Debian's chromium: sudo apt-get install chromium" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q --no-install-recommends chromium >/dev/null || {
    apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends chromium >/dev/null; }
echo "chromium: $(chromium --version 2>/dev/null | head -1)"
