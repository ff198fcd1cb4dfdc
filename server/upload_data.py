"""An ONNX upload with its weights in external data files (torch's dynamo exporter's default): the model comes as the
`file` part and each data file as a `data` part named as the model names it; they are checked and merged into one
file (compiler.external_data.merge, the CLI's code) before the model is stored.

The merge parses the model, so it runs in a `compiler.sandbox` child with memory and time limits: the web process
still never parses an upload. A `.onnx` sent alone is only scanned for the bytes of an external data entry, so a
missing data file gets a 400 naming it at once rather than a failed analysis minutes later.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from flask import request

from compiler.errors import SandboxError
from compiler.external_data import may_name_external_data, plain_name
from compiler.sandbox import Limits, run, scratch_in
from edgescope.config import Settings

from .api.errors import ApiError
from .uploads import HashingFile, too_large_message

MERGE_TIMEOUT_S = 120.0
CHILD_BASE_BYTES = 2 * 1024**3  # address space of a child that has imported onnx and numpy, before any model


def data_parts(model_size: int, max_upload_bytes: int) -> dict[str, HashingFile]:
    """The `data` parts by the file name they were sent under, which must be a plain file name, unique and
    non-empty; with the model, within the upload limit."""
    parts: dict[str, HashingFile] = {}
    for f in request.files.getlist("data"):
        name = f.filename or ""
        if not plain_name(name):
            raise ApiError(400, "bad_data_name", f"The data file name {name!r} is not a plain file name (no folders, "
                                                 "'..' or control characters).")
        if name in parts:
            raise ApiError(400, "bad_data_name", f"The data file '{name}' was sent twice.")
        if not isinstance(f.stream, HashingFile):  # parsed before the upload folder was set: a server bug
            raise RuntimeError("the upload was not streamed to its folder")
        if f.stream.size == 0:
            raise ApiError(400, "empty_file", f"The uploaded data file '{name}' is empty.")
        f.stream.flush()
        parts[name] = f.stream
    if model_size + sum(p.size for p in parts.values()) > max_upload_bytes:
        raise ApiError(413, "too_large", too_large_message(max_upload_bytes))
    return parts


def one_model_file(settings: Settings, folder: Path, path: Path, filename: str,
                   fmt: str) -> tuple[Path, int, str] | None:
    """(path, size, sha256) of the model with its data files merged into it, or None to store the upload as sent.
    Refusals are ApiErrors with the code compiler.external_data gives."""
    parts = data_parts(path.stat().st_size, settings.max_upload_bytes)
    if fmt != "onnx":
        if parts:
            raise ApiError(400, "unused_data_file", f"Data files ({', '.join(parts)}) go with an ONNX model only; "
                                                    f"this is a {fmt} model.")
        return None
    if not parts and not may_name_external_data(path):
        return None
    out = folder / "merged.onnx"
    total = path.stat().st_size + sum(p.size for p in parts.values())
    payload = {"model": str(path), "files": {n: str(p.path) for n, p in parts.items()}, "out": str(out),
               "model_name": filename}
    limits = Limits(timeout_s=MERGE_TIMEOUT_S, memory_limit_bytes=CHILD_BASE_BYTES + 3 * total,
                    what="reading the model with its data files")
    try:
        with scratch_in(folder):
            result = run("compiler.external_data:merge_in_child", payload, limits)
    except SandboxError as e:
        raise ApiError(400, "bad_external_data", f"The upload could not be read: {e}.") from None
    if "error" in result:
        raise ApiError(result["status"], result["code"], result["error"])
    if result["size"] is None:  # the scan's bytes were weights, not an external data entry
        return None
    return out, result["size"], _sha256(out)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(8 << 20):
            h.update(block)
    return h.hexdigest()
