"""Static int8 (QDQ) on ONNX Runtime's x86 CPU EP: what a task's own node decides about the kernel ORT runs for it,
beyond its op type and kind (simulator.backends.task_facts; paths in simulator.backends.plan).

- An activation fused into a Conv that the int8 output range cannot fold runs as kernels of its own.
- A depthwise QLinearConv takes MLAS's symmetric depthwise kernel (requantization fused, 64 channels x 6 pixels
  per step) only when its channel count is a multiple of 16; any other count runs the generic u8 depthwise kernel
  into an int32 buffer and requantizes it in a second pass (own path `int8gen`).
- Other Convs off the symmetric kernel's alignment (grouped ones, stems) run an im2col and a GEMM per group (own
  rate kinds: `convgemm` for grouped ones, `stemgemm` for dense ones).
- Under dynamic int8, an image stem's ConvInteger runs at its own figures too (`stemgemm.int8dyn`).
- Dense convs on the symmetric kernel by their shape (one-pixel maps, 1x1 unit-stride): simulator/ort_int8_dense.py.
"""

from __future__ import annotations

import dataclasses
import math

from compiler.graph import Graph, Node
from compiler.vocabulary.options import Combo
from simulator.costs import kernel_value, kind_of
from simulator.kernel_path import Path
from simulator.ort_broadcast import short_reduce_block, short_reduce_rows, short_span
from simulator.ort_int8_dense import (
    ORT_INT8_ONE_PIXEL, ORT_INT8_POINTWISE, dense_shape_path, one_pixel_conv, pointwise_conv)
from simulator.ort_int8_rows import COPY_OPS, ORT_INT8_ROWS, copy_run, rows_path
from simulator.reductions import reduce_axes

# {activation: (bytes per output element, extra kernels, ops per element at the int8 element-wise rate, fp32 ops per
# element, of which its own fp32 kernel's FLOPs at that kernel's own rate)}. Relu and Clip fold (QLinearConv's output
# range); the rest run behind the int8 kernel. Profiled in MobileNetV3-Small's int8-static file (TorchScript export,
# 2026-12-03): each HardSwish (x * HardSigmoid(x)) runs DequantizeLinear (1 byte in, 4 out), HardSigmoid in fp32 (4, 4),
# QuantizeLinear (4, 1), QLinearMul (1 + 1, 1): 19 of each, 1.1 ms of 4.6 ms of kernels, predicted 0 as folded. A lone
# HardSigmoid (an SE gate) is the first three; a Sigmoid is QLinearSigmoid. Each kernel at the rate of its own kind:
# DequantizeLinear and QuantizeLinear 2 fp32 ops per element each (what the totals rule charges a conversion between
# formats: roofline.conversion_constants), HardSigmoid its 3 fp32 FLOPs (costs._ELEMENTWISE_FLOPS), QLinearMul 3 int8
# ops (dequantize both, multiply, requantize: QLinearAdd's count, ORT_INT8_SUM). With all four at the int8 rate (4 ops)
# MobileNetV3-Large's 21 HardSwish were predicted at 0.94 ns per element on this Zen 3 (AMD EPYC, AVX2; calibrated,
# 2026-12-03) against 1.3-1.4 profiled (their 102 kernels, ORT's profiler, load 6 per CPU); now 1.34. The HardSigmoid is
# ORT's fp32 kernel, which calibration times alone (`elementwise.fp32.HardSigmoid`, 1.6x the generic rate on an Emerald
# Rapids: 0.155 ns per element there alone and in LCNet-050's int8 file; 2026-12-07): its 3 FLOPs at that rate.
ORT_INT8_UNFOLDED = "ort_int8_unfolded="
_ACT_PASSES: dict[str, tuple[float, int, float, float, float]] = {
    "HardSwish": (21.0, 4, 3.0, 7.0, 3.0), "HardSigmoid": (14.0, 3, 0.0, 7.0, 3.0), "Sigmoid": (2.0, 1, 3.0, 0.0, 0.0)}

# A depthwise Conv whose channels are not a multiple of 16. ORT 1.32's QLinearConv (onnxruntime
# core/providers/cpu/quantization/qlinearconv.cc, PrePack -> TryConvSymPrepack) packs int8 weights with zero points
# 0 (quantize_static's per-channel symmetric weights) for MlasConvSymDepthwise only if MlasConvSymPackWSize accepts
# them, and that (core/mlas/lib/convsym.cpp) returns 0 for a grouped conv unless it is depthwise with its group count
# aligned to 16 on x86 (8 on ARM64). Otherwise Compute runs MlasConvDepthwise (u8 x u8 into an int32 buffer) and
# MlasRequantizeOutput over it. Single-op chains on this host (Zen 5, thread CPU time, 2026-12-03, load 7): 3x3
# depthwise at 58x28 0.040 ms per conv, 72x28 0.041, 122x14 0.018, 232x7 0.009, against 80x28 0.018, 128x14 0.007,
# 240x7 0.004 (multiples of 16, the symmetric kernel's path, predicted within 16%): 2.5-3x at the same size.
ORT_INT8_DW_GENERIC = "ort_int8_dw_generic"
SYM_DEPTHWISE_ALIGN = 16
INT8_GENERIC_TAG = "int8gen"

