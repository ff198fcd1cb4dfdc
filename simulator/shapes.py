"""Fill activation shapes the ONNX shape inference could not (ORT's NCHWc and com.microsoft ops).

A compiled ORT graph loads with shapes up to the first op ONNX does not know, and none after. Costs
need shapes, so this propagates them through the ops compiled graphs contain. Shapes that cannot be
derived (Reshape to a computed shape) stay unknown; costs then count what is known and say so.
"""

from __future__ import annotations

import dataclasses
import math

from compiler.concrete import reshaped
from compiler.graph import Graph, Node, Value

# Same shape as the first input.
_SAME = frozenset({
    "Relu", "Clip", "Sigmoid", "Tanh", "Erf", "Gelu", "FastGelu", "BiasGelu", "QuickGelu", "HardSwish",
    "HardSigmoid", "LeakyRelu", "Elu", "Softplus", "Exp", "Log", "Sqrt", "Neg", "Abs", "Reciprocal", "Cast",
    "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "Softmax", "LogSoftmax", "QLinearSoftmax",
    "LayerNormalization", "SkipLayerNormalization", "SimplifiedLayerNormalization", "SkipSimplifiedLayerNormalization",
    "BatchNormalization", "InstanceNormalization", "GroupNorm", "Identity", "Dropout", "Round", "Floor", "Ceil",
    "QLinearSigmoid", "QLinearLeakyRelu", "BiasDropout", "RotaryEmbedding", "Silu", "Mish", "Not", "Sign",
})
_BROADCAST = frozenset({"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Where", "Equal", "Less", "Greater", "And",
                        "Or", "PRelu", "Sum", "Mean", "BiasAdd", "QLinearAdd", "QLinearMul"})
_CONV = frozenset({"Conv", "FusedConv", "QLinearConv", "ConvInteger", "NhwcFusedConv"})
_POOL = frozenset({"MaxPool", "AveragePool", "QLinearAveragePool", "LpPool"})
_GLOBAL = frozenset({"GlobalAveragePool", "GlobalMaxPool", "QLinearGlobalAveragePool"})
_MATMUL = frozenset({"MatMul", "FusedMatMul", "MatMulInteger", "QLinearMatMul", "MatMulIntegerToFloat",
                     "DynamicQuantizeMatMul", "Gemm", "FusedGemm", "QGemm", "MatMulNBits"})


def _static(v: Value | None) -> list[int] | None:
    return list(v.shape) if v is not None and v.is_static else None  # type: ignore[arg-type]


def _broadcast(shapes: list[list[int]]) -> list[int] | None:
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        dims = {s[i - rank + len(s)] for s in shapes if i - rank + len(s) >= 0}
        dims.discard(1)
        if len(dims) > 1:
            return None
        out.append(dims.pop() if dims else 1)
    return out


