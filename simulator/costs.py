"""Work of one compiled task from shapes: MACs, other FLOPs, elements in/out, weights.

One pure function per op family, one frozen record per task (as tinygrad's `Estimates`).
Costs are counted on the compiled graph (ORT-fused ops, NCHWc ops, com.microsoft ops), as
nn-Meter does: a fused task is one kernel launch, so it is one record.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from compiler.graph import Graph, Node, Value
from simulator.conv_work import (col2im_elements, dilated_tap_share, generic_depthwise_lanes, grouped_im2col,
                                 im2col_rows, nchwc_output_padding, nchwc_padding, qgemm_counts, sgemm_columns,
                                 strided_im2col)
from simulator.einsum import contracts, einsum_macs, inner_moves, packed_b, product_columns
from simulator.index_ops import indexed_elements
from simulator.other_ops import other_flops
from simulator.reductions import STRIDED_REDUCE_FLOPS, strided_reduce
from simulator.resizes import CUBIC_MISS_OPS, cubic_misses, moves_per_element, resize_kind
from simulator.sgemm_alias import aliased_macs
from simulator.softmax_rows import softmax_rows
from simulator.subnormals import subnormals
from simulator.transposes import copy_runs, far_walk, strided_move, walks

# Normalised op kinds. Each kind has its own efficiency factor in the hardware profiles.
KINDS: tuple[str, ...] = ("folded", "conv", "convsmall", "convnchw", "conv3d", "dwconv", "dwconvnchw", "gconvnchw",
                          "gemm", "matmul", "attention", "pool", "poolnchw", "elementwise", "norm", "skipnorm",
                          "softmax", "reduce", "layout", "walk", "resize", "cubic", "nearest", "view", "quant",
                          "other")

# Kinds whose largest constant input is a "kernel" that options quantize, palettize or prune.
WEIGHTED_KINDS = frozenset({"conv", "convsmall", "convnchw", "conv3d", "dwconv", "dwconvnchw", "gconvnchw", "gemm",
                            "attention"})

# A kind without figures of its own uses its parent's (profiles need not list every kind).
PARENT_KIND: dict[str, str] = {"convsmall": "conv", "skipnorm": "norm", "dwconvnchw": "dwconv", "gconvnchw": "conv",
                               "convnchw": "conv", "conv3d": "conv", "poolnchw": "pool", "walk": "layout",
                               "resize": "layout", "nearest": "layout", "cubic": "resize",
                               "deconv": "conv"}  # deconv: ORT's CPU ConvTranspose's own rate (backends)


def base_kind(kind: str) -> str:
    return PARENT_KIND.get(kind, kind)

_CONV = {"Conv", "FusedConv", "QLinearConv", "ConvInteger", "ConvTranspose", "NhwcFusedConv", "NhwcConv",
         "QLinearConvTranspose"}
_GEMM = {"Gemm", "FusedGemm", "QGemm", "MatMulNBits", "DynamicQuantizeMatMul", "MatMulIntegerToFloat",
         "QLinearMatMul", "MatMulInteger", "MatMul", "FusedMatMul", "MatMulFp4", "GemmFastGelu"}
# Recurrent ops: gates per step (each a GEMM over [input, hidden] -> hidden) and FLOPs per hidden unit and step
# of their gate activations and state update (sigmoid 4, tanh 6, element-wise 1; ONNX LSTM / GRU / RNN defaults).
_RNN: dict[str, tuple[int, float]] = {"LSTM": (4, 3 * 4 + 2 * 6 + 5), "GRU": (3, 2 * 4 + 6 + 6), "RNN": (1, 6 + 1),
                                      "DynamicQuantizeLSTM": (4, 3 * 4 + 2 * 6 + 5)}
# ORT's DynamicQuantizeLSTM (quantize_dynamic's LSTM: ddddocr's older recognizer ships one) stores W and R as int8
# [dirs, input or hidden, 4 * hidden], transposed against LSTM's, and runs them with MLAS's int8 GEMMs: each step's
# H x R reads R a byte per element, a quarter of a float R's bytes. Its recurrent reads and MACs are counted in
# float elements (a quarter of R's), which the roofline prices as the float LSTM's.
_INT8_RNN = frozenset({"DynamicQuantizeLSTM"})
_ATTENTION = {"Attention", "MultiHeadAttention", "GroupQueryAttention", "QAttention", "PackedAttention",
              "SparseAttention", "DecoderMaskedMultiHeadAttention"}
_NCHW_POOLS = frozenset({"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "LpPool"})
_POOL = {*_NCHW_POOLS, "QLinearAveragePool", "QLinearGlobalAveragePool", "NhwcMaxPool"}
_NORM = {"LayerNormalization", "SkipLayerNormalization", "SimplifiedLayerNormalization",
         "SkipSimplifiedLayerNormalization", "BatchNormalization", "InstanceNormalization",
         "GroupNormalization", "GroupNorm", "EmbedLayerNormalization", "RMSNormalization", "LpNormalization",
         "LRN", "MeanVarianceNormalization"}
_SKIPNORM = {"SkipLayerNormalization", "SkipSimplifiedLayerNormalization"}
_SOFTMAX = {"Softmax", "LogSoftmax", "QLinearSoftmax"}
_REDUCE = {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2", "ReduceL1",
           "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin", "TopK", "CumSum"}
_LAYOUT = {"ReorderInput", "ReorderOutput", "Transpose", "Concat", "Split", "Slice", "Gather", "GatherND",
           "GatherElements", "Pad", "Tile", "Expand", "DepthToSpace", "SpaceToDepth", "Resize", "Upsample",
           "QLinearConcat", "ScatterND", "ScatterElements", "Trilu", "Range", "OneHot", "Einsum"}
_VIEW = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Shape", "Size", "Constant", "Dropout",
         "ConstantOfShape", "NonZero"}
# Views ORT's CPU kernels register with `.Alias(0, 0)` (microsoft/onnxruntime, onnxruntime/core/providers/cpu/tensor/
# reshape.cc, squeeze.cc, unsqueeze.cc, flatten.cc, identity_op.cc): the output is the input's buffer, nothing is
# copied (simulator.backends: no bytes moved on ort-cpu). PVT-v2-B0's 108 Reshapes, 92 of them priced 0.04-0.08 ms
# as copies of their 0.8-3.2 MB (1.19 ms in all), profiled at 0.004-0.009 ms each on a Zen 4 (2026-12-04).
ALIASED_VIEWS = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"})
_QUANT = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "Cast"}

# FLOPs per output element of elementwise ops (transcendental ones count their polynomial).
_ELEMENTWISE_FLOPS: dict[str, float] = {
    "Add": 1, "Sub": 1, "Mul": 1, "Div": 1, "Relu": 1, "Clip": 2, "Max": 1, "Min": 1, "Neg": 1, "Abs": 1,
    "LeakyRelu": 2, "PRelu": 2, "Sigmoid": 4, "Tanh": 6, "Exp": 4, "Log": 4, "Sqrt": 2, "Pow": 6,
    "Reciprocal": 1, "Erf": 8, "Gelu": 10, "FastGelu": 8, "BiasGelu": 11, "QuickGelu": 6, "HardSwish": 4,
    "HardSigmoid": 3, "ThresholdedRelu": 1, "Softplus": 6, "Elu": 4, "Selu": 4, "Mish": 10, "Swish": 5, "Where": 1, "Equal": 1,
    "Less": 1, "Greater": 1, "Not": 1, "And": 1, "Or": 1, "Floor": 1, "Ceil": 1, "Round": 1, "Sin": 6,
    "Cos": 6, "BiasAdd": 2, "BiasDropout": 2, "QLinearAdd": 3, "QLinearMul": 3, "QLinearSigmoid": 5,
    "QLinearLeakyRelu": 3, "Sum": 1, "Mean": 1, "RotaryEmbedding": 4, "Silu": 5,
}


@dataclass(frozen=True, slots=True)
class Estimate:
    """Countable work; add records of fused parts to get the task's."""

    macs: float = 0.0
    flops: float = 0.0  # non-MAC arithmetic (activation functions, normalisation, pooling)
    bytes_read: float = 0.0
    bytes_written: float = 0.0

    def __add__(self, other: Estimate) -> Estimate:
        return Estimate(self.macs + other.macs, self.flops + other.flops,
                        self.bytes_read + other.bytes_read, self.bytes_written + other.bytes_written)


