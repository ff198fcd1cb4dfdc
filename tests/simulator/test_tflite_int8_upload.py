"""An uploaded dynamic-int8 `.tflite` (int8 weights and an int8 EMBEDDING_LOOKUP table with a scale per row, float
activations: ai-edge-quantizer's int8-dynamic output) is the int8-dynamic preset as it is (`sweep.native_preset`):
priced as fp32 it was sized at its float weights' bytes (an LM's 10.3 MB file at 27.3), its int8 table read whole
by every lookup (`tflite_ops.work_of`), and the quantization records its size rules count per kernel were counted
again in the upload's overhead (`tflite_ops.hybrid_quant_bytes`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler.frontends.tflite_writer import TfliteWriter
from simulator.profiles import load_profile

VOCAB, DIM, IDS, OUT = 4000, 64, 32, 256


def _lm(path: Path, int8: bool) -> Path:
    """ids -> EMBEDDING_LOOKUP of a [VOCAB, DIM] table -> FULLY_CONNECTED to OUT; `int8`: both constants int8 with a
    scale and zero point per row, as ai-edge-quantizer's dynamic int8 writes them."""
    w = TfliteWriter(description="lookup")
    rng = np.random.default_rng(0)
    ids = w.tensor("ids", [IDS], "int32")

    def const(name: str, shape: tuple[int, int]) -> int:
        if not int8:
            return w.const(name, rng.standard_normal(shape).astype(np.float32))
        data = rng.integers(-127, 128, shape).astype(np.int8)
        return w.tensor(name, list(shape), "int8", data=data, quant=([0.01] * shape[0], [0] * shape[0], 0))

    table, head = const("embed/table", (VOCAB, DIM)), const("head/w", (OUT, DIM))
    emb, y = w.tensor("emb", [IDS, DIM]), w.tensor("y", [IDS, OUT])
    w.op("EMBEDDING_LOOKUP", [ids, table], [emb])
    w.op("FULLY_CONNECTED", [emb, head, -1], [y], w.options("FullyConnectedOptions"))
    return w.save(path, [ids], [y])


def _predict(path: Path, preset: str | None = None) -> tuple[str, float, list[float]]:
    """(the upload's preset, its predicted file bytes, each task's predicted ms) under `preset` (default: native),
    compiled for LiteRT as the worker does (which records the file's size and weight bytes)."""
    from simulator.model import compile_for
    from simulator.sweep import sweep
    from simulator.totals import totals

    source, g, _ = compile_for(path, "litert-cpu/host", path.parent / f"{path.stem}-work")
    r = sweep(g, "litert-cpu/host", hardware=load_profile("host-cpu", "litert-cpu"), source=source)
    native = r.bulk["base"]["preset"]
    j = [p["name"] for p in r.bulk["presets"]].index(preset or native)
    return native, float(totals(r.bulk, r.per_op, preset or native, {})["size_bytes"]), \
        [float(x[j]) for x in r.bulk["metrics"]["latency_ms"]]


def test_a_dynamic_int8_upload_is_sized_as_its_file_and_runs_as_the_export_would(tmp_path: Path) -> None:
    up = _lm(tmp_path / "int8.tflite", int8=True)
    native, size, ms = _predict(up)
    assert native == "int8-dynamic"
    assert size == pytest.approx(up.stat().st_size, rel=0.005)
    # The float file under int8-dynamic: the same lookup (its rows, not the 256 KB table) and the same layer.
    _, _, exported = _predict(_lm(tmp_path / "fp32.tflite", int8=False), "int8-dynamic")
    assert ms == pytest.approx(exported, rel=0.01)


def test_float_uploads_keep_their_presets(tmp_path: Path) -> None:
    f = _lm(tmp_path / "fp32.tflite", int8=False)
    native, size, _ = _predict(f)
    assert native == "fp32" and size == pytest.approx(f.stat().st_size, rel=0.005)
