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


def test_int4_chains_are_the_exporters_file_run_by_tflites_own_kernels(tmp_path: Path) -> None:
    """The int4 form is the fp32 chain written by ai-edge-quantizer's int4 recipe: each weight behind a DEQUANTIZE,
    so TFLite's own CONV_2D / FULLY_CONNECTED run (`<kind>.builtin`); measure() times those operators, in order,
    against the fp32 chain predicted under int4-weights."""
    from simulator.litert_calibration import FORMS, TAGS

    assert "int4" in FORMS and TAGS[("int4", "conv")] == TAGS[("int4", "gemm")] == "builtin"
    for name, op in (("conv3x3-32-28", "CONV_2D"), ("fc-16-256", "FULLY_CONNECTED")):
        case = next(c for c in CASES if c.name == name)
        path = build(case, "int4", tmp_path / f"{name}-int4.tflite")
        g, src = tflite.load(path), tflite.load(path.with_name(f"{path.stem}-src.tflite"))
        ops = [n.id for n in g.nodes if n.op_type == op]
        assert len(ops) == len(src.nodes) == 4 and {n.op_type for n in g.nodes} == {op, "DEQUANTIZE"}
        r = per_op_child({"model": str(path), "threads": 1, "warmup": 1, "runs": 3})
        assert all(r["kernels"][i][-1] == f"TFLite {op}" for i in ops), r["kernels"]


def test_int8_hard_swish_chain_runs_tflites_own_kernel(tmp_path: Path) -> None:
    """The calibration's int8 HARD_SWISH chains run what MobileNetV3's int8-static file runs: TFLite's own kernel,
    not XNNPACK's (which the fp32 form takes, timed for `elementwise.fp32.HARD_SWISH`), so `elementwise.hswish8` is
    a rate of its own."""
    case = next(c for c in CASES if c.op == "HARD_SWISH")
    assert case.forms == ("fp32", "static8")
    for form, kernel in (("static8", "TFLite HARD_SWISH"), ("fp32", "HardSwish (NC)")):
        path = build(case, form, tmp_path / f"{case.name}-{form}.tflite")
        r = per_op_child({"model": str(path), "threads": 1, "warmup": 1, "runs": 3})
        assert len(r["kernels"]) == 4 and all(k[-1] == kernel for k in r["kernels"].values()), r["kernels"]


def _pad_then_dw(path: Path, form: str) -> Path:
    """PAD (H and W by 1) then a VALID stride-2 DEPTHWISE_CONV_2D: how litert-torch writes PyTorch's padding=1."""
    import numpy as np

    from compiler.frontends.tflite_writer import TfliteWriter

    w = TfliteWriter(description="pad + dw")
    x = w.tensor("x", [1, 28, 28, 32])
    padded = w.tensor("padded", [1, 30, 30, 32])
    w.op("PAD", [x, w.const("pads", np.array([[0, 0], [1, 1], [1, 1], [0, 0]], np.int32))], [padded],
         w.options("PadOptions"))
    kernel = (np.random.default_rng(0).standard_normal([1, 3, 3, 32]) * 0.05).astype(np.float32)
    if form == "fp32":
        k = w.const("w", kernel)
    else:
        scales = [float(s) for s in np.abs(kernel).max(axis=(0, 1, 2)) / 127]
        q = np.round(kernel / np.array(scales)).astype(np.int8)
        k = w.tensor("w", [1, 3, 3, 32], "int8", data=q, quant=(scales, [0] * 32, 3))
    y = w.tensor("y", [1, 14, 14, 32])
    w.op("DEPTHWISE_CONV_2D", [padded, k, w.const("b", np.zeros(32, np.float32))], [y],
         w.options("DepthwiseConv2DOptions", padding=1, strideW=2, strideH=2, depthMultiplier=1))
    return w.save(path, [x], [y])


@pytest.mark.parametrize("form", ["fp32", "dyn8"])
def test_a_pad_runs_on_its_own_only_where_the_conv_leaves_xnnpack(tmp_path: Path, form: str) -> None:
    """What simulator/litert_paths.py's PAD rule assumes: XNNPACK folds the PAD into its fp32 depthwise conv (no
    event of its own), and runs it as `Constant Pad` when TFLite's hybrid kernel takes the int8-weight conv."""
    path = _pad_then_dw(tmp_path / f"{form}.tflite", form)
    g = tflite.load(path)
    r = per_op_child({"model": str(path), "threads": 1, "warmup": 1, "runs": 3})
    pad, dw = (n.id for n in g.nodes)
    if form == "fp32":
        assert r["tasks"][pad][0] == 0.0 and not r["kernels"].get(pad), r["kernels"]
        assert "DWConv" in r["kernels"][dw][-1]
    else:
        assert r["kernels"][pad] == ["Constant Pad (ND, X32)"] and r["tasks"][pad][0] > 0
        assert r["kernels"][dw][-1] == "TFLite DEPTHWISE_CONV_2D"