@dataclass(frozen=True, slots=True)
class Work:
    """What one compiled task does, independent of formats (formats are applied by the sweep)."""

    kind: str
    macs: float
    flops: float
    in_elements: float  # activation elements read (all non-constant inputs)
    out_elements: float  # activation elements written
    kernel_elements: float  # elements of the option-controlled weight (0 = op has none)
    kernel_out_channels: int  # rows that get their own scale (per-channel quantization)
    aux_weight_elements: float  # other float constants (bias, LayerNorm gamma); stored at the float format
    other_const_bytes: float  # non-float constants (shape tensors, int64 indices): never change
    fused_activation: bool  # the task absorbs an activation that a non-fusing path runs separately
    shapes_known: bool
    notes: tuple[str, ...] = field(default=())
    kernel_name: str = ""
    aux_weights: tuple[tuple[str, float], ...] = ()  # (value name, elements) of float constants
    # FLOPs of a fused activation that the kernel applies as a separate pass over its output (MLAS:
    # every activation of FusedConv / FusedGemm, and all but Relu in NCHWc convs). Backends that run
    # such passes cost them at their element-wise rate; others at the task's own rate.
    epilogue_flops: float = 0.0
    # Elements of the im2col buffer a convolution expands its input into, where it is not MACs / output
    # channels (a dense conv's): a grouped conv run group by group expands every group (0 = the default rule).
    im2col_elements: float = 0.0
    groups: int = 1  # a Conv's `group`: the GEMMs MLAS runs one after another for a conv left in NCHW
    # Rows the NCHW im2col copies (per group input channel, kernel tap and output row): a fixed cost each, conv_work
    im2col_rows: float = 0.0
    im2col_strided: float = 0.0  # the im2col buffer's elements where the conv strides along W (conv_work)
    # Calls of a kernel that runs row by row at a fixed cost per call (row_calls), and of a fixed extra step some
    # rows take (row_extra_calls); each kind's calibration fits its own two figures (Rates.row_s / tap_s).
    # A Conv run as one GEMM per group over NHWC pixels (ORT's QLinearConv off its symmetric kernels,
    # simulator.conv_work): the GEMMs' rows (output pixels x groups) and the copies its NHWC im2col makes (per pixel
    # and group, one per kernel tap, or one per kernel row where a group is every input channel; 0 where the input is
    # read in place: 1x1, stride 1). A Softmax (simulator.softmax_rows): its rows and those that start off a cache
    # line (their length is sgemm_columns).
    row_calls: float = 0.0
    row_extra_calls: float = 0.0
    # On a TFLite CONV_2D / FULLY_CONNECTED with a constant kernel: the reduction's length per kernel tap (input
    # channels; 0: none), which XNNPACK's integer GEMMs round up to their K block, as they round the output channels
    # up to their N block (Unit.int8_k_block / int8_n_block, read by Path.padded_sgemm paths).
    gemm_k: float = 0.0
    # A grouped 1x1 Conv in NCHW whose per-group SGEMMs MLAS runs with the columns padded to the machine's block
    # (simulator.conv_work.sgemm_columns): the columns (output pixels; 0 = not such a conv) and the widest block its
    # channels per group fill (a power of two). Read by that path only (Path.padded_sgemm, Unit.sgemm_column_block).
    sgemm_columns: float = 0.0
    sgemm_align: float = 0.0
    # Of in_elements, the reads of a working set of `reread_set` elements again and again (an RNN's recurrent weights
    # at every step, _rnn_recurrent_reads): from the core's cache where that set fits in it
    reread_elements: float = 0.0
    reread_set: float = 0.0
    # On a TFLite CONV_2D that XNNPACK runs as an indirect GEMM (any conv but 1x1 stride 1): output elements x kernel
    # taps, the (pixel, tap) pointers its micro-kernel walks per output column block (simulator.tflite_ops; 0: none).
    # Read by the paths that pay a cost per tap (Path.tap_cost).
    igemm_taps: float = 0.0
    # Runs of contiguous elements a Transpose copies one memcpy each (simulator.transposes.copy_runs; 0: none)
    copy_runs: float = 0.0
    # elements of a walk whose input lines leave the cache between reads (transposes.far_walk), or of a blocked
    # Transpose / NCHWc reorder that reads or writes across lines (transposes.strided_move): `.far` per byte beyond L2
    far_walk: float = 0.0
    # output elements of an XNNPACK Transpose whose tiles write rows a page or more apart (tflite_ops.transpose_tiles):
    # `.farmem` per byte beyond what the last-level cache keeps (simulator.litert_layout)
    page_walk: float = 0.0
    indexed: float = 0.0  # elements an index op looks up one at a time (simulator.index_ops; 0: none)
    # The constant table the task looks rows up in is the weight an option quantizes (a TFLite EMBEDDING_LOOKUP:
    # ai-edge-quantizer's recipes list the op): `kernel_name` names it and `kernel_out_channels` counts its rows, but
    # `kernel_elements` stays 0, since the lookup reads only the rows it picks (its `aux_weight_elements`).
    lookup_table: bool = False
    # Of a Conv ORT blocked (NCHWc, its filter padded to whole blocks): the shares of its MACs and of its im2col work
    # that the model's own Conv has, which the paths running that Conv outside NCHWc pay (conv_work.nchwc_padding)
    plain_macs: float = 1.0
    plain_im2col: float = 1.0
    dilated_taps: float = 1.0  # a dilated NCHWc Conv's share of its taps MLAS runs (conv_work.dilated_tap_share)
    # Output elements a Gemm first fills with its broadcast bias C, which the GEMM then reads back and accumulates
    # into (beta 1): ORT's CPU Gemm / FusedGemm (GemmBroadcastBias, then MLAS SGEMM), one more pass over the output
    # that paths of such backends pay in bytes (roofline.Rates.bias_b; 0: no C)
    bias_pass: float = 0.0
    col2im_elements: float = 0.0  # a ConvTranspose's columns ORT's col2im scatters (conv_work.col2im_elements)
    # Of a depthwise Conv, as MLAS's generic u8 depthwise kernel runs it (conv_work.generic_depthwise_lanes): the share
    # of its MACs in whole 16-lane blocks and the taps of the channels it runs one at a time (Path.lanes)
    lane_macs: float = 1.0
    scalar_taps: float = 0.0
    subnormals: float = 0.0  # subnormals a Softmax writes or MACs a MatMul makes with them (simulator.subnormals)
    # The Transposes ORT's Softmax runs inside its kernel over an inner axis: elements they walk element by element and
    # move blocked, and how many are walks far from the cache (transposes.inner_axis_transposes; roofline prices them
    # at the walk's and layout's rates); an Einsum's Transposes and copies the same way, and the runs they copy one
    # memcpy each (simulator.einsum.ort_steps)
    inner_walked: float = 0.0
    inner_moved: float = 0.0
    inner_far: float = 0.0
    inner_runs: float = 0.0
    packed_b: float = 0.0  # elements of a non-constant B MLAS's SGEMM packs each run (simulator.einsum.packed_b)
    packed_calls: float = 0.0  # ... and the SGEMM calls that pack them (one per batch)
    aliased_macs: float = 0.0  # MACs of an fp32 SGEMM whose rows of A share one L1 set (simulator.sgemm_alias)

    def estimate(self, act_bytes: float = 4.0, weight_bytes: float = 4.0) -> Estimate:
        return Estimate(self.macs, self.flops,
                        self.in_elements * act_bytes + (self.kernel_elements + self.aux_weight_elements)
                        * weight_bytes + self.other_const_bytes,
                        self.out_elements * act_bytes)


