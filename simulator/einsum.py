"""ONNX Einsum's arithmetic: a contraction of two or more operands is a (batched) matrix product.

costs.py priced every Einsum as a layout op (one move per output element): MViT-v2-S's 32 relative-position
Einsums ("bythwc,hkc->bythwk") were measured at 398 ms by ONNX Runtime (one thread, a loaded 2-vCPU Zen 4) and
predicted at 1.7 ms. ORT evaluates a contraction as transposes around a MatMul (onnxruntime/core/providers/cpu/math/
einsum_utils), so it is costed as a matmul whose MACs are the product of every index's size (each combination
of the indices is one multiply-add). A one-operand Einsum (a transpose, a diagonal or a sum) stays a layout op.
"""

from __future__ import annotations

import math

from compiler.graph import Graph, Node


def _terms(node: Node) -> tuple[list[str], str] | None:
    eq = node.text("equation").replace(" ", "")
    if "->" not in eq or "." in eq:  # implicit outputs and ellipses: left as they were
        return None
    lhs, out = eq.split("->")
    return lhs.split(","), out


def contracts(node: Node) -> bool:
    """An Einsum of two or more operands (a matrix product of some kind)."""
    t = _terms(node) if node.op_type == "Einsum" else None
    return t is not None and len(t[0]) >= 2


def einsum_macs(node: Node, graph: Graph) -> float | None:
    """Multiply-adds of a contracting Einsum: the product of each index's size; None if a shape is unknown."""
    t = _terms(node)
    if t is None:
        return None
    sizes: dict[str, int] = {}
    for term, name in zip(t[0], node.inputs):
        v = graph.values.get(name)
        if v is None or v.shape is None or len(v.shape) != len(term):
            return None
        for letter, d in zip(term, v.shape):
            if not isinstance(d, int):
                return None
            sizes[letter] = max(sizes.get(letter, 1), d)  # a broadcast dim of 1 takes the other operand's size
    return float(math.prod(sizes.values()))
