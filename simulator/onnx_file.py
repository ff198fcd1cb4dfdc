"""The ONNX file `compiler.optimize.onnx_export` writes, record by record: its bytes beyond the weights'
values, and the bytes each option adds to every task.

The exporter starts from ORT's basic optimizations of the upload (constant folding, Identity removal,
BatchNormalization folded into its Conv, Gemm split into MatMul + Add) and then runs ORT's own tools. Every
node, initializer header and value_info they write is a protobuf record whose size follows from the names
they generate (`<t>_QuantizeLinear`, `<w>_quantized`, `<w>__lut4_idx`, ...). This module rebuilds the
exported graph's names from the source graph and sizes each record as protobuf encodes it. The values of the
weights (kernels, per-channel scales, tables) are simulator.backends.storage_bytes_per_kernel's business.

Records are charged to the compiled task that implements the node (a weight shared by several tasks to the
first, as its values are). Per-op overrides that quantize part of a model are close, not exact: the tools
then write value_info for every tensor, and a tensor between an int8 and a float task gets its Q/DQ pair once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from compiler.graph import Graph, Value

# What an option makes the exporter do to a task (simulator.backends.export_events says which apply).
EVENTS: tuple[str, ...] = ("static", "dynamic", "fp16", "int4", "lut1", "lut2", "lut4", "lut6", "lut8", "shapes")

# Model header of a file ORT saved (ir_version, producer, graph name, and the 9 opset domains ORT lists),
# measured on torch exports as the bytes beyond nodes, initializers and graph inputs/outputs.
_ORT_HEADER_BYTES = 228.0

# quantize_static's default op list (QLinearOpsRegistry + QDQRegistry of onnxruntime.quantization.registry).
_QDQ_OPS = frozenset({
    "ArgMax", "Conv", "ConvTranspose", "Gemm", "MatMul", "Add", "Mul", "Relu", "Clip", "LeakyRelu", "Sigmoid",
    "MaxPool", "GlobalAveragePool", "Split", "Pad", "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Resize",
    "AveragePool", "Concat", "Softmax", "Where", "Gather", "GatherElements", "Transpose", "EmbedLayerNormalization",
    "Slice", "InstanceNormalization", "LayerNormalization", "BatchNormalization", "TopK", "CumSum"})
# Ops quantized on their data input only whose output reuses that input's scale and zero point.
_QDQ_SHARED = frozenset({"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Slice", "AveragePool",
                         "MaxPool", "TopK", "Resize", "Pad", "Split"})
_QDQ_DATA_ONLY = _QDQ_SHARED | {"Gather", "GatherElements"}
_NORMS = frozenset({"LayerNormalization", "InstanceNormalization", "BatchNormalization"})
_WEIGHTED = frozenset({"Conv", "ConvTranspose", "Gemm", "MatMul"})
_INT4_BLOCK = 128  # MatMulNBitsQuantizer(block_size=128) in compiler/optimize/onnx_export.py


# -- protobuf sizes --------------------------------------------------------------------------------

def _varint(n: int) -> int:
    if 0 <= n < 128:
        return 1
    if n < 0:
        return 10  # negative int64 varints take ten bytes
    return (n.bit_length() + 6) // 7


def _ld(n: int) -> int:
    """A length-delimited field (1-byte tag) carrying n bytes."""
    return 1 + _varint(n) + n


def _str(s: str) -> int:
    n = len(s) if s.isascii() else len(s.encode())
    return n + (2 if n < 128 else 1 + _varint(n))


def _attr(name: str, value: Any) -> int:
    """One AttributeProto inside a node (its `type` field has a 2-byte tag)."""
    if isinstance(value, bool | int):
        v = 1 + _varint(int(value))
    elif isinstance(value, float):
        v = 5
    elif isinstance(value, str | bytes):
        v = _ld(len(value.encode() if isinstance(value, str) else value))
    elif isinstance(value, list | tuple):
        v = sum(5 if isinstance(x, float) else 1 + _varint(int(x)) if isinstance(x, int) else _str(str(x))
                for x in value)
    else:
        v = 16  # a tensor or graph attribute: not on nodes the exporter keeps
    return _ld(_str(name) + 3 + v)


def node_bytes(name: str, op: str, inputs: Sequence[str], outputs: Sequence[str],
               attrs: Mapping[str, Any] | None = None, domain: str = "") -> int:
    """A NodeProto as a GraphProto.node entry."""
    body = sum(_str(x) for x in inputs) + sum(_str(x) for x in outputs) + _str(op)
    body += _str(name) if name else 0
    body += _str(domain) if domain else 0
    body += sum(_attr(k, v) for k, v in (attrs or {}).items())
    return _ld(body)


def init_header_bytes(name: str, dims: Sequence[int], data_bytes: int) -> int:
    """A TensorProto initializer entry less its data: dims, data_type, name, raw_data's tag and length."""
    body = sum(1 + _varint(int(d)) for d in dims) + 2 + _str(name) + 1 + _varint(data_bytes)
    return 1 + _varint(body + data_bytes) + body


