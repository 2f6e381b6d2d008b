"""Object stores: `file:///path` and `s3://bucket/prefix` (boto3).

A binlog object is written so that it never looks complete before it is: the file store
writes a temporary name, fsyncs and renames; S3 gets a multipart upload (bounded memory:
one part buffered) completed only after every part was sent, and aborted on any error.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import mmap
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from binlake.errors import BinlakeError

PART_SIZE = 16 << 20
CHECK_KEY = ".binlake-check"  # written and deleted by S3Store.check: the bucket takes writes
RANGE_CHUNK = 8 << 20  # a ranged GET is spooled to disk this much at a time


class MissingObject(BinlakeError):
    """The store has no object under a key it was expected to hold."""


class Range:
    """Bytes [start, start + len(data)) of an object, and the object's whole size; `pages`: the
    memory map behind `data` and its offset of `data[0]`, for readers that release what they read."""

    def __init__(self, data, total: int, at: int = 0) -> None:
        self.data = data
        self.total = total
        obj = data.obj if isinstance(data, memoryview) else None
        self.pages = (obj, at) if isinstance(obj, mmap.mmap) else None


def _mapped(f) -> memoryview:
    size = os.fstat(f.fileno()).st_size
    if size == 0:
        return memoryview(b"")
    return memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))


class StoreError(BinlakeError):
    """A store cannot be used: names the store URL and why."""


@dataclass(frozen=True)
class Unfinished:
    """A write begun and neither committed nor aborted: an S3 multipart upload, a temporary file."""

    key: str
    id: str  # the upload id, or the temporary file's key
    started: dt.datetime


class Writer:
    """Bytes in, an object out on `commit()`; `abort()` leaves nothing behind. `id` names the
    unfinished write meanwhile (Unfinished.id)."""

    id: str

    def write(self, data: bytes) -> None:
        raise NotImplementedError

    def commit(self) -> None:
        raise NotImplementedError

    def abort(self) -> None:
        raise NotImplementedError


class FileStore:
    def __init__(self, root: str) -> None:
        self.root = Path(root)
        self.url = f"file://{self.root}"

    def _path(self, key: str) -> Path:
        p = (self.root / key).resolve()
        if not str(p).startswith(str(self.root.resolve()) + os.sep):
            raise StoreError(f"{self.url}: key {key!r} escapes the store")
        return p

    def check(self, writable: bool = False) -> None:
        """The store is there, or a StoreError; `writable`: made if it is not, and it takes writes
        (a file written and removed). Only a writer makes it: a reader's mistyped path is refused,
        not read as an empty store."""
        if not writable:
            if not self.root.is_dir():
                raise StoreError(f"{self.url}: no such store directory")
            return
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"{self.url}: cannot create the store directory: {e.strerror}") from None
        try:
            with tempfile.NamedTemporaryFile(prefix=".tmp-check-", dir=self.root):
                pass
        except OSError as e:
            raise StoreError(f"{self.url}: cannot write to the store: {e.strerror}") from None

    def exists(self, key: str) -> bool:
        return self._path(key).exists()

    def get(self, key: str) -> bytes:
        return self._path(key).read_bytes()

    def put(self, key: str, data: bytes) -> None:
        w = self.writer(key)
        w.write(data)
        w.commit()

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def keys(self, prefix: str) -> list[str]:
        base = self._path(prefix) if prefix else self.root
        if not base.exists():
            return []
        return sorted(str(p.relative_to(self.root)) for p in base.rglob("*") if p.is_file()
                      and not p.name.startswith(".tmp-"))

    def names(self, prefix: str) -> list[str]:
        """The names one level below a prefix that hold objects (a directory's subdirectories)."""
        base = self._path(prefix) if prefix else self.root
        return sorted(p.name for p in base.iterdir() if p.is_dir()) if base.is_dir() else []

    def versions(self, prefix: str) -> dict[str, str]:
        """The keys under a prefix, each with what changes when its object is written again."""
        out: dict[str, str] = {}
        for k in self.keys(prefix):
            with contextlib.suppress(FileNotFoundError):  # gone since the listing
                st = self._path(k).stat()
                out[k] = f"{st.st_size}-{st.st_mtime_ns}"
        return out

    def writer(self, key: str) -> Writer:
        w = _FileWriter(self._path(key))
        w.id = str(w.tmp.relative_to(self.root.resolve()))
        return w

    def unfinished(self, prefix: str, keys: Iterable[str] = ()) -> list[Unfinished]:
        """Temporary files under a prefix: writes begun and not yet renamed or removed (`keys`:
        S3Store's; a directory's listing finds every one)."""
        base = self._path(prefix) if prefix.strip("/") else self.root
        if not base.exists():
            return []
        out = []
        for p in base.rglob(".tmp-*"):
            with contextlib.suppress(FileNotFoundError):  # committed or aborted meanwhile
                started = dt.datetime.fromtimestamp(p.stat().st_mtime, dt.UTC)
                rel = str(p.relative_to(self.root.resolve()))
                out.append(Unfinished(rel, rel, started))
        return out

    def discard(self, w: Unfinished) -> None:
        self._path(w.id).unlink(missing_ok=True)

    @contextlib.contextmanager
    def open_range(self, key: str, start: int, end: int) -> Iterator[Range]:
        """Bytes [start, end) of an object, memory-mapped: nothing is copied or held."""
        try:
            f = open(self._path(key), "rb")  # noqa: SIM115 - closed by the with below
        except FileNotFoundError:
            raise MissingObject(f"{self.url}/{key}: no such object") from None
        with f:
            view = _mapped(f)
            try:
                yield Range(view[start:end], len(view), at=start)
            finally:
                _release(view)


WRITE_BUFFER = 1 << 20  # events are a few KiB: gather them into fewer, larger writes
WRITE_BEHIND = 16 << 20  # the disk is asked to start writing every this many bytes, so the commit's
# fsync finds little left to write (POSIX_FADV_DONTNEED starts writeback without waiting for it)


class _FileWriter(Writer):
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
        self.tmp = Path(tmp)
        self.f = os.fdopen(fd, "wb", buffering=WRITE_BUFFER)
        self.written = self.behind = 0  # bytes written; bytes the disk was asked to start on

    def write(self, data: bytes) -> None:
        self.f.write(data)
        self.written += len(data)
        if self.written - self.behind >= WRITE_BEHIND and hasattr(os, "posix_fadvise"):
            self.f.flush()
            os.posix_fadvise(self.f.fileno(), self.behind, self.written - self.behind, os.POSIX_FADV_DONTNEED)
            self.behind = self.written

    def commit(self) -> None:
        self.f.flush()
        os.fsync(self.f.fileno())
        self.f.close()
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        self.f.close()
        self.tmp.unlink(missing_ok=True)


class S3Store:
    """s3://bucket/prefix; endpoint and credentials from the standard AWS chain
    (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, …) unless given."""

    def __init__(self, url: str, client=None) -> None:
        u = urlparse(url)
        self.url = url
        self.bucket = u.netloc
        self.prefix = u.path.strip("/")
        if client is None:
            import boto3

            client = boto3.client("s3")
        self.s3 = client

    def _key(self, key: str) -> str:
        if ".." in key.split("/"):
            raise StoreError(f"{self.url}: key {key!r} escapes the store")
        return f"{self.prefix}/{key}" if self.prefix else key

    def check(self, writable: bool = False) -> None:
        """The bucket is reachable (and, `writable`, takes writes: an object written and deleted),
        or a StoreError."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.s3.head_bucket(Bucket=self.bucket)
        except ClientError as e:
            code = e.response.get("Error", {}).get("Code", "")
            if code in ("404", "NoSuchBucket"):
                raise StoreError(f"{self.url}: bucket {self.bucket!r} does not exist") from None
            raise StoreError(f"{self.url}: {code or e}") from None
        except BotoCoreError as e:
            raise StoreError(f"{self.url}: {e}") from None
        if writable:
            self.put(CHECK_KEY, b"")
            self.delete(CHECK_KEY)

    @contextlib.contextmanager
    def failing(self, key: str, doing: str) -> Iterator[None]:
        """S3 failures (the endpoint gone, a refusal) as a StoreError naming the object and what
        was being done; anything not yet committed stays uncommitted."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            yield
        except ClientError as e:
            code = e.response.get("Error", {}).get("Code", "")
            raise StoreError(f"{self.url}/{key}: cannot {doing}: {code or e}") from None
        except BotoCoreError as e:
            raise StoreError(f"{self.url}/{key}: cannot {doing}: {e}") from None

    def exists(self, key: str) -> bool:
        from botocore.exceptions import ClientError

        with self.failing(key, "look the object up"):
            try:
                self.s3.head_object(Bucket=self.bucket, Key=self._key(key))
                return True
            except ClientError as e:
                if e.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                    return False
                raise

    def get(self, key: str) -> bytes:
        with self.failing(key, "read the object"):
            return self.s3.get_object(Bucket=self.bucket, Key=self._key(key))["Body"].read()

    def put(self, key: str, data: bytes) -> None:
        with self.failing(key, "write the object"):
            self.s3.put_object(Bucket=self.bucket, Key=self._key(key), Body=data)

    def delete(self, key: str) -> None:
        with self.failing(key, "delete the object"):
            self.s3.delete_object(Bucket=self.bucket, Key=self._key(key))

    def keys(self, prefix: str) -> list[str]:
        return list(self.versions(prefix))  # the same listing

    def names(self, prefix: str) -> list[str]:
        """The names one level below a prefix that hold objects (S3's common prefixes)."""
        full = self._key(prefix.strip("/") + "/") if prefix.strip("/") else (f"{self.prefix}/" if self.prefix else "")
        return sorted(c["Prefix"][len(full):].rstrip("/") for page in self._listing(prefix, full, Delimiter="/")
                      for c in page.get("CommonPrefixes", []))

    def versions(self, prefix: str) -> dict[str, str]:
        """The keys under a prefix, each with what changes when its object is written again."""
        cut = len(self.prefix) + 1 if self.prefix else 0
        return dict(sorted((o["Key"][cut:], f"{o['Size']}-{o['ETag'].strip(chr(34))}")
                           for page in self._listing(prefix, self._key(prefix)) for o in page.get("Contents", [])))

    def _listing(self, prefix: str, full: str, **params) -> Iterator[dict]:
        """The pages of a listing of the objects under `full` (`prefix`, the store's, for errors)."""
        with self.failing(prefix, "list the objects"):
            yield from self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=full, **params)

    def writer(self, key: str) -> Writer:
        return _S3Writer(self, key)

    def unfinished(self, prefix: str, keys: Iterable[str] = ()) -> list[Unfinished]:
        """Multipart uploads begun under a prefix, and of the objects `keys`, neither completed nor
        aborted. Each key is asked for on its own: MinIO lists the uploads of one object's exact
        name only, and finds none by a prefix."""
        out: dict[str, Unfinished] = {}
        cut = len(self.prefix) + 1 if self.prefix else 0
        with self.failing(prefix, "list the multipart uploads"):
            for asked in (prefix, *keys):
                for page in self.s3.get_paginator("list_multipart_uploads").paginate(Bucket=self.bucket,
                                                                                     Prefix=self._key(asked)):
                    for u in page.get("Uploads", []):
                        out[u["UploadId"]] = Unfinished(u["Key"][cut:], u["UploadId"], u["Initiated"])
        return list(out.values())

    def discard(self, w: Unfinished) -> None:
        with self.failing(w.key, "abort the multipart upload"):
            self.s3.abort_multipart_upload(Bucket=self.bucket, Key=self._key(w.key), UploadId=w.id)

    @contextlib.contextmanager
    def open_range(self, key: str, start: int, end: int) -> Iterator[Range]:
        """Bytes [start, end) by one ranged GET, spooled to a temporary file and memory-mapped,
        so a task's memory does not grow with its range."""
        from botocore.exceptions import ClientError

        try:
            r = self.s3.get_object(Bucket=self.bucket, Key=self._key(key), Range=f"bytes={start}-{end - 1}")
        except ClientError as e:
            code = e.response.get("Error", {}).get("Code", "")
            if code in ("NoSuchKey", "404", "NotFound"):
                raise MissingObject(f"{self.url}/{key}: no such object") from None
            if code == "InvalidRange":  # the object ends before `start`
                total = self.s3.head_object(Bucket=self.bucket, Key=self._key(key))["ContentLength"]
                yield Range(memoryview(b""), total)
                return
            raise
        total = int(r.get("ContentRange", "/0").rsplit("/", 1)[1] or 0) or r["ContentLength"]
        with tempfile.TemporaryFile(prefix="binlake-range-") as f:
            body = r["Body"]
            for chunk in iter(lambda: body.read(RANGE_CHUNK), b""):
                f.write(chunk)
            f.flush()
            view = _mapped(f)
            try:
                yield Range(view, total)
            finally:
                _release(view)


