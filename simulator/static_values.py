"""Values a model computes from its shapes and scalar constants, worked out without running it.

Control flow hangs on such values: an `If` on `sr == 16000`, a `Loop` of `x.size(2)` trips
(`Shape -> Gather -> Loop`). A graph keeps only statistics of its weights, so a constant's value is known
when it has one element; a graph input's when the user gave it (`--input-value`); a `Shape`'s when the
tensor's shape is static. Only small integer / boolean arithmetic is evaluated; anything else is unknown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from compiler.graph import Graph, Node

_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "Equal": np.equal, "Greater": np.greater, "Less": np.less, "GreaterOrEqual": np.greater_equal,
    "LessOrEqual": np.less_equal, "And": np.logical_and, "Or": np.logical_or, "Xor": np.logical_xor,
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Min": np.minimum, "Max": np.maximum,
}
_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {"Not": np.logical_not, "Neg": np.negative, "Abs": np.abs}
_PASS = frozenset({"Identity", "Cast", "Squeeze", "Unsqueeze", "Reshape", "Flatten"})
_MAX_ELEMENTS = 64  # shape vectors and scalars, not tensors


class StaticValues:
    """Evaluates values of `graph` on demand, memoised. `inputs`: values of graph inputs the user gave.
    `branch_of(if_node)`: the branch an If takes when known (lets an If's result have its branch's shape)."""

    def __init__(self, graph: Graph, inputs: Mapping[str, float] | None = None,
                 branch_of: Callable[[Node], str | None] | None = None) -> None:
        self.graph = graph
        self.inputs = dict(inputs or {})
        self.branch_of = branch_of or (lambda node: None)
        self.producer = {v: n for n in graph.nodes for v in n.outputs if v}
        self._memo: dict[str, np.ndarray | None] = {}

    def fork(self, known: Mapping[str, np.ndarray]) -> StaticValues:
        """The same graph with `known` values set (a loop body's inputs on one trip), nothing else memoised."""
        other = StaticValues.__new__(StaticValues)
        other.graph, other.inputs, other.branch_of = self.graph, self.inputs, self.branch_of
        other.producer = self.producer
        other._memo = dict(known)
        return other

    def scalar(self, name: str) -> float | None:
        v = self.value(name)
        return float(v.reshape(-1)[0]) if v is not None and v.size == 1 else None

    def value(self, name: str, depth: int = 0) -> np.ndarray | None:
        if not name or depth > 32:
            return None
        if name not in self._memo:
            self._memo[name] = None  # a cycle through a loop body reads as unknown
            self._memo[name] = self._compute(name, depth)
        return self._memo[name]

    def shape(self, name: str) -> list[int] | None:
        """The static shape of a tensor; an If's result takes that of its known branch's result."""
        v = self.graph.values.get(name)
        if v is not None and v.is_static:
            return [int(d) for d in v.shape]  # type: ignore[union-attr]
        node = self.producer.get(name)
        if node is not None and node.op_type in ("If", "IF"):
            branch = self.branch_of(node)
            outs = (node.attributes.get(branch) or {}).get("outputs", []) if branch else []
            k = node.outputs.index(name)
            if k < len(outs) and outs[k] != name:
                return self.shape(outs[k])
        return None

    def _compute(self, name: str, depth: int) -> np.ndarray | None:
        v = self.graph.values.get(name)
        if v is not None and v.weight is not None:
            w = v.weight
            if w.elements != 1 or w.min != w.max:
                return None
            kind = bool if v.dtype == "bool" else np.int64 if v.dtype.startswith(("int", "uint")) else np.float64
            if kind is np.int64:
                # the exact integer where kept: a float min rounds INT64_MAX (a Slice's "to the end") out of range
                if w.ints:
                    return np.array(w.ints[0], dtype=np.int64)
                lim = np.iinfo(np.int64)
                return np.array(int(min(max(w.min, lim.min), lim.max)), dtype=np.int64) if np.isfinite(w.min) else None
            return np.array(w.min).astype(kind)
        if name in self.inputs and name in self.graph.inputs:
            return np.array(self.inputs[name])
        node = self.producer.get(name)
        if node is None or node.outputs[0] != name:
            return None
        try:
            return self._op(node, depth)
        except (ValueError, TypeError, IndexError, ZeroDivisionError):
            return None

    def _op(self, node: Node, depth: int) -> np.ndarray | None:
        op = node.op_type
        if op in ("Shape", "Size"):
            shape = self.shape(node.inputs[0])
            if shape is None:
                return None
            if op == "Size":
                return np.array(int(np.prod(shape)))
            start, end = node.attributes.get("start", 0), node.attributes.get("end")
            return np.array(shape[start:end], dtype=np.int64)
        ins = [self.value(i, depth + 1) for i in node.inputs if i]
        if not ins or any(x is None or x.size > _MAX_ELEMENTS for x in ins):
            return None
        if op in _PASS:
            return ins[0]
        if op in _BINARY and len(ins) == 2:
            return _BINARY[op](ins[0], ins[1])
        if op in _UNARY:
            return _UNARY[op](ins[0])
        if op == "Div" and len(ins) == 2:
            a, b = ins
            return a // b if a.dtype.kind in "iu" and b.dtype.kind in "iu" else a / b
        if op == "Gather" and len(ins) == 2 and ins[0].ndim == 1:
            return np.take(ins[0], ins[1].astype(np.int64))
        return None


def counted_trips(loop: Node, values: StaticValues, limit: int = 10_000) -> int | None:
    """Trips of an ONNX `Loop` whose condition its body computes from values known before the run: a counter
    carried from a constant and compared with a constant (torch's `while_loop(lambda i, x: i < n, ...)` through
    dynamo: M empty, the bound read inside the body). The body's condition and carried values are evaluated trip
    by trip; None when any of them is unknown or the loop runs beyond `limit` trips."""
    body = loop.attributes.get("body") or {}
    ins, outs = body.get("inputs") or [], body.get("outputs") or []
    if len(ins) < 2 or len(outs) < len(ins) - 1:
        return None
    m = values.scalar(loop.inputs[0]) if loop.inputs and loop.inputs[0] else None
    bound = limit if m is None else min(limit, int(m))
    cond = values.value(loop.inputs[1]) if len(loop.inputs) > 1 and loop.inputs[1] else np.array(True)
    carried = [values.value(v) if v else None for v in loop.inputs[2:len(ins)]]
    trips = 0
    while trips < bound:
        if cond is None:
            return None
        if not bool(cond.reshape(-1)[0]):
            return trips
        known = {ins[0]: np.array(trips, dtype=np.int64), ins[1]: cond}
        known.update({name: v for name, v in zip(ins[2:], carried) if v is not None})
        step = values.fork(known)
        cond = step.value(outs[0])
        carried = [step.value(v) for v in outs[1:len(ins) - 1]]
        trips += 1
    return trips if trips < limit else None