def kind_of(node: Node, graph: Graph) -> str:
    op = node.op_type
    if op in _CONV:
        # A Conv ORT did not convert to NCHWc stays a plain ONNX Conv, or a FusedConv where it absorbed an activation,
        # which MLAS runs group by group: im2col + a GEMM per group, several times the NCHWc kernel's time. ORT (x86,
        # 1.32) converts a grouped Conv only when its channels per group fill whole NCHWc blocks (16 with AVX-512) and
        # a depthwise one when its channels are a multiple of 4: ShuffleNet v2's 58-channel depthwise convs, RegNet's
        # group width 8, ResNeXt's 4 and RegNetY-1.6GF's 24 stay NCHW (probed with single-op models on this host).
        nchw = (op == "Conv" and node.domain in ("", "ai.onnx")) or (op == "FusedConv" and node.domain == "com.microsoft")
        if _is_depthwise(node, graph):
            return "dwconvnchw" if nchw else "dwconv"
        if nchw and int(node.attributes.get("group", 1) or 1) > 1:
            return "gconvnchw"
        w = kernel_value(node, graph)
        # Fewer input channels per group than one 16-wide NCHWc block: a different (slower) kernel on ORT.
        small = w is not None and w.shape is not None and len(w.shape) > 1 and isinstance(w.shape[1], int) \
            and w.shape[1] < 16
        # ORT's NCHWc transformer takes 2-D convs only (4-D weights): a 3-D Conv (5-D weights; r3d_18's 3-channel
        # stem too) runs MLAS's NCHW Conv whatever its channels, whose vol2col copies element by element where 2-D
        # im2col copies rows: `conv3d`, figures of its own (calibration cases conv3d-*; the conv's elsewhere).
        if nchw and w is not None and w.shape is not None and len(w.shape) > 4:
            return "conv3d"
        if nchw and not small:
            # A dense Conv left in NCHW (channels ORT did not block: 27, 38, 61, 117 in ReXNet; 1-D convs): MLAS's plain
            # Conv, one SGEMM on the input for a 1x1 unit-stride kernel, im2col + SGEMM otherwise (MlasConv,
            # onnxruntime/core/mlas/lib/convolve.cpp), the path of the grouped ones with one group. Single-op chains
            # on a Zen 4 (CPU time): 1.17-1.36x the NCHWc rate's prediction at 1x1 (27-117 channels), 1.84x at 3x3.
            return "convnchw"
        return "convsmall" if small else "conv"
    if op in _GEMM:
        return "gemm" if kernel_value(node, graph) is not None else "matmul"
    if op == "Einsum" and contracts(node):
        return "matmul"  # simulator/einsum.py
    if op in _RNN:
        return "matmul"  # a GEMM per gate and step (MLAS SGEMM on ORT's CPU), its weights options leave alone
    if op in _ATTENTION:
        return "attention"
    if op in _POOL:
        # A pool ORT left in NCHW (plain domain) runs its own kernel: GlobalAveragePools 0.19-0.37 ns per element, NCHWc
        # ones 0.06-0.15 (RegNetY-400MF, SqueezeNet; EfficientNet-B0; a Zen 4's ORT profiles, 2026-12-04).
        return "poolnchw" if node.domain in ("", "ai.onnx") and op in _NCHW_POOLS else "pool"
    if op in _SKIPNORM:
        # Residual add + LayerNorm fused by ORT: a different kernel (scalar, double accumulation on x86)
        # from LayerNormalization's, ~10x slower per element on this host (calibration case skipnorm-*).
        return "skipnorm"
    if op in _NORM:
        return "norm"
    if op in _SOFTMAX:
        return "softmax"
    if op in _REDUCE:
        return "reduce"
    if op == "Transpose" and walks(node) or op == "DepthToSpace" and int(node.attributes.get("blocksize", 1)) > 1:
        return "walk"  # DepthToSpace: resizes.DEPTH_TO_SPACE_WALK
    if op in ("Resize", "Upsample"):
        return resize_kind(node, graph) or "layout"
    if op in _LAYOUT:
        return "layout"
    if op in _VIEW:
        return "view"
    if op in _QUANT:
        return "quant"
    if op in _ELEMENTWISE_FLOPS:
        return "elementwise"
    return "other"


