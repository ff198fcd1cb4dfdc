"""Blob storage for uploads and results, chosen by URL scheme.

`file:///path` keeps blobs in a local directory; `s3://bucket/prefix` uses boto3 (with an
endpoint URL for S3-compatible servers such as MinIO). Keys are `/`-separated relative paths.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Protocol
from urllib.parse import urlparse


class BlobNotFound(KeyError):
    pass


class BlobStore(Protocol):
    def put_file(self, key: str, src: Path, move: bool = False) -> int: ...
    def put_bytes(self, key: str, data: bytes) -> int: ...
    def get_bytes(self, key: str) -> bytes: ...
    def get_range(self, key: str, start: int, length: int) -> bytes: ...
    def exists(self, key: str) -> bool: ...
    def delete_prefix(self, prefix: str) -> None: ...
    def delete(self, key: str) -> None: ...  # no error if it is gone
    def download(self, key: str, dest: Path) -> None: ...
    def open_stream(self, key: str) -> BinaryIO: ...


def _check_key(key: str) -> str:
    parts = key.split("/")
    if not key or key.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"invalid blob key {key!r}")
    return key


class LocalBlobStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        return self.root / _check_key(key)

    def _write(self, key: str, writer) -> int:  # type: ignore[no-untyped-def]
        # Write to a temp file and rename: a reader never sees half a blob.
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                writer(f)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
        return path.stat().st_size

    def put_file(self, key: str, src: Path, move: bool = False) -> int:
        """`move=True`: `src` is ours to take (an upload's temp file); on the same disk it is renamed, not copied."""
        if move:
            path = self._path(key)
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.replace(src, path)
                return path.stat().st_size
            except OSError:
                pass  # another file system: copy below

        def w(f: BinaryIO) -> None:
            with open(src, "rb") as s:
                shutil.copyfileobj(s, f, 1 << 20)

        return self._write(key, w)

    def put_bytes(self, key: str, data: bytes) -> int:
        return self._write(key, lambda f: f.write(data))

    def get_bytes(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            raise BlobNotFound(key) from None

    def get_range(self, key: str, start: int, length: int) -> bytes:
        try:
            with open(self._path(key), "rb") as f:
                f.seek(start)
                return f.read(length)
        except FileNotFoundError:
            raise BlobNotFound(key) from None

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def delete_prefix(self, prefix: str) -> None:
        shutil.rmtree(self._path(prefix.rstrip("/")), ignore_errors=True)

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def download(self, key: str, dest: Path) -> None:
        try:
            shutil.copyfile(self._path(key), dest)
        except FileNotFoundError:
            raise BlobNotFound(key) from None

    def open_stream(self, key: str) -> BinaryIO:
        try:
            return open(self._path(key), "rb")
        except FileNotFoundError:
            raise BlobNotFound(key) from None


class S3BlobStore:
    def __init__(self, bucket: str, prefix: str, endpoint_url: str | None = None) -> None:
        import boto3

        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.client = boto3.client("s3", endpoint_url=endpoint_url or None)

    def _key(self, key: str) -> str:
        _check_key(key)
        return f"{self.prefix}/{key}" if self.prefix else key

    def _missing(self, err: Exception) -> bool:
        code = getattr(err, "response", {}).get("Error", {}).get("Code", "")
        return code in ("NoSuchKey", "404", "NotFound")

    def put_file(self, key: str, src: Path, move: bool = False) -> int:
        self.client.upload_file(str(src), self.bucket, self._key(key))
        return src.stat().st_size

    def put_bytes(self, key: str, data: bytes) -> int:
        self.client.put_object(Bucket=self.bucket, Key=self._key(key), Body=data)
        return len(data)

    def get_bytes(self, key: str) -> bytes:
        return self.open_stream(key).read()

    def get_range(self, key: str, start: int, length: int) -> bytes:
        from botocore.exceptions import ClientError

        try:
            r = self.client.get_object(Bucket=self.bucket, Key=self._key(key),
                                       Range=f"bytes={start}-{start + length - 1}")
        except ClientError as e:
            if self._missing(e):
                raise BlobNotFound(key) from None
            raise
        return r["Body"].read()

    def exists(self, key: str) -> bool:
        from botocore.exceptions import ClientError

        try:
            self.client.head_object(Bucket=self.bucket, Key=self._key(key))
            return True
        except ClientError as e:
            if self._missing(e):
                return False
            raise

    def delete_prefix(self, prefix: str) -> None:
        full = self._key(prefix.rstrip("/")) + "/"
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=full)
        for page in pages:
            objs = [{"Key": o["Key"]} for o in page.get("Contents", [])]
            if objs:
                self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": objs})

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self._key(key))  # S3: no error for a missing key

    def download(self, key: str, dest: Path) -> None:
        from botocore.exceptions import ClientError

        try:
            self.client.download_file(self.bucket, self._key(key), str(dest))
        except ClientError as e:
            if self._missing(e):
                raise BlobNotFound(key) from None
            raise

    def open_stream(self, key: str) -> BinaryIO:
        from botocore.exceptions import ClientError

        try:
            return self.client.get_object(Bucket=self.bucket, Key=self._key(key))["Body"]
        except ClientError as e:
            if self._missing(e):
                raise BlobNotFound(key) from None
            raise


SCHEMES = ("file", "s3")


def open_blob_store(url: str, s3_endpoint_url: str = "") -> BlobStore:
    parsed = urlparse(url)
    if parsed.scheme == "file":
        return LocalBlobStore(Path(parsed.netloc + parsed.path))
    if parsed.scheme == "s3":
        if not parsed.netloc:
            raise ValueError(f"blob URL {url!r} names no bucket (s3://bucket/prefix)")
        return S3BlobStore(parsed.netloc, parsed.path, s3_endpoint_url or None)
    raise ValueError(f"unknown blob store scheme in {url!r}; known: {', '.join(s + '://' for s in SCHEMES)}")


@contextmanager
def local_copy(store: BlobStore, key: str, suffix: str = "", dir: Path | None = None) -> Iterator[Path]:
    """A local file with the blob's content (in a folder under `dir`, e.g. the job's), removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="edgescope-", dir=dir) as d:
        dest = Path(d) / f"blob{suffix}"
        store.download(key, dest)
        yield dest
