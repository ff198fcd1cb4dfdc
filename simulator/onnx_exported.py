"""The fp32 file compiler.optimize.onnx_export starts from, rebuilt from the source graph: ORT's basic
optimizations of the upload (folded constants and Identity / Dropout gone, BatchNormalization folded into its
Conv, Gemm split into MatMul + Add, layout chains merged) as nodes and initializers named as ORT names them.
simulator.onnx_file sizes it; simulator.onnx_tools adds what each quantizer writes on top."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from compiler.graph import Graph, Value
from simulator.onnx_proto import node_bytes, subgraph_bytes

WEIGHTED_OPS = frozenset({"Conv", "ConvTranspose", "Gemm", "MatMul"})  # the ops whose weight an option acts on


@dataclass
class XNode:
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
class Const:
    name: str
    dims: list[int]
    data_bytes: int
    floating: bool = True  # quantizers touch float tensors only


def shape_dims(v: Value | None) -> list[int]:
    if v is None or v.shape is None:
        return []
    return [d if isinstance(d, int) else 0 for d in v.shape]


def value_nbytes(v: Value | None) -> int:
    if v is None:
        return 0
    if v.weight is not None:
        return int(v.weight.bytes)
    return int(v.bytes or 0)


def _with_graph_bytes(v: Any, vals: Mapping[str, Value]) -> Any:
    """A body attribute ({"graph", "inputs", "outputs"} from the frontend) with its record's bytes; others as they are."""
    if not isinstance(v, dict) or "graph" not in v:
        return v

    def io(names: Any) -> list[tuple[str, Any]]:
        return [(n, vals[n].shape if n in vals else None) for n in names or []]
    return {**v, "graph_bytes": subgraph_bytes(str(v["graph"]), io(v.get("inputs")), io(v.get("outputs")))}


def _float_cast(attributes: Mapping[str, object], v: Value | None) -> bool:
    """A Cast from an fp16 / fp32 tensor to fp16 / fp32 (TensorProto FLOAT = 1, FLOAT16 = 10)."""
    return attributes.get("to") in (1, 10) and v is not None and v.dtype in ("float16", "float32")


def exported_nodes(source: Graph, dropped: set[str], task_of: Mapping[str, int], consts: Mapping[str, Value],
                   vals: dict[str, Value]) -> tuple[list[XNode], set[str]]:
    """The source graph as ORT's basic level leaves it: no folded nodes, no Identity / Dropout, a
    BatchNormalization after a Conv folded into it (weights renamed ConvBnFusion_W_ / ConvBnFusion_BN_B_),
    a Gemm with a constant B split into MatMul + `<name>/bias` Add (compiler.optimize.onnx_export), its
    weight transposed to [K, N] if transB. Also returns the names of those transposed weights; `vals`
    learns the tensors it names. As the exporter does, a Gemm inside an If / Loop / Scan body stays a Gemm, and so
    does a top-level transB Gemm whose weight a body or an untransposed Gemm also reads (its layout is kept)."""
    transposed: set[str] = set()
    keep_layout = {v for nd in source.nodes if nd.parent for v in nd.inputs}
    keep_layout |= {nd.inputs[1] for nd in source.nodes if nd.op_type == "Gemm" and not nd.parent
                    and len(nd.inputs) > 1 and not nd.attributes.get("transB", 0)}
    made: set[str] = set()
    alias: dict[str, str] = {}
    out: list[XNode] = []
    producer: dict[str, XNode] = {}
    uses: dict[str, int] = {}
    for nd in source.nodes:
        for v in nd.inputs:
            uses[v] = uses.get(v, 0) + 1
    # The exporter restores a file's fp16 values to fp32 (compiler/optimize/onnx_fp16.py), which leaves its Casts
    # between float tensors as no-ops it removes: its readers read the Cast's input.
    restored = any(v.weight is not None and v.dtype == "float16" for v in source.values.values())
    for nd in source.nodes:
        ins = [alias.get(v, v) for v in nd.inputs]
        if restored and nd.op_type == "Cast" and ins and nd.outputs and _float_cast(nd.attributes, vals.get(ins[0])):
            alias[nd.outputs[0]] = ins[0]
            continue
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
        a = {k: _with_graph_bytes(v, vals) for k, v in nd.attributes.items()}
        if (nd.op_type == "Gemm" and len(ins) > 1 and ins[1] in consts and not a.get("transA", 0)
                and a.get("alpha", 1.0) == 1.0 and a.get("beta", 1.0) == 1.0 and not nd.parent
                and not (a.get("transB", 0) and keep_layout & {ins[1], nd.inputs[1]})):
            has_c = len(ins) > 2 and ins[2]
            mm_out = nd.outputs[0] + "__matmul" if has_c else nd.outputs[0]
            if a.get("transB", 0):
                transposed.add(ins[1])
            if nd.outputs[0] in vals:
                vals[mm_out] = vals[nd.outputs[0]]
            out.append(XNode(nd.name, "MatMul", ins[:2], [mm_out], {}, "", t))
            if has_c:
                out.append(XNode(nd.name + "/bias", "Add", [mm_out, ins[2]], list(nd.outputs), {}, "", t))
        else:
            out.append(XNode(nd.name, nd.op_type, ins, list(nd.outputs), a, nd.domain, t))
        for o in out[-1].outputs:
            producer[o] = out[-1]
    return out, transposed