# Any other Conv that MlasConvSymPackWSize refuses: grouped (not depthwise) at any width, and a dense one with input
# channels not a multiple of 4 (a stem's 3), output channels not a multiple of 4 or fewer than 16 (the AVX-512 VNNI
# dispatch's KernelInputChannelAlignment, KernelOutputChannelAlignment and FilterOutputChannelPackCount). Compute
# then runs, per slice of output pixels and per group, an NHWC Im2col (one copy of the group's input channels per
# pixel and kernel tap, or per kernel row where the group has all of them; none for a 1x1 stride-1 unpadded conv:
# Work.row_extra_calls) and an MlasGemm of (pixels x group outputs x group
# inputs x taps) into int32, and MlasRequantizeOutput. Its cost is per GEMM row (pixel x group) and per copy far
# more than per MAC: single-op chains on this host (Zen 5, thread CPU time, 2026-12-03, load 7-11) of 3x3 grouped
# convs of width 8 at 48x56, 104x28, 208x14, 440x7: 0.56, 0.31, 0.16, 0.084 ms per conv, 3.2-3.7x the few-channel
# int8 rate they were priced at, width 24 (96x28) 0.15 ms, 0.7x: the copies of 8 channels cost as much as those of
# 24. Own path (`convgemm.int8`: efficiency, setup, `.row`, `.tap`, `.out` per output element: the int32 buffer
# requantized), fitted by calibration on such convs and on dense 1x1 ones off the alignment (ShuffleNet v2's 58 -> 58):
# without `.out` those were -21..+12% in-sample on a Zen 4 (2026-12-08; their time follows the outputs, 0.5-0.7 ns
# each, not the GEMM rows), with it -3..+5% and the grouped cases -8..+2%.
ORT_INT8_QGEMM = "ort_int8_qgemm"
QGEMM_RATE_KIND = "convgemm"
# A dense Conv (one group) off that alignment, in practice an image stem (3 input channels): the same im2col and
# GEMM, but one GEMM of K = 3 x kh x kw per slice of pixels, not one per group of 8-24 channels. Fitted together, no
# cost per GEMM row, copy or MAC held both (Sapphire Rapids, 2026-12-03: calibration's own stem cases -34%, -40%,
# -14% in-sample, MobileNetV2's and ResNet-18's int8 stems 1.69x and 1.68x their prediction in the model; single-stem
# files on a Zen 3 1.3-2x): stems take their own figures (`stemgemm.int8`), fitted by calibration on stem cases, with a
# cost per output element (`.out`): on an Emerald Rapids (2026-12-07) rate, rows and copies alone fitted the four stem
# cases -7..+7% and SqueezeNet's 3x64 stem at 0.9x its share of its profile; with it the cases -2..+2%, SqueezeNet 1.0x.
# Image stems only (ORT_INT8DYN_STEM): a dense Conv off by its channels (ShuffleNet v2's 58 -> 58 1x1s) is the grouped
# path with one group (`convgemm.int8`); at the stems' 111 us setup (Zen 5, 2026-12-07) it was 142 us for 30 in fp32.
ORT_INT8_QGEMM_DENSE = "ort_int8_qgemm_dense"
STEM_RATE_KIND = "stemgemm"
_SYM_IN_ALIGN, _SYM_OUT_ALIGN, _SYM_OUT_MIN = 4, 4, 16
# An image stem (a dense Conv of fewer than 4 input channels) under dynamic int8: ConvInteger's QGEMM reduces over
# only 3 x kh x kw (27 for 3x3), so it runs at its own rate, far from the dense convs' (and the few-channel NCHWc
# Convs' `convsmall`, which are 8-channel chains here). Single-op files on a Zen 4 (thread CPU time, medians, load 2.5
# per CPU, 2026-12-04): ConvInteger alone 0.12 / 0.16 / 0.19 ms for 3x16 / 3x24 / 3x32 3x3 at 224 px, 1.77 ms for
# ResNet's 3x64 7x7, 85-95% of it the GEMM (timed on its input expanded ahead, as a 1x1 ConvInteger); the 7x7 stem's
# file predicted at 0.49x with the stems fitted into `convsmall.int8dyn` beside 8-channel chains. Own figures
# (`stemgemm.int8dyn`: rate, setup, im2col), fitted by calibration on stems (simulator/calibration_int8dyn.py).
ORT_INT8DYN_STEM = "ort_int8dyn_stem"

# ORT's own dynamic int8 kernels in an uploaded file (onnxruntime.quantization.quantize_dynamic's output, as ORT
# optimizes it): ConvInteger and MatMulInteger take uint8 input and write int32 (the DynamicQuantizeLinear before
# them and the Cast / Mul / Add after them are tasks of their own in the file), MatMulIntegerToFloat takes uint8
# input and scales its own float output, DynamicQuantizeMatMul quantizes its input and scales its output itself.
# They run MLAS's integer GEMMs whatever option the sweep prices, so the file as uploaded (fp32) runs them at the
# dynamic int8 figures (`<kind>.int8dyn`, their weights a byte each), not as fp32 Convs / Gemms with 4-byte weights:
# ddddocr's old recognizer (ConvIntegers, a [24, 1024] x [1024, 8210] DynamicQuantizeMatMul) was priced at 14.2 ms
# against 9.6 of thread CPU time (Zen 4, 2026-12-05, +48%).
ORT_INT8DYN_NATIVE = "ort_int8dyn_native"
NATIVE_INT8DYN_OPS = frozenset({"ConvInteger", "MatMulInteger", "MatMulIntegerToFloat", "DynamicQuantizeMatMul"})


def native_int8dyn_path(p: Path, op_type: str) -> Path:
    """`p`, the int8-dynamic path of a task the file already holds as one of ORT's dynamic int8 kernels: as it is for
    a DynamicQuantizeMatMul (its own quantization and scaling), without the quantize and dequantize passes for a
    ConvInteger / MatMulInteger / MatMulIntegerToFloat (uint8 in, 4-byte int32 or float out; the quantization is the
    file's own task)."""
    note = f"the file's own {op_type}: MLAS's integer GEMM at the dynamic int8 figures"
    if op_type == "DynamicQuantizeMatMul":
        return dataclasses.replace(p, note="; ".join([note, p.note] if p.note else [note]))
    return dataclasses.replace(p, in_bytes=1.0, out_bytes=4.0, extra_in_bytes=0.0, extra_out_bytes=0.0,
                               extra_dispatches=0, extra_ops_per_in=0.0, extra_ops_per_out=0.0,
                               extra_fp32_ops_per_out=0.0, span_elements=0.0, span_key="", note=note)