def value_info_bytes(name: str, shape: Sequence[Any] | None) -> int:
    """A ValueInfoProto (tensor type, elem type, shape with dim_value or dim_param)."""
    dims = sum(_ld(1 + _varint(d) if isinstance(d, int) and d >= 0 else _str(str(d))) for d in (shape or []))
    tensor = 2 + (_ld(dims) if shape is not None else 0)
    return _ld(_str(name) + _ld(_ld(tensor)))


# -- the exported fp32 graph -------------------------------------------------------------------------

@dataclass
class _XNode:
    """A node of the file the exporter starts from (ORT basic optimizations of the upload)."""

    name: str
    op: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any]
    domain: str
    task: int  # the compiled task that implements it, -1 if none
    size: int | None = None  # its record's bytes, once the graph is final

    def bytes(self) -> int:
        if self.size is None:
            self.size = node_bytes(self.name, self.op, self.inputs, self.outputs, self.attrs, self.domain)
        return self.size


@dataclass
class _Const:
    name: str
    dims: list[int]
    data_bytes: int
    floating: bool = True  # quantizers touch float tensors only


@dataclass
class ExportRecords:
    """`base`: bytes of the fp32 export beyond its weights' values. `events[i, e]`: bytes the exporter adds
    to task i under EVENTS[e] (negative where it removes records). `kernel[i]`: (elements, output channels,
    reduction length) of the kernel task i stores in the file, 0 where it stores none (a weight shared with
    an earlier task). `mapped[i]`: an exported node of task i reads a kernel (else `kernel[i]` says nothing
    and the compiled graph's figures stand)."""

    base: float
    events: np.ndarray
    kernel: np.ndarray
    mapped: np.ndarray


def _dims(v: Value | None) -> list[int]:
    if v is None or v.shape is None:
        return []
    return [d if isinstance(d, int) else 0 for d in v.shape]


def _nbytes(v: Value | None) -> int:
    if v is None:
        return 0
    if v.weight is not None:
        return int(v.weight.bytes)
    return int(v.bytes or 0)


