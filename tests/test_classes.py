"""The local driver's JVM maps Spark's classes from binlake's archive (binlake.spark.classes), made
by `make install`; one whose class path no longer matches starts without it and says so on
stderr only. The oracle is the JVM's own class loading log (`-Xlog:class+load`): it names the
source of every class, "shared objects file (top)" for the dynamic archive's."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from binlake.spark import settings
from tests.conftest import require

# A session as binlake's local sessions start (binlake.spark.job.session: settings.local), its JVM
# logging where each class came from; a Delta table written and read back.
SCRIPT = """
import sys
from binlake.spark.job import session
from binlake.spark.settings import delta
log, jar, table = sys.argv[1:4]
conf = {"spark.driver.extraJavaOptions": f"-Xlog:class+load=info:file={log}", "spark.ui.enabled": "false"}
if jar:  # before the class path the archive was made with
    conf["spark.driver.extraClassPath"] = jar + ":" + delta()["spark.driver.extraClassPath"]
spark = session("local[2]", app="binlake-classes-test", conf=conf)
spark.range(10).write.format("delta").save(table)
print("rows", spark.read.format("delta").load(table).count())
spark.stop()
"""
WANTED = ["org.apache.spark.sql.SparkSession", "org.apache.spark.sql.delta.DeltaLog",
          "org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat"]


def _run(tmp_path: Path, name: str, jar: str = "") -> tuple[subprocess.CompletedProcess, dict[str, str]]:
    log = tmp_path / f"{name}.log"
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(log), jar, str(tmp_path / name)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    sources = {}
    for line in log.read_text().splitlines():  # [0.123s][info][class,load] a.b.C source: ...
        head, _, source = line.partition(" source: ")
        sources[head.rsplit(" ", 1)[-1]] = source
    return proc, sources


def test_a_local_session_maps_sparks_classes_from_the_archive(spark_submit, tmp_path):
    archive = settings.class_archive()
    require(archive is not None and archive.is_file(), f"the archive of Spark's classes ({archive}; make install)")
    assert settings.class_sharing().startswith(f"-XX:SharedArchiveFile={archive} ")
    proc, sources = _run(tmp_path, "matched")
    assert proc.stdout == "rows 10\n"  # the write's ten rows, and nothing of the JVM's on stdout
    assert {c: sources.get(c) for c in WANTED} == {c: "shared objects file (top)" for c in WANTED}
    # most of what the session loaded came from the archive, not from the jars
    shared = sum(s == "shared objects file (top)" for s in sources.values())
    jars = sum(s.startswith("file:") or s.startswith("jar:") for s in sources.values())
    assert shared > 5 * jars, (shared, jars)


def test_a_class_path_the_archive_does_not_match_starts_without_it(spark_submit, tmp_path):
    archive = settings.class_archive()
    require(archive is not None and archive.is_file(), f"the archive of Spark's classes ({archive}; make install)")
    jar = tmp_path / "first.jar"  # a user's jar before Spark's: the class path's prefix differs
    with zipfile.ZipFile(jar, "w") as z:
        z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    proc, sources = _run(tmp_path, "mismatched", str(jar))
    assert proc.stdout == "rows 10\n"  # the same rows; the JVM's warning, if any, not on stdout
    assert "shared objects file (top)" not in sources.values()
    assert sources["org.apache.spark.sql.delta.DeltaLog"].startswith(("file:", "jar:"))


def test_a_spark_reinstalled_at_the_same_path_gets_an_archive_of_its_own(tmp_path, monkeypatch):
    # The JVM refuses an archive whose class path jars changed size or time (a virtualenv made
    # again at the same path: the clean-clone CI), so these name the archive and decide its pruning.
    from binlake.spark import classes
    from binlake.spark.jars import pyspark_jars

    jars = tmp_path / "spark" / "jars"
    jars.mkdir(parents=True)
    for name in ("hadoop-client-api-*.jar", "spark-core_*.jar"):  # the versions the fetched jars match
        for real in pyspark_jars().glob(name):
            (jars / real.name).write_bytes(b"one")
    monkeypatch.setenv("SPARK_HOME", str(tmp_path / "spark"))
    core = next(jars.glob("spark-core_*.jar"))
    first, inputs = settings.class_archive(), settings.class_archive_inputs()
    require(first is not None and inputs is not None, "Java and the fetched jars (make install)")
    assert settings.class_archive() == first and classes.still_there(inputs)
    os.utime(core, ns=(0, 1_000_000_000))  # the same path and size, another time
    assert settings.class_archive() != first and not classes.still_there(inputs)
    assert not classes.still_there([e.rsplit(" ", 2)[0] for e in inputs])  # an older binlake's: made again


def test_the_archives_options_come_before_the_users_own():
    # HotSpot takes a flag's last value: the user's --conf of the driver's java options keeps its say
    mine = {settings.JAVA_OPTIONS: "-Xss4m -Xshare:off"}
    got = settings.with_java_options("-XX:SharedArchiveFile=/a.jsa " + settings.JVM_LOG, mine)
    assert got == {settings.JAVA_OPTIONS: f"-XX:SharedArchiveFile=/a.jsa {settings.JVM_LOG} -Xss4m -Xshare:off"}
    assert settings.with_java_options("", {}) == {}
    assert settings.with_java_options("-Xa", {"k": "v"}) == {"k": "v", settings.JAVA_OPTIONS: "-Xa"}


def test_make_install_without_java_makes_no_archive_and_goes_on(tmp_path):
    # make install runs the build; `make test-fast` needs no Java, so its absence is no error there
    env = {**os.environ, "PATH": str(Path(sys.executable).parent), "JAVA_HOME": ""}
    proc = subprocess.run([sys.executable, "-m", "binlake.spark.classes"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert (proc.returncode, proc.stdout) == (0, "")
    assert "no Java: no archive of Spark's classes" in proc.stderr
