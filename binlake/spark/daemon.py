"""Spark's Python daemon for a local master (`spark.python.daemon.module`, binlake.spark.settings):
pyspark.daemon, with pyspark and py4j imported from the installed packages.

Spark puts its own copies first on its Python workers' path: pyspark.zip, py4j's source zip and
the spark-core jar (5,854 entries). From a zip, every worker compiles pyspark's modules from
source (a zip holds no cached bytecode), and at each task's start PySpark's worker calls
importlib.invalidate_caches(), which reads every zip's directory again: together a share of
the Python workers' CPU on production's mix that bench/RESULTS.md measures (py-spy). A local master's
workers run the driver's interpreter, which has pyspark installed (binlake.spark.job
executor_python); the daemon drops Spark's archives from the path where the same packages are
installed as directories, and is pyspark.daemon from there on."""

from __future__ import annotations

import fnmatch
import os
import sys

PACKAGES = ("pyspark", "py4j")
SPARKS = ("pyspark.zip", "py4j-*.zip", "spark-core*.jar")  # what Spark puts on the path (PythonUtils)


def installed_first(path: list[str]) -> list[str]:
    """Spark's archives to drop from `path`: all of them when every package of PACKAGES is in
    one of its directories, else none. Any other entry (a user's zip) stays."""
    archives = [p for p in path if any(fnmatch.fnmatch(os.path.basename(p), a) for a in SPARKS)]
    dirs = [p for p in path if p and os.path.isdir(p)]
    found = all(any(os.path.isfile(os.path.join(d, pkg, "__init__.py")) for d in dirs) for pkg in PACKAGES)
    return archives if found else []


def main() -> None:
    for p in installed_first(sys.path):
        sys.path.remove(p)
        sys.path_importer_cache.pop(p, None)  # invalidate_caches would read its directory again
    from pyspark.daemon import manager

    manager()


if __name__ == "__main__":
    main()
