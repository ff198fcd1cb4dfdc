"""The peak-memory constants of the totals rule (rule 3 of docs/option-table.md) per target: what a runtime holds
beside the file's weights and one op's working set. Measured as the growth of the profiling child's resident-set
high-water mark (VmHWM, compiler/host.py); the figures and how they were fitted are in README.md, "Memory"."""

from __future__ import annotations

import math
from typing import Any

from compiler.graph import Graph

# Copies of the weights a runtime holds beside the file's (`weight_copies`). LiteRT on the host keeps the model file
# mapped (its weights read at load) and XNNPACK packs every weight it runs into buffers of its own, at the precision
# it runs them; measured with VmHWM growth: MobileNetV2 fp32 (14 MB of weights) 47 MB, BirdNET's metadata model
# (26.7 MB at fp32, stored fp16, also unpacked to fp32 before packing) 61-73 MB, against 14 / 30 MB predicted with
# the file's weights alone.
WEIGHT_COPIES: dict[str, float] = {"litert-cpu/host": 1.0}

# ONNX Runtime 1.32 CPU EP on the host, one session as the profiling child opens it (compiler/backends/ort.py). Its
# growth splits into pages of its libraries' code (RssFile), the same for every model, and allocations (RssAnon); the
# figures and the fit are in README.md, "Peak memory on `ort-cpu/host`" (benchmarks/ort_peak_memory.py).
# - load_runtime_bytes: library pages read while a session loads (8.2-8.4 MB measured on every model);
#   runtime_bytes: the runtime's own memory once it has run (its library pages, 14.2-15.3 MB measured, the kernels'
#   code paged in by the first run, and allocations of its own; fitted).
# - load_copies: a weight is copied once while the session loads it (the parsed file and the initializer's tensor),
#   freed before the kernels pack theirs (packing follows loading: session_state.cc finalizes the initializers, then
#   prepacks): the load's peak is the file, the library pages read at load and that copy of the largest weights; the
#   run's peak is the file, the runtime's own memory, the packed weights it keeps and the arena. The larger counts
#   (AlexNet's: its load, 151 MB fc6 copied; nearly every other model's: its run).
# - prepack_share: the share of the weights the session packs into buffers of its own at load that the run's peak sees
#   (onnxruntime core/framework/session_state.cc PrepackConstantInitializedTensors): MLAS's SGEMM B of MatMul / Gemm,
#   the quantized GEMM's B of the int8 MatMuls (core/providers/cpu/quantization/matmul_integer_base.h), and the
#   filter of QLinearConv (qlinearconv.cc PrePack: MlasConvSymPackW, MlasGemmPackB, or a reordered copy for a
#   depthwise filter); ConvInteger (int8-dynamic convs, conv_integer.cc) packs nothing. prepack_share_int8: the
#   same for int8 kernels, whose packed buffers are padded and come with column sums; fitted above 1 (the originals
#   stay beside them; `session.disable_prepacking` takes 10 MB off int8-static ResNet-18's loaded session, 11.8 MB
#   of int8 weights).
# - arena_factor: the arena over the activations of one op, at the op where it is largest with its int8 scratch (ORT's
#   BFC arena grows by powers of two, kNextPowerOfTwo, and holds the first run's blocks beside the memory pattern's
#   one block of later runs). An int8 kernel's scratch (`int8_scratch`, below) comes from the arena once: the memory
#   pattern plans the activations, not a kernel's temporary buffers.
# - decoded_at_load: kernels the CPU EP does not run as stored: the compiled file of an fp16 or palettized export
#   holds fp32 weights (ORT casts fp16 and folds the palette decode), so they are resident at fp32.
ORT_HOST: dict[str, Any] = {
    "runtime_bytes": 17.4e6, "load_runtime_bytes": 8.3e6, "load_copies": 1.0, "prepack_share": 0.66,
    "prepack_share_int8": 1.31, "arena_factor": 2.83,
    "decoded_at_load": {"kernels": ["fp16", "lut1", "lut2", "lut4", "lut6", "lut8"], "preset": "fp32"},
    "prepacked_kernels": ["fp32", "fp16", "int8", "lut1", "lut2", "lut4", "lut6", "lut8"],
}
# MLAS packs the constant 2-D B of these ops: SGEMM's (MatMul, Gemm) and, for int8 weights, the quantized GEMM's
# (core/providers/cpu/quantization/matmul_integer_base.h: MatMulInteger, DynamicQuantizeMatMul, QLinearMatMul).
PREPACKED_OPS = frozenset({"MatMul", "Gemm", "FusedGemm", "FusedMatMul"})
CONV_OPS = frozenset({"Conv", "FusedConv"})
# Where ORT's symmetric int8 conv kernels take a filter on x86-64 with AVX2 or AVX-512 VNNI (mlas/lib/convsym.cpp
# MlasConvSymPackWSize): a depthwise conv whose channels are a multiple of 16; else input channels a multiple of 4
# and at least 16 output channels, a multiple of 8. Those accumulate in registers; the others in an int32 buffer.
SYM_DEPTHWISE_ALIGN, SYM_IN_ALIGN, SYM_OUT_MIN, SYM_OUT_ALIGN = 16, 4, 16, 8