# A Concat between Q/DQ pairs runs as QLinearConcat (ORT 1.32 contrib_ops/cpu/quantization/qlinear_concat.cc): every
# input whose scale or zero point differs from the output's (the usual case: each input has its own range) goes
# through a 256-entry requantization table, one lookup per element, not a block copy. Profiled in this host's int8
# files (wall, load 7, 2026-12-03): ShuffleNet v2's 16 QLinearConcats 0.19 ms (0.15 ns per element), GhostNet's 32
# 0.58 ms (0.17-0.26), predicted 0.022 and 0.071 at the layout rate. Input by input: one whose scale and zero point
# equal the output's is copied with memcpy, the others looked up. The quantizer's calibration gives the output the union
# of its inputs' ranges, so the input holding both ends (ReLU'd maps: the widest) has the output's quantization: in
# SqueezeNet 1.1's 8 and GhostNet's 32 QLinearConcats exactly one input (ORT's optimized int8 files, Zen 5, 2026-12-06).
# Which one is not known before calibration data, so n - 1 of n inputs' shares of the elements are looked up. Timed
# alone (Zen 5, 14:29 UTC): 0.24 ns per element looked up whatever the axis, against 0.055 at the QLinearAdd rate it was
# priced at. Each element looked up pays `layout.int8.lookup` beyond the copy (calibration_nhwc: QLinearConcats with one
# input requantized against the same with none); the whole concat moves at the Concat's own (layout) rate. The fact
# carries the number of inputs.
ORT_INT8_CONCAT = "ort_int8_concat="
CONCAT_LOOKUP_KEY = "layout.int8.lookup"
# An NCHWc reorder of the fp32 graph: under static int8 ORT's NHWC layout pass puts a Transpose at the same boundary
# and its transpose optimizer pushes it through the plain-layout ops beyond (Concat, Slice, Add, Mul, pools: GhostNet's
# 109 reorders leave no Transpose in its int8 file), but not through a reshape: where the plain-layout region beyond
# the reorder holds a Reshape, Flatten or Transpose the uint8 Transpose stays (ShuffleNet v2's channel shuffles: 31
# layout Transposes, ~3-4 us each at 28x28-7x7, plus the input's).
ORT_INT8_REORDER = "ort_int8_reorder"
_RESHAPES = frozenset({"Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze"})
# A Transpose behind a Reshape of an op whose inputs all leave Convs (ShuffleNet v2's stage-entry shuffle:
# Concat of two conv branches -> Reshape -> Transpose): under static int8 ORT pushes both inputs' NHWC -> NCHW
# Transposes through the Concat and the Reshape into it, and the merged permutation ([0, 4, 3, 1, 2] there) moves the
# innermost axis: ORT walks it element by element (costs.kind_of's `walk`). Profiled in ShuffleNet v2's int8 file
# (wall, load 7): 204, 105 and 60 us at 28x28x116, 14x14x232, 7x7x464, 2.2-2.6 ns per element, against 3-4 us for
# each of the same shuffles further into a stage (data in NCHW there); predicted 1-2 us. Costed at walk.fp32's rate
# per element (the walk copies one element per step whatever its type).
ORT_INT8_WALK = "ort_int8_walk"
_REORDERS = frozenset({"ReorderInput", "ReorderOutput"})
# A spatial reduction (ReduceMean over H and W: timm's squeeze-excite `x.mean((2, 3), keepdim=True)`) of data that
# leaves Convs. ReduceMean has no QDQ entry in ORT 1.32's quantizer (onnxruntime/python/tools/quantization/
# registry.py), so it runs fp32 between DequantizeLinear and QuantizeLinear, and ORT's transpose optimizer pushes the
# NHWC pass's Transposes through it by rewriting its axes (onnxruntime/core/optimizer/transpose_optimization/
# onnx_transpose_optimization.cc, HandleReduceOps): GhostNet's int8 file reduces axes [1, 2] of NHWC data. Those are
# not the innermost axes, so ORT's reduction kernel (core/providers/cpu/reduction/reduction_ops.cc) reads with
# strides. Profiled in GhostNet's int8 file (Zen 4, wall, load 10, 2026-12-03): its 7 ReduceMeans (72x28x28 ..
# 960x7x7) 0.86-1.1 ns per element, 0.43 ms per run, predicted 0.058 ms at the contiguous rate (fp32: the same 7
# profiled 0.08-0.09 ms); on an Emerald Rapids VM (HardCoreNAS-A's and GhostNet's, 2026-12-06) 0.57-0.82 ns, where
# the fp32 strided case's 16 FLOPs per element (reductions.STRIDED_REDUCE_FLOPS) priced 1.2-1.3. Each element read
# costs `reduce.int8.nhwc` s beyond the contiguous reduction, fitted by calibration on ReduceMeans of NHWC tensors
# against the same of NCHW ones (simulator/calibration_nhwc.py). The fact carries the elements reduced into each
# output (H x W). In the int8 file the data is NHWC whatever the row length, so a 7x7 map's short-row cost
# (ORT_REDUCE_ROWS, the fp32 file's call per row) does not apply under int8 activations. A BatchNormalization ORT's
# fp32 graph turned into an NCHWc Conv (MixNet-S's, after a Concat of depthwise convs) is no QLinearConv in the int8
# file: it stays an fp32 BatchNormalization behind a Transpose to NCHW (no QDQ entry, no layout handler), and the
# ReduceMean after it reduces axes [2, 3] (MixNet-S's int8 file, ORT 1.32, 2026-12-06: 13 of 13).
ORT_INT8_NHWC_REDUCE = "ort_int8_nhwc_reduce="
NHWC_REDUCE_KEY = "reduce.int8.nhwc"
# A Conv with a residual Add fused in (ORT's NCHWc Conv / FusedConv reading the Add's other input as `Sum` / `Z`, the
# inverted residual blocks of MobileNetV2, ResNet's BasicBlocks). QLinearConv has no such input (ORT 1.32
# core/providers/cpu/quantization/qlinearconv.cc: X, W, B and the scales only), so the static int8 file's Add stays a
# kernel of its own, QLinearAdd (contrib_ops/cpu/quantization/qlinear_binary_op.cc: dequantize both uint8 inputs,
# add, requantize), priced as the QDQ Gemm's bias QLinearAdd is (simulator.backends._int8_kernel: 3 ops per element
# at the calibrated int8 element-wise rate, QLinearAdd chains; one more byte read and one written). MobileNetV2's
# int8 file on this Zen 4 (wall, load 10, 2026-12-03): 11 QLinearAdds, 0.116 ms of 4.2 ms of kernels, predicted 0.
ORT_INT8_SUM = "ort_int8_sum"
# An element-wise Mul / Add with an operand that varies along one axis only (a squeeze-excite's [N, C, 1, 1] gate),
# where that axis is innermost in the int8 file: the gate of data leaving Convs (NHWC there), or already the last
# axis. ORT's QLinearMul / QLinearAdd (contrib_ops/cpu/quantization/qlinear_binary_op.cc) broadcast through ORT's
# BroadcastHelper, which calls the MLAS kernel once per span of the operand's length (C elements): a fixed cost per
# call beside the per-element one. Int8-static chains on this Zen 3 (AVX2; CPU time, load 9-10, 2026-12-03): a Mul of
# [1, 56, 56, 16] by [1, 1, 1, 16] 66 us, the same data as [1, 16, 56, 56] by [1, 16, 1, 1] (16 calls of 3136) 16.8 us;
# 96x28x28 36 us, 576x7x7 12 us, 32x112x112 335 us: 0.33 ns per element + 15.7 ns per call fits all five within 15%.
# In MobileNetV3-Small's int8 file the first squeeze-excite Mul (16x56x56) profiled 0.093 ms, 5.6x its fp32 time,
# predicted 0.8x. The fact carries the operand's length; the cost per call is calibrated (`elementwise.int8.span`).
ORT_INT8_SPAN = "ort_int8_span="
# A Gemm / MatMul by a constant with one activation row (M = 1: a CNN's classifier at batch 1) under static int8:
# QLinearMatMul runs MLAS's QGEMM on one row, where the kernel's row blocking and the packing of A buy nothing and
# every packed weight is read once per run. Profiled on a Sapphire Rapids (ORT's node medians, load 3.5 per CPU,
# 2026-12-03): MobileNetV2's 1280x1000 classifier 0.164 ms, 2.0x its prediction at the rate fitted on 16-128 rows,
# ResNet-18's 512x1000 0.084 ms, 1.8x. Its own figure (`gemm.int8gemv`), fitted by calibration on a one-row chain.
ORT_INT8_ONE_ROW = "ort_int8_one_row"
ONE_ROW_TAG = "int8gemv"
# The first QLinearConv on an image input (a CNN's stem) under static int8: the file quantizes the fp32 NCHW input
# (QuantizeLinear: the conversion the totals rule charges a graph input, simulator.sweep) and ORT's NHWC layout pass
# transposes it to NHWC in uint8 before the conv, a kernel of its own that no rule priced and calibration's chains
# absorbed. Profiled on a Zen 4 (ORT's node medians, int8-static files of the 3x224x224 CNNs, 2026-12-06 07:44 UTC,
# probe 104 -> 107 GFLOP/s, load 0.6 per CPU): the Transpose 0.040 ms in SqueezeNet 1.1, 0.044 in RegNetY-400MF
# (0.27-0.29 ns per element; an Emerald Rapids VM's Q + Transpose 0.074-0.078 ms, README Round 22). Priced at
# `layout.int8.nhwc` s per input element (roofline.NHWC_INPUT_KEY) beside a dispatch, on inputs of fewer than 4
# channels only: a wide input's Transpose moves runs of channels, and at that figure calibration's 32x56x56 1x1 chain
# went from +11% to +21% in-sample (a refit of the same timings, 2026-12-06).
ORT_INT8_INPUT_NHWC = "ort_int8_input_nhwc"
_CONV_KINDS = frozenset({"conv", "convsmall", "convnchw", "dwconv", "dwconvnchw", "gconvnchw"})
# A Conv whose output's innermost axis is 1 (a 1-D conv written as 2-D over [N, C, L, 1], as tf2onnx / jax2tf write
# them: magika's) under dynamic int8: quantize_dynamic's scale Mul multiplies the ConvInteger's [N, C, L, 1] output
# by a scalar, and ORT's Broadcaster (onnxruntime core/providers/cpu/math/element_wise_ops.h) starts its spans at that
# innermost axis of 1, so the kernel is called once per element. Measured on this Zen 4 (ORT 1.32, 1 thread, CPU
# time, 2026-12-04, load ~5 per CPU): a Mul of [1, 512, 508, 1] by a scalar 2.58-2.67 ms per run (with or without the
# Cast before it, the scalar as [] or [1]), about 10 ns per element, where the same Mul over [1, 512, 508] in magika's
# fp32 file profiled 0.03 ms; in magika's int8-dynamic file the scale Mul profiled 9.25 ms (wall, load ~6 per CPU) of a
# 12.5 ms CPU run, the ConvInteger before it 22 ms. Priced per call (`elementwise.fp32.span`, host-cpu.yaml).
ORT_INT8DYN_UNIT_SPAN = "ort_int8dyn_unit_span"
UNIT_SPAN_KEY = "elementwise.fp32.span"
# A float Add / Sub / Mul / Div whose broadcast gives short spans (simulator/ort_broadcast.py): a call per span.
ORT_FP32_SPAN = "ort_fp32_span="
# A float Reduce* whose kept block after the reduced axes is short (simulator/ort_broadcast.py): a call per block.
ORT_REDUCE_BLOCK = "ort_reduce_block="
REDUCE_SPAN_KEY = "reduce.fp32.span"
# A float Reduce* over short innermost rows (simulator/ort_broadcast.py short_reduce_rows): a call per row, i.e. per
# output element (`reduce.fp32.row`).
ORT_REDUCE_ROWS = "ort_reduce_rows="
REDUCE_ROW_KEY = "reduce.fp32.row"
# Ops the transpose optimizer pushes an NHWC Transpose through unchanged (element-wise, data movement along axes it
# rewrites) on the way up from a reduction to the Conv that wrote NHWC.
_NHWC_THROUGH = frozenset({"Slice", "Concat", "Split", "Add", "Mul", "Sub", "Div", "Relu", "Clip", "Sigmoid",
                           "HardSigmoid", "HardSwish", "LeakyRelu", "Pad", "MaxPool", "AveragePool", "ReorderOutput",
                           "QuickGelu"})


