"""Restore an ONNX model stored in fp16 to fp32 before an option is applied (issue 14).

Files whose weights are stored fp16 come in two layouts: an fp16 graph (onnxconverter_common / ORT's
`convert_float_to_float16`, with fp32 or fp16 inputs; `model.half()` before torch.onnx.export), and fp16
initializers behind `Cast(to=float)` nodes feeding an fp32 graph (what the converter writes for the nodes it
blocks, with `force_fp16_initializers`). ORT's quantizers expect fp32 initializers: `quantize_dynamic` and
`quantize_static` leave an fp16 Conv / MatMul unquantized (MobileNetV3-Large stored fp16, 10.97 MB: its
int8-dynamic file came out 10.98 MB, every weight still fp16), the fp16 converter breaks on its own output
("two nodes with same node name (graph_output_cast0)"), and the fp32 option wrote the fp16 file again.

Every fp16 value becomes fp32: initializers, `Constant` / `ConstantOfShape` values, graph inputs and outputs,
and the `to` of Casts to fp16. fp16 -> fp32 is exact, so the fp32 model computes what the fp16 graph computes
at fp32. A Cast between float tensors is then a Cast to the type its input already has, which ORT's basic
optimizations remove (CastElimination) when the exporter prepares the file. The model's inputs and outputs
become fp32 (every option writes fp32 inputs and outputs, the fp16 one through its converter's Casts).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

# Attributes holding an element type that ops with an fp16 output are given (Cast's target, random ops' dtype).
_TYPE_ATTRS = frozenset({"to", "dtype"})
_FLOATS = frozenset({TensorProto.FLOAT, TensorProto.FLOAT16})


def fp16_weight_bytes(model: onnx.ModelProto) -> tuple[int, int]:
    """(bytes of fp16, bytes of fp32) float initializers of the main graph: which one the file mostly stores."""
    by = {TensorProto.FLOAT16: 0, TensorProto.FLOAT: 0}
    for t in model.graph.initializer:
        if t.data_type in by:
            n = int(np.prod(t.dims)) if t.dims else 1
            by[t.data_type] += n * (2 if t.data_type == TensorProto.FLOAT16 else 4)
    return by[TensorProto.FLOAT16], by[TensorProto.FLOAT]


def restore_fp32(model: onnx.ModelProto) -> int:
    """Turn every fp16 value of `model` (and its subgraphs) into fp32, in place; the number of fp16 tensors
    (initializers and constant values) converted. 0: the model had none, and nothing changed but fp16 I/O.
    The main graph's Casts between float types are removed (_drop_float_casts)."""
    if not _any_fp16(model.graph):
        return 0  # no shape inference: on VGG-16's 528 MB it took 6-16 s per export, for nothing
    floats = _float_values(model)
    n = _graph(model.graph)
    if n:
        _drop_float_casts(model.graph, floats)
    return n


def _any_fp16(g: onnx.GraphProto) -> bool:
    """Whether `g` (or a subgraph) holds an fp16 value _graph would convert: an initializer, a graph input, output or
    value_info, a constant, or a node attribute naming the fp16 type."""
    if any(t.data_type == TensorProto.FLOAT16 for t in g.initializer):
        return True
    if any(vi.type.tensor_type.elem_type == TensorProto.FLOAT16 for vi in [*g.input, *g.output, *g.value_info]):
        return True
    for node in g.node:
        for a in node.attribute:
            if ((a.type == onnx.AttributeProto.TENSOR and a.t.data_type == TensorProto.FLOAT16)
                    or (a.type == onnx.AttributeProto.INT and a.name in _TYPE_ATTRS and a.i == TensorProto.FLOAT16)
                    or (a.type == onnx.AttributeProto.GRAPH and _any_fp16(a.g))
                    or (a.type == onnx.AttributeProto.GRAPHS and any(_any_fp16(s) for s in a.graphs))):
                return True
    return False


def _float_values(model: onnx.ModelProto) -> set[str]:
    """Names of the main graph's fp16 / fp32 values, by ONNX type inference (none where it fails)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - without types no Cast is known to be a float-to-float one
        return set()
    g = inferred.graph
    floats = {t.name for t in g.initializer if t.data_type in _FLOATS}
    floats |= {vi.name for vi in list(g.input) + list(g.output) + list(g.value_info)
               if vi.type.tensor_type.elem_type in _FLOATS}
    for n in g.node:
        if n.op_type == "Constant" and any(a.type == onnx.AttributeProto.TENSOR and a.t.data_type in _FLOATS
                                           for a in n.attribute):
            floats.update(n.output)
    return floats


def _drop_float_casts(g: onnx.GraphProto, floats: set[str]) -> None:
    """Remove each Cast from a float tensor to float, now fp32 to fp32: its readers read its input, or, where its
    output is a graph output, the producer of its (first non-Cast) input writes that output. The fp16 converter
    names the Casts it adds at the inputs and outputs `graph_input_cast0`, ...: kept, those of the upload made the
    fp16 option's file invalid ("two nodes with same node name"). A Cast between a graph input and a graph output
    stays."""
    outputs = {o.name for o in g.output}
    casts = {}
    for i, n in enumerate(g.node):
        to = next((a.i for a in n.attribute if a.name == "to"), None)
        if n.op_type == "Cast" and to == TensorProto.FLOAT and len(n.input) == 1 and n.input[0] in floats:
            casts[i] = (n.input[0], n.output[0])
    rename = {out: src for src, out in casts.values() if out not in outputs}
    drop = {i for i, (_, out) in casts.items() if out not in outputs}
    produced = {o for i, n in enumerate(g.node) if i not in casts for o in n.output}
    to_output: dict[str, str] = {}
    for i, (src, out) in casts.items():
        real = _follow(rename, src)
        if out in outputs and real in produced and real not in outputs and real not in to_output:
            to_output[real] = out
            drop.add(i)
    if not drop:
        return
    kept = [n for i, n in enumerate(g.node) if i not in drop]
    for n in kept:
        n.input[:] = [to_output.get(r, r) if v else v for v in n.input for r in [_follow(rename, v)]]
        n.output[:] = [to_output.get(v, v) for v in n.output]
    del g.node[:]
    g.node.extend(kept)


def _follow(rename: dict[str, str], v: str) -> str:
    seen = set()
    while v in rename and v not in seen:
        seen.add(v)
        v = rename[v]
    return v


def _tensor(t: TensorProto) -> bool:
    if t.data_type != TensorProto.FLOAT16:
        return False
    t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float32), t.name))
    return True


def _graph(g: onnx.GraphProto) -> int:
    n = sum(_tensor(t) for t in g.initializer)
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        tt = vi.type.tensor_type
        if tt.elem_type == TensorProto.FLOAT16:
            tt.elem_type = TensorProto.FLOAT
    for node in g.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                n += _tensor(a.t)
            elif a.type == onnx.AttributeProto.INT and a.name in _TYPE_ATTRS and a.i == TensorProto.FLOAT16:
                a.i = TensorProto.FLOAT
            elif a.type == onnx.AttributeProto.GRAPH:
                n += _graph(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                n += sum(_graph(s) for s in a.graphs)
    return n
