"""LiteRT's CPU paths under each option (simulator/litert_paths.py); the chains its calibration times run in
tests/simulator/test_litert_chains.py."""

from __future__ import annotations

from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.profiles import load_profile

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


def test_int4_weights_leave_xnnpack_for_tflites_own_kernels() -> None:
    """ai-edge-quantizer's int4 weights sit behind a run-time DEQUANTIZE that XNNPACK does not take: TFLite's own fp32
    CONV_2D / FULLY_CONNECTED run (1.5-4x XNNPACK's fp32 time, profiled); a depthwise conv keeps fp32 weights."""
    conv = _plan("CONV_2D", "conv", "fp32/fp32/int4")
    fc = _plan("FULLY_CONNECTED", "gemm", "fp32/fp32/int4")
    assert (conv.tag, fc.tag) == ("builtin", "builtin") and (conv.rate_kind, fc.rate_kind) == ("conv", "gemm")
    assert conv.w_runtime_bytes == 4.0 and "TFLite's own fp32 kernel" in conv.note
    from simulator.roofline import efficiency

    cpu = load_profile("host-cpu", "litert-cpu").units[0]
    assert efficiency(cpu, "conv", "builtin") < 0.5 * efficiency(cpu, "conv", "fp32")
    assert _plan("DEPTHWISE_CONV_2D", "dwconv", "fp32/fp32/int4").tag != "builtin"
