"""What each of ORT's tools adds to the fp32 export, in bytes, task by task (compiler.optimize.onnx_export's
steps): quantize_static's Q/DQ pairs, quantize_dynamic's ops, the fp16 converter's casts, MatMulNBits for int4
and the palettized weights' decode nodes. Each `charge_*` walks the exported graph (simulator.onnx_exported) and
charges its event's bytes to the tasks through `add`."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from compiler.graph import Graph, Value
from simulator.onnx_exported import WEIGHTED_OPS, Const, XNode, is_float_value, kernel_of
from simulator.onnx_proto import init_header_bytes, node_bytes, value_info_bytes


# quantize_static's default op list (QLinearOpsRegistry + QDQRegistry of onnxruntime.quantization.registry).
STATIC_OPS = frozenset({
    "ArgMax", "Conv", "ConvTranspose", "Gemm", "MatMul", "Add", "Mul", "Relu", "Clip", "LeakyRelu", "Sigmoid",
    "MaxPool", "GlobalAveragePool", "Split", "Pad", "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Resize",
    "AveragePool", "Concat", "Softmax", "Where", "Gather", "GatherElements", "Transpose", "EmbedLayerNormalization",
    "Slice", "InstanceNormalization", "LayerNormalization", "BatchNormalization", "TopK", "CumSum"})
# Ops quantized on their data input only whose output reuses that input's scale and zero point.
_QDQ_SHARED = frozenset({"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Slice", "AveragePool",
                         "MaxPool", "TopK", "Resize", "Pad", "Split"})
_QDQ_DATA_ONLY = _QDQ_SHARED | {"Gather", "GatherElements"}
_NORMS = frozenset({"LayerNormalization", "InstanceNormalization", "BatchNormalization"})
_INT4_BLOCK = 128  # MatMulNBitsQuantizer(block_size=128) in compiler/optimize/onnx_export.py

Charge = Callable[[int, str, float], None]  # charge bytes of an event to a task


@lru_cache(maxsize=512)
def static_keeps_float(op_type: str) -> bool:
    """Whether quantize_static leaves the float constants of an `op_type` node float: a standard ONNX op off its
    op list (a ScatterND's zeros, a GNN's three folded `zeros_like` of 128 KB each: sized int8, 170 KB predicted
    against a 458 KB file). ORT's fused ops (SkipLayerNormalization, FusedGemm, ...) stand for list ops."""
    import onnx.defs  # lazy: the sweep needs it for the op types it meets only

    return op_type not in STATIC_OPS and onnx.defs.has(op_type, "")


