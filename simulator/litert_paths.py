"""How LiteRT's CPU runs an operator under an option: XNNPACK's paths, not ONNX Runtime's.

Measured with LiteRT 2.3.0's profiler on files ai-edge-quantizer writes (compiler/optimize/litert_export.py):
- fp16: the exporter stores the weights in fp16 behind DEQUANTIZE, activations stay fp32; LiteRT dequantizes
  the weights once when it prepares the model, and XNNPACK runs the fp32 file's operators (an fp16-weight
  MobileNetV2 ran the same F32 GEMMs and DWConvs, in the same time). On the CPU an fp16 option is fp32.
- int8 weights with float activations (dynamic int8): XNNPACK runs CONV_2D and FULLY_CONNECTED as QD8 x QC8W
  GEMMs, each input quantized on the fly (a `Convert (NC, F32, QDU8)` before a conv, QD8 on a CPU without VNNI dot
  products such as an AVX2-only EPYC; inside the FC);
  DEPTHWISE_CONV_2D it does not take, so TFLite's own hybrid kernel runs it, and the delegate partition is cut
  there (MobileNetV2: the depthwise convs went from 1.2 ms to 54 ms, the 1x1 convs from 5.2 to 3.8 ms).
- int8 weights and activations (static int8): XNNPACK's QS8 / QC8 kernels (the generic int8 path).
- int4 weights (weight-only): CONV_2D and FULLY_CONNECTED read them through a run-time DEQUANTIZE, which XNNPACK
  does not take: TFLite's own fp32 kernels run them (`<kind>.builtin`, host-cpu.yaml, measured with the
  profiler on chains of each: 1x1 convs 0.42-0.54 ms against XNNPACK's 0.11-0.19, FULLY_CONNECTED 64x512
  1.0-2.6 ms against 0.7; ResNet-18 100 ms CPU per run against 17 for fp32).
Efficiencies of these paths (`<kind>.qd8`, `dwconv.hybrid`, `<kind>.int8`, `<kind>.fp32`) are fitted on this
machine by `simulator.litert_calibration`; a profile without them uses its figures for the kind.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from compiler.vocabulary.formats import BITS
from compiler.vocabulary.options import Combo
from simulator.roofline import Path

if TYPE_CHECKING:
    from compiler.vocabulary.targets import Target
    from simulator.profiles import Unit

LITERT_BACKENDS = frozenset({"litert-cpu", "litert"})
_GEMM_OPS = frozenset({"CONV_2D", "FULLY_CONNECTED", "BATCH_MATMUL"})


def litert_cpu_path(target: Target, ui: int, unit: Unit, op_type: str, kind: str, c: Combo, has_kernel: bool,
                    fused: bool, generic: Callable[[Combo], Path | None]) -> Path | None:
    """The path of an operator on LiteRT's CPU where it differs from the generic one, else None. `generic`: the
    generic path of the same operator on the same unit under another combo (simulator.backends)."""
    if "fp16" in (c.input, c.output):
        f32 = Combo(*("fp32" if f == "fp16" else f for f in (c.input, c.output)), c.kernel, c.sparsity)
        p = generic(f32)
        if p is None:
            return None
        return dataclasses.replace(p, resolved=c, note="; ".join(
            ["LiteRT's CPU computes fp32: fp16 is the weights' storage (dequantized at load)", *([p.note] if p.note else [])]))
    if (has_kernel and c.kernel == "int4" and "int8" not in (c.input, c.output) and op_type in _GEMM_OPS
            and kind in ("conv", "convsmall", "gemm")):
        # ai-edge-quantizer's int4 weights reach the operator through a DEQUANTIZE that XNNPACK does not fold, so
        # the operator is not delegated: TFLite's own fp32 kernel runs it on the dequantized weights (profiled:
        # `TFLite CONV_2D` / `TFLite FULLY_CONNECTED`, 1.5-4x XNNPACK's time; the DEQUANTIZE itself 1-3 us).
        # A depthwise conv's kernel stays fp32 under int4 (storage_bytes_per_kernel), so XNNPACK keeps it.
        note = ("int4 weights behind DEQUANTIZE: XNNPACK does not take the operator; TFLite's own fp32 kernel "
                "runs it on the weights dequantized per run")
        return Path(ui, c, True, "fp32", "builtin", 4.0, 4.0, 4.0, False, 4.0, 0.0, 0.0, 1, 0.0, False, False, note,
                    rate_kind="gemm" if kind == "gemm" else "conv")
    if not has_kernel or c.kernel != "int8" or "int8" in (c.input, c.output):
        return None
    fcompute = "fp32"
    in_b = out_b = BITS[fcompute] / 8
    if kind == "dwconv":
        note = ("XNNPACK does not take a depthwise conv with int8 weights and float activations: TFLite's own "
                "hybrid kernel runs it, and the delegate partition is cut around it")
        return Path(ui, c, True, "int8", "hybrid", in_b, out_b, 1.0, False, 4.0, in_b + 1, 0.0, 1, 0.0, False,
                    False, note)
    if op_type in _GEMM_OPS and kind in ("conv", "convsmall", "gemm"):
        note = "XNNPACK dynamic int8: the input quantized per run, then an int8 GEMM (QD8 x QC8W) with float output"
        return Path(ui, c, True, "int8", "qd8", in_b, out_b, 1.0, False, 4.0, in_b + 1, 0.0, 1, 0.0, False, False,
                    note + ("; activation clamped in the kernel" if fused else ""))
    return None
