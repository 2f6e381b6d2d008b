"""A local master's Python workers import pyspark as the driver does, not from Spark's zips."""

from __future__ import annotations

import os

from binlake.spark.daemon import installed_first


def _package(root, name: str) -> None:
    (root / name).mkdir(parents=True)
    (root / name / "__init__.py").write_text("")


def test_spark_archives_are_dropped_only_where_the_packages_are_installed(tmp_path):
    # the entries Spark's PythonUtils puts first, a user's own zip, the packages installed or not
    lib = tmp_path / "spark" / "python" / "lib"
    lib.mkdir(parents=True)
    spark = [str(lib / "pyspark.zip"), str(lib / "py4j-0.10.9.9-src.zip"),
             str(tmp_path / "spark" / "jars" / "spark-core_2.13-4.2.0.jar")]
    for p in spark:
        os.makedirs(os.path.dirname(p), exist_ok=True)
        open(p, "wb").close()
    user = tmp_path / "mine.zip"
    user.write_bytes(b"")
    site = tmp_path / "site"
    site.mkdir()
    path = [*spark, str(user), str(site)]
    assert installed_first(path) == []  # a cluster's worker with Spark's copies only: they stay
    _package(site, "pyspark")
    assert installed_first(path) == []  # py4j still only in its zip
    _package(site, "py4j")
    assert installed_first(path) == spark


def test_a_local_masters_workers_import_pyspark_installed(spark):
    # The oracle is where the driver's interpreter imports pyspark from; the workers run it too.
    import py4j
    import pyspark

    def where(_):
        import sys

        import py4j as p4
        import pyspark as ps

        yield [ps.__file__, p4.__file__, *sys.path]

    found = spark.sparkContext.parallelize([0], 1).mapPartitions(where).collect()[0]
    assert found[:2] == [pyspark.__file__, py4j.__file__]
    assert not [p for p in found[2:] if os.path.basename(p).startswith(("pyspark.zip", "py4j-", "spark-core"))], found