_GATHERS = frozenset({"Gather", "GatherElements", "GatherND"})


def _gathered_table_reads(node: Node, graph: Graph, aux: float, other_const: float, out_elements: float
                          ) -> tuple[float, float]:
    """(float, other) constant reads of a Gather from a constant table: the rows it picks (at most its output); a
    BERT word embedding (31 MB) at 128 ids reads 131 kB. The file still holds the table (`Work.aux_weights`)."""
    v = graph.values.get(node.inputs[0]) if node.inputs and node.inputs[0] else None
    if v is None or v.weight is None or not v.weight.elements:
        return aux, other_const
    n = float(v.weight.elements)
    read = min(n, out_elements)
    if v.dtype in ("float32", "float16", "bfloat16", "float64"):
        return aux - n + read, other_const
    return aux, other_const - v.weight.bytes * (1.0 - read / n)


def _elements(v: Value | None) -> float | None:
    if v is None or not v.is_static:
        return None
    return float(math.prod(v.shape))  # type: ignore[arg-type]


def _is_depthwise(node: Node, graph: Graph) -> bool:
    group = int(node.attributes.get("group", 1))
    if group <= 1:
        return False
    w = kernel_value(node, graph)
    # Depthwise: one input channel per group (W is [C_out, 1, kh, kw]).
    return w is not None and w.shape is not None and len(w.shape) >= 2 and w.shape[1] == 1


