"""Receiving an upload: quota first, then the file part streamed once to the upload's own temp folder.

The request class hands werkzeug's multipart parser a file in the folder `receive` made, which hashes and
counts while it is written, so the body is read once into one temporary copy (no spooled copy, no second
copy to hash), which then moves into the blob store (a rename on the same disk). The folder is removed when
the request ends; a web process killed mid-upload leaves it to `worker.scratch.sweep`.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import IO, Any

from flask import Request, request
from werkzeug.utils import secure_filename

from store.services import Services
from worker import scratch

from .api.errors import ApiError
from .limits import Limit, give_back, take

MAX_FILENAME = 120  # characters kept of an uploaded file's name (file systems allow 255 bytes)
QUOTA_WINDOW = timedelta(hours=1)


class HashingFile(io.FileIO):
    """A file that keeps the SHA-256 and size of what is written to it."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, "w+")
        self.path = path
        self.sha256 = hashlib.sha256()
        self.size = 0

    def write(self, data: Any) -> int:  # type: ignore[override]
        self.sha256.update(data)
        self.size += len(data)
        return super().write(data)


class UploadRequest(Request):
    upload_folder: Path | None = None
    upload_parts: list[HashingFile] | None = None

    def _get_file_stream(self, total_content_length: int | None, content_type: str | None,
                         filename: str | None = None, content_length: int | None = None) -> IO[bytes]:
        if self.upload_folder is None:
            return super()._get_file_stream(total_content_length, content_type, filename, content_length)
        parts = self.upload_parts = self.upload_parts or []
        parts.append(HashingFile(self.upload_folder / f"part-{len(parts)}"))
        return parts[-1]  # type: ignore[return-value]


def safe_filename(raw: str | None) -> str:
    """A file name safe on disk and in blob keys: no path parts, at most MAX_FILENAME characters, the
    extension (`.onnx`, `.mlpackage.zip`) kept."""
    name = secure_filename(raw or "") or "model"
    if len(name) <= MAX_FILENAME:
        return name
    stem, dot, ext = name.partition(".")
    ext = (dot + ext)[-40:] if dot else ""
    return stem[: MAX_FILENAME - len(ext)] + ext


@contextmanager
def receive(svc: Services, user_id: str) -> Iterator[Path]:
    """Check the declared size and the user's quota before reading the body, then stream file parts into a
    fresh temp folder (removed afterwards). Quota: uploads and bytes per hour, bytes as received."""
    st = svc.settings
    declared = request.content_length
    if declared is not None and declared > st.max_upload_bytes + (64 * 1024):
        raise ApiError(413, "too_large", too_large_message(st.max_upload_bytes))
    reserved = declared if declared is not None else st.max_upload_bytes
    quota = Limit(f"upload:{user_id}", st.upload_quota_count_per_hour, QUOTA_WINDOW, st.upload_quota_bytes_per_hour)
    if not take(svc.sessions, quota, reserved):
        raise ApiError(429, "upload_quota", "Upload quota reached: at most "
                       f"{st.upload_quota_count_per_hour} uploads and {st.upload_quota_bytes_per_hour} bytes per hour "
                       "(EDGESCOPE_UPLOAD_QUOTA_COUNT_PER_HOUR, EDGESCOPE_UPLOAD_QUOTA_BYTES_PER_HOUR). Try again later.")
    received = 0
    try:
        with scratch.scratch_folder(st, "upload", user_id) as folder:
            request.upload_folder = folder  # type: ignore[attr-defined]
            try:
                yield folder
            finally:
                received = sum(p.size for p in request.upload_parts or [])  # type: ignore[attr-defined]
                for part in request.upload_parts or []:  # type: ignore[attr-defined]
                    part.close()
                request.upload_folder = None  # type: ignore[attr-defined]
    finally:
        if reserved > received:
            give_back(svc.sessions, quota.key, reserved - received, count=0)


def too_large_message(limit: int) -> str:
    return f"The upload is larger than this server accepts ({limit} bytes; EDGESCOPE_MAX_UPLOAD_BYTES)."
