"""moto's S3 server in a process of its own on 127.0.0.1, for the tests' S3 endpoint."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

DEADLINE = 60.0  # seconds for the server to answer


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_moto() -> tuple[subprocess.Popen, str]:
    """The server and its URL, once it answers; another port when one is taken meanwhile."""
    moto = Path(sys.executable).parent / "moto_server"
    for _ in range(5):
        port = _free_port()
        proc = subprocess.Popen([str(moto), "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + DEADLINE
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(url + "/moto-api/", timeout=5):
                    return proc, url
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.1)  # polled, with the deadline above
        proc.kill()
        proc.wait()
    raise RuntimeError("moto's server did not start on 127.0.0.1")
