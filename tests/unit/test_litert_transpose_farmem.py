"""An XNNPACK TRANSPOSE whose tiles write output rows a page or more apart pays `layout.transpose.farmem` per output
byte beyond what the last-level cache keeps (simulator.tflite_ops.transpose_tiles, Work.page_walk,
simulator.litert_layout): NHWC -> NCHW of 21 channels ran 0.19-0.31 ns per element up to a 12 MB output and 0.7-1.3
beyond it on a Zen 4 (LR-ASPP's 22 MB output 4.0 ms alone, priced 1.2 by the figures before); the same bytes the other
way (rows 21 floats apart) 0.39-0.49, and pay nothing of it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler.frontends import tflite
from compiler.frontends.tflite_writer import TfliteWriter
from simulator import litert_layout
from simulator.litert_cases import predicted_ms
from simulator.profiles import XNN_TRANSPOSE_KEY, HardwareProfile, load_profile
from simulator.roofline import efficiency
from simulator.tflite_ops import transpose_tiles, tflite_works
from tests.simulator.helpers import task_ms

HOST = "litert-cpu/host"
KEEP = 12e6  # bytes the last-level cache keeps (LiteRT's ladder on a Zen 4: 12.7 MB)


@pytest.mark.parametrize("dims, perm, calls, stride", [
    ([1, 512, 512, 21], [0, 3, 1, 2], 32768 * 3, 262144),  # LR-ASPP's output to NCHW: rows a plane apart
    ([1, 21, 512, 512], [0, 2, 3, 1], 32768 * 3, 21),  # the other way: rows 21 floats apart
    ([1, 3, 224, 224], [0, 2, 3, 1], 6272, 3),
    ([1, 2, 58, 784], [0, 2, 1, 3], 116, 0),  # runs kept in place: no tiles
])
def test_transpose_tiles_say_how_far_apart_their_rows_are(dims: list[int], perm: list[int], calls: int,
                                                          stride: int) -> None:
    assert transpose_tiles(dims, perm) == (calls, stride)


def _both_ways(path: Path) -> Path:
    """x [1, 512, 512, 21] -> TRANSPOSE to NCHW; y [1, 21, 512, 512] -> TRANSPOSE to NHWC (22 MB each)."""
    w = TfliteWriter(description="t")
    x, y = w.tensor("x", [1, 512, 512, 21]), w.tensor("y", [1, 21, 512, 512])
    a, b = w.tensor("nchw", [1, 21, 512, 512]), w.tensor("nhwc", [1, 512, 512, 21])
    w.op("TRANSPOSE", [x, w.const("p0", np.array([0, 3, 1, 2], np.int32))], [a])
    w.op("TRANSPOSE", [y, w.const("p1", np.array([0, 2, 3, 1], np.int32))], [b])
    return w.save(path, [x, y], [a, b])


def _profile(farmem: float, keep: float = KEEP) -> HardwareProfile:
    base = load_profile("host-cpu", "litert-cpu").with_overrides({"units": {"cpu": {
        "l2_share_bytes": 1048576.0, "llc_keep_bytes": keep, "llc_gone_bytes": 4 * keep}}})
    return base.with_overrides({"units": {"cpu": {
        "efficiency": {XNN_TRANSPOSE_KEY: efficiency(base.units[0], "layout", "fp32")},
        "kind_overhead_s": {litert_layout.TRANSPOSE_RUN: 1e-9, litert_layout.TRANSPOSE_FAR: 3e-11,
                            litert_layout.TRANSPOSE_FARMEM: farmem},
        "kind_bandwidth_bytes_per_s": {litert_layout.TRANSPOSE_BW: 1e11}}}})


def test_rows_pages_apart_pay_their_bytes_beyond_the_llcs_keep_where_calibrated(tmp_path: Path) -> None:
    g = tflite.load(_both_ways(tmp_path / "t.tflite"))
    works = tflite_works(g)[0]
    out = 512 * 512 * 21
    assert [w.page_walk for w in works] == [out, 0.0] and [w.far_walk for w in works] == [out, out]
    slow, none = task_ms(g, HOST, _profile(3e-10), "fp32"), task_ms(g, HOST, _profile(0.0), "fp32")
    assert slow[0] - none[0] == pytest.approx((out * 4 - KEEP) * 3e-10 * 1e3, rel=1e-6)
    assert slow[1] == none[1]  # rows 21 floats apart: lines written whole
    small = _profile(3e-10, keep=out * 4.0)  # a cache that keeps it all
    assert task_ms(g, HOST, small, "fp32")[0] == task_ms(g, HOST, _profile(0.0, keep=out * 4.0), "fp32")[0]
    assert task_ms(g, HOST, _profile(3e-10), "int8-static") == task_ms(g, HOST, _profile(0.0), "int8-static")  # (x8)


def test_the_transpose_fit_recovers_farmem_with_its_other_figures(tmp_path: Path) -> None:
    """The transpose cases 'measured' at known figures with a cost beyond the LLC's keep: the fit finds all four."""
    true, base = _profile(3.5e-10), _profile(0.0)
    cases = [c for c in litert_layout.CASES if c.op == "TRANSPOSE"]
    measured = []
    for c in cases:
        g = tflite.load(litert_layout.build(c, tmp_path / f"{c.name}.tflite"))
        measured.append((g, predicted_ms(g, true, "fp32")))
    o = litert_layout.transpose_fit(measured, base)["units"]["cpu"]
    assert o["kind_overhead_s"][litert_layout.TRANSPOSE_FARMEM] == pytest.approx(3.5e-10, rel=0.02)
    assert o["kind_overhead_s"][litert_layout.TRANSPOSE_RUN] == pytest.approx(1e-9, rel=0.05)
    assert o["kind_overhead_s"][litert_layout.TRANSPOSE_FAR] == pytest.approx(3e-11, rel=0.05)
    assert o["kind_bandwidth_bytes_per_s"][litert_layout.TRANSPOSE_BW] == pytest.approx(1e11, rel=0.05)