def _kept_reorders(g: Graph) -> set[str]:
    """Ids of the reorders whose plain-layout region (the tasks reached from it without crossing a reorder or an
    NCHWc Conv) holds a reshape: static int8 keeps a uint8 Transpose there."""
    producer = {o: nd for nd in g.nodes for o in nd.outputs if o}
    consumers: dict[str, list[Node]] = {}
    for nd in g.nodes:
        for i in nd.inputs:
            if i:
                consumers.setdefault(i, []).append(nd)
    def nchwc(m: Node) -> bool:
        return m.op_type in _REORDERS or m.domain == "com.microsoft.nchwc"

    def near(m: Node) -> list[Node]:
        return [producer[i] for i in m.inputs if i in producer] + [c for o in m.outputs for c in consumers.get(o, [])]

    kept: set[str] = set()
    for start in g.nodes:
        if start.op_type not in _REORDERS:
            continue
        # Only its plain-layout side: a ReorderInput's producer, a ReorderOutput's consumers.
        todo = [producer[start.inputs[0]]] if start.op_type == "ReorderInput" and start.inputs and \
            start.inputs[0] in producer else [c for o in start.outputs for c in consumers.get(o, [])] \
            if start.op_type == "ReorderOutput" else []
        todo = [m for m in todo if not nchwc(m)]
        seen = {start.id, *(m.id for m in todo)}
        while todo:
            m = todo.pop()
            if m.op_type in _RESHAPES:
                kept.add(start.id)
                break
            for n in near(m):
                if n.id not in seen and not nchwc(n):
                    seen.add(n.id)
                    todo.append(n)
    return kept


