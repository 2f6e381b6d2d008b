#!/usr/bin/env bash
# Spark 4 runs on Java 17 or 21: say so plainly instead of failing deep inside a test.
set -euo pipefail
if ! command -v java >/dev/null 2>&1; then
    echo "binlake: Spark needs Java 17+ and no 'java' is on PATH (Debian: apt-get install openjdk-17-jre-headless)" >&2
    exit 1
fi
version=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
if [ -z "$version" ] || [ "$version" -lt 17 ]; then
    echo "binlake: Spark needs Java 17+, found: $(java -version 2>&1 | head -1)" >&2
    exit 1
fi
echo "java $version: ok"
