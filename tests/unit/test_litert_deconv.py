"""LiteRT's fp32 TRANSPOSE_CONV runs XNNPACK's Subconv2D deconvolution, which pays a cost per output pixel far above
its MACs' time (simulator.litert_paths.DECONV): a selfie-segmentation-like decoder's 16 -> 1 channel 2x2 deconvolution
to 256x256 was profiled at 1.1-2.3 ms and predicted at 0.03 as a conv. Its own figures (`conv.deconv`, with
`conv.deconv.pixel`) come from LiteRT's calibration, on deconvolution cases built here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler.frontends import tflite
from compiler.frontends.tflite_writer import TfliteWriter
from compiler.graph import Graph
from simulator.litert_paths import DECONV, litert_task_facts
from simulator.profiles import HardwareProfile, load_profile
from tests.simulator.helpers import task_ms

HOST = "litert-cpu/host"


def _decoder(path: Path) -> Path:
    """x [1, 128, 128, 16] -> 1x1 CONV_2D -> TRANSPOSE_CONV 2x2 stride 2 to [1, 256, 256, 1]."""
    rng = np.random.default_rng(0)
    w = TfliteWriter(description="deconv")
    x = w.tensor("x", [1, 128, 128, 16])
    y = w.tensor("pw", [1, 128, 128, 16])
    w.op("CONV_2D", [x, w.const("pw/w", (rng.standard_normal((16, 1, 1, 16)) * 0.1).astype(np.float32)),
                     w.const("pw/b", np.zeros(16, np.float32))], [y],
         w.options("Conv2DOptions", padding=0, strideW=1, strideH=1))
    z = w.tensor("up", [1, 256, 256, 1])
    w.op("TRANSPOSE_CONV", [w.const("up/shape", np.array([1, 256, 256, 1], np.int32)),
                            w.const("up/w", (rng.standard_normal((1, 2, 2, 16)) * 0.1).astype(np.float32)), y,
                            w.const("up/b", np.zeros(1, np.float32))], [z],
         w.options("TransposeConvOptions", padding=1, strideW=2, strideH=2))
    return w.save(path, [x], [z])


def _ms(g: Graph, hw: HardwareProfile, preset: str) -> list[float]:
    return task_ms(g, HOST, hw, preset)


def test_a_deconvolution_pays_a_cost_per_output_pixel_where_calibrated(tmp_path: Path) -> None:
    g = tflite.load(_decoder(tmp_path / "deconv.tflite"))
    assert [DECONV in f for f in litert_task_facts(g)] == [False, True]
    base = load_profile("host-cpu", "litert-cpu").with_overrides({"units": {"cpu": {
        "efficiency": {"conv.fp32": 0.2}}}})
    cal = base.with_overrides({"units": {"cpu": {"efficiency": {"conv.deconv": 0.2},
                                                 "kind_overhead_s": {"conv.deconv.pixel": 20e-9}}}})
    for preset in ("fp32", "fp16"):  # fp16 weights run fp32's kernels
        before, after = _ms(g, base, preset), _ms(g, cal, preset)
        assert after[1] - before[1] == pytest.approx(256 * 256 * 20e-6, rel=0.02)  # 1.31 ms: 65,536 output pixels
        assert after[0] == before[0]  # the 1x1 conv keeps the conv's figures
    # Not calibrated (a profile without `conv.deconv`), and other paths (XNNPACK's QD8 under dynamic int8): as before
    assert _ms(g, base.with_overrides({"units": {"cpu": {"kind_overhead_s": {"conv.deconv.pixel": 20e-9}}}}),
               "fp32") == _ms(g, base, "fp32")
    assert _ms(g, cal, "int8-dynamic") == _ms(g, base, "int8-dynamic")


def test_the_calibrations_deconvolution_cases_run_in_litert(tmp_path: Path) -> None:
    from ai_edge_litert.interpreter import Interpreter

    from simulator.litert_calibration import CASES, R, build

    cases = [c for c in CASES if c.op == "TRANSPOSE_CONV"]
    assert len(cases) >= 3 and {c.shape[2] for c in cases} == {2, 3}  # 2x2 and 3x3 kernels
    for c in cases:
        it = Interpreter(model_path=str(build(c, "fp32", tmp_path / f"{c.name}.tflite")))
        it.allocate_tensors()
        it.invoke()
        side = c.shape[1] * c.shape[3]
        assert [o["shape"].tolist() for o in it.get_output_details()] == [[1, side, side, c.shape[4]]] * R
