"""A `.tflite`'s unoptimized state is the file as stored: its predicted size is the file's, to the byte.

A fully int8 file (int8 weights and activations, microWakeWord's models) starts from int8-static; that option
priced every kernel afresh (a float32 scale and an int64 zero point per channel, twice with the int32 bias), which
the file already holds in its own records: +23% / +24% of microWakeWord's 56-81 KB files. Its int8 kernels now keep
their stored bytes, and the exporter writes such a file as stored under int8-static. Constants several operators
read (STRIDED_SLICEs sharing begin / end / strides) are stored once.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler.frontends import tflite
from compiler.graph import Graph
from simulator.sweep import sweep


def _loaded(path: Path) -> Graph:
    g = tflite.load(path)
    g.metadata.update(file_size_bytes=str(path.stat().st_size), source_weight_bytes=str(g.weight_bytes))
    return g


def _int8_chain(tmp_path: Path) -> Path:
    from simulator.litert_calibration import Case, build

    return build(Case("conv1x1-32-14", "CONV_2D", (32, 14, 1)), "static8", tmp_path / "int8.tflite")


def test_a_fully_int8_file_is_predicted_at_its_size(tmp_path: Path) -> None:
    path = _int8_chain(tmp_path)
    g = _loaded(path)
    assert tflite.fully_int8(g)
    r = sweep(g, "litert-cpu/host")
    assert r.bulk["base"]["preset"] == "int8-static"
    assert r.bulk["base"]["size_bytes"] == path.stat().st_size
    # fp32 is still what the fp32 export writes: the int8 kernels as float (4 bytes each)
    from simulator.totals import totals

    kernels = sum(v.weight.bytes for v in g.values.values() if v.weight is not None and v.dtype == "int8")
    assert totals(r.bulk, r.per_op, "fp32", {})["size_bytes"] > path.stat().st_size + 2.5 * kernels


def test_int8_static_of_a_fully_int8_file_is_the_file(tmp_path: Path) -> None:
    """The exporter does not quantize an int8-static file again: it writes it as stored (and runs it once)."""
    from compiler.optimize.litert_export import export_tflite

    path = _int8_chain(tmp_path)
    out = export_tflite(path, tmp_path / "out.tflite", "int8-static")
    assert out.path.read_bytes() == path.read_bytes()
    assert any("as stored" in n for n in out.notes)


def test_constants_read_by_several_operators_are_stored_once(tmp_path: Path) -> None:
    from testkit.tflite_builder import TfliteWriter

    w = TfliteWriter()
    x = w.tensor("x", [1, 8, 4])
    shape = w.const("shape", np.array([1, 32], np.int32))
    a, b = w.tensor("a", [1, 32]), w.tensor("b", [1, 32])
    w.op("RESHAPE", [x, shape], [a])
    w.op("RESHAPE", [x, shape], [b])
    path = w.save(tmp_path / "shared.tflite", [x], [a, b])
    r = sweep(_loaded(path), "litert-cpu/host")
    assert r.bulk["base"]["size_bytes"] == pytest.approx(path.stat().st_size)
