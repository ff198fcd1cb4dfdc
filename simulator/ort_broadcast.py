"""ORT's CPU element-wise kernels over broadcast operands: the kernel is called once per span, a run of innermost
output elements over which both operands keep one pattern (each either read along or held), and each call costs
about 10 ns (`elementwise.fp32.span` in host-cpu.yaml) beside the per-element work. A short span makes that the
whole cost: RAFT's correlation lookup normalises coordinates of [1024, 7, 7, 1] by scalars (innermost axis 1: one
call per element), 96 Mul / Sub / Div each 0.46-0.49 ms where the element rate says 0.006; a spatial transformer's
affine_grid multiplies [1, 36864, 3, 1] by [1, 1, 3, 2] (spans of 2) in 1.2 ms, predicted 0.02.

Single-op models on this Xeon (ORT 1.32, 1 thread, thread CPU time, load 4-6, 2026-12-05; /work/notes/h40newuser.md):
[1024, 7, 7, 1] x scalar 9.7 ns per element, [4096, 49, 1] 8.7, [50176] 0.17; [1, 36864, 3, 1] x [1, 1, 3, 2] 10.9 ns
per call of 2; [1, 16384, 4, 1] x [1, 1, 4, 4] 9.0 per call of 4; [1024, 1, 1, 2] / scalar 19 per call of 2.
Only spans shorter than `SHORT_SPAN` are priced so (longer ones, a squeeze-excite gate's H x W, are within what
calibration fitted on the element-wise rate).

A Reduce* over an axis followed by a short kept block (affine_grid's sum over [1, 36864, 3, 2] axis 2: blocks of 2)
works the same way: about 60-70 ns per outer index whatever the reduced length (`reduce.fp32.span`): [1, 36864, 3, 2]
2.61 ms, [1, 16384, 3, 4] 1.16, [1, 8192, 3, 8] 0.54, [1, 8192, 9, 2] 0.63 (same machine and day), where the strided
reduce rule (simulator.reductions.STRIDED_REDUCE_FLOPS) said 0.14-0.21.

A Reduce* over the innermost axes reduces row by row, a call per row (`reduce.fp32.row`, about 3 ns): a Mamba-like
scan's 64 ReduceSums of [1, 256, 16] over the last axis, affine_grid's [1, 36864, 6] (0.09 ms measured, 0.02
priced by the element rate). Rows of 128 and more hide it.
"""

from __future__ import annotations

import math

from compiler.graph import Graph, Node
from simulator.costs import kind_of
from simulator.reductions import reduce_axes

# Elements: spans shorter than this pay their calls. Chains of 16 Muls of [1, R, S] by [1, R, 1] (16,384 elements) on a
# Zen 4 (ORT 1.32, 1 thread, thread CPU time, 2026-12-05, load ~5.5): S = 16, 32, 64 8.2-9.1 ns per call beyond the
# element rate, S = 128 24, S = 256 3 (/work/notes/h41host-data/spans.py); a squeeze-excite gate's 196 stays out.
SHORT_SPAN = 128
# Elements of an innermost reduction's row under which its call's cost shows: on the same Zen 4 a ReduceSum over the
# last axis of [1, 1024, 16] took 3.4 ns more per row than one of [1, 64, 256]; [1, 128, 128] no more than the latter.
SHORT_ROW = 64
_BINARY = frozenset({"Add", "Sub", "Mul", "Div"})


def short_span(node: Node, graph: Graph) -> int | None:
    """The span length of a broadcasting binary element-wise op when shorter than SHORT_SPAN (and more than one
    call), else None. Equal shapes take ORT's same-shape path (one call)."""
    if node.op_type not in _BINARY or len(node.inputs) != 2 or node.domain not in ("", "ai.onnx"):
        return None
    vals = [graph.values.get(i) for i in node.inputs]
    if any(v is None or not v.is_static or v.shape is None for v in vals):
        return None
    a, b = ([int(d) for d in v.shape] for v in vals)  # type: ignore[union-attr]
    if a == b:
        return None
    rank = max(len(a), len(b))
    a, b = [1] * (rank - len(a)) + a, [1] * (rank - len(b)) + b
    out = [max(x, y) for x, y in zip(a, b)]
    total = math.prod(out)
    if total <= 1:
        return None
    span, pattern = 1, None
    for x, y, o in zip(reversed(a), reversed(b), reversed(out)):
        if o == 1:  # an axis of 1 ends the innermost run (an innermost 1: one call per element)
            break
        p = (x == o, y == o)
        if pattern is not None and p != pattern:
            break
        pattern, span = p, span * o
    return span if span < SHORT_SPAN and span < total else None


def short_reduce_rows(node: Node, graph: Graph) -> int | None:
    """The row length of a Reduce* over the innermost axes (contiguous rows) when shorter than SHORT_ROW and there is
    more than one row, else None. ORT's reduction reduces each row with a call of its own (ReduceAggregator's
    FastReduceKR), a fixed cost per row (`reduce.fp32.row`) that a short row's elements do not hide."""
    x = graph.values.get(node.inputs[0]) if node.inputs else None
    if kind_of(node, graph) != "reduce" or x is None or not x.is_static or not x.shape:
        return None
    shape = [int(d) for d in x.shape]  # type: ignore[union-attr]
    axes = sorted(set(reduce_axes(node, len(shape), graph) or ()))
    if not axes or axes != list(range(axes[0], len(shape))):
        return None
    row = math.prod(shape[a] for a in axes)
    return row if 1 < row < SHORT_ROW and math.prod(shape) > row else None


def short_reduce_block(node: Node, graph: Graph) -> int | None:
    """The kept block after the last reduced axis of a Reduce* when shorter than SHORT_SPAN, else None (a reduction
    over the innermost axes reads contiguous rows: no such calls). A kept axis of 1 after the reduced one is a block
    of 1, a call per outer index: ORT does not drop it (a Zen 4, 2026-12-07, single-op ReduceSums: [1, 73728, 3, 1]
    over axis 2 12.6 ms, 170 ns per outer index as [1, 36864, 3, 2]'s 163; over axes 2 and 3 0.32 ms)."""
    x = graph.values.get(node.inputs[0]) if node.inputs else None
    if kind_of(node, graph) != "reduce" or x is None or not x.is_static or not x.shape:
        return None
    shape = [int(d) for d in x.shape]  # type: ignore[union-attr]
    axes = reduce_axes(node, len(shape), graph)
    if not axes or max(axes) >= len(shape) - 1:
        return None
    block = math.prod(shape[max(axes) + 1:])
    return block if 0 < block < SHORT_SPAN else None
