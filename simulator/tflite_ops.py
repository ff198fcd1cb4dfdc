"""Work of TFLite builtin operators, counted from the tensors each kernel reads, in TFLite's own layouts.

TFLite activations are NHWC. Filters: CONV_2D [C_out, kh, kw, C_in/groups] (OHWI), DEPTHWISE_CONV_2D
[1, kh, kw, C_in*m] (the depth multiplier m folded into the last dim), TRANSPOSE_CONV [C_out, kh, kw, C_in]
with inputs (output_shape, filter, input, bias), CONV_3D [kd, kh, kw, C_in/groups, C_out] (DHWIO),
CONV_3D_TRANSPOSE [kd, kh, kw, C_out, C_in] after an output_shape input. FULLY_CONNECTED weights are
[out, in] and the input is read as rows of `in`; BATCH_MATMUL reads [..., M, K] x [..., K, N], `adj_x` /
`adj_y` swapping the last two dims. (TensorFlow Lite schema.fbs and kernels/*.cc; Netron's tflite
metadata lists the same inputs.)

A weight may reach its kernel through DEQUANTIZE (fp16 or int8 in the file) or DENSIFY (a sparse
constant). Both run once, when the model is prepared, not per inference: TFLite's dequantize and densify
kernels evaluate a constant input in Prepare, and the XNNPACK delegate packs the dequantized or densified
weights at init (the delegate README: sparse weights are stored "using DENSIFY operators"). Measured here
with LiteRT 2.3.0's profiler: an fp16-weight MobileNetV2 runs the same F32 XNNPACK operators as the fp32
file, and no DEQUANTIZE runs. So those ops are folded (`folding.fold_constants`), and the consumer's kernel
is the dequantized constant, with the shape the consumer reads.

MediaPipe's custom operators that XNNPACK runs (compiler.frontends.tflite_custom) count as the builtin they run as
(`runs_as`: Convolution2DTransposeBias a TRANSPOSE_CONV, whose input comes first instead of third, and
MaxPoolingWithArgmax2D a MAX_POOL_2D); MaxUnpooling2D moves its elements (a layout operator).

A sparse constant read by FULLY_CONNECTED itself (no DENSIFY) is counted dense: LiteRT 2.3's XNNPACK delegate
takes that op and runs it as a dense one (see `work_of`). A fused RELU / RELU6 / RELU_N1_TO_1 is a clamp applied
while the kernel stores its output (one op per element); a fused TANH or SIGN_BIT is a pass of its own.
"""

from __future__ import annotations

import dataclasses
import math

from compiler.frontends.tflite_custom import RUNS_AS
from compiler.graph import DTYPE_BYTES, Graph, Node, Value
from simulator.costs import FOLDED, WEIGHTED_KINDS, Work
from simulator.folding import fold_constants