def _exported(source: Graph, dropped: set[str], task_of: Mapping[str, int], consts: Mapping[str, Value],
              vals: dict[str, Value]) -> tuple[list[_XNode], set[str]]:
    """The source graph as ORT's basic level leaves it: no folded nodes, no Identity / Dropout, a
    BatchNormalization after a Conv folded into it (weights renamed ConvBnFusion_W_ / ConvBnFusion_BN_B_),
    a Gemm with a constant B split into MatMul + `<name>/bias` Add (compiler.optimize.onnx_export), its
    weight transposed to [K, N] if transB. Also returns the names of those transposed weights; `vals`
    learns the tensors it names."""
    transposed: set[str] = set()
    made: set[str] = set()
    alias: dict[str, str] = {}
    out: list[_XNode] = []
    producer: dict[str, _XNode] = {}
    uses: dict[str, int] = {}
    for nd in source.nodes:
        for v in nd.inputs:
            uses[v] = uses.get(v, 0) + 1
    for nd in source.nodes:
        ins = [alias.get(v, v) for v in nd.inputs]
        if nd.op_type in ("Identity", "Dropout") and ins and nd.outputs:
            alias[nd.outputs[0]] = ins[0]  # consumers read the input itself (a shared weight stays one)
            continue
        if nd.id in dropped:
            continue
        t = task_of.get(nd.id, -1)
        p = producer.get(ins[0]) if ins else None
        if (nd.op_type == "BatchNormalization" and p is not None and p.op == "Conv" and uses.get(ins[0]) == 1
                and all(v in consts for v in ins[1:])):
            p.inputs[1] = "ConvBnFusion_W_" + p.inputs[1]
            bias = "ConvBnFusion_BN_B_" + ins[2]
            if bias in made:  # ORT makes a taken name unique with a graph-wide counter
                bias += f"_token_{len(made)}"
            made.add(bias)
            p.inputs[2:] = [bias]
            p.outputs = list(nd.outputs)
            producer[nd.outputs[0]] = p
            continue
        a = dict(nd.attributes)
        if (nd.op_type == "Gemm" and len(ins) > 1 and ins[1] in consts and not a.get("transA", 0)
                and a.get("alpha", 1.0) == 1.0 and a.get("beta", 1.0) == 1.0):
            has_c = len(ins) > 2 and ins[2]
            mm_out = nd.outputs[0] + "__matmul" if has_c else nd.outputs[0]
            if a.get("transB", 0):
                transposed.add(ins[1])
            if nd.outputs[0] in vals:
                vals[mm_out] = vals[nd.outputs[0]]
            out.append(_XNode(nd.name, "MatMul", ins[:2], [mm_out], {}, "", t))
            if has_c:
                out.append(_XNode(nd.name + "/bias", "Add", [mm_out, ins[2]], list(nd.outputs), {}, "", t))
        else:
            out.append(_XNode(nd.name, nd.op_type, ins, list(nd.outputs), a, nd.domain, t))
        for o in out[-1].outputs:
            producer[o] = out[-1]
    return out, transposed


_RESHAPES = frozenset({"Reshape", "Squeeze", "Unsqueeze", "Flatten"})


def _layout_chains(xs: list[_XNode], vals: dict[str, Value], consts: Mapping[str, Value],
                   keep: set[str]) -> tuple[list[_XNode], dict[str, _Const]]:
    """ORT's transpose optimizer (basic level) on chains of layout ops whose tensors have one consumer:
    consecutive reshapes (Reshape, Squeeze, Unsqueeze, Flatten) become one `<first>_new_reshape` with a
    `<first>_new_shape` initializer, consecutive Transposes one, and a Transpose moves below a reshape that
    only inserts or removes size-1 dims (it is renamed `Transpose_token_<k>`). Only reshapes by constant
    shapes or axes fold. `keep`: graph outputs. Also returns the shape initializers it makes; `vals` learns
    the tensors it names."""
    uses: dict[str, int] = {}
    for x in xs:
        for v in x.inputs:
            uses[v] = uses.get(v, 0) + 1
    producer: dict[str, _XNode] = {}
    gone: set[int] = set()
    order: list[_XNode] = list(xs)
    made: dict[str, _Const] = {}

    def single(v: str) -> bool:
        return uses.get(v, 0) == 1 and v not in keep

    def reshape(x: _XNode) -> bool:
        return x.op in _RESHAPES and all(v in consts or v.endswith("_new_shape") for v in x.inputs[1:] if v)

    def merge_reshapes(p: _XNode, x: _XNode) -> None:
        base = p.name.removesuffix("_new_reshape")
        rank = len(vals[x.outputs[0]].shape or []) if x.outputs[0] in vals else 1
        p.name, p.op, p.attrs = base + "_new_reshape", "Reshape", {"allowzero": 0}
        p.inputs = [p.inputs[0], base + "_new_shape"]
        made[base + "_new_shape"] = _Const(base + "_new_shape", [rank], 8 * rank, False)
        p.outputs = list(x.outputs)
        gone.add(id(x))

    tokens = 0
    for i in range(len(order)):
        x = order[i]
        p = producer.get(x.inputs[0]) if x.inputs else None
        if p is not None and id(p) not in gone and single(x.inputs[0]):
            if reshape(x) and reshape(p):
                merge_reshapes(p, x)
                x = p
            elif x.op == "Transpose" and p.op == "Transpose":
                p.outputs = list(x.outputs)
                gone.add(id(x))
                x = p
            elif reshape(x) and p.op == "Transpose" and _unit_dims_only(vals, x):
                # The reshape now runs on the transpose's input (its output named after the node) and
                # takes the transpose's place; the transpose, renamed, takes the reshape's place.
                r = _XNode(x.name, x.op, [p.inputs[0]] + x.inputs[1:], [x.name], dict(x.attrs), x.domain, x.task)
                vals[x.name] = vals[x.outputs[0]]  # the same dims, in the transpose's input order
                uses[x.name] = 1
                p.name, p.inputs, p.outputs = f"Transpose_token_{tokens}", [x.name], list(x.outputs)
                tokens += 1
                order[order.index(p)], order[i] = r, p
                producer[x.name] = r
                pp = producer.get(r.inputs[0])
                if pp is not None and id(pp) not in gone and reshape(pp) and single(r.inputs[0]):
                    merge_reshapes(pp, r)
                    producer[x.name] = pp
                x = p
        for o in x.outputs:
            producer[o] = x
    return [x for x in order if id(x) not in gone], made


