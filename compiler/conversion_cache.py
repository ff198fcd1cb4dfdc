"""Converted `.pt2` files kept by content: a model converted once (to ONNX, TFLite or Core ML) is not converted again
by the same converter, e.g. when it is re-analysed, analysed for another target that converts the same way, or
exported after its analysis (each conversion is a sandboxed child that imports torch: 5-20 s).

The key is the .pt2's SHA-256, the conversion child, the conversion code's own sources and the packages installed
in the interpreter that runs it (its site-packages' `*.dist-info` names: package and version), so an upgrade of
torch, litert-torch or our converter code converts afresh. Only successful conversions are kept; the archive is
vetted before every lookup (`pt2_onnx.convert_vetted`), as before every conversion. Entries are written whole
(temporary name, then rename), a hit refreshes its time, and the least recently used go when the folder passes its
size limit. Where: `configure(folder)` (the worker: `EDGESCOPE_CONVERSION_CACHE_DIR`, default
`<data dir>/cache/conversions`); unset, nothing is kept.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import sys
import sysconfig
import uuid
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

_folder: Path | None = None
_limit_bytes = 2 * 1024**3
# The conversion code a child runs beyond its own module: vetting and loading the program, reading its modules.
_SHARED_SOURCES = ("compiler.backends.pt2_onnx", "compiler.backends.pt2_modules", "compiler.frontends.pt2")


def configure(folder: str | os.PathLike[str] | None, limit_bytes: int = 2 * 1024**3) -> None:
    """Keep conversions in `folder` (None: keep nothing), at most `limit_bytes` of them."""
    global _folder, _limit_bytes
    _folder = Path(folder) if folder else None
    _limit_bytes = limit_bytes


def folder() -> Path | None:
    return _folder


@lru_cache(maxsize=8)
def _environment(python: str | None) -> str:
    """The packages installed for `python` (None: this interpreter), as one string of dist-info names."""
    if python is None:
        site = Path(sysconfig.get_paths()["purelib"])
    else:
        venv = Path(python).parent.parent
        sites = sorted(venv.glob("lib/python*/site-packages"))
        site = sites[0] if sites else venv
    return f"{python or sys.executable}|" + ",".join(sorted(p.name for p in site.glob("*.dist-info")))


@lru_cache(maxsize=16)
def _code(child: str) -> str:
    h = hashlib.sha256()
    for module in (child.split(":")[0], *_SHARED_SOURCES):
        spec = importlib.util.find_spec(module)
        origin = spec.origin if spec is not None else None
        h.update(Path(origin).read_bytes() if origin else module.encode())
    return h.hexdigest()


def _file_hash(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def key(child: str, src: Path, python: str | None, options: str = "") -> str:
    parts = (child, _file_hash(src), _code(child), _environment(python), *([options] if options else []))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def converted(child: str, src: Path, out: Path, python: str | None, convert: Callable[[], Any],
              options: str = "") -> Any:
    """`convert()` (which writes `out` and returns the child's JSON-able result), or its kept result for the same
    input, converter, code and `options` (what else the child is handed: the input shapes of a dynamic .pt2):
    `out` is then a copy of the file it wrote."""
    root = _folder
    if root is None:
        return convert()
    k = key(child, src, python, options)
    data, meta = root / f"{k}.out", root / f"{k}.json"
    if data.is_file() and meta.is_file():
        try:
            result = json.loads(meta.read_text())["result"]
            shutil.copyfile(data, out)
            os.utime(meta)  # recently used
            return result
        except (OSError, ValueError, KeyError):
            pass  # damaged or removed meanwhile: convert again
    result = convert()
    try:
        root.mkdir(parents=True, exist_ok=True)
        tag = f".{uuid.uuid4().hex}.part"
        shutil.copyfile(out, data.with_name(data.name + tag))
        os.replace(data.with_name(data.name + tag), data)
        meta.with_name(meta.name + tag).write_text(json.dumps({"child": child, "result": result}))
        os.replace(meta.with_name(meta.name + tag), meta)  # last: an entry is whole once its .json exists
        _trim(root)
    except (OSError, TypeError, ValueError):
        pass  # a full disk or an odd result costs the next conversion, never this one
    return result


def _trim(root: Path) -> None:
    entries = []
    for meta in root.glob("*.json"):
        data = meta.with_suffix(".out")
        try:
            entries.append((meta.stat().st_mtime, data.stat().st_size if data.exists() else 0, meta, data))
        except OSError:
            continue
    total = sum(size for _, size, _, _ in entries)
    for _, size, meta, data in sorted(entries, key=lambda e: e[0]):
        if total <= _limit_bytes:
            break
        for p in (meta, data):
            p.unlink(missing_ok=True)
        total -= size