def kernel_value(node: Node, graph: Graph) -> Value | None:
    """The weight an option acts on: the constant data input of a Conv / Gemm / MatMul family op."""
    op = node.op_type
    if op in ("QLinearConv", "QLinearMatMul"):
        idx = [3]
    elif op == "QGemm":
        idx = [3]
    elif op in _CONV or op in ("Gemm", "FusedGemm", "MatMulNBits", "MatMulInteger", "DynamicQuantizeMatMul",
                               "MatMulIntegerToFloat", "MatMul", "FusedMatMul", "GemmFastGelu"):
        idx = [1]
    elif op in _ATTENTION:
        idx = [1]
    else:
        return None
    for i in idx:
        if i < len(node.inputs) and node.inputs[i]:
            v = graph.values.get(node.inputs[i])
            if v is not None and v.weight is not None and (v.shape is None or len(v.shape) >= 2):
                return v
    return None


def work_of(node: Node, graph: Graph) -> Work:
    kind = kind_of(node, graph)
    kernel = kernel_value(node, graph)
    act_in: list[Value] = []
    aux = 0.0
    aux_names: list[tuple[str, float]] = []
    other_const = 0.0
    for name in node.inputs:
        if not name:
            continue
        v = graph.values.get(name)
        if v is None:
            continue
        if v.weight is not None:
            if v is kernel:
                continue
            if v.dtype in ("float32", "float16", "bfloat16", "float64"):
                aux += v.weight.elements
                aux_names.append((name, float(v.weight.elements)))
            else:
                other_const += v.weight.bytes
        else:
            act_in.append(v)
    outs = [graph.values.get(o) for o in node.outputs if o]
    in_el = [_elements(v) for v in act_in]
    out_el = [_elements(v) for v in outs]
    if node.op_type == "ZipMap" and in_el:  # a sequence of maps, no tensor: one entry per input element
        out_el = in_el[:1]
    known = all(e is not None for e in in_el + out_el) and (kernel is None or kernel.weight is not None)
    in_elements = sum(e for e in in_el if e is not None)
    out_elements = sum(e for e in out_el if e is not None)
    notes: list[str] = []
    if not known:
        notes.append("some shapes unknown: costs count only the tensors with static shapes")
    if node.op_type in _GATHERS and out_elements:
        aux, other_const = _gathered_table_reads(node, graph, aux, other_const, out_elements)
    k_elems = float(kernel.weight.elements) if kernel is not None and kernel.weight else 0.0
    k_rows = int(kernel.shape[0]) if kernel is not None and kernel.shape and isinstance(kernel.shape[0], int) else 1
    reread = reread_set = 0.0
    macs, flops = (_rnn_arithmetic(node, graph) if node.op_type in _RNN
                   else _arithmetic(node, kind, kernel, act_in, outs, in_elements, out_elements, graph))
    if node.op_type in _RNN:
        reread, reread_set = _rnn_recurrent_reads(node, graph)
        in_elements += reread
    fused = _fused_activation(node)
    out0 = _elements(outs[0]) if outs else None
    epilogue = _epilogue_flops(node, out0 or 0.0) if kind in WEIGHTED_KINDS or kind == "matmul" else 0.0
    k_name = kernel.name if kernel is not None else ""
    rows = softmax_rows(node, graph) if kind == "softmax" else {}  # rows, their length and its alignment
    if kind not in WEIGHTED_KINDS:
        # Constant operands of other ops (e.g. Add of a bias tensor) stay float; they count as aux.
        k_elems, k_rows, k_name = 0.0, 1, ""
    plain = (nchwc_padding(node, kernel, act_in[0] if act_in else None, outs[0] if outs else None)
             if node.op_type in _CONV else (1.0, 1.0))
    return Work(kind=kind, macs=macs, flops=flops, in_elements=in_elements, out_elements=out_elements,
                kernel_elements=k_elems, kernel_out_channels=k_rows, aux_weight_elements=aux,
                other_const_bytes=other_const, fused_activation=fused, shapes_known=known, notes=tuple(notes),
                kernel_name=k_name, aux_weights=tuple(aux_names), epilogue_flops=epilogue,
                im2col_elements=grouped_im2col(node, kind, macs, k_rows),
                groups=int(node.attributes.get("group", 1) or 1) if node.op_type in _CONV else 1,
                im2col_rows=im2col_rows(node, kind, macs, k_rows, outs[0] if outs else None),
                im2col_strided=strided_im2col(node, kind, macs, k_rows), reread_elements=reread, reread_set=reread_set,
                copy_runs=copy_runs(node, graph) if kind == "layout" else 0.0,
                far_walk=far_walk(node, graph) if kind == "walk" else strided_move(node, graph) if kind == "layout" else 0.0,
                indexed=indexed_elements(node, graph), bias_pass=(out0 or 0.0) if op_has_bias(node) else 0.0,
                col2im_elements=col2im_elements(node, macs, k_rows),
                subnormals=subnormals(node, graph, kind, macs, out_elements),
                **inner_moves(node, graph), **dict(zip(("packed_b", "packed_calls"), packed_b(node, graph, kind))),
                aliased_macs=aliased_macs(node, graph, kind, macs),
                dilated_taps=dilated_tap_share(node, kernel, act_in[0] if act_in else None, outs[0] if outs else None),
                **dict(zip(("plain_macs", "plain_im2col"), plain)),
                **(generic_depthwise_lanes(node, kernel, out0 or 0.0, plain[0]) if node.op_type in _CONV else {}),
                **dict(zip(("sgemm_columns", "sgemm_align"),
                           sgemm_columns(node, kind, kernel, outs[0] if outs else None) if node.op_type in _CONV
                           else product_columns(node, graph, kind)), **rows),
                **(qgemm_counts(node, kernel, out0 or 0.0, k_rows) if node.op_type in _CONV else {}))


