"""moto's S3 server in a process of its own on 127.0.0.1, for the tests' S3 endpoint."""

from __future__ import annotations

import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

from tests.support.waiting import until

DEADLINE = 60.0  # seconds for the server to answer


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_moto() -> tuple[subprocess.Popen, str]:
    """The server and its URL, once it answers (tests.support.waiting: any not-ready answer is "not yet")."""
    port = _free_port()
    proc = subprocess.Popen([str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"

    def answered() -> bool:
        if proc.poll() is not None:  # not a "not yet": it will not answer
            raise RuntimeError(f"moto's server exited with {proc.returncode} (port {port} taken?)")
        with urllib.request.urlopen(url + "/moto-api/", timeout=5):
            return True

    try:
        until(answered, f"moto's server at {url}", DEADLINE, every=0.1)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return proc, url