def _share_scalars(xs: list[_XNode], consts: Mapping[str, Value]) -> None:
    """ORT's constant sharing (basic level): one-element initializers of equal type, shape and value become
    one (a Clip's 0 and 6 in every block). A one-element tensor's statistics are its value."""
    first: dict[tuple[Any, ...], str] = {}
    for x in xs:
        for k, v in enumerate(x.inputs):
            c = consts.get(v)
            if c is None or c.weight is None or c.weight.elements != 1 or c.weight.min != c.weight.max:
                continue
            x.inputs[k] = first.setdefault((c.dtype, tuple(c.shape or ()), c.weight.min), v)


def _unit_dims_only(vals: Mapping[str, Value], x: _XNode) -> bool:
    """The reshape only inserts or removes size-1 dims (so a transpose commutes with it)."""
    a, b = vals.get(x.inputs[0]), vals.get(x.outputs[0])
    if a is None or b is None or not a.is_static or not b.is_static:
        return False
    return [d for d in a.shape if d != 1] == [d for d in b.shape if d != 1]  # type: ignore[union-attr]


def export_records(source: Graph, compiled: Graph, weighted: Sequence[bool]) -> ExportRecords:
    """Records of the ONNX export of `source`, charged to the tasks of `compiled` (`weighted[i]`: task i
    holds a kernel, so a source node it shares with a weightless task, e.g. an NCHWc reorder, is its)."""
    from simulator.costs import fold_constants

    n = len(compiled.nodes)
    task_of: dict[str, int] = {}
    for i, nd in enumerate(compiled.nodes):
        for s in nd.source_nodes or [nd.id]:
            j = task_of.get(s)
            if j is None or (weighted[i] and not weighted[j]):
                task_of[s] = i
    view, folded = fold_constants(source)
    vals = dict(view.values)
    consts = {k: v for k, v in vals.items() if v.weight is not None}
    dropped = set(folded) | set(compiled.eliminated)
    for nd in source.nodes:  # what the runtime folds at load is an initializer of the file
        if nd.id in dropped:
            consts.update({o: vals[o] for o in nd.outputs if o in vals and o not in consts})
    xs, transposed = _exported(source, dropped, task_of, consts, vals)
    xs, made = _layout_chains(xs, vals, consts, set(source.outputs))
    _share_scalars(xs, consts)

    # Initializers the exported file holds: every constant a kept node reads (renamed ones sized as the
    # originals: ORT's fused BatchNorm weight has the conv's shape, its bias one value per channel).
    inits: dict[str, _Const] = {}
    for x in xs:
        for v in x.inputs:
            orig = v.removeprefix("ConvBnFusion_W_")
            if v.startswith("ConvBnFusion_BN_B_"):
                w = vals.get(x.inputs[1].removeprefix("ConvBnFusion_W_"))
                c = _dims(w)[0] if w is not None and _dims(w) else 1
                inits.setdefault(v, _Const(v, [c], 4 * c))
            elif orig in consts and v not in inits:
                d = _dims(consts[orig])
                inits[v] = _Const(v, d[::-1] if orig in transposed else d, _nbytes(consts[orig]),
                                  _is_float(consts[orig]))
    read = {v for x in xs for v in x.inputs}
    inits.update({name: c for name, c in made.items() if name in read})
    base = _ORT_HEADER_BYTES + sum(x.bytes() for x in xs)
    base += sum(init_header_bytes(c.name, c.dims, c.data_bytes) for c in inits.values())
    base += sum(value_info_bytes(v, vals[v].shape if v in vals else None) for v in source.inputs + source.outputs)

    ev = np.zeros((n, len(EVENTS)))
    kern = np.zeros((n, 3))
    col = {e: j for j, e in enumerate(EVENTS)}
    consumers: dict[str, list[_XNode]] = {}
    for x in xs:
        for v in x.inputs:
            consumers.setdefault(v, []).append(x)
    owner: dict[str, int] = {}  # initializer -> the task that stores it (the first that reads it)
    for x in xs:
        for v in x.inputs:
            if v in inits:
                owner.setdefault(v, x.task)

    def add(task: int, event: str, b: float) -> None:
        if task >= 0:
            ev[task, col[event]] += b

    graph_out = set(source.outputs)
    # Stored kernels: the unpadded source weight, once.
    for x in xs:
        w = _kernel(x, inits)
        if w is not None and owner.get(w) == x.task and x.task >= 0 and kern[x.task, 0] == 0:
            kern[x.task] = _kernel_shape(x, inits[w])

    # value_info: quantize_static / quantize_dynamic / the fp16 converter run shape inference and keep a
    # record of every intermediate tensor's type and shape. Under static int8 and fp16 every task takes
    # its own; under dynamic int8 only weighted tasks change, so they share the whole model's.
    vi_total = 0.0
    for x in xs:
        for o in x.outputs:
            if o not in graph_out:
                b = value_info_bytes(o, vals[o].shape if o in vals else None)
                vi_total += b
                add(x.task, "shapes", b)
    dyn_tasks = {x.task for x in xs if x.op in ("Conv", "MatMul") and _kernel(x, inits) is not None and x.task >= 0}
    for t in dyn_tasks:
        add(t, "dynamic", vi_total / len(dyn_tasks))

    _static(xs, inits, consumers, graph_out, owner, vals, add)
    _dynamic(xs, inits, owner, add)
    _fp16(xs, source, consumers, vals, add)
    _int4(xs, inits, owner, add)
    for bits in (1, 2, 4, 6, 8):
        _lut(xs, inits, owner, bits, add)
    mapped = np.zeros(n, dtype=bool)
    mapped[[x.task for x in xs if x.task >= 0 and _kernel(x, inits) is not None]] = True
    return ExportRecords(float(base), ev, kern, mapped)