def _spatial(node: Node, x: list[int], kernel: list[int]) -> list[int]:
    a = node.attributes
    n = len(kernel)
    strides = a.get("strides") or [1] * n
    dil = a.get("dilations") or [1] * n
    pads = a.get("pads") or [0] * (2 * n)
    auto = a.get("auto_pad", "NOTSET")
    out = []
    for i in range(n):
        size = x[2 + i]
        if auto in ("SAME_UPPER", "SAME_LOWER", b"SAME_UPPER", b"SAME_LOWER"):
            out.append(math.ceil(size / strides[i]))
            continue
        eff = (kernel[i] - 1) * dil[i] + 1
        num = size + pads[i] + pads[i + n] - eff
        out.append((math.ceil(num / strides[i]) if a.get("ceil_mode") else num // strides[i]) + 1)
    return out


def _infer(node: Node, g: Graph) -> list[list[int] | None]:
    op = node.op_type
    ins = [_static(g.values.get(v)) if v else None for v in node.inputs]
    x = ins[0] if ins else None
    if op == "ReorderInput" and x is not None:
        if node.attributes.get("channels_last"):
            return [[x[0], x[-1], *x[1:-1]]]
        return [x]
    if op == "ReorderOutput" and x is not None:
        c = int(node.attributes.get("channels", x[1]))
        if node.attributes.get("channels_last"):
            return [[x[0], *x[2:], c]]
        return [[x[0], c, *x[2:]]]
    if op in _SAME and x is not None:
        return [x] + [None] * (len(node.outputs) - 1)
    if op in _BROADCAST:
        known = [s for s in ins if s is not None]
        if known and len(known) == len([v for v in node.inputs if v]):
            return [_broadcast(known)]
        return [None]
    if op in _CONV and x is not None:
        w = ins[3] if op == "QLinearConv" else (ins[1] if len(ins) > 1 else None)
        if w is None:
            return [None]
        ks = node.attributes.get("kernel_shape") or w[2:]
        return [[x[0], w[0], *_spatial(node, x, list(ks))]]
    if op in _POOL and x is not None:
        ks = node.attributes.get("kernel_shape")
        return [[x[0], x[1], *_spatial(node, x, list(ks))]] if ks else [None]
    if op in _GLOBAL and x is not None:
        return [[x[0], x[1]] + [1] * (len(x) - 2)]
    if op == "Upsample" and x is not None and node.attributes.get("scales"):
        return [[int(d * s) for d, s in zip(x, node.attributes["scales"])]]
    if op in _MATMUL and x is not None:
        if op == "MatMulNBits":
            return [[*x[:-1], int(node.attributes.get("N", 0))]]
        b = ins[3] if op in ("QLinearMatMul", "QGemm") else (ins[1] if len(ins) > 1 else None)
        if b is None:
            return [None]
        if op in ("Gemm", "FusedGemm", "QGemm"):
            m = x[1] if node.attributes.get("transA") else x[0]
            n = b[0] if node.attributes.get("transB") else b[1]
            return [[m, n]]
        if len(b) == 1:
            return [x[:-1]]
        batch = _broadcast([x[:-2], b[:-2]]) if len(x) > 2 or len(b) > 2 else []
        return [None] if batch is None else [[*batch, x[-2] if len(x) > 1 else 1, b[-1]]]
    if op == "Reshape" and x is not None and len(node.inputs) > 1:
        sv = g.values.get(node.inputs[1])
        w = sv.weight if sv is not None else None
        target = reshaped(x, list(w.ints), bool(node.attributes.get("allowzero"))) if w and w.ints is not None else None
        return [target]
    if op == "Transpose" and x is not None:
        perm = node.attributes.get("perm") or list(reversed(range(len(x))))
        return [[x[p] for p in perm]]
    if op == "Flatten" and x is not None:
        ax = int(node.attributes.get("axis", 1)) % (len(x) or 1) if x else 1
        return [[math.prod(x[:ax]), math.prod(x[ax:])]]
    if op == "Concat":
        if all(s is not None for s in ins) and ins:
            ax = int(node.attributes.get("axis", 0)) % len(ins[0])  # type: ignore[arg-type]
            out = list(ins[0])  # type: ignore[arg-type]
            out[ax] = sum(s[ax] for s in ins)  # type: ignore[index]
            return [out]
        return [None]
    if op in ("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin") and x is not None:
        axes = node.attributes.get("axes")
        if axes is None:
            return [None]
        axes = [a % len(x) for a in axes]
        keep = int(node.attributes.get("keepdims", 1))
        return [[1 if i in axes else d for i, d in enumerate(x)] if keep else
                [d for i, d in enumerate(x) if i not in axes]]
    if op == "Attention" and x is not None and len(ins) > 1 and ins[1] is not None:
        return [[*x[:-1], ins[1][-1] // 3]] + [None] * (len(node.outputs) - 1)
    if op == "MultiHeadAttention" and x is not None:
        return [x] + [None] * (len(node.outputs) - 1)
    return [None] * len(node.outputs)


def fill_shapes(graph: Graph, source: Graph | None = None) -> Graph:
    """A copy of `graph` whose unknown activation shapes are taken from `source` (same value name:
    ORT keeps value names through its fusions) or propagated where the op allows."""
    missing = [o for n in graph.nodes for o in n.outputs if o and not (graph.values.get(o) and graph.values[o].is_static)]
    if not missing:
        return graph
    values = dict(graph.values)
    if source is not None:
        for name in missing:
            sv = source.values.get(name)
            if sv is not None and sv.is_static and sv.weight is None:
                old = values.get(name)
                values[name] = Value(name=name, shape=list(sv.shape), dtype=sv.dtype,  # type: ignore[arg-type]
                                     weight=old.weight if old else None, quant=old.quant if old else None)
    view = dataclasses.replace(graph, values=values)
    for nd in graph.nodes:
        if all(values.get(o) is not None and values[o].is_static for o in nd.outputs if o):
            continue
        try:
            shapes = _infer(nd, view)
        except (IndexError, KeyError, TypeError, ValueError, ZeroDivisionError):
            continue  # an attribute we did not expect: leave the shape unknown
        for o, s in zip(nd.outputs, shapes):
            if not o or s is None:
                continue
            old = values.get(o)
            if old is not None and old.is_static:
                continue
            dtype = old.dtype if old is not None and old.dtype != "unknown" else _dtype_of(nd, view)
            values[o] = Value(name=o, shape=s, dtype=dtype, weight=old.weight if old else None,
                              quant=old.quant if old else None)
    return view


def _dtype_of(node: Node, g: Graph) -> str:
    for v in node.inputs:
        if v and v in g.values and g.values[v].dtype != "unknown":
            return g.values[v].dtype
    return "float32"