_CONV = {"CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV", "CONV_3D", "CONV_3D_TRANSPOSE"}
_MATRIX = {"FULLY_CONNECTED", "BATCH_MATMUL"}
_KIND: dict[str, str] = {
    **{op: "pool" for op in ("AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D")},
    **{op: "softmax" for op in ("SOFTMAX", "LOG_SOFTMAX")},
    **{op: "norm" for op in ("L2_NORMALIZATION", "LOCAL_RESPONSE_NORMALIZATION")},
    **{op: "reduce" for op in ("MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD", "REDUCE_ANY",
                               "REDUCE_ALL", "ARG_MAX", "ARG_MIN", "TOPK_V2", "CUMSUM")},
    **{op: "view" for op in ("RESHAPE", "SQUEEZE", "EXPAND_DIMS", "SHAPE", "RANK", "BITCAST")},
    **{op: "quant" for op in ("QUANTIZE", "DEQUANTIZE", "CAST", "FAKE_QUANT")},
    **{op: "layout" for op in (
        "TRANSPOSE", "CONCATENATION", "PACK", "UNPACK", "SPLIT", "SPLIT_V", "SLICE", "STRIDED_SLICE", "GATHER",
        "GATHER_ND", "EMBEDDING_LOOKUP", "PAD", "PADV2", "MIRROR_PAD", "TILE", "BROADCAST_TO", "DEPTH_TO_SPACE",
        "SPACE_TO_DEPTH", "BATCH_TO_SPACE_ND", "SPACE_TO_BATCH_ND", "RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR",
        "SCATTER_ND", "REVERSE_V2", "ONE_HOT", "FILL", "ZEROS_LIKE", "RANGE", "DYNAMIC_UPDATE_SLICE", "DENSIFY",
        "MaxUnpooling2D")},
}
# FLOPs per output element of element-wise ops (transcendental ones count their polynomial, as costs.py does).
_ELEMENTWISE_FLOPS: dict[str, float] = {
    "ADD": 1, "SUB": 1, "MUL": 1, "DIV": 1, "FLOOR_DIV": 2, "FLOOR_MOD": 2, "MAXIMUM": 1, "MINIMUM": 1,
    "SQUARED_DIFFERENCE": 2, "POW": 6, "ADD_N": 1, "ATAN2": 8, "RELU": 1, "RELU6": 2, "RELU_N1_TO_1": 2,
    "RELU_0_TO_1": 2, "LEAKY_RELU": 2, "PRELU": 2, "ELU": 4, "LOGISTIC": 4, "TANH": 6, "HARD_SWISH": 4,
    "GELU": 10, "EXP": 4, "LOG": 4, "SQRT": 2, "RSQRT": 2, "SQUARE": 1, "NEG": 1, "ABS": 1, "SIGN": 1,
    "SIN": 6, "COS": 6, "FLOOR": 1, "CEIL": 1, "ROUND": 1, "EQUAL": 1, "NOT_EQUAL": 1, "LESS": 1,
    "LESS_EQUAL": 1, "GREATER": 1, "GREATER_EQUAL": 1, "LOGICAL_AND": 1, "LOGICAL_OR": 1, "LOGICAL_NOT": 1,
    "SELECT": 1, "SELECT_V2": 1, "WHERE": 1,
}
_FFT = frozenset({"RFFT2D"})
_CONTROL = frozenset({"IF", "WHILE"})
# A resource variable's handle (VAR_HANDLE's output, READ_VARIABLE / ASSIGN_VARIABLE's first input: a streaming
# model's state) holds no elements: the data moves through the tensors read or assigned. Counted as unknown shapes,
# they marked every stateful wake-word model's variable ops as work unknown.
_HANDLES = frozenset({"resource", "variant"})
_CLAMPS = frozenset({"RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1"})  # fused: applied as the output is stored
_FLOAT = frozenset({"float32", "float16", "bfloat16", "float64"})


def tflite_works(graph: Graph) -> tuple[list[Work], frozenset[str], Graph]:
    """(one Work per operator, ids of the operators folded at prepare, the graph with those folded outputs as
    constants) of a TFLite graph, in the graph's operator order."""
    view, folded = fold_constants(graph)
    # CALL_ONCE runs its initialization subgraph on the first invoke only and returns at once after (TFLite's
    # kernels/call_once.cc): no work per inference (microWakeWord's state init, profiled 3-5 us as a whole-model share).
    folded = folded | {n.id for n in graph.nodes if n.op_type == "CALL_ONCE"}
    return [FOLDED if n.id in folded else work_of(as_builtin(n), view) for n in graph.nodes], frozenset(folded), view


def as_builtin(node: Node) -> Node:
    """`node` as the builtin operator it runs as (a MediaPipe custom operator XNNPACK takes: `runs_as`), else itself."""
    builtin = node.attributes.get(RUNS_AS)
    return dataclasses.replace(node, op_type=builtin) if isinstance(builtin, str) and builtin else node


def kind_of(node: Node, graph: Graph) -> str:
    op = node.op_type
    if op in _CONV:
        return "dwconv" if op == "DEPTHWISE_CONV_2D" else "conv"
    if op in _MATRIX:
        return "gemm" if _kernel(node, graph) is not None else "matmul"
    if op in _KIND:
        return _KIND[op]
    return "elementwise" if op in _ELEMENTWISE_FLOPS else "other"