def _depthwise_channels(nd: Node, g: Graph) -> int | None:
    """Channels of a depthwise Conv as its model has them (its kernel's rows), else None."""
    if kind_of(nd, g) not in ("dwconv", "dwconvnchw"):
        return None
    w = kernel_value(nd, g)
    rows = w.shape[0] if w is not None and w.shape else None
    return rows if isinstance(rows, int) else None


def _off_symmetric_conv(nd: Node, g: Graph) -> str | None:
    """The fact of a (non-depthwise) Conv that static int8 runs as im2col + GEMM off MLAS's symmetric kernel:
    ORT_INT8_QGEMM for a grouped one, ORT_INT8_QGEMM_DENSE for a dense one (a stem); None where it takes the kernel."""
    w = kernel_value(nd, g)
    if w is None or not w.shape or len(w.shape) < 3 or not all(isinstance(d, int) for d in w.shape[:2]):
        return None
    group = int(nd.attributes.get("group", 1) or 1)
    c_out, c_in = w.shape[0], w.shape[1] * group
    if group > 1:
        return ORT_INT8_QGEMM
    off = c_in % _SYM_IN_ALIGN != 0 or c_out % _SYM_OUT_ALIGN != 0 or c_out < _SYM_OUT_MIN
    return ORT_INT8_QGEMM_DENSE if off else None


def _image_stem(nd: Node, g: Graph) -> bool:
    """A dense Conv of fewer than 4 input channels (ORT_INT8DYN_STEM)."""
    w = kernel_value(nd, g)
    if w is None or not w.shape or len(w.shape) < 3 or not isinstance(w.shape[1], int):
        return False
    return int(nd.attributes.get("group", 1) or 1) == 1 and w.shape[1] < _SYM_IN_ALIGN


def _input_convs(g: Graph) -> set[str]:
    """Ids of the first Conv task reading each image input (4-D, fewer than 4 channels: the inputs the Transposes
    were measured on) (ORT_INT8_INPUT_NHWC)."""
    out: set[str] = set()
    for name in g.inputs:
        v = g.values.get(name)
        if v is None or not v.is_static or not v.shape or len(v.shape) != 4 or int(v.shape[1]) >= _SYM_IN_ALIGN:
            continue
        first = next((nd for nd in g.nodes if name in nd.inputs and nd.op_type in ("Conv", "FusedConv")
                      and kind_of(nd, g) in _CONV_KINDS), None)
        if first is not None:
            out.add(first.id)
    return out


def _walked_shuffles(g: Graph) -> set[str]:
    """Ids of the Transposes (rank 4 or more) read through a Reshape from an op whose every input leaves a Conv, NCHWc
    (through a ReorderOutput) or plain (ShuffleNet's 58-channel branch), the op itself plain or NCHWc (then read
    through a ReorderOutput): every QLinearConv writes NHWC (ORT_INT8_WALK)."""
    producer = {o: nd for nd in g.nodes for o in nd.outputs if o}
    out = set()
    for nd in g.nodes:
        if nd.op_type != "Transpose" or len(nd.attributes.get("perm") or ()) < 4 or not nd.inputs:
            continue
        r = producer.get(nd.inputs[0])
        src = producer.get(r.inputs[0]) if r is not None and r.op_type == "Reshape" and r.inputs else None
        if src is not None and src.op_type == "ReorderOutput" and src.inputs:
            # Channels that fill NCHWc blocks (8 wide on AVX2, 16 on AVX-512): the fp32 graph joins the branches in
            # NCHWc and reorders after; the int8 file has the same Concat of QLinearConv outputs either way.
            src = producer.get(src.inputs[0])
        ins = [producer.get(i) for i in src.inputs if i] if src is not None else []
        if ins and all(m is not None and m.op_type in ("ReorderOutput", "Conv", "FusedConv") for m in ins):
            out.add(nd.id)
    return out


