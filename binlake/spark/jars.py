"""The jars Spark needs beyond pyspark's own: Delta Lake and the S3A connector.

pyspark's wheel carries Spark and Hadoop's client, not Delta Lake (delta-spark's Python package
is only its API) nor Hadoop's `s3a://` file system. Which versions: Delta's for this Spark
release (`io.delta:delta-spark_<spark major.minor>_2.13`, the version of the `delta-spark`
Python package: the two must match exactly), and `org.apache.hadoop:hadoop-aws` of the very
Hadoop of pyspark's `hadoop-client-*` jars, whose POM names the AWS SDK v2 bundle it was built
against. Maven resolves them from Maven Central into binlake's cache
(`${BINLAKE_CACHE:-~/.cache/binlake}/maven`); those Spark does not ship itself (Spark's own copy
wins) are linked into `jars/<spark>-<delta>-<hadoop>/` beside their list: after the first time
nothing is fetched, offline, and an image keeps that directory only (docker/Dockerfile).

    python -m binlake.spark.jars fetch     # make install runs it; prints the jars
    python -m binlake.spark.jars jars      # the fetched jars, comma-separated: spark-submit --jars
    python -m binlake.spark.jars classpath # colon-separated: --driver-class-path, spark.executor.extraClassPath
    python -m binlake.spark.jars packages  # the spark.jars.packages coordinates, for a cluster

No pyspark import at module level: the Airflow operator reads the list without loading Spark.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

from binlake.errors import BinlakeError

SCALA = "2.13"
# Delta's version is the delta-spark Python package's (pyproject.toml pins it): its jars must be
# the same release as its Python API.
DELTA_PACKAGE = "delta-spark"


def cache() -> Path:
    return Path(os.environ.get("BINLAKE_CACHE", Path.home() / ".cache" / "binlake"))


def pyspark_jars() -> Path:
    """The directory of the jars of the Spark that runs (spark-submit's SPARK_HOME, else pyspark's)."""
    import importlib.util

    home = os.environ.get("SPARK_HOME")
    if home and (Path(home) / "jars").is_dir():
        return Path(home) / "jars"
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise BinlakeError("pyspark is not installed (pip install 'binlake[spark]')")
    return Path(spec.origin).parent / "jars"


def versions() -> dict[str, str]:
    """Spark's, Hadoop's (of pyspark's hadoop-client jars) and Delta's versions."""
    jars = pyspark_jars()
    hadoop = sorted(m.group(1) for p in jars.glob("hadoop-client-api-*.jar")
                    if (m := re.fullmatch(r"hadoop-client-api-(.+)\.jar", p.name)))
    spark = sorted(m.group(1) for p in jars.glob("spark-core_*.jar")
                   if (m := re.fullmatch(r"spark-core_[0-9.]+-(.+)\.jar", p.name)))
    if not hadoop or not spark:
        raise BinlakeError(f"{jars}: no hadoop-client-api or spark-core jar: is pyspark whole?")
    try:
        delta = metadata.version(DELTA_PACKAGE)
    except metadata.PackageNotFoundError:
        raise BinlakeError(f"the {DELTA_PACKAGE} package is not installed (pip install 'binlake[spark]')") from None
    return {"spark": spark[-1], "hadoop": hadoop[-1], "delta": delta}


def coordinates(v: dict[str, str] | None = None) -> list[str]:
    """The Maven coordinates of what binlake's sessions need: Delta and the S3A connector (their own
    dependencies, delta-storage and the AWS SDK bundle, come with them)."""
    v = v or versions()
    spark = ".".join(v["spark"].split(".")[:2])
    return [f"io.delta:delta-spark_{spark}_{SCALA}:{v['delta']}", f"org.apache.hadoop:hadoop-aws:{v['hadoop']}"]


def _listing(v: dict[str, str]) -> Path:
    return cache() / "jars" / f"spark-{v['spark']}-delta-{v['delta']}-hadoop-{v['hadoop']}.txt"


def _place(jar: str, into: Path) -> str:
    """A resolved jar in the jars' directory: a hard link where the file system allows it."""
    target = into / os.path.basename(jar)
    if not target.exists():
        tmp = target.with_suffix(".tmp")
        try:
            os.link(jar, tmp)
        except OSError:
            shutil.copyfile(jar, tmp)
        os.replace(tmp, target)
    return str(target)


def classpath() -> list[str]:
    """The fetched jars (absolute paths), for spark.jars; an error saying how to fetch them when
    they are not there."""
    v = versions()
    listing = _listing(v)
    try:
        paths = listing.read_text().split()
    except FileNotFoundError:
        paths = []
    if not paths or not all(os.path.exists(p) for p in paths):
        raise BinlakeError(f"the Delta Lake and S3A jars for Spark {v['spark']} are not fetched ({listing}): "
                           "run `python -m binlake.spark.jars fetch` (make install does)")
    return paths


def _pom(coords: list[str]) -> str:
    deps = "".join(f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{ver}</version>"
                   "</dependency>" for g, a, ver in (c.split(":") for c in coords))
    return ('<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
            "<groupId>binlake</groupId><artifactId>spark-jars</artifactId><version>1</version>"
            f"<packaging>pom</packaging><dependencies>{deps}</dependencies></project>")


def _artifact(jar: str) -> str:
    """A jar's artifact name without its version: hadoop-client-api-3.5.0.jar -> hadoop-client-api."""
    return re.sub(r"-\d[\w.+-]*\.jar$", "", os.path.basename(jar))


def fetch() -> list[str]:
    """Resolve the jars with Maven into the cache (once), keep those Spark does not ship; their paths."""
    v = versions()
    listing = _listing(v)
    try:
        return classpath()
    except BinlakeError:
        pass
    mvn = shutil.which("mvn")
    if mvn is None:
        raise BinlakeError("fetching the Delta Lake and S3A jars needs Maven (Debian: apt-get install maven)")
    repo = cache() / "maven"
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "pom.xml").write_text(_pom(coordinates(v)))
        out = Path(tmp) / "classpath.txt"
        proc = subprocess.run([mvn, "-B", "-q", f"-Dmaven.repo.local={repo}", "dependency:build-classpath",
                               "-Dmdep.includeScope=runtime", f"-Dmdep.outputFile={out}"],
                              cwd=tmp, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise BinlakeError(f"Maven could not resolve {', '.join(coordinates(v))}:\n{tail}")
        resolved = out.read_text().strip().split(os.pathsep)
    shipped = {_artifact(p.name) for p in pyspark_jars().glob("*.jar")}
    into = listing.with_suffix("")
    into.mkdir(parents=True, exist_ok=True)
    keep = sorted(_place(p, into) for p in resolved if p and _artifact(p) not in shipped)
    tmp_listing = listing.with_suffix(".tmp")
    tmp_listing.write_text("\n".join(keep) + "\n")
    os.replace(tmp_listing, listing)  # whole or not at all: classpath() trusts it
    return keep


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m binlake.spark.jars", description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=["fetch", "jars", "classpath", "packages"])
    args = p.parse_args(argv)
    try:
        if args.what != "fetch":
            listed = coordinates() if args.what == "packages" else classpath()
            print((":" if args.what == "classpath" else ",").join(listed))
            return 0
        for path in fetch():
            print(path)
    except BinlakeError as e:
        print(f"binlake: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