def _kernel(node: Node, graph: Graph) -> Value | None:
    """The constant an option quantizes: the filter of a conv, the weights of FULLY_CONNECTED, a constant
    right-hand side of BATCH_MATMUL."""
    if node.op_type not in _CONV and node.op_type not in _MATRIX:
        return None
    v = graph.values.get(node.inputs[1]) if len(node.inputs) > 1 and node.inputs[1] else None
    return v if v is not None and v.weight is not None and v.shape is not None and len(v.shape) >= 2 else None


def _kernel_rows(op: str, k: Value, attrs: dict[str, object]) -> int:
    """Output channels of a kernel (one quantization scale each)."""
    s = k.shape or [1]
    if op in ("DEPTHWISE_CONV_2D", "CONV_3D"):
        d = s[-1]
    elif op == "BATCH_MATMUL":
        d = s[-2] if attrs.get("adj_y") else s[-1]
    elif op == "CONV_3D_TRANSPOSE":
        d = s[-2]
    else:
        d = s[0]
    return int(d) if isinstance(d, int) else 1


def _elements(v: Value | None) -> float | None:
    if v is None or not v.is_static:
        return None
    return float(math.prod(v.shape))  # type: ignore[arg-type]


def _stored_sparse(v: Value) -> bool:
    """A constant whose buffer holds only its non-zero values (TFLite sparsity parameters): fewer bytes than
    its dense element count takes. Dense tensors always fill elements x bytes per element."""
    w = v.weight
    per = DTYPE_BYTES.get(v.dtype, 4)
    return w is not None and per >= 1 and w.bytes < w.elements * per and w.sparsity > 0


