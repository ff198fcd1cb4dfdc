"""Constant folding as runtimes do it at load: the outputs of ops whose inputs are all constants become weights.

Split from simulator/costs.py (which re-exports `fold_constants`): what a run computes once at load, not per inference.
"""

from __future__ import annotations

from compiler.graph import DTYPE_BYTES, Graph, Value, WeightStats

# Ops whose output is computed once at load when every input is a constant (ORT constant folding,
# Core ML's const ops). Random ops and shape readers are not folded here.
_NOT_FOLDED = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
                         "Bernoulli"})


def fold_constants(graph: Graph, static_shapes: bool = False) -> tuple[Graph, frozenset[str]]:
    """A view of `graph` where outputs of constant-only ops are weights, and the ids of those ops.

    Exporters wrap weights in Identity / Cast / Transpose nodes (TorchScript does); runtimes fold them
    at load, so they cost nothing per inference and the consumer's kernel is the folded weight.
    `static_shapes`: a Shape / Size of a tensor whose shape is known is a constant too, and so is the
    arithmetic on it (a dynamo export's sym_size -> Squeeze -> Mul -> Concat feeding a Resize): every
    runtime compiles at the fixed input shapes (ORT's constant folding of Shape, Core ML's const
    elimination, QNN's and TFLite's static graphs). Off for the ONNX file the exporter writes, which
    keeps those nodes (simulator.file_bytes).
    """
    values = dict(graph.values)
    folded: set[str] = set()
    for nd in graph.nodes:
        ins = [v for v in nd.inputs if v]
        if nd.op_type in _NOT_FOLDED or not nd.outputs:
            continue
        shape_read = static_shapes and nd.op_type in ("Shape", "Size") and bool(ins) \
            and values.get(ins[0]) is not None and values[ins[0]].is_static
        if not shape_read and nd.op_type != "Constant" and (not ins or not all(
                values.get(v) is not None and values[v].weight is not None for v in ins)):
            continue
        src = [] if shape_read else [values[v].weight for v in ins if values[v].weight is not None]
        for o in nd.outputs:
            ov = values.get(o)
            if ov is None:
                continue
            if ov.weight is None:
                n_el = ov.elements if ov.elements is not None else (src[0].elements if src else 0)
                w0 = src[0] if src else None
                b = int(n_el * DTYPE_BYTES.get(ov.dtype, 4))
                ws = WeightStats(elements=int(n_el), bytes=b, min=w0.min if w0 else 0.0,
                                 max=w0.max if w0 else 0.0, sparsity=w0.sparsity if w0 else 0.0)
                values[o] = Value(name=o, shape=ov.shape if ov.shape is not None else
                                  (values[ins[0]].shape if ins else None), dtype=ov.dtype, weight=ws, quant=ov.quant)
        folded.add(nd.id)
    if not folded:
        return graph, frozenset()
    view = Graph(name=graph.name, format=graph.format, nodes=graph.nodes, values=values, inputs=graph.inputs,
                 outputs=graph.outputs, metadata=graph.metadata)
    return view, frozenset(folded)