def op_has_bias(node: Node) -> bool:
    """A Gemm / FusedGemm with a C input (a Linear's bias)."""
    return node.op_type in ("Gemm", "FusedGemm") and len(node.inputs) > 2 and bool(node.inputs[2])


def _epilogue_flops(node: Node, out_elements: float) -> float:
    """FLOPs of the activation pass a fused conv / gemm runs after its kernel (0 if none or in-kernel).
    MLAS's NCHWc conv kernels apply Relu while storing; every other activation, and every activation of
    FusedConv / FusedGemm, is a separate MlasActivation pass over the output."""
    if not _fused_activation(node):
        return 0.0
    act = node.text("activation")
    if node.domain == "com.microsoft.nchwc" and act == "Relu":
        return 0.0
    return _ELEMENTWISE_FLOPS.get(act, 2.0) * out_elements


def _fused_activation(node: Node) -> bool:
    if node.op_type in ("FusedConv", "FusedGemm", "NhwcFusedConv"):
        return bool(node.attributes.get("activation"))
    if node.domain == "com.microsoft.nchwc" and node.op_type == "Conv":
        return bool(node.attributes.get("activation"))
    return False


def _arithmetic(node: Node, kind: str, kernel: Value | None, act_in: list[Value], outs: list[Value | None],
                in_elements: float, out_elements: float, graph: Graph) -> tuple[float, float]:
    """(MACs, other FLOPs) of one task."""
    op = node.op_type
    out0 = outs[0] if outs else None
    out_e = _elements(out0) or 0.0
    if kind in ("conv", "convsmall", "convnchw", "conv3d", "dwconv", "dwconvnchw", "gconvnchw"):
        if kernel is None or kernel.shape is None:
            return 0.0, 0.0
        per_out = math.prod(int(d) for d in kernel.shape[1:])  # C_in/group * kh * kw
        if op in ("ConvTranspose", "QLinearConvTranspose"):
            # Each input element scatters into C_out/group * kh * kw outputs.
            in0 = _elements(act_in[0]) if act_in else 0.0
            return (in0 or 0.0) * math.prod(int(d) for d in kernel.shape[1:]), 0.0
        extra = out_e if _fused_activation(node) and not _epilogue_flops(node, out_e) else 0.0
        if op == "FusedConv" and len(node.inputs) > 3 and node.inputs[3]:
            extra += out_e  # fused residual add (Z input)
        return out_e * nchwc_output_padding(node, kernel, out0) * per_out, extra  # NCHWc: its padded rows too
    if op == "Einsum" and kind == "matmul":
        return einsum_macs(node, graph) or 0.0, 0.0
    if kind in ("gemm", "matmul"):
        k = _reduction_dim(node, act_in, kernel)
        flops = out_e if node.op_type == "GemmFastGelu" else 0.0
        return out_e * k, flops
    if kind == "attention":
        return _attention_macs(node, act_in, kernel)
    if base_kind(kind) == "pool":
        if op.startswith("Global") or op == "QLinearGlobalAveragePool":
            return 0.0, in_elements
        ks = node.attributes.get("kernel_shape") or [1]
        return 0.0, out_e * math.prod(int(k) for k in ks)
    if kind in ("norm", "skipnorm"):
        return 0.0, 8.0 * in_elements + LAYERNORM_ROW_FLOPS * _layernorm_rows(node, act_in)
    if kind == "softmax":
        return 0.0, 5.0 * out_e
    if kind == "reduce":
        return 0.0, in_elements * (STRIDED_REDUCE_FLOPS if strided_reduce(node, act_in, graph) else 1.0)
    if kind == "elementwise":
        return 0.0, _ELEMENTWISE_FLOPS.get(op, 1.0) * out_e
    if kind == "quant":
        return 0.0, 2.0 * out_e
    if kind == "cubic":  # ORT's bicubic kernel: its 1-D interpolations computed (resizes.cubic_misses)
        return 0.0, CUBIC_MISS_OPS * cubic_misses(node, graph)
    if kind in ("layout", "walk", "resize", "nearest"):
        # One "op" per element moved: transposes and reorders are gather-bound, not streaming copies (layout rate).
        return 0.0, out_e * moves_per_element(node, kind)
    return 0.0, other_flops(node, graph, outs)  # STFT, GridSample (simulator/other_ops.py); 0 for the rest