def _kernel(x: _XNode, inits: Mapping[str, _Const]) -> str | None:
    """The weight an option acts on (compiler.optimize.onnx_export.kernel_input)."""
    if x.op in _WEIGHTED and len(x.inputs) > 1 and x.inputs[1] in inits and len(inits[x.inputs[1]].dims) >= 2:
        return x.inputs[1]
    return None


def _kernel_shape(x: _XNode, w: _Const) -> tuple[float, float, float]:
    """(elements, output channels, reduction length): MatMul weights are [K, N], conv kernels [C_out, ...]."""
    el = float(math.prod(w.dims))
    rows = float(w.dims[-1] if x.op == "MatMul" else w.dims[0]) or 1.0
    return el, rows, el / rows


# -- what each tool adds --------------------------------------------------------------------------

_Add = Callable[[int, str, float], None]  # charge bytes of an event to a task


def _static(xs: list[_XNode], inits: Mapping[str, _Const], consumers: Mapping[str, list[_XNode]],
            graph_out: set[str], owner: Mapping[str, int], vals: Mapping[str, Value], add: _Add) -> None:
    """quantize_static, QDQ format, per channel: a Q + DQ pair per activation tensor, a DQ per weight, bias
    and other float constant, scale / zero point initializers; Relu / Clip after a quantized op vanish."""
    q = [x for x in xs if x.op in _QDQ_OPS]
    producer = {o: x for x in xs for o in x.outputs}
    charged: dict[str, int] = {}  # tensor -> task paying its records
    role: dict[str, str] = {}  # constant -> "weight" | "bias" | "const"
    bias_uses: dict[str, list[_XNode]] = {}
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
            if not (inits[v].floating if v in inits else _is_float(vals.get(v))):
                continue  # shape tensors, indices, masks stay as they are
            if v in inits:
                r = ("bias" if (x.op in ("Conv", "ConvTranspose", "Gemm") or x.op in _NORMS) and k == 2 else
                     "weight" if (x.op in _WEIGHTED or x.op in _NORMS) and k == 1 else "const")
                role.setdefault(v, r)
                if r == "bias":
                    bias_uses.setdefault(v, []).append(x)
            else:
                p = producer.get(v)
                charged.setdefault(v, p.task if p is not None and id(p) in qset else x.task)
        for o in x.outputs:
            if not _is_float(vals.get(o)):
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