def charge_static(xs: list[XNode], inits: Mapping[str, Const], consumers: Mapping[str, list[XNode]],
                  graph_out: set[str], owner: Mapping[str, int], vals: Mapping[str, Value], add: Charge) -> None:
    """quantize_static, QDQ format, per channel: a Q + DQ pair per activation tensor, a DQ per weight, bias
    and other float constant, scale / zero point initializers; Relu / Clip after a quantized op vanish."""
    q = [x for x in xs if x.op in STATIC_OPS]
    producer = {o: x for x in xs for o in x.outputs}
    charged: dict[str, int] = {}  # tensor -> task paying its records
    role: dict[str, str] = {}  # constant -> "weight" | "bias" | "const"
    bias_uses: dict[str, list[XNode]] = {}
    shared: set[str] = set()
    removed: set[int] = set()
    qset = {id(x) for x in q}
    for x in q:
        ins = [v for v in x.inputs if v]
        if x.op in ("Relu", "Clip") and ins:
            p = producer.get(ins[0])
            if (p is not None and id(p) in qset and len(consumers.get(ins[0], [])) == 1
                    and ins[0] not in graph_out):
                # The activation is folded into the producer's output range: its record goes, and the
                # producer writes the activation's output name instead.
                add(x.task, "static", -x.bytes() + (len(x.outputs[0]) - len(ins[0])))
                removed.add(id(x))
                charged.pop(ins[0], None)
                charged.setdefault(x.outputs[0], x.task)
                continue
        if x.op in _QDQ_DATA_ONLY or x.op in ("Relu", "Clip"):
            ins = ins[:1]
        for k, v in enumerate(ins):
            if not (inits[v].floating if v in inits else is_float_value(vals.get(v))):
                continue  # shape tensors, indices, masks stay as they are
            if v in inits:
                r = ("bias" if (x.op in ("Conv", "ConvTranspose", "Gemm") or x.op in _NORMS) and k == 2 else
                     "weight" if (x.op in WEIGHTED_OPS or x.op in _NORMS) and k == 1 else "const")
                role.setdefault(v, r)
                if r == "bias":
                    bias_uses.setdefault(v, []).append(x)
            else:
                p = producer.get(v)
                charged.setdefault(v, p.task if p is not None and id(p) in qset else x.task)
        for o in x.outputs:
            if not is_float_value(vals.get(o)):
                continue
            charged.setdefault(o, x.task)
            if x.op in _QDQ_SHARED:
                shared.add(o)
    for t, task in charged.items():
        b = _qdq_pair_bytes(len(t.encode()), t not in shared)
        # Its consumers now read `<t>_DequantizeLinear_Output`: 24 more bytes per input.
        b += 24 * sum(1 for c in consumers.get(t, []) if id(c) not in removed)
        add(task, "static", b)
    for w, r in role.items():
        c = inits[w]
        per_channel = r in ("weight", "bias") and len(c.dims) >= 1 and not _norm_param(w, consumers)
        dims = [c.dims[0] if r == "bias" or len(c.dims) < 2 else _rows_dim(w, c, consumers)] if per_channel else []
        if r == "bias":
            _bias(w, c, dims, bias_uses.get(w, []), add)
            continue
        qn, sn, zn, dq_out = w + "_quantized", w + "_scale", w + "_zero_point", w + "_DequantizeLinear_Output"
        b = init_header_bytes(qn, c.dims, c.data_bytes) - init_header_bytes(w, c.dims, c.data_bytes)
        data = 0 if per_channel else 4 + 1  # per-channel values: storage_bytes_per_kernel
        rows = dims[0] if dims else 1
        b += init_header_bytes(sn, dims, 4 * rows) + init_header_bytes(zn, dims, rows) + data
        b += node_bytes(w + "_DequantizeLinear", "DequantizeLinear", [qn, sn, zn], [dq_out],
                        {"axis": 0} if per_channel else None)
        b += 24 * len(consumers.get(w, []))
        add(owner.get(w, -1), "static", b)


@lru_cache(maxsize=1024)
def _qdq_pair_bytes(name_len: int, own_params: bool) -> int:
    """QuantizeLinear `<t>_QuantizeLinear` + DequantizeLinear `<t>_DequantizeLinear` of a tensor, and its
    scalar fp32 scale and uint8 zero point unless it shares its input's (only the name's length matters)."""
    t = "t" * name_len
    b = node_bytes(t + "_QuantizeLinear", "QuantizeLinear", [t, t + "_scale", t + "_zero_point"],
                   [t + "_QuantizeLinear_Output"])
    b += node_bytes(t + "_DequantizeLinear", "DequantizeLinear",
                    [t + "_QuantizeLinear_Output", t + "_scale", t + "_zero_point"], [t + "_DequantizeLinear_Output"])
    if own_params:
        b += init_header_bytes(t + "_scale", [], 4) + 4 + init_header_bytes(t + "_zero_point", [], 1) + 1
    return b


def _bias(w: str, c: Const, dims: list[int], uses: list[XNode], add: Charge) -> None:
    """An int32 bias (scale = input scale x weight scale), quantized once per use: the first as
    `<b>_quantized`, the next as `<b>0_quantized`, `<b>1_quantized`... (a bias shared by several convs, the
    zero beta of every LayerNorm). storage_bytes_per_kernel holds the first use's values and every conv's
    per-channel bias scales; the other uses' values are added here, and a LayerNorm's beta, stored there as
    the op's 1-byte constant, takes its other 3 bytes here."""
    el = c.data_bytes // 4
    rows = dims[0] if dims else 1
    for k, x in enumerate(uses):
        b_k = w if k == 0 else f"{w}{k - 1}"
        qn, sn, zn = b_k + "_quantized", b_k + "_quantized_scale", b_k + "_quantized_zero_point"
        b = init_header_bytes(qn, c.dims, 4 * el) + init_header_bytes(sn, dims, 4 * rows)
        b += init_header_bytes(zn, dims, 4 * rows) + node_bytes(b_k + "_DequantizeLinear", "DequantizeLinear",
                                                              [qn, sn, zn], [b_k], {"axis": 0} if dims else None)
        if k == 0:
            b -= init_header_bytes(w, c.dims, c.data_bytes)
        else:
            b += len(b_k) - len(w)  # the op reads its own copy
        b += (3 * el if x.op in _NORMS else 0) if k == 0 else 4 * el
        if not dims:
            b += 8  # a per-tensor fp32 scale and int32 zero point (per-channel ones: storage, per conv)
        add(x.task, "static", b)


