"""Ops whose time is a cost per element looked up, per index tuple or per memcpy call, beside the data they move.

ORT's GatherElements and ScatterElements loop per element (index arithmetic, a bounds check, a reduction's functor):
1-5 ns per element looked up on a Zen 4, where the layout rate prices the data they move at 0.1-0.2 ns per element.
ScatterND computes an offset per index tuple and copies that tuple's slice (5-7 ns per tuple here), GatherND the same
(8-17 ns per tuple on a Zen 4, 2026-12-07, single-op: [500, 64] by 4,000 rows, [256, 256] by 16,384 pairs; a graph
network's GatherNDs were priced 0.016 ms by their bytes, profiled 0.09 inside torch/gnn), and Expand copies its
output in memcpy calls whose count the broadcast pattern sets (`expand_calls`: ~6 ns each here). Each such unit costs
`<kind>.<tag>.index.<op>` (host-cpu.yaml, fitted by calibration: simulator/calibration_index.py) beside the data.
"""

from __future__ import annotations

import math

from compiler.graph import Graph, Node

INDEXED_OPS = frozenset({"GatherElements", "ScatterElements", "ScatterND", "GatherND", "Expand"})
_PER_TUPLE = frozenset({"ScatterND", "GatherND"})  # their indices' last axis is one tuple


def indexed_elements(node: Node, graph: Graph) -> float:
    """What `node` pays its cost per lookup on: GatherElements / ScatterElements, its indices' elements (input 1);
    ScatterND / GatherND, its index tuples (input 1 but its last axis); Expand, its memcpy calls (`expand_calls`); 0
    for other ops or where the shapes are not known."""
    if node.op_type not in INDEXED_OPS or len(node.inputs) < 2:
        return 0.0
    if node.op_type == "Expand":
        x = graph.values.get(node.inputs[0])
        y = graph.values.get(node.outputs[0]) if node.outputs else None
        if x is None or y is None or not x.is_static or not y.is_static:
            return 0.0
        return expand_calls([int(d) for d in x.shape], [int(d) for d in y.shape])  # type: ignore[union-attr]
    v = graph.values.get(node.inputs[1])
    if v is None or not v.is_static:
        return 0.0
    dims = [int(d) for d in v.shape]  # type: ignore[union-attr]
    return float(math.prod(dims[:-1] if node.op_type in _PER_TUPLE else dims))


def expand_calls(in_shape: list[int], out_shape: list[int]) -> float:
    """memcpy calls ORT's CPU Expand (1.32) makes (microsoft/onnxruntime, onnxruntime/core/providers/cpu/tensor/
    expand.cc @08dc5af): the axes are grouped at each broadcast axis (and the outermost); it first copies the input in
    runs of the innermost group's input elements, one call each, then, group by group from the innermost, fills each
    block holding such a run from its first copy by doubling (1, 2, 4, ... copies per call). A [65536, 1] -> [65536, 4]
    Expand makes 196,608 calls for 1 MB of output: 1.28 ms on a Zen 4 (thread CPU time, 2026-12-04, load ~8), priced
    at 0.018 ms by its bytes; 6.5 ns per call there, 5.8 at [16384, 1] -> [16384, 16] and [4096, 1] -> [4096, 64]."""
    rank = max(len(in_shape), len(out_shape))
    ins = [1] * (rank - len(in_shape)) + list(in_shape)
    outs = [1] * (rank - len(out_shape)) + list(out_shape)
    outs = [o if o != 1 else i for i, o in zip(ins, outs)]
    if not rank or not math.prod(outs):
        return 0.0
    groups: list[tuple[int, int, int]] = []  # (input elements, output elements, expansion) from the innermost group
    n_in = n_out = last = 1
    for k in range(rank - 1, -1, -1):
        n_in, n_out = n_in * ins[k], n_out * outs[k]
        if (ins[k] == 1 and outs[k] > 1) or k == 0:
            groups.append((n_in, n_out, n_out // n_in // last))
            last *= groups[-1][2]
    n_all = math.prod(ins)
    calls = float(n_all // groups[0][0])  # the distribution: one call per run of the innermost group's input
    for g_in, _, expand in groups:  # a group fills the blocks that hold a copied run, from innermost to outermost
        calls += n_all // g_in * _doubling_calls(expand)
    return calls


def _doubling_calls(expand: int) -> int:
    """Calls that fill `expand` copies from one by doubling, then halving for the rest (expand.cc's two loops)."""
    have, step, calls = 1, 1, 0
    while have + step <= expand:
        have, step, calls = have + step, step * 2, calls + 1
    while have < expand:
        if have + step <= expand:
            have, calls = have + step, calls + 1
        else:
            step //= 2
    return calls