def _bias(w: str, c: _Const, dims: list[int], uses: list[_XNode], add: _Add) -> None:
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


def _norm_param(w: str, consumers: Mapping[str, list[_XNode]]) -> bool:
    """LayerNormalization's scale and bias are quantized per tensor."""
    return any(c.op in _NORMS for c in consumers.get(w, []))


def _rows_dim(w: str, c: _Const, consumers: Mapping[str, list[_XNode]]) -> int:
    """Per-channel axis of a weight: output channels (axis 0 of a conv kernel, the last of a MatMul's)."""
    return c.dims[-1] if any(x.op == "MatMul" for x in consumers.get(w, [])) else c.dims[0]


def _dynamic(xs: list[_XNode], inits: Mapping[str, _Const], owner: Mapping[str, int], add: _Add) -> None:
    """quantize_dynamic: each Conv / MatMul with a weight becomes DynamicQuantizeLinear (once per input
    tensor) + ConvInteger / MatMulInteger + Cast + two Muls (+ Reshape and Add of a conv's bias); each
    weight becomes `<w>_quantized` with a scalar scale and zero point."""
    seen_in: set[str] = set()
    for x in xs:
        w = _kernel(x, inits)
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


def _fp16(xs: list[_XNode], source: Graph, consumers: Mapping[str, list[_XNode]], vals: Mapping[str, Value],
          add: _Add) -> None:
    """The fp16 converter (keep_io_types): a Cast per float graph input and output, named
    graph_input_cast{i} / graph_output_cast{i}, with their outputs' value_info."""
    for i, v in enumerate(x for x in source.inputs if _is_float(vals.get(x))):
        cs = consumers.get(v, [])
        if cs:
            new = f"graph_input_cast_{i}"
            add(cs[0].task, "fp16", node_bytes(f"graph_input_cast{i}", "Cast", [v], [new], {"to": 10})
                + len(cs) * (len(new) - len(v)) + value_info_bytes(new, vals[v].shape))
    producer = {o: x for x in xs for o in x.outputs}
    for i, v in enumerate(x for x in source.outputs if _is_float(vals.get(x))):
        p = producer.get(v)
        if p is not None:
            new = f"graph_output_cast_{i}"
            add(p.task, "fp16", node_bytes(f"graph_output_cast{i}", "Cast", [new], [v], {"to": 1})
                + len(new) - len(v) + value_info_bytes(new, vals[v].shape))


def _is_float(v: Value | None) -> bool:
    return v is not None and v.dtype in ("float32", "float16", "float64", "bfloat16")


def _int4(xs: list[_XNode], inits: Mapping[str, _Const], owner: Mapping[str, int], add: _Add) -> None:
    """MatMulNBitsQuantizer (block 128): each MatMul with a 2-D weight becomes `<name>_Q4` (com.microsoft),
    each weight `<w>_Q4` [N, blocks, 64], `<w>_scales` [N, blocks], `<w>_zero_points` [N, ceil(blocks/2)]."""
    for x in xs:
        w = _kernel(x, inits)
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


def _lut(xs: list[_XNode], inits: Mapping[str, _Const], owner: Mapping[str, int], bits: int, add: _Add) -> None:
    """Palettization (compiler.optimize.onnx_export._palettize_nodes), once per weight."""
    done: set[str] = set()
    for x in xs:
        w = _kernel(x, inits)
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


def iter_events(c_input: str, c_output: str, kernel: str, dynamic: bool) -> Iterable[str]:
    """The events an exporter choice triggers (compiler.optimize.onnx_export's steps, in its terms)."""
    static = "int8" in (c_input, c_output)
    if static:
        yield "static"
    if c_input == "fp16" or kernel == "fp16":
        yield "fp16"
    if dynamic and kernel == "int8" and not static:
        yield "dynamic"
    if static or c_input == "fp16" or kernel == "fp16":
        yield "shapes"
    if kernel == "int4":
        yield "int4"
    if kernel.startswith("lut"):
        yield kernel