def _norm_convs(g: Graph, source: Graph | None) -> set[str]:
    """Ids of the compiled Convs ORT made of BatchNormalizations alone (its NCHWc transformer's): an fp32
    BatchNormalization in NCHW in the int8 file (ORT_INT8_NHWC_REDUCE)."""
    if source is None:
        return set()
    ops = {nd.id: nd.op_type for nd in source.nodes}
    return {nd.id for nd in g.nodes if nd.op_type in ("Conv", "FusedConv") and nd.source_nodes
            and all(ops.get(s) == "BatchNormalization" for s in nd.source_nodes)}


def _nhwc_reduces(g: Graph, norms: set[str]) -> dict[str, int]:
    """{id: H x W} of the rank-4 reductions over axes [2, 3] whose input leaves a Conv (not one of `norms`) through
    ops the transpose optimizer pushes NHWC through (ORT_INT8_NHWC_REDUCE)."""
    producer = {o: nd for nd in g.nodes for o in nd.outputs if o}
    out: dict[str, int] = {}
    for nd in g.nodes:
        if kind_of(nd, g) != "reduce" or not nd.inputs or nd.op_type in ("TopK", "CumSum", "ArgMax", "ArgMin"):
            continue
        x = g.values.get(nd.inputs[0])
        if x is None or not x.is_static or len(x.shape or ()) != 4 or int(x.shape[1]) <= 1:  # type: ignore[index]
            continue
        if reduce_axes(nd, 4, g) != [2, 3]:
            continue
        m, seen = producer.get(nd.inputs[0]), set()
        while m is not None and m.id not in seen and m.op_type in _NHWC_THROUGH and m.inputs:
            seen.add(m.id)
            m = producer.get(m.inputs[0])
        if m is not None and m.id not in norms and (m.op_type in ("Conv", "FusedConv")
                                                    or m.domain == "com.microsoft.nchwc"):
            out[nd.id] = int(x.shape[2]) * int(x.shape[3])  # type: ignore[index]
    return out


def _leaves_conv(g: Graph, value: str, producer: dict[str, Node], norms: set[str]) -> bool:
    """Whether `value` comes from a Conv (not one of `norms`, _norm_convs) through ops the transpose optimizer pushes
    NHWC through (NHWC in the int8 file)."""
    m, seen = producer.get(value), set()
    while m is not None and m.id not in seen and m.op_type in _NHWC_THROUGH and m.inputs:
        seen.add(m.id)
        m = producer.get(m.inputs[0])
    return m is not None and m.id not in norms and (m.op_type in ("Conv", "FusedConv")
                                                    or m.domain == "com.microsoft.nchwc")


def _spans(nd: Node, g: Graph, producer: dict[str, Node], norms: set[str]) -> int | None:
    """The length of the operand a Mul / Add broadcasts along the int8 file's innermost axis (ORT_INT8_SPAN), else
    None."""
    if nd.op_type not in ("Mul", "Add") or len(nd.inputs) != 2:
        return None
    vals = [g.values.get(i) for i in nd.inputs]
    if any(v is None or not v.is_static or not v.shape for v in vals):
        return None
    shapes = [[int(d) for d in v.shape] for v in vals]  # type: ignore[union-attr]
    big, small = (0, 1) if math.prod(shapes[0]) >= math.prod(shapes[1]) else (1, 0)
    varying = [a for a, d in enumerate(shapes[small]) if d > 1]
    if len(varying) != 1 or math.prod(shapes[small]) <= 1 or math.prod(shapes[small]) >= math.prod(shapes[big]):
        return None
    axis, rank = varying[0], len(shapes[small])
    channel_gate = rank == 4 == len(shapes[big]) and axis == 1 and _leaves_conv(g, nd.inputs[big], producer, norms)
    return shapes[small][axis] if axis == rank - 1 or channel_gate else None


def _one_row(nd: Node, g: Graph) -> bool:
    """A Gemm / MatMul by a constant whose activation has one row (ORT_INT8_ONE_ROW)."""
    if kind_of(nd, g) != "gemm" or not nd.inputs:
        return False
    x = g.values.get(nd.inputs[0])
    if x is None or not x.is_static or not x.shape or len(x.shape) < 2:
        return False
    rows = [int(d) for d in x.shape[:-1]]  # type: ignore[union-attr]
    trans = nd.op_type in ("Gemm", "FusedGemm") and int(nd.attributes.get("transA", 0) or 0)
    return math.prod(rows) == 1 if not trans else int(x.shape[-1]) == 1  # type: ignore[index]


def _unit_innermost(nd: Node, g: Graph) -> bool:
    """A Conv whose output has rank 3 or more, more than one element and an innermost axis of 1
    (ORT_INT8DYN_UNIT_SPAN)."""
    v = g.values.get(nd.outputs[0]) if nd.op_type in ("Conv", "FusedConv") and nd.outputs else None
    if v is None or not v.is_static or not v.shape or len(v.shape) < 3:
        return False
    dims = [int(d) for d in v.shape]  # type: ignore[union-attr]
    return dims[-1] == 1 and math.prod(dims) > 1