def work_of(node: Node, graph: Graph) -> Work:
    op = node.op_type
    kind = kind_of(node, graph)
    kernel = _kernel(node, graph) if kind in WEIGHTED_KINDS else None
    act_in: list[Value] = []
    aux_names: list[tuple[str, float]] = []
    other_const = 0.0
    table_name = node.inputs[1] if op == "EMBEDDING_LOOKUP" and len(node.inputs) > 1 else None
    for name in node.inputs:
        v = graph.values.get(name) if name else None
        if v is None or v is kernel or v.dtype in _HANDLES:
            continue
        if v.weight is None:
            act_in.append(v)
        elif v.dtype in _FLOAT or (name == table_name and v.dtype == "int8"):
            aux_names.append((name, float(v.weight.elements)))
        else:
            other_const += v.weight.bytes
    outs = [graph.values.get(o) for o in node.outputs if o]
    outs = [v for v in outs if v is None or v.dtype not in _HANDLES]
    in_el, out_el = [_elements(v) for v in act_in], [_elements(v) for v in outs]
    known = all(e is not None for e in in_el + out_el)
    notes = [] if known else ["some shapes unknown: costs count only the tensors with static shapes"]
    in_e = sum(e for e in in_el if e is not None)
    out_e = sum(e for e in out_el if e is not None)
    out0 = out_el[0] or 0.0 if out_el else 0.0
    macs, flops = _arithmetic(node, kind, kernel, act_in, out0, in_e, outs)
    if op == "GATHER" and len(node.inputs) > 1 and (n_idx := _elements(graph.values.get(node.inputs[1]))):
        # TFLite's GATHER copies one slice per index (a memcpy each): its arithmetic is a call per index, its slices
        # are the bytes it moves. Profiled (TFLite GATHER, 1 thread): 2.7-3.4 ns per index for slices of 1-2 floats
        # (BirdNET's STFT framing, 511 x 1024 indices, 1.7 ms against 0.1 predicted per element), 7.7 for 64 floats.
        flops = n_idx
    aux_read = sum(e for _, e in aux_names)
    lookup: Value | None = None
    if op in ("GATHER", "GATHER_ND", "EMBEDDING_LOOKUP") and aux_names and out_e:
        # From a constant table (an embedding) it reads the rows it picks, not the table (costs._gathered_table_reads).
        table = graph.values.get(node.inputs[1] if op == "EMBEDDING_LOOKUP" else node.inputs[0])
        # An int8 EMBEDDING_LOOKUP table is one ai-edge-quantizer's dynamic int8 wrote (a scale per row): the same
        # lookup, its rows dequantized as copied (the hybrid kernel); read whole, it was priced 0.10 ms for 0.02.
        if table is not None and table.weight is not None and (table.dtype in _FLOAT or (
                op == "EMBEDDING_LOOKUP" and table.dtype == "int8")):
            aux_read -= table.weight.elements - min(float(table.weight.elements), out_e)
            # EMBEDDING_LOOKUP's table is a weight ai-edge-quantizer quantizes (fp16, dynamic int8 with a scale per
            # row, int4), GATHER's is not: an option's kernel format applies to it (Work.lookup_table).
            lookup = table if op == "EMBEDDING_LOOKUP" and table.shape and len(table.shape) == 2 else None
    if op in _CONTROL:
        # TFLite's IF / WHILE hand a constant operand to the body as it is (a shallow copy): the body's operators
        # read it, not the IF. Measured (LiteRT 2.3, un-profiled): an IF handing a 0.4 MB constant to both branches,
        # 0.004-0.01 us more per IF than without it; hey_jarvis's IF was charged ~6 us for reading its 0.4 MB.
        aux_read = 0.0
        notes.append(f"{op} hands its constant operands to its body without copying them; its own cost per "
                     "execution is the runtime's (simulator.control_flow)")
    elif kind == "other" and op not in _FFT:
        notes.append(f"no cost rule for the TFLite operator {op}: only its tensors' bytes are counted")
    if kernel is not None and _stored_sparse(kernel):
        # TFLite's builtin FULLY_CONNECTED has a sparse kernel, but LiteRT 2.3's default XNNPACK delegate takes
        # the op and runs it densely (on the compressed buffer: its outputs are NaN; the builtin's are right).
        notes.append("weights stored sparse without DENSIFY: counted dense, as LiteRT's XNNPACK delegate runs "
                     "them (TFLite's builtin sparse kernel, without the delegate, would skip the zeros)")
    act = str(node.attributes.get("fused_activation_function", "NONE"))
    epilogue = 0.0
    if act in _CLAMPS:
        flops += out0
    elif act in ("TANH", "SIGN_BIT"):
        epilogue = _ELEMENTWISE_FLOPS.get(act, 1.0) * out0
    rows = _kernel_rows(op, kernel, node.attributes) if kernel is not None else 1
    if lookup is not None and isinstance(lookup.shape[0], int):  # type: ignore[index]
        rows = int(lookup.shape[0])  # type: ignore[index]
    moves = (_transpose_moves(node, graph, out0) if op == "TRANSPOSE"
             else (_copy_runs(node, len(act_in), outs[0] if outs else None), 0.0, 0.0))
    return Work(kind=kind, macs=macs, flops=flops, in_elements=in_e, out_elements=out_e, gemm_k=_gemm_k(op, kernel),
                igemm_taps=_igemm_taps(node, kernel, out0),
                kernel_elements=float(kernel.weight.elements) if kernel is not None and kernel.weight else 0.0,
                kernel_out_channels=rows, aux_weight_elements=aux_read,
                other_const_bytes=other_const, fused_activation=act not in ("NONE", ""), shapes_known=known,
                notes=tuple(notes), kernel_name=kernel.name if kernel is not None else lookup.name if lookup else "",
                aux_weights=tuple(aux_names), epilogue_flops=epilogue, lookup_table=lookup is not None,
                copy_runs=moves[0], far_walk=moves[1], page_walk=moves[2])


