"""LiteRT's CPU paths under each option (simulator/litert_paths.py) and the chains its calibration times."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.backends.litert_profiler import per_op_child
from compiler.frontends import tflite
from simulator.backends import plan
from simulator.litert_calibration import CASES, build
from simulator.options import Combo
from simulator.profiles import load_profile
from simulator.targets import get_target

HOST = get_target("litert-cpu/host")


def _plan(op: str, kind: str, combo: str) -> object:
    return plan(HOST, load_profile("host-cpu", "litert-cpu"), op, kind, Combo(*combo.split("/")[:3], 0), True, False)


def test_fp16_is_the_fp32_kernel_on_litert_cpu() -> None:
    p = _plan("CONV_2D", "conv", "fp16/fp16/fp16")
    assert p.supported and p.fp32_equivalent and p.in_bytes == 4.0 and p.tag == "fp32"  # the measured fp32 applies
    assert p.resolved == Combo("fp16", "fp16", "fp16", 0) and "computes fp32" in p.note


def test_dynamic_int8_paths() -> None:
    conv = _plan("CONV_2D", "conv", "fp32/fp32/int8")
    fc = _plan("FULLY_CONNECTED", "gemm", "fp32/fp32/int8")
    dw = _plan("DEPTHWISE_CONV_2D", "dwconv", "fp32/fp32/int8")
    assert (conv.tag, fc.tag, dw.tag) == ("qd8", "qd8", "hybrid")
    assert conv.compute == "int8" and conv.w_runtime_bytes == 1.0 and conv.extra_dispatches == 1
    assert "TFLite's own hybrid kernel" in dw.note
    # ONNX Runtime's rule for the same option (ConvInteger + Cast/Mul/Add) is not LiteRT's.
    ort = plan(get_target("ort-cpu/host"), load_profile("host-cpu"), "Conv", "conv", Combo("fp32", "fp32", "int8", 0),
               True, False)
    assert ort.tag == "int8dyn"


def test_static_int8_takes_the_generic_int8_path() -> None:
    assert _plan("CONV_2D", "conv", "int8/int8/int8").tag == "int8"


@pytest.mark.parametrize("form,kernels", [
    ("fp32", {"conv3x3": "Convolution (NHWC, F32) IGEMM", "dw": "Convolution (NHWC, F32) DWConv"}),
    ("dyn8", {"conv3x3": "Convolution (NHWC, QDU8, F32, QC8W) IGEMM", "dw": "TFLite DEPTHWISE_CONV_2D"}),
    ("static8", {"conv3x3": "Convolution (NHWC, QC8) IGEMM", "dw": "Convolution (NHWC, QC8) DWConv"}),
])
def test_calibration_chains_run_the_kernels_of_each_option(tmp_path: Path, form: str, kernels: dict[str, str]) -> None:
    """The chains LiteRT's calibration times are what ai-edge-quantizer's options make LiteRT run."""
    for case in (c for c in CASES if c.name in ("conv3x3-32-28", "dw3x3-64-28")):
        path = build(case, form, tmp_path / f"{case.name}-{form}.tflite")
        g = tflite.load(path)
        r = per_op_child({"model": str(path), "threads": 1, "warmup": 1, "runs": 3})
        assert sorted(r["tasks"]) == sorted(n.id for n in g.nodes)
        expected = kernels["conv3x3" if case.op == "CONV_2D" else "dw"]
        assert all(r["kernels"][n.id][-1] == expected for n in g.nodes)