def ort_task_facts(compiled: Graph, source: Graph | None = None) -> list[frozenset[str]]:
    """Per compiled task: the activation ORT fused into it that int8 activations cannot fold (`_ACT_PASSES`), and
    whether it is a depthwise Conv that static int8 runs on MLAS's generic depthwise kernel (ORT_INT8_DW_GENERIC).
    The channel count is read on `source` (the compiled graph's NCHWc depthwise Convs hold their kernel padded to 16
    channels: MobileNetV3's 72 become 80); without it, on the compiled graph, where only the Convs ORT left in NCHW
    (channels not a multiple of 4) keep their own count."""
    src = {nd.id: nd for nd in source.nodes} if source is not None else {}
    kept = _kept_reorders(compiled)
    walks = _walked_shuffles(compiled)
    norms = _norm_convs(compiled, source)
    reduces = _nhwc_reduces(compiled, norms)
    producer = {o: nd for nd in compiled.nodes for o in nd.outputs if o}
    stems = _input_convs(compiled)
    out = []
    for nd in compiled.nodes:
        facts = {ORT_INT8_INPUT_NHWC} if nd.id in stems else set()
        if nd.op_type in ("Conv", "FusedConv") and len(nd.inputs) > 3 and nd.inputs[3]:
            facts.add(ORT_INT8_SUM)
        if nd.id in reduces:
            facts.add(f"{ORT_INT8_NHWC_REDUCE}{reduces[nd.id]}")
        if _one_row(nd, compiled):
            facts.add(ORT_INT8_ONE_ROW)
        if _unit_innermost(nd, compiled):
            facts.add(ORT_INT8DYN_UNIT_SPAN)
        if (span := _spans(nd, compiled, producer, norms)) is not None:
            facts.add(f"{ORT_INT8_SPAN}{span}")
        if (fspan := short_span(nd, compiled)) is not None:
            facts.add(f"{ORT_FP32_SPAN}{fspan}")
        if (block := short_reduce_block(nd, compiled)) is not None:
            facts.add(f"{ORT_REDUCE_BLOCK}{block}")
        if (row := short_reduce_rows(nd, compiled)) is not None:
            facts.add(f"{ORT_REDUCE_ROWS}{row}")
        act = nd.text("activation")
        if act in _ACT_PASSES:
            facts.add(ORT_INT8_UNFOLDED + act)
        kind = kind_of(nd, compiled)
        if nd.op_type in NATIVE_INT8DYN_OPS:
            facts.add(ORT_INT8DYN_NATIVE)
        if nd.op_type in COPY_OPS and (run := copy_run(nd, compiled, all(_leaves_conv(
                compiled, i, producer, norms) for i in nd.inputs[:None if nd.op_type == "Concat" else 1] if i))):
            facts.add(f"{ORT_INT8_ROWS}{run:g}")
        if nd.op_type == "Concat":
            facts.add(f"{ORT_INT8_CONCAT}{sum(1 for i in nd.inputs if i)}")
        elif nd.id in kept:
            facts.add(ORT_INT8_REORDER)
        elif nd.id in walks:
            facts.add(ORT_INT8_WALK)
        origin = [src[s] for s in nd.source_nodes if s in src and src[s].op_type == "Conv"]
        if kind in ("dwconv", "dwconvnchw"):
            ch = _depthwise_channels(origin[0], source) if origin and source is not None else None
            if ch is None and kind == "dwconvnchw":
                ch = _depthwise_channels(nd, compiled)
            if ch is not None and ch % SYM_DEPTHWISE_ALIGN:
                facts.add(ORT_INT8_DW_GENERIC)
        elif kind in ("conv", "convsmall", "convnchw", "conv3d", "gconvnchw") and nd.op_type in ("Conv", "FusedConv"):
            # The source's Conv where known (the compiled NCHWc one holds its kernel padded), else the compiled one.
            conv, g = (origin[0], source) if origin and source is not None else (nd, compiled)
            off = _off_symmetric_conv(conv, g)
            if one_pixel_conv(conv, g):
                facts.add(ORT_INT8_ONE_PIXEL)
            elif off is not None:
                facts.add(off)
            elif pointwise_conv(conv, g):
                facts.add(ORT_INT8_POINTWISE)
            if _image_stem(conv, g):
                facts.add(ORT_INT8DYN_STEM)
        out.append(frozenset(facts))
    return out


def ort_span_path(p: Path, facts: frozenset[str]) -> Path:
    """`p` with a cost per kernel call where its task is a float op over short broadcast spans or short reduce blocks
    (ORT_FP32_SPAN, ORT_REDUCE_BLOCK) or short innermost rows (ORT_REDUCE_ROWS), under every float option (fp16 too: ORT runs these in fp32); else `p`."""
    short = [(f[:f.index("=") + 1], int(f[f.index("=") + 1:])) for f in facts
             if f.startswith((ORT_FP32_SPAN, ORT_REDUCE_BLOCK, ORT_REDUCE_ROWS))]
    if not short or p.eliminated:
        return p
    fact, n = short[0]
    if fact == ORT_REDUCE_ROWS:  # one call per row: per output element
        if p.tag.startswith("int8"):
            return p
        return dataclasses.replace(p, span_elements=1.0, span_key=REDUCE_ROW_KEY, note="; ".join(
            [*([p.note] if p.note else []), f"reduces rows of {n}: one kernel call each"]))
    if p.tag == "int8" and fact == ORT_FP32_SPAN and p.resolved.input == "int8":  # QLinearMul / QLinearAdd: the
        return dataclasses.replace(p, span_elements=float(n), note="; ".join(  # int8 kernel's own cost per call
            [*([p.note] if p.note else []), f"broadcast in spans of {n}: one kernel call each"]))
    if p.tag.startswith("int8"):
        return p
    what = "broadcast in spans" if fact == ORT_FP32_SPAN else "reduces blocks"
    return dataclasses.replace(p, span_elements=float(n), note="; ".join([*([p.note] if p.note else []),
                               f"{what} of {n}: one kernel call each"]),
                               span_key=UNIT_SPAN_KEY if fact == ORT_FP32_SPAN else REDUCE_SPAN_KEY)