# ORT's LayerNormalization pays a fixed cost per row normalized, beside its time per element: single-op models on this
# Zen 5 (CPU time) take 17.3 ns per row of 8, 25.8 of 32, 32.9 of 64, 271 of 768, i.e. 14.6 ns per row + 0.33 ns per
# element, so a row costs what 44 elements do (8 FLOPs each). EdgeNeXt's LayerNorms over 32 channels of 4096 pixels
# profiled 0.105 ms, predicted 0.046 at the element rate. Calibration's two LayerNorm cases (768, 32 wide) fit one rate.
LAYERNORM_ROW_FLOPS = 350.0


def _layernorm_rows(node: Node, act_in: list[Value]) -> float:
    if node.op_type not in ("LayerNormalization", "SimplifiedLayerNormalization") or not act_in:
        return 0.0
    x, axis = act_in[0], node.attributes.get("axis", -1)
    if not x.is_static or not x.shape:
        return 0.0
    axis = int(-1 if axis is None else axis) % len(x.shape)
    return float(math.prod(int(d) for d in x.shape[:axis]))


def _rnn_arithmetic(node: Node, graph: Graph) -> tuple[float, float]:
    """(MACs, FLOPs) of an ONNX LSTM / GRU / RNN: every step, direction and gate multiplies [input, hidden] by its
    weights; the gates' activations and the state update are FLOPs per hidden unit. Sizes come from the weights
    W [dirs, gates * hidden, input] and the states where X's shape is partly unknown (a step taken in a Loop)."""
    def dims(k: int) -> list[int | str]:
        v = graph.values.get(node.inputs[k]) if k < len(node.inputs) and node.inputs[k] else None
        return list(v.shape) if v is not None and v.shape is not None else []

    x, w, h0 = dims(0), dims(1), dims(5)
    gates, act_flops = _RNN[node.op_type]
    layout = int(node.attributes.get("layout", 0) or 0)
    hidden = int(node.attributes.get("hidden_size", 0) or 0)
    n_in = (w[1] if node.op_type in _INT8_RNN else w[2]) if len(w) == 3 else (x[-1] if len(x) == 3 else None)
    steps = x[layout] if len(x) == 3 else None
    batch = next((b for b in (x[1 - layout] if len(x) == 3 else None, h0[1 - layout] if len(h0) == 3 else None)
                  if isinstance(b, int)), None)
    if not all(isinstance(d, int) for d in (n_in, steps, batch)) or not hidden:
        return 0.0, 0.0
    dirs = 2 if node.attributes.get("direction") == "bidirectional" else 1
    rows = float(steps * batch * dirs)  # type: ignore[operator]
    recurrent = hidden * (0.25 if node.op_type in _INT8_RNN else 1.0)
    return rows * gates * hidden * (n_in + recurrent), rows * hidden * act_flops  # type: ignore[operator]