def _copy_runs(node: Node, n_inputs: int, out: Value | None) -> float:
    """The contiguous runs a copy kernel moves one call each: a CONCATENATION's, each input's slice per row before
    its axis (XNNPACK's `Copy (NC, X32)` per input: a channel concatenation of a map copies per pixel and input);
    TFLite's own RESIZE_NEAREST_NEIGHBOR (XNNPACK does not take it), a memcpy of the channels per output pixel.
    Profiled (LiteRT 2.3.0, 1 thread, Zen 4, 2026-12-06, simulator.litert_layout's cases): 2.7 ns per run of 1 float,
    the nearest resize ~11 ns per output pixel at 8-64 channels. 0 for other ops (costed per element)."""
    shape = out.shape if out is not None and out.is_static else None
    if not shape:
        return 0.0
    dims = [int(d) for d in shape]  # type: ignore[arg-type]
    if node.op_type == "CONCATENATION":
        axis = int(node.attributes.get("axis", 0) or 0) % len(dims)
        return float(math.prod(dims[:axis]) * n_inputs)
    if node.op_type == "RESIZE_NEAREST_NEIGHBOR":
        return float(math.prod(dims[:-1]))
    return 0.0


# XNNPACK's fp32 transpose kernel on x86 with AVX (`xnn_x32_transposec_ukernel__8x8_reuse_multi_avx`) moves tiles of
# 8 x 8 elements, partial tiles at the edges at a whole tile's cost.
XNN_TRANSPOSE_TILE = 8


def transpose_calls(dims: list[int], perm: list[int]) -> tuple[float, bool]:
    """(kernel calls, whether its tiles write rows of a whole tile apart) of XNNPACK's `Transpose (ND, X32)`:
    `transpose_tiles`, its row stride at least a tile."""
    calls, stride = transpose_tiles(dims, perm)
    return calls, stride >= XNN_TRANSPOSE_TILE


# Output rows this far apart (bytes: a 4 KiB page) or more are written each to its own page (`Work.page_walk`).
XNN_PAGE_BYTES = 4096


def transpose_tiles(dims: list[int], perm: list[int]) -> tuple[float, int]:
    """(kernel calls, elements between the output rows its tiles write; 0 where it copies runs) of XNNPACK's
    `Transpose (ND, X32)`
    (google/XNNPACK src/operators/transpose-nd.c, reshape_transpose_nd). It normalizes the permutation (size-1 axes
    dropped, axes that stay side by side merged); where the innermost axis stays, it copies each run of it with one
    memcpy (`transposev`): elements / run; else it transposes 8 x 8 tiles of the input's innermost axis by the axis
    that becomes the output's innermost (`transposec`): the rest x ceil(a / 8) x ceil(b / 8), each tile writing 8
    rows of up to 8 elements, the output's innermost axis apart (far where it has 8 or more: not an image's 3 channels).
    (0, 0) for a plain copy. Profiled (LiteRT 2.3.0, 1 thread, Zen 4, 2026-12-06): ~5 ns per run copied and
    ~6.5 ns per tile whether full or not (an image's [1, 3, 224, 224] to NHWC: 6,272 tiles of 3 x 8, 0.040 ms;
    [1, 56, 56, 24] to NCHW: 1,176 full tiles, 0.008 ms); beyond the L2 the far rows cost more (LR-ASPP's
    [1, 512, 512, 21] output to NCHW 4.1 ms for 98,304 tiles, [1, 3, 512, 512] to NHWC 0.21 ms for 32,768)."""
    kept = [p for p in perm if dims[p] > 1]
    rank = {a: i for i, a in enumerate(sorted(kept))}
    order = [rank[p] for p in kept]  # the permutation without size-1 axes
    sizes = [dims[a] for a in sorted(kept)]
    groups: list[list[int]] = []  # runs of output axes that stay side by side in the input
    for a in order:
        if groups and a == groups[-1][-1] + 1:
            groups[-1].append(a)
        else:
            groups.append([a])
    if len(groups) <= 1:
        return 0.0, 0
    total = float(math.prod(sizes))
    by_input = sorted(groups, key=lambda g: g[0])
    inner_in = math.prod(sizes[a] for a in by_input[-1])  # the input's contiguous axis
    inner_out = math.prod(sizes[a] for a in groups[-1])  # the output's
    if groups[-1] is by_input[-1]:
        return total / inner_in, 0  # one memcpy per run
    tile = XNN_TRANSPOSE_TILE
    tiles = total / (inner_in * inner_out) * math.ceil(inner_in / tile) * math.ceil(inner_out / tile)
    return tiles, int(inner_out)


