"""Which axes a Reduce* op reduces, and whether ORT reads its input with strides to do it (costs._arithmetic)."""

from __future__ import annotations

from compiler.graph import Graph, Node, Value

# Per element, a reduction over axes that are not the innermost ones (ReduceSum over dim 1 of [1, 512, 256]; a
# channel mean of NCHW) against one over the innermost axes: ORT walks it element by element with strided reads.
# Single-op models on this host, thread CPU time: 2.7x to 16x the time per element of the contiguous case ([1, 512,
# 256] over dim 1: 0.11 ms, over dim 2: 0.0095 ms; [1, 64, 56, 56] over dim 1: 0.063 ms, over dims 2, 3: 0.016 ms).
# 16 FLOPs per element at the reduce rate predicts seven such cases at 0.48-2.3x of measured, median 0.94 (1 FLOP:
# 0.06-0.37x); the spread is the kernel's (the kept inner size and the stride decide it), not noise.
STRIDED_REDUCE_FLOPS = 16.0

_AXES_INPUT = frozenset({"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2", "ReduceL1",
                         "ReduceLogSumExp", "ReduceSumSquare"})  # axes as input 1 from opset 13 (ReduceSum) / 18


def reduce_axes(node: Node, rank: int, graph: Graph) -> list[int] | None:
    """Axes a Reduce* op reduces (non-negative), from its attribute or its constant `axes` input (whose values the
    graph keeps only as min / max: enough for one axis or a run of consecutive ones); None if unknown."""
    axes = node.attributes.get("axes")
    if axes is None and node.op_type in ("ArgMax", "ArgMin"):
        axes = [node.attributes.get("axis", 0)]
    if axes is None and node.op_type in _AXES_INPUT and len(node.inputs) > 1 and node.inputs[1]:
        v = graph.values.get(node.inputs[1])
        w = v.weight if v is not None else None
        if w is None or not w.elements:
            return None
        lo, hi = int(w.min), int(w.max)
        if hi - lo + 1 != w.elements:
            return None
        axes = list(range(lo, hi + 1))
    if axes is None:
        return list(range(rank))  # no axes: all of them
    return sorted(int(a) % rank for a in axes) if rank else []


def strided_reduce(node: Node, act_in: list[Value], graph: Graph) -> bool:
    """The reduction reads its input with strides: some reduced axis is followed by a kept axis of size > 1."""
    x = act_in[0] if act_in else None
    if x is None or not x.is_static or node.op_type in ("TopK", "CumSum"):
        return False
    shape = [int(d) for d in x.shape]  # type: ignore[union-attr]
    axes = reduce_axes(node, len(shape), graph)
    if not axes:
        return False
    return any(shape[k] > 1 for k in range(min(axes), len(shape)) if k not in axes)