def _norm_param(w: str, consumers: Mapping[str, list[XNode]]) -> bool:
    """LayerNormalization's scale and bias are quantized per tensor."""
    return any(c.op in _NORMS for c in consumers.get(w, []))


def _rows_dim(w: str, c: Const, consumers: Mapping[str, list[XNode]]) -> int:
    """Per-channel axis of a weight: output channels (axis 0 of a conv kernel, the last of a MatMul's)."""
    return c.dims[-1] if any(x.op == "MatMul" for x in consumers.get(w, [])) else c.dims[0]


def charge_dynamic(xs: list[XNode], inits: Mapping[str, Const], owner: Mapping[str, int], add: Charge) -> None:
    """quantize_dynamic: each Conv / MatMul with a weight becomes DynamicQuantizeLinear (once per input
    tensor) + ConvInteger / MatMulInteger + Cast + two Muls (+ Reshape and Add of a conv's bias); each
    weight becomes `<w>_quantized` with a scalar scale and zero point."""
    seen_in: set[str] = set()
    for x in xs:
        w = kernel_of(x, inits)
        if w is None or x.op not in ("Conv", "MatMul"):
            continue
        a = x.inputs[0]
        bias = x.inputs[2] if x.op == "Conv" and len(x.inputs) > 2 and x.inputs[2] else ""
        attrs = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in x.attrs.items()) if x.op == "Conv" else ()
        b = -x.bytes() + _dynamic_bytes(_n(a), _n(x.outputs[0]), _n(x.name), _n(w), _n(bias), attrs, a not in seen_in)
        seen_in.add(a)
        if owner.get(w) == x.task:
            c = inits[w]
            b += (init_header_bytes(w + "_quantized", c.dims, c.data_bytes) - init_header_bytes(w, c.dims, c.data_bytes)
                  + init_header_bytes(w + "_scale", [], 4) + init_header_bytes(w + "_zero_point", [], 1))
        add(x.task, "dynamic", b)


def _n(s: str) -> int:
    return len(s) if s.isascii() else len(s.encode())


@lru_cache(maxsize=4096)
def _dynamic_bytes(la: int, lo: int, ln: int, lw: int, lb: int, attrs: tuple[tuple[str, Any], ...],
                   first_read: bool) -> int:
    """The nodes quantize_dynamic writes for one Conv (`attrs` set) or MatMul reading tensor `a` (quantized
    once, by its `first_read`) with weight `w` (and bias `b`), writing `o`; names matter by length only."""
    a, o, nm, w, bias = "a" * la, "o" * lo, "n" * ln, "w" * lw, "b" * lb
    b = 0
    if first_read:
        b += node_bytes(a + "_QuantizeLinear", "DynamicQuantizeLinear", [a],
                        [a + "_quantized", a + "_scale", a + "_zero_point"])
    b += node_bytes(nm + "_quant_scales_mul", "Mul", [a + "_scale", w + "_scale"], [nm + "_quant_scales_mul:0"])
    b += node_bytes(nm + "_quant", "ConvInteger" if attrs else "MatMulInteger",
                    [a + "_quantized", w + "_quantized", a + "_zero_point", w + "_zero_point"],
                    [o + "_output_quantized"], {k: list(v) if isinstance(v, tuple) else v for k, v in attrs})
    b += node_bytes(o + "_output_quantized_cast", "Cast", [o + "_output_quantized"],
                    [o + "_output_quantized_cast_output"], {"to": 1})
    scaled = o + "quant_scaled_output" if bias else o
    b += node_bytes(nm + "_quant_output_scale_mul", "Mul",
                    [o + "_output_quantized_cast_output", nm + "_quant_scales_mul:0"], [scaled])
    if bias:
        b += node_bytes("", "Reshape", [bias, o + "_bias_reshape_shape"], [o + "_bias_reshape_output"])
        b += node_bytes(o + "_bias_add", "Add", [scaled, o + "_bias_reshape_output"], [o])
        b += init_header_bytes(o + "_bias_reshape_shape", [4], 32) + 32
    return b


