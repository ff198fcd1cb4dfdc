"""Ops that look their elements up one by one through an index tensor.

ORT's GatherElements and ScatterElements loop per element (index arithmetic, a bounds check, a reduction's functor):
1-5 ns per element looked up on a Zen 4, where the layout rate prices the data they move at 0.1-0.2 ns per element.
Each such element costs `<kind>.<tag>.index.<op>` (host-cpu.yaml, simulator.roofline) beside that data.
"""

from __future__ import annotations

import math

from compiler.graph import Graph, Node

INDEXED_OPS = frozenset({"GatherElements", "ScatterElements"})


def indexed_elements(node: Node, graph: Graph) -> float:
    """Elements `node` looks up one at a time: its indices' (input 1), where their shape is known; 0 for other ops."""
    if node.op_type not in INDEXED_OPS or len(node.inputs) < 2:
        return 0.0
    v = graph.values.get(node.inputs[1])
    return float(math.prod(v.shape)) if v is not None and v.is_static else 0.0  # type: ignore[arg-type]