# Recurrent ops: their activation figure counts what every step reads and writes (the recurrent weights' re-reads,
# simulator/costs.py), not what they hold; the peak takes their tensors in and out instead (`activation_caps`).
RECURRENT_OPS = frozenset({"LSTM", "GRU", "RNN"})


def memory_constants(target: str, compiled: Graph) -> dict[str, Any]:
    """The bulk table's peak-memory constants for `target`: `weight_copies`, the recurrent ops' activation caps, and
    ONNX Runtime's terms on the host."""
    caps = activation_caps(compiled)
    out: dict[str, Any] = {"activation_caps": caps} if caps else {}
    if target != "ort-cpu/host":
        return {"weight_copies": WEIGHT_COPIES.get(target, 0.0), **out}
    ops = [i for i, n in enumerate(compiled.nodes) if n.op_type in PREPACKED_OPS]
    convs = [i for i, n in enumerate(compiled.nodes) if n.op_type in CONV_OPS]
    return {"weight_copies": 0.0, **ORT_HOST, "prepacked_ops": ops, "prepacked_int8_ops": convs,
            "int8_scratch": int8_scratch(compiled), **out}


def activation_caps(g: Graph) -> list[list[float]]:
    """[op index, bytes] for each recurrent op: its activation tensors in and out at fp32 (4 bytes an element, the
    widest activation format), the most of its activation figure the peak counts. A bidirectional GRU over 200 steps
    (hidden 256) holds 0.5 MB of them; its activation figure, 315 MB, put its peak at 30x the 30 MB measured."""
    out: list[list[float]] = []
    for i, n in enumerate(g.nodes):
        if n.op_type not in RECURRENT_OPS:
            continue
        vals = [g.values[v] for v in (*n.inputs, *n.outputs) if v and v in g.values and g.values[v].weight is None]
        out.append([i, 4.0 * float(sum(v.elements or 0 for v in vals))])
    return out


def int8_scratch(g: Graph) -> list[list[float]]:
    """[op index, bytes under int8-static, bytes under int8-dynamic] for each conv and MatMul / Gemm with weights: the
    memory its int8 kernel works in beyond its activations (rule 3 adds it to the op's working set when the op's combo
    runs an int8 kernel, static where its input activations are int8).
    - QLinearConv (int8-static, core/providers/cpu/quantization/qlinearconv.cc Compute): an int32 buffer of the
      output unless the symmetric kernel takes it (SYM_*), and, unless pointwise with stride 1 and no padding, an
      im2col buffer of the input (bytes: kernel elements x input channels per group x output pixels), or an
      indirection buffer (a pointer per kernel element and output pixel) on the symmetric and depthwise paths.
    - int8-dynamic convs run as DynamicQuantizeLinear -> ConvInteger (conv_integer.cc) -> Cast -> Mul: the input's
      uint8 copy, the int32 output beside the float one, and the im2col buffer.
    - QLinearMatMul (quantize_linear_matmul.cc): an int32 buffer of the output; DynamicQuantizeMatMul: the input's
      uint8 copy."""
    out: list[list[float]] = []
    for i, n in enumerate(g.nodes):
        ws = g.weights_of(n)
        if not ws or ws[0].shape is None or n.op_type not in CONV_OPS | PREPACKED_OPS:
            continue
        y = float(sum(g.values[v].elements or 0 for v in n.outputs if v in g.values))
        x = float(g.values[n.inputs[0]].elements or 0) if n.inputs and n.inputs[0] in g.values else 0.0
        if n.op_type in PREPACKED_OPS:
            out.append([i, 4.0 * y, x])
        elif len(ws[0].shape) >= 3 and all(isinstance(d, int) for d in ws[0].shape):
            out.append([i, *_conv_scratch(n.attributes, [int(d) for d in ws[0].shape], x, y)])
    return out


def _conv_scratch(attrs: dict[str, Any], w: list[int], x: float, y: float) -> tuple[float, float]:
    cout, cin_g, group = w[0], w[1], int(attrs.get("group", 1) or 1)  # type: ignore[arg-type]
    k = math.prod(w[2:])
    pixels = y / cout if cout else 0.0
    pointwise = k == 1 and all(s == 1 for s in attrs.get("strides") or [1]) and not any(attrs.get("pads") or [0])
    depthwise = group > 1 and cin_g == 1 and cout == group
    if depthwise:
        sym = cout % SYM_DEPTHWISE_ALIGN == 0
    else:
        sym = group == 1 and cin_g % SYM_IN_ALIGN == 0 and cout >= SYM_OUT_MIN and cout % SYM_OUT_ALIGN == 0
    col = 0.0 if pointwise else k * cin_g * pixels * group
    static = (0.0 if sym else 4.0 * y) + (0.0 if pointwise else 8.0 * k * pixels if sym or depthwise else col)
    dynamic = x + 4.0 * y + (0.0 if pointwise else k * cin_g * pixels)
    return static, dynamic