def _transpose_moves(node: Node, graph: Graph, out_e: float) -> tuple[float, float, float]:
    """(copy_runs, far_walk, page_walk) of a TRANSPOSE whose input shape and permutation (a constant) are known: its
    kernel calls, its output elements where its tiles write far-apart rows and where those rows are a page or more
    apart (fp32: XNN_PAGE_BYTES / 4 elements; `transpose_tiles`); else zeros."""
    x = graph.values.get(node.inputs[0]) if node.inputs else None
    p = graph.values.get(node.inputs[1]) if len(node.inputs) > 1 else None
    perm = p.weight.ints if p is not None and p.weight is not None else None
    if x is None or not x.is_static or perm is None or len(perm) != len(x.shape or ()):  # type: ignore[arg-type]
        return 0.0, 0.0, 0.0
    calls, stride = transpose_tiles([int(d) for d in x.shape], [int(a) for a in perm])  # type: ignore[union-attr]
    return calls, out_e if stride >= XNN_TRANSPOSE_TILE else 0.0, out_e if stride * 4 >= XNN_PAGE_BYTES else 0.0


def _gemm_k(op: str, kernel: Value | None) -> float:
    """The reduction's length per tap of a CONV_2D or FULLY_CONNECTED (its kernel's last dim: input channels or
    features), which XNNPACK's integer GEMMs pack rounded up to their K block (simulator.roofline._padded_macs, on
    the paths that run them); 0 for other ops."""
    if op not in ("CONV_2D", "FULLY_CONNECTED") or kernel is None or not kernel.shape:
        return 0.0
    c_in = kernel.shape[-1]
    return float(c_in) if isinstance(c_in, int) and c_in > 0 else 0.0


def _igemm_taps(node: Node, kernel: Value | None, out_e: float) -> float:
    """Output elements x kernel taps of a CONV_2D that XNNPACK runs as an indirect GEMM (IGEMM: one row pointer per
    output pixel and tap), 0 for a 1x1 stride-1 one (a plain GEMM over the input as it is) and for other ops."""
    if node.op_type != "CONV_2D" or kernel is None or not kernel.shape or len(kernel.shape) != 4:
        return 0.0
    kh, kw = kernel.shape[1], kernel.shape[2]
    if not isinstance(kh, int) or not isinstance(kw, int):
        return 0.0
    strides = (int(node.attributes.get("stride_h", 1) or 1), int(node.attributes.get("stride_w", 1) or 1))
    if kh * kw == 1 and strides == (1, 1):
        return 0.0
    return out_e * kh * kw


def _rfft2d_flops(outs: list[Value | None]) -> float:
    """RFFT2D of fft_length [a, b] over [..., a, b] real values, output [..., a, b/2 + 1] complex: a real FFT of
    length b per row (5/2 b log2 b FLOPs, the split-radix count), then complex FFTs of length a down the b/2 + 1
    columns (5 a log2 a each). The lengths are read from the output's shape (fft_length is a constant input
    whose values the graph does not keep). An audio front end's short-time FFT (BirdNET's spectrogram: 511 frames
    of 2048 samples) is the model's largest cost: 19 of its 22 ms measured here, 0.09 ms predicted without it."""
    out = outs[0] if outs else None
    if out is None or not out.is_static or len(out.shape) < 2:  # type: ignore[arg-type]
        return 0.0
    *lead, a, half = (int(d) for d in out.shape)  # type: ignore[union-attr]
    b = max(2 * (half - 1), 1)
    batch = math.prod(lead)
    rows = batch * a * 2.5 * b * math.log2(max(b, 2))
    cols = batch * half * 5.0 * a * math.log2(a) if a > 1 else 0.0
    return rows + cols