def _rnn_recurrent_reads(node: Node, graph: Graph) -> tuple[float, float]:
    """Elements of the recurrent weights R [dirs, gates * hidden, hidden] read again at every step: the input
    projection of all steps is one GEMM, but each step's H x R^T waits for the step before, a GEMM of `batch` rows
    that streams R from cache each time (ORT's DeepCPU LSTM / GRU, MLAS SGEMM). At batch 1 that traffic, not the
    MACs, sets the time: single-op models on this host, thread CPU time, predicted with MACs alone at 0.27-0.52x
    of measured (LSTM 50 steps, hidden 512: 0.66 ms vs 2.30; GRU 200 steps x 2 directions, hidden 256: 0.84 vs
    3.12), with these reads 0.9-1.1x; a captcha recognizer's bidirectional LSTM (ddddocr) was 0.06x per op.
    Returns (those elements, one direction's R: the set each pass reads again, which the roofline takes from the
    core's cache where it fits: a Sapphire Rapids' 2 MiB L2 holds that GRU's 786 KB, a Zen 3's 512 KiB does not, and
    there the reads come at the weight-streaming rate, as above; at that rate this GRU was predicted +152%)."""
    r = graph.values.get(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else None
    x = graph.values.get(node.inputs[0]) if node.inputs and node.inputs[0] else None
    if r is None or r.shape is None or len(r.shape) != 3 or x is None or x.shape is None or len(x.shape) != 3:
        return 0.0, 0.0
    steps = x.shape[int(node.attributes.get("layout", 0) or 0)]
    if not all(isinstance(d, int) for d in (*r.shape, steps)):
        return 0.0, 0.0
    share = 0.25 if node.op_type in _INT8_RNN else 1.0  # an int8 R: a quarter of the bytes (_INT8_RNN)
    return (share * float(steps) * math.prod(int(d) for d in r.shape),  # type: ignore[arg-type]
            share * float(int(r.shape[1]) * int(r.shape[2])))


def _reduction_dim(node: Node, act_in: list[Value], kernel: Value | None) -> float:
    op = node.op_type
    if op == "MatMulNBits":
        return float(node.attributes.get("K", 0))
    a = act_in[0] if act_in else None
    if a is None or a.shape is None or not a.shape or not isinstance(a.shape[-1], int):
        if kernel is not None and kernel.shape and isinstance(kernel.shape[0], int):
            return float(kernel.shape[0])
        return 0.0
    trans_a = int(node.attributes.get("transA", 0))
    if op in ("Gemm", "FusedGemm", "QGemm") and trans_a and len(a.shape) >= 2 and isinstance(a.shape[-2], int):
        return float(a.shape[-2])
    return float(a.shape[-1])


def _attention_macs(node: Node, act_in: list[Value], kernel: Value | None) -> tuple[float, float]:
    """com.microsoft Attention: QKV projection (if it has weights) + QK^T + AV; MHA: the last two only."""
    q = act_in[0] if act_in else None
    if q is None or not q.is_static or len(q.shape) != 3:  # type: ignore[arg-type]
        return 0.0, 0.0
    b, s, h = (int(d) for d in q.shape)  # type: ignore[union-attr]
    macs = 0.0
    if kernel is not None and kernel.shape is not None:
        macs += b * s * math.prod(int(d) for d in kernel.shape)  # [H, 3H]
        hidden = int(kernel.shape[-1]) // 3
        kv_len = s
    else:
        hidden = h
        k = act_in[1] if len(act_in) > 1 else None
        kv_len = int(k.shape[1]) if k is not None and k.is_static and len(k.shape) >= 2 else s  # type: ignore[arg-type]
    macs += 2.0 * b * s * kv_len * hidden  # QK^T and AV over all heads
    heads = int(node.attributes.get("num_heads", 1))
    return macs, 5.0 * b * heads * s * kv_len  # softmax


def takes_kernel_option(w: Work) -> bool:
    """Whether an option's kernel format applies to the task: a weighted kind with a kernel, or a lookup table an
    exporter quantizes (Work.lookup_table)."""
    return (w.kind in WEIGHTED_KINDS and w.kernel_elements > 0) or w.lookup_table


FOLDED = Work(kind="folded", macs=0.0, flops=0.0, in_elements=0.0, out_elements=0.0, kernel_elements=0.0,
              kernel_out_channels=1, aux_weight_elements=0.0, other_const_bytes=0.0, fused_activation=False,
              shapes_known=True, notes=("constant-folded at load: no cost per inference; its weights are "
                                        "counted at the op that uses them",))
