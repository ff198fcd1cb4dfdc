"""Published on-device measurements (the CSVs beside this file) and the architectures they were taken on.

One row per measurement: model id, input shape, device, chip (the hardware profile it checks), runtime, precision,
latency, peak-memory range and per-unit layer counts where the publisher gives them, and its source (repository +
path + commit, or document + table). `architectures.yaml` says how to rebuild each model in code, its family (the
unit of leave-one-family-out cross-validation) and whether it is a validation model (never fitted on).
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from pathlib import Path

import yaml

HERE = Path(__file__).parent
ARCHITECTURES_PATH = HERE / "architectures.yaml"
# Written by benchmarks/device_fit.py --write: per target, the held-out error of its fitted profile.
HELDOUT_PATH = HERE / "heldout.json"
COLUMNS = ["model", "input", "device", "chip", "runtime", "precision", "latency_ms", "mem_min_mb", "mem_max_mb",
           "layers_total", "layers_npu", "layers_gpu", "layers_cpu", "source"]


class DatasetError(ValueError):
    """A malformed dataset row. Message names the file and line."""


@dataclass(frozen=True, slots=True)
class Architecture:
    model: str
    source: str  # torchvision | timm | transformers
    name: str
    size: int  # input width
    family: str
    validation: bool
    reparam: bool = False  # built in its deploy form (timm's reparameterize_model: MobileOne, RepViT, FastViT)
    height: int = 0  # input height where it differs from the width (Depth Anything's 518x392 / 518x396)

    @property
    def stem(self) -> str:
        """The architecture's file-name stem: source, name, input size (HxW where not square), deploy form."""
        size = f"{self.height}x{self.size}" if self.height and self.height != self.size else str(self.size)
        return f"{self.source}-{self.name}-{size}{'-reparam' if self.reparam else ''}"

    @property
    def shape(self) -> tuple[int, int, int, int]:
        return (1, 3, self.height or self.size, self.size)


@dataclass(frozen=True, slots=True)
class Measurement:
    model: str
    input: tuple[int, ...]
    device: str
    chip: str  # hardware profile name (simulator/hardware/<chip>.yaml)
    runtime: str  # tflite | qnn_dlc | onnx | coreml
    precision: str  # float | w8a8 | w8a16 | fp16 | ...
    latency_ms: float
    mem_mb: tuple[float, float] | None
    layers: dict[str, int] | None  # total, npu, gpu, cpu
    source: str


def architectures() -> dict[str, Architecture]:
    return {a["model"]: Architecture(a["model"], a["source"], a["name"], int(a["size"]), a["family"],
                                     bool(a.get("validation", False)), bool(a.get("reparam", False)),
                                     int(a.get("height", 0)))
            for a in yaml.safe_load(ARCHITECTURES_PATH.read_text())["architectures"]}


def _num(s: str) -> float | None:
    return float(s) if s.strip() else None


def load(paths: list[Path] | None = None) -> list[Measurement]:
    """Every row of every CSV here; refuses a row without a source, latency or known architecture."""
    archs = architectures()
    out = []
    for path in paths or sorted(HERE.glob("*.csv")):
        with open(path, newline="") as f:
            for line, r in enumerate(csv.DictReader(f), start=2):
                where = f"{path.name}:{line}"
                if not (r.get("source") or "").strip():
                    raise DatasetError(f"{where}: no source")
                if r["model"] not in archs:
                    raise DatasetError(f"{where}: model {r['model']!r} is not in architectures.yaml")
                lat = _num(r["latency_ms"])
                if lat is None or lat <= 0:
                    raise DatasetError(f"{where}: latency_ms must be a positive number")
                lo, hi = _num(r["mem_min_mb"]), _num(r["mem_max_mb"])
                layers = None
                if r["layers_total"].strip():
                    layers = {k: int(float(r[f"layers_{k}"] or 0)) for k in ("total", "npu", "gpu", "cpu")}
                out.append(Measurement(r["model"], tuple(int(d) for d in r["input"].split("x")), r["device"],
                                       r["chip"], r["runtime"], r["precision"], lat,
                                       (lo, hi) if lo is not None and hi is not None else None, layers,
                                       r["source"].strip()))
    return out


def heldout_all() -> dict[str, Any]:
    """{target: held-out figures} as the last device fit wrote them ({} before any fit)."""
    return json.loads(HELDOUT_PATH.read_text()) if HELDOUT_PATH.exists() else {}


@lru_cache(maxsize=None)
def heldout(target: str) -> dict[str, Any] | None:
    """The held-out error of `target`'s fitted profile: {kind, median_pct, within25_pct, n_points, n_models,
    families, validation, placement}, or None where no public measurements were fitted."""
    return heldout_all().get(target)