def _arithmetic(node: Node, kind: str, kernel: Value | None, act_in: list[Value], out_e: float,
                in_e: float, outs: list[Value | None]) -> tuple[float, float]:
    """(MACs, other FLOPs) of one operator; `out_e` = elements of its first output."""
    op = node.op_type
    if op in _CONV or op in _MATRIX:
        return _matrix_macs(node, kernel, act_in, out_e), 0.0
    if op in _FFT:
        return 0.0, _rfft2d_flops(outs)
    if kind == "pool":
        taps = int(node.attributes.get("filter_height", 1)) * int(node.attributes.get("filter_width", 1))
        return 0.0, out_e * taps
    if kind == "softmax":
        return 0.0, 5.0 * out_e
    if kind == "norm":
        return 0.0, 3.0 * in_e
    if kind == "reduce":
        return 0.0, in_e
    if kind == "elementwise":
        return 0.0, _ELEMENTWISE_FLOPS[op] * out_e
    if kind == "quant":
        return 0.0, 2.0 * out_e
    if kind == "layout":
        # Elements moved (as costs.py counts layout ops); bilinear resize also interpolates 4 taps.
        return 0.0, out_e * (4.0 if op == "RESIZE_BILINEAR" else 1.0)
    return 0.0, 0.0


def _matrix_macs(node: Node, kernel: Value | None, act_in: list[Value], out_e: float) -> float:
    op = node.op_type
    w = kernel if kernel is not None else (act_in[1] if len(act_in) > 1 else None)
    if op == "BATCH_MATMUL":
        x = act_in[0] if act_in else None
        if x is None or x.shape is None or len(x.shape) < 2:
            return 0.0
        k = x.shape[-2] if node.attributes.get("adj_x") else x.shape[-1]
        return out_e * k if isinstance(k, int) else 0.0
    if w is None or w.shape is None or not all(isinstance(d, int) for d in w.shape):
        return 0.0
    s = [int(d) for d in w.shape]  # type: ignore[arg-type]
    if op == "FULLY_CONNECTED":
        return out_e * s[-1]  # out = rows x units; each sums `in` products
    if op == "CONV_2D":
        return out_e * math.prod(s[1:])  # kh x kw x C_in/groups per output
    if op == "DEPTHWISE_CONV_2D":
        return out_e * math.prod(s[1:3])  # one input channel per output: kh x kw
    if op == "CONV_3D":
        return out_e * math.prod(s[:4])  # kd x kh x kw x C_in/groups
    # Transposed convs scatter each input element into kernel-sized outputs (input = 3rd operand).
    x = _elements(act_in[0]) if act_in else None
    if x is None:
        return 0.0
    return x * (math.prod(s[:3]) if op == "TRANSPOSE_CONV" else math.prod(s[:4]))


def hybrid_quant_bytes(g: Graph) -> float:
    """File bytes of the quantization records (a float32 scale and an int64 zero point per channel, ~48 B of table)
    of the int8 constants a dynamic-int8 `.tflite` (int8 weights, float activations) hands its operators directly:
    ai-edge-quantizer's hybrid kernels and lookup tables. The size rules count them with each int8 kernel
    (`file_bytes.storage_bytes_per_kernel`), so they are no part of the upload's overhead: counted in both, an
    int8-dynamic file of a 20000 x 128 embedding was sized +8.6%. Constants behind a DEQUANTIZE are sized as stored."""
    from compiler.frontends.tflite import fully_int8

    if g.format != "tflite" or fully_int8(g):
        return 0.0
    seen: set[str] = set()
    out = 0.0
    for nd in g.nodes:
        if nd.op_type == "DEQUANTIZE":
            continue
        for name in nd.inputs:
            v = g.values.get(name) if name else None
            if v is None or name in seen or v.weight is None or v.dtype != "int8" or v.quant is None:
                continue
            seen.add(name)
            out += 12.0 * len(v.quant.scale) + 48.0
    return out