_RESHAPES = frozenset({"Reshape", "Squeeze", "Unsqueeze", "Flatten"})


def layout_chains(xs: list[XNode], vals: dict[str, Value], consts: Mapping[str, Value],
                  keep: set[str]) -> tuple[list[XNode], dict[str, Const]]:
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
    producer: dict[str, XNode] = {}
    gone: set[int] = set()
    order: list[XNode] = list(xs)
    made: dict[str, Const] = {}

    def single(v: str) -> bool:
        return uses.get(v, 0) == 1 and v not in keep

    def reshape(x: XNode) -> bool:
        return x.op in _RESHAPES and all(v in consts or v.endswith("_new_shape") for v in x.inputs[1:] if v)

    def merge_reshapes(p: XNode, x: XNode) -> None:
        base = p.name.removesuffix("_new_reshape")
        rank = len(vals[x.outputs[0]].shape or []) if x.outputs[0] in vals else 1
        p.name, p.op, p.attrs = base + "_new_reshape", "Reshape", {"allowzero": 0}
        p.inputs = [p.inputs[0], base + "_new_shape"]
        made[base + "_new_shape"] = Const(base + "_new_shape", [rank], 8 * rank, False)
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
                r = XNode(x.name, x.op, [p.inputs[0]] + x.inputs[1:], [x.name], dict(x.attrs), x.domain, x.task)
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


def share_scalars(xs: list[XNode], consts: Mapping[str, Value]) -> None:
    """ORT's constant sharing (basic level): one-element initializers of equal type, shape and value become
    one (a Clip's 0 and 6 in every block). A one-element tensor's statistics are its value."""
    first: dict[tuple[Any, ...], str] = {}
    for x in xs:
        for k, v in enumerate(x.inputs):
            c = consts.get(v)
            if c is None or c.weight is None or c.weight.elements != 1 or c.weight.min != c.weight.max:
                continue
            x.inputs[k] = first.setdefault((c.dtype, tuple(c.shape or ()), c.weight.min), v)


def share_made(xs: list[XNode], source: Graph, made: frozenset[str]) -> None:
    """ORT's common-subexpression elimination before its constant folding: nodes of one type and attributes that read
    equal inputs compute one value, so constants the upload makes by the same recipe from equal stored values are one
    initializer (the onnx wheel's light_squeezenet makes its 26 conv weights by `ConstantOfShape` of 22 distinct
    shapes: 18 stored, and every option's file was predicted 33% large). A stored input counts by its value where
    the graph keeps it (small integer tensors: shapes, axes), else by name, as an activation is. The graph keeps no
    tensor attribute's values (a `ConstantOfShape` fill), so recipes differing only there are taken as equal. Keys are
    numbered as they are made: nested whole, a key reaching back through the network (PiT-Ti's) hung the analysis."""
    producer = {o: nd for nd in source.nodes if not nd.parent for o in nd.outputs}
    keys: dict[str, int] = {}
    interned: dict[Any, int] = {}  # a recipe's key holds its inputs' numbers, never their whole recipes

    def key(v: str) -> int:
        if v not in keys:
            nd, val = producer.get(v), source.values.get(v)
            if v in made and nd is not None:
                k: Any = (nd.op_type, nd.domain, repr(sorted(nd.attributes.items())),
                          tuple(key(i) for i in nd.inputs), nd.outputs.index(v))
            else:  # stored, or a value made at run time from activations (Shape of a static map): itself
                ints = val.weight.ints if val is not None and val.weight is not None else None
                k = ("stored", val.dtype, tuple(val.shape or ()), ints) if ints is not None and val else ("value", v)
            keys[v] = interned.setdefault(k, len(interned))
        return keys[v]

    first: dict[Any, str] = {}
    for x in xs:
        for k, v in enumerate(x.inputs):
            if v in made:
                x.inputs[k] = first.setdefault(key(v), v)


def _unit_dims_only(vals: Mapping[str, Value], x: XNode) -> bool:
    """The reshape only inserts or removes size-1 dims (so a transpose commutes with it)."""
    a, b = vals.get(x.inputs[0]), vals.get(x.outputs[0])
    if a is None or b is None or not a.is_static or not b.is_static:
        return False
    return [d for d in a.shape if d != 1] == [d for d in b.shape if d != 1]  # type: ignore[union-attr]


def kernel_of(x: XNode, inits: Mapping[str, Const]) -> str | None:
    """The weight an option acts on (compiler.optimize.onnx_export.kernel_input)."""
    if x.op in WEIGHTED_OPS and len(x.inputs) > 1 and x.inputs[1] in inits and len(inits[x.inputs[1]].dims) >= 2:
        return x.inputs[1]
    return None


def kernel_shape(x: XNode, w: Const) -> tuple[float, float, float]:
    """(elements, output channels, reduction length): MatMul weights are [K, N], conv kernels [C_out, ...]."""
    el = float(math.prod(w.dims))
    rows = float(w.dims[-1] if x.op == "MatMul" else w.dims[0]) or 1.0
    return el, rows, el / rows


def is_float_value(v: Value | None) -> bool:
    return v is not None and v.dtype in ("float32", "float16", "float64", "bfloat16")