def charge_fp16(xs: list[XNode], source: Graph, consumers: Mapping[str, list[XNode]], vals: Mapping[str, Value],
                add: Charge) -> None:
    """The fp16 converter (keep_io_types): a Cast per float graph input and output, named
    graph_input_cast{i} / graph_output_cast{i}, with their outputs' value_info."""
    for i, v in enumerate(x for x in source.inputs if is_float_value(vals.get(x))):
        cs = consumers.get(v, [])
        if cs:
            new = f"graph_input_cast_{i}"
            add(cs[0].task, "fp16", node_bytes(f"graph_input_cast{i}", "Cast", [v], [new], {"to": 10})
                + len(cs) * (len(new) - len(v)) + value_info_bytes(new, vals[v].shape))
    producer = {o: x for x in xs for o in x.outputs}
    for i, v in enumerate(x for x in source.outputs if is_float_value(vals.get(x))):
        p = producer.get(v)
        if p is not None:
            new = f"graph_output_cast_{i}"
            add(p.task, "fp16", node_bytes(f"graph_output_cast{i}", "Cast", [new], [v], {"to": 1})
                + len(new) - len(v) + value_info_bytes(new, vals[v].shape))


def fp16_kept_nodes(xs: list[XNode]) -> list[XNode]:
    """The nodes fp16 keeps fp32 (compiler.optimize.onnx_rules.fp16_kept: a ScatterND with a reduction, a batch
    Transpose into a MatMul), which the exporter blocks in ORT's fp16 converter."""
    from compiler.optimize.onnx_rules import FP16_KEPT, rule_op

    readers = {v for x in xs if x.op == "MatMul" for v in x.inputs[:2]}
    out = []
    for x in xs:
        red = x.attrs.get("reduction")
        op = rule_op(x.op, red.decode() if isinstance(red, bytes) else str(red or ""),
                     [int(p) for p in x.attrs.get("perm") or []], any(o in readers for o in x.outputs))
        if op.endswith(FP16_KEPT):
            out.append(x)
    return out


def charge_fp16_kept(xs: list[XNode], inits: Mapping[str, Const], consumers: Mapping[str, list[XNode]],
                     vals: Mapping[str, Value], next_task: Callable[[XNode], int], add: Charge) -> None:
    """The Casts around each node fp16 keeps fp32 (fp16_kept_nodes): a float input v read through
    `<v>_cast_to_fp32_node` (output `<v>_cast_to_fp32`), a float output o written as `<o>_cast_to_fp16` and cast back
    to o by `<o>_cast_to_fp16_node`, each new tensor with its value_info. The node is written fp32, so no fp16 event
    is its own: each Cast goes to its fp16 side, an input's to its producer's task (`next_task` of the node where
    that is kept or folded) and an output's (with o's value_info, which the converter also writes) to
    `next_task(node)`, the first task downstream that is not kept fp32."""
    kept = fp16_kept_nodes(xs)
    kept_tasks = {x.task for x in kept}
    producer = {o: x for x in xs for o in x.outputs}
    for x in kept:
        down = next_task(x)
        for v in dict.fromkeys(x.inputs):
            p = producer.get(v)
            if v and v not in inits and p is not None and is_float_value(vals.get(v)):
                new = f"{v}_cast_to_fp32"
                add(p.task if p.task >= 0 and p.task not in kept_tasks else down, "fp16",
                    node_bytes(f"{new}_node", "Cast", [v], [new], {"to": 1})
                    + value_info_bytes(new, vals[v].shape) + x.inputs.count(v) * (len(new) - len(v)))
        for o in x.outputs:
            if consumers.get(o) and is_float_value(vals.get(o)):
                new = f"{o}_cast_to_fp16"
                add(down, "fp16", node_bytes(f"{new}_node", "Cast", [new], [o], {"to": 10})
                    + value_info_bytes(new, vals[o].shape) + value_info_bytes(o, vals[o].shape) + len(new) - len(o))


