"""A test past pytest's faulthandler_timeout: beside the Python stacks pytest prints then, the Java
threads of every JVM this worker started (the tests' SparkSession, a spark-submit, Airflow's
tasks'), so that a run CI cuts off by time says what the JVM side waited on.

A whole dump of a Spark JVM is a hundred-odd threads; CI keeps the end of its output. Printed:
jstack's own deadlock report, and the threads in Spark, Delta, py4j or Hadoop frames that are
not idle by design (a pool's worker parked waiting for work is left out)."""

from __future__ import annotations

import os
import re
import subprocess
import threading
from pathlib import Path

from tests.support.processes import tree

INTERESTING = re.compile(r"org\.apache\.spark|io\.delta|py4j|org\.apache\.hadoop|binlake")
# a thread that waits for work to come to it, not on something the test waits for: its frames
# down to the first of Spark's, Delta's, py4j's or Hadoop's show it
IDLE = re.compile(r"LinkedBlocking(Queue|Deque)\.take|SynchronousQueue\.poll|ThreadPoolExecutor\.getTask|"
                  r"\.accept|EPoll\.wait|MessageLoop\.run|DelayedWorkQueue\.take|ReferenceQueue\.remove|"
                  r"ClientServerConnection\.waitForCommands|PythonGatewayServer\$\.main")
MOST = 60_000  # characters a dump may print: CI shows the end of a long output


def jvms(pid: int) -> list[int]:
    out = []
    for p in tree(pid)[1:]:
        try:
            exe = os.readlink(f"/proc/{p}/exe")
        except OSError:
            continue
        if exe.endswith("/java"):
            out.append(p)
    return out


def threads_that_matter(dump: str) -> str:
    """jstack's output cut to its deadlock report and the threads worth reading."""
    blocks = dump.split("\n\n")
    kept = [b for b in blocks if "deadlock" in b.lower() or (b.startswith('"') and not _idle(b))]
    return "\n\n".join(kept)


def _idle(thread: str) -> bool:
    """Whether a thread of a dump is none of ours, or waits for work (IDLE above its first frame of ours)."""
    frames = [ln for ln in thread.splitlines() if ln.lstrip().startswith("at ")]
    ours = next((i for i, f in enumerate(frames) if INTERESTING.search(f)), None)
    return ours is None or bool(IDLE.search("\n".join(frames[:ours + 1])))


def dump_jvms(out_fd: int, pid: int | None = None) -> None:
    """Each JVM under this process, its threads that matter, written to `out_fd`."""
    for jvm in jvms(pid or os.getpid()):
        try:
            cmd = Path(f"/proc/{jvm}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            dump = subprocess.run(["jstack", str(jvm)], capture_output=True, text=True, timeout=120).stdout
        except (OSError, subprocess.SubprocessError) as e:
            text = f"\n--- JVM {jvm}: no thread dump ({e})\n"
        else:
            main = re.search(r"(org\.apache\.spark\.deploy\.SparkSubmit|pyspark-shell|spark\.app\.name=\S+)", cmd)
            text = (f"\n--- JVM {jvm} ({main[1] if main else cmd[:120]}): its threads that matter\n"
                    f"{threads_that_matter(dump)[-MOST:]}\n")
        os.write(out_fd, text.encode())


class Watch:
    """Per test: after `seconds`, the JVMs' threads (once), on the stderr the run started with."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.fd = os.dup(2)  # pytest's capture replaces fd 2 during a test; faulthandler keeps its own too

    def start(self, nodeid: str) -> threading.Timer:
        def fire() -> None:
            os.write(self.fd, f"\n{nodeid}: past {self.seconds:.0f} s; the JVMs under this worker:\n".encode())
            dump_jvms(self.fd)

        timer = threading.Timer(self.seconds, fire)
        timer.daemon = True
        timer.start()
        return timer