class _S3Writer(Writer):
    def __init__(self, store: S3Store, key: str) -> None:
        self.store, self.s3, self.bucket, self.name, self.key = store, store.s3, store.bucket, key, store._key(key)  # noqa: SLF001
        with store.failing(key, "start a multipart upload"):
            self.upload_id = self.s3.create_multipart_upload(Bucket=self.bucket, Key=self.key)["UploadId"]
        self.id = self.upload_id
        self.parts: list[dict] = []
        self.buf = bytearray()

    def _send(self) -> None:
        n = len(self.parts) + 1
        with self.store.failing(self.name, f"upload part {n}"):
            r = self.s3.upload_part(Bucket=self.bucket, Key=self.key, UploadId=self.upload_id, PartNumber=n,
                                    Body=bytes(self.buf))
        self.parts.append({"PartNumber": n, "ETag": r["ETag"]})
        self.buf.clear()

    def write(self, data: bytes) -> None:
        self.buf += data
        if len(self.buf) >= PART_SIZE:
            self._send()

    def commit(self) -> None:
        if self.buf or not self.parts:
            self._send()
        with self.store.failing(self.name, "complete the multipart upload"):
            self.s3.complete_multipart_upload(Bucket=self.bucket, Key=self.key, UploadId=self.upload_id,
                                              MultipartUpload={"Parts": self.parts})

    def abort(self) -> None:
        # Best effort: the upload was never completed, so no object exists either way.
        with contextlib.suppress(Exception):
            self.s3.abort_multipart_upload(Bucket=self.bucket, Key=self.key, UploadId=self.upload_id)


def _release(view: memoryview) -> None:
    obj = view.obj
    view.release()
    if isinstance(obj, mmap.mmap):
        with contextlib.suppress(BufferError):  # a caller still holds a slice: the GC closes it
            obj.close()


def open_store(url: str):
    u = urlparse(url)
    if u.scheme == "file":
        return FileStore(u.path)
    if u.scheme == "s3":
        return S3Store(url)
    raise StoreError(f"{url}: unsupported store (use file:///path or s3://bucket/prefix)")