def charge_int4(xs: list[XNode], inits: Mapping[str, Const], owner: Mapping[str, int], add: Charge) -> None:
    """MatMulNBitsQuantizer (block 128): each MatMul with a 2-D weight becomes `<name>_Q4` (com.microsoft),
    each weight `<w>_Q4` [N, blocks, 64], `<w>_scales` [N, blocks], `<w>_zero_points` [N, ceil(blocks/2)]."""
    for x in xs:
        w = kernel_of(x, inits)
        if w is None or x.op != "MatMul" or len(inits[w].dims) != 2:
            continue
        k, n = inits[w].dims
        blocks = -(-k // _INT4_BLOCK)
        b = -x.bytes() + node_bytes(x.name + "_Q4", "MatMulNBits",
                                    [x.inputs[0], w + "_Q4", w + "_scales", w + "_zero_points"], x.outputs,
                                    {"K": k, "N": n, "bits": 4, "block_size": _INT4_BLOCK}, "com.microsoft")
        if owner.get(w) == x.task:
            c = inits[w]
            b += (init_header_bytes(w + "_Q4", [n, blocks, _INT4_BLOCK // 2], n * blocks * _INT4_BLOCK // 2)
                  + init_header_bytes(w + "_scales", [n, blocks], 4 * n * blocks)
                  + init_header_bytes(w + "_zero_points", [n, -(-blocks // 2)], n * -(-blocks // 2))
                  - init_header_bytes(w, c.dims, c.data_bytes))
        add(x.task, "int4", b)


def charge_lut(xs: list[XNode], inits: Mapping[str, Const], owner: Mapping[str, int], bits: int, add: Charge) -> None:
    """Palettization (compiler.optimize.palette.palettize_nodes), once per weight."""
    done: set[str] = set()
    for x in xs:
        w = kernel_of(x, inits)
        if w is None or w in done or owner.get(w) != x.task:
            continue
        done.add(w)
        c = inits[w]
        add(x.task, f"lut{bits}", _lut_bytes(len(w.encode()), bits, tuple(c.dims), c.data_bytes))


@lru_cache(maxsize=4096)
def _lut_bytes(name_len: int, bits: int, dims: tuple[int, ...], data_bytes: int) -> int:
    """A palettized weight's records in place of its initializer's header: packed indices, a table, a shape
    and, for packed widths, the unpack constants; 9 decode nodes named `<w>__lut<b>/...` (3 for 6- and 8-bit
    indices, stored a byte each). Only the name's length matters, so sizes are cached by it."""
    w = "w" * name_len
    el = math.prod(dims)
    p = f"{w}__lut{bits}"
    per = 8 // bits if bits < 6 else 1
    b = -init_header_bytes(w, dims, data_bytes)
    b += init_header_bytes(f"{p}_table", [2 ** bits], 4 * 2 ** bits)
    b += init_header_bytes(f"{p}_idx", [-(-el // per)], -(-el // per))
    b += init_header_bytes(f"{p}_shape", [len(dims)], 8 * len(dims)) + 8 * len(dims)
    cur = f"{p}_idx"
    if bits < 6:
        for nm, size in (("shifts", per), ("mask", 1), ("axis", 8), ("zero", 8), ("n", 8), ("flat", 8)):
            b += init_header_bytes(f"{p}_{nm}", [per if nm == "shifts" else 1], size) + size
        b += node_bytes(f"{p}/Unsqueeze", "Unsqueeze", [cur, f"{p}_axis"], [f"{p}_u"])
        b += node_bytes(f"{p}/Shift", "BitShift", [f"{p}_u", f"{p}_shifts"], [f"{p}_s"], {"direction": "RIGHT"})
        b += node_bytes(f"{p}/And", "BitwiseAnd", [f"{p}_s", f"{p}_mask"], [f"{p}_m"])
        b += node_bytes(f"{p}/Flat", "Reshape", [f"{p}_m", f"{p}_flat"], [f"{p}_r"])
        b += node_bytes(f"{p}/Slice", "Slice", [f"{p}_r", f"{p}_zero", f"{p}_n"], [f"{p}_sl"])
        cur = f"{p}_sl"
    b += node_bytes(f"{p}/Cast", "Cast", [cur], [f"{p}_i64"], {"to": 7})
    b += node_bytes(f"{p}/Gather", "Gather", [f"{p}_table", f"{p}_i64"], [f"{p}_g"], {"axis": 0})
    return b + node_bytes(f"{p}/Reshape", "Reshape", [f"{p}_g", f"{p}_shape"], [w])
