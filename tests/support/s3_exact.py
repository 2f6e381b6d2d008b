"""An S3 endpoint that lists multipart uploads as MinIO does: by an object's exact name only.

MinIO's ListMultipartUploads takes its prefix as one object's name ("We do not support prefix
based listing", cmd/erasure-multipart.go): a listing by a key prefix finds no upload. This
endpoint forwards every request, unchanged, to a real S3 endpoint (moto's server in the tests) on
127.0.0.1, and keeps, of a ListMultipartUploads answer, only the uploads whose key is the
prefix itself. boto3 talks HTTP to it like to any S3.
"""

from __future__ import annotations

import http.client
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlparse

_UPLOAD = re.compile(rb"<Upload>.*?</Upload>", re.S)
_KEY = re.compile(rb"<Key>(.*?)</Key>", re.S)
_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length"}


class ExactKeyUploads:
    """`with ExactKeyUploads(upstream) as url:` an endpoint on 127.0.0.1 in front of `upstream`."""

    def __init__(self, upstream: str) -> None:
        target = urlparse(upstream)
        assert target.hostname is not None and target.port is not None

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                conn = http.client.HTTPConnection(target.hostname, target.port, timeout=120)
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP | {"expect"}}
                    conn.request(self.command, self.path, body=body, headers=headers)
                    answer = conn.getresponse()
                    data = answer.read()
                    query = parse_qs(urlparse(self.path).query, keep_blank_values=True)
                    if self.command == "GET" and "uploads" in query:
                        data = _exact(data, query.get("prefix", [""])[0])
                    self.send_response(answer.status)
                    for k, v in answer.getheaders():
                        if k.lower() not in _HOP:
                            self.send_header(k, v)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(data)
                finally:
                    conn.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        return self.url

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def _exact(listing: bytes, prefix: str) -> bytes:
    """A ListMultipartUploads answer with only the uploads of the object named `prefix`."""
    def keep(m: re.Match) -> bytes:
        key = _KEY.search(m[0])
        return m[0] if key and unquote(key[1].decode()) == prefix and prefix else b""

    return _UPLOAD.sub(keep, listing)