def ort_fact_path(p: Path, combo: Combo, facts: frozenset[str]) -> Path:
    """`p` under its task's facts where the task runs int8 activations (static int8): an unfolded activation's
    kernels; a depthwise Conv on the generic kernel at its own figures (`dwconv.int8gen`, fitted by calibration on
    depthwise chains of such channel counts)."""
    hw = [int(f[len(ORT_INT8_NHWC_REDUCE):]) for f in facts if f.startswith(ORT_INT8_NHWC_REDUCE)]
    if hw and "int8" in (combo.input, combo.output) and not p.eliminated:  # before the fp32 file's short rows
        return dataclasses.replace(p, span_elements=1.0 / hw[0], span_key=NHWC_REDUCE_KEY, fp32_equivalent=False,
                                   note="; ".join([*([p.note] if p.note else []), "reduces H and W of NHWC data (the "
                                                   "int8 graph's layout): strided reads"]))
    if p is not (q := ort_span_path(p, facts)):
        return q
    if ORT_INT8_REORDER in facts and p.eliminated and p.resolved.output == "int8":
        return dataclasses.replace(p, eliminated=False, note="; ".join(
            [*([p.note] if p.note else []), "a uint8 Transpose where the fp32 graph reorders to NCHWc (ORT's NHWC "
             "layout pass)"]))
    if ORT_INT8DYN_STEM in facts and p.tag == "int8dyn" and not p.eliminated:
        p = dataclasses.replace(p, rate_kind=STEM_RATE_KIND, note="; ".join(
            [*([p.note] if p.note else []), "an image stem: ConvInteger's GEMM reduces over 3 x kh x kw (own rate)"]))
    if ORT_INT8DYN_UNIT_SPAN in facts and p.tag == "int8dyn" and not p.eliminated:
        return dataclasses.replace(p, span_elements=1.0, span_key=UNIT_SPAN_KEY, note="; ".join(
            [*([p.note] if p.note else []), "output's innermost axis is 1: the scale Mul's kernel is called once per "
             "element"]))
    if p.resolved.output != "int8" or p.eliminated:
        return p
    if ORT_INT8_INPUT_NHWC in facts and p.resolved.input == "int8":
        p = dataclasses.replace(p, nhwc_input=True, extra_dispatches=p.extra_dispatches + 1, note="; ".join(
            [*([p.note] if p.note else []), "the graph input transposed to NHWC in uint8 ahead of it"]))
    if ORT_INT8_WALK in facts and p.tag == "int8":
        return dataclasses.replace(p, rate_kind="walk", compute="fp32", tag="fp32", note="; ".join(
            [*([p.note] if p.note else []), "merged with the NHWC pass's Transposes: walked element by element"]))
    if ORT_INT8_SUM in facts and p.tag in ("int8", INT8_GENERIC_TAG):
        p = dataclasses.replace(p, extra_out_bytes=p.extra_out_bytes + 2.0, extra_ops_per_out=p.extra_ops_per_out + 3.0,
                                extra_dispatches=p.extra_dispatches + 1, extra_ops_format="int8", note="; ".join(
                                    [*([p.note] if p.note else []), "residual Add not fused into QLinearConv: a "
                                     "QLinearAdd of its own"]))
    spans = [int(f[len(ORT_INT8_SPAN):]) for f in facts if f.startswith(ORT_INT8_SPAN)]
    if spans and p.tag == "int8" and "int8" == p.resolved.input:
        p = dataclasses.replace(p, span_elements=float(spans[0]), note="; ".join(
            [*([p.note] if p.note else []), f"broadcasts a {spans[0]}-element operand along NHWC's innermost axis: "
             "one kernel call per span"]))
    if ORT_INT8_ONE_ROW in facts and p.tag == "int8":
        p = dataclasses.replace(p, tag=ONE_ROW_TAG, note="; ".join(
            [*([p.note] if p.note else []), "one activation row: QGEMM's one-row rate"]))
    p = dense_shape_path(p, facts)  # a one-pixel map's or a 1x1 unit-stride conv's own figures
    cats = [int(f[len(ORT_INT8_CONCAT):]) for f in facts if f.startswith(ORT_INT8_CONCAT)]
    if cats and cats[0] > 1 and p.tag == "int8":
        p = dataclasses.replace(p, span_elements=cats[0] / (cats[0] - 1), span_key=CONCAT_LOOKUP_KEY, note="; ".join(
            [*([p.note] if p.note else []), f"QLinearConcat: {cats[0] - 1} of its {cats[0]} inputs requantized through "
             "a table, per element (one has the output's quantization: copied)"]))
    p = rows_path(p, facts)  # a QLinearConcat's or Split's call per row (NHWC: per pixel and part)
    if ORT_INT8_DW_GENERIC in facts and p.tag == "int8":
        p = dataclasses.replace(p, tag=INT8_GENERIC_TAG, lanes=True, note="; ".join(
            [*([p.note] if p.note else []), f"depthwise channels not a multiple of {SYM_DEPTHWISE_ALIGN}: MLAS's "
             "generic u8 depthwise kernel into int32, requantized after (not the symmetric kernel): blocks of 16 lanes "
             "and scalar channels"]))
    if facts & {ORT_INT8_QGEMM, ORT_INT8_QGEMM_DENSE} and p.tag == "int8":
        stem = ORT_INT8_QGEMM_DENSE in facts and ORT_INT8DYN_STEM in facts  # dense of < 4 inputs: stems' figures
        p = dataclasses.replace(p, rate_kind=STEM_RATE_KIND if stem else QGEMM_RATE_KIND, qgemm=True,
                                setup_per_channel=False, setup_per_pixel=False, im2col=False,
                                out_cost=True, note="; ".join(
                                    [*([p.note] if p.note else []), "not MLAS's symmetric conv kernel ("
                                     + ("a stem" if stem else "grouped or channels off its alignment")
                                     + "): NHWC im2col + a GEMM per group into int32"]))
    acts = [f[len(ORT_INT8_UNFOLDED):] for f in facts if f.startswith(ORT_INT8_UNFOLDED)]
    if not acts:
        return p
    b, k, ops, f32_ops, own = _ACT_PASSES[acts[0]]
    return dataclasses.replace(p, extra_out_bytes=p.extra_out_bytes + b, extra_dispatches=p.extra_dispatches + k,
                               extra_ops_per_out=p.extra_ops_per_out + ops, extra_act_flops_per_out=own,
                               extra_act_op="HardSigmoid" if own else "",
                               extra_fp32_ops_per_out=p.extra_fp32_ops_per_out + f32_ops, note="; ".join(
                                   [*([p.note] if p.note else []), f"{acts[0]} not folded into the int8 output: "
                                    f"{k} kernels of its own behind the int8 kernel"]))
