"""A real Spark standalone cluster (master + one worker) on 127.0.0.1, from pyspark's own jars.

The docker-compose cluster is the same kind (`spark://spark-master:7077`); here it runs
from `spark-class` of the installed pyspark, so the job's executors are separate JVMs with
their own Python workers, as on a cluster.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path


def _master_url(proc: subprocess.Popen, log: Path, timeout: float = 60.0) -> str:
    """The master's URL, once it says it listens: it binds a port of its own choosing (--port 0)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        found = re.search(r"Starting Spark master at (spark://127\.0\.0\.1:\d+)", log.read_text())
        if found:
            return found.group(1)
        time.sleep(0.3)
    raise RuntimeError(f"the master did not start after {timeout:.0f} s:\n{log.read_text()[-3000:]}")


@dataclass
class Cluster:
    url: str
    procs: list[subprocess.Popen]

    def stop(self) -> None:
        for p in reversed(self.procs):
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def start(workdir: Path, cores: int = 2, memory: str = "2g") -> Cluster:
    import pyspark

    home = Path(pyspark.__file__).parent
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "SPARK_LOG_DIR": str(workdir), "SPARK_WORKER_DIR": str(workdir / "work")}
    spark_class = [str(home / "bin" / "spark-class")]
    procs: list[subprocess.Popen] = []
    try:
        # every port 0: each process binds one of its own choosing, so no port is probed and reused
        mlog = workdir / "master.log"
        procs.append(subprocess.Popen([*spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                       "--port", "0", "--webui-port", "0"],
                                      stdout=mlog.open("w"), stderr=subprocess.STDOUT, env=env))
        url = _master_url(procs[0], mlog)
        wlog = workdir / "worker.log"
        worker = ["org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--cores", str(cores),
                  "--memory", memory, "--webui-port", "0"]
        procs.append(subprocess.Popen([*spark_class, *worker],
                                      stdout=wlog.open("w"), stderr=subprocess.STDOUT, env=env))
        deadline = time.monotonic() + 60
        while "Successfully registered with master" not in wlog.read_text():
            if time.monotonic() > deadline or procs[1].poll() is not None:
                raise RuntimeError(f"the worker did not register:\n{wlog.read_text()[-3000:]}")
            time.sleep(0.3)
        return Cluster(url, procs)
    except BaseException:
        Cluster("", procs).stop()
        raise
