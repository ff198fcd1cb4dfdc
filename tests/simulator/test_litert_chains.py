"""The chains LiteRT's calibration times (simulator.litert_calibration), run through LiteRT's per-op profiler:
each option makes LiteRT run the kernels its path in simulator/litert_paths.py assumes. XNNPACK names its
dynamic-int8 input format by the CPU: QDU8 (unsigned) where the CPU has VNNI dot products, QD8 elsewhere
(seen on an AVX2-only AMD EPYC); both are the same path."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from compiler.backends.litert_profiler import per_op_child
from compiler.frontends import tflite
from simulator.litert_calibration import CASES, build


@pytest.mark.parametrize("form,kernels", [
    ("fp32", {"conv3x3": r"Convolution \(NHWC, F32\) IGEMM", "dw": r"Convolution \(NHWC, F32\) DWConv"}),
    ("dyn8", {"conv3x3": r"Convolution \(NHWC, QDU?8, F32, QC8W\) IGEMM", "dw": "TFLite DEPTHWISE_CONV_2D"}),
    ("static8", {"conv3x3": r"Convolution \(NHWC, QC8\) IGEMM", "dw": r"Convolution \(NHWC, QC8\) DWConv"}),
])
def test_calibration_chains_run_the_kernels_of_each_option(tmp_path: Path, form: str, kernels: dict[str, str]) -> None:
    """The chains LiteRT's calibration times are what ai-edge-quantizer's options make LiteRT run."""
    for case in (c for c in CASES if c.name in ("conv3x3-32-28", "dw3x3-64-28")):
        path = build(case, form, tmp_path / f"{case.name}-{form}.tflite")
        g = tflite.load(path)
        r = per_op_child({"model": str(path), "threads": 1, "warmup": 1, "runs": 3})
        assert sorted(r["tasks"]) == sorted(n.id for n in g.nodes)
        expected = kernels["conv3x3" if case.op == "CONV_2D" else "dw"]
        assert all(re.fullmatch(expected, r["kernels"][n.id][-1]) for n in g.nodes), r["kernels"]
