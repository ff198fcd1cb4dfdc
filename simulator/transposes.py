"""How ORT's CPU Transpose (1.32) moves data, from the permutation and the input's shape.

ORT's kernel (microsoft/onnxruntime, onnxruntime/core/providers/cpu/tensor/transpose.cc at a0d18347) first takes a
permutation that keeps every axis of more than one element in order as a plain copy (IsTransposeReshape). Otherwise
it copies the output in runs: the trailing axes the permutation leaves in place form one contiguous run, copied with
its own memcpy after a multi-index step (DoTransposeImpl; SingleAxisTranspose copies the same runs when one axis
moves); with no such axis it walks element by element (`walks` below)."""

from __future__ import annotations

import math

from compiler.graph import Graph, Node
from compiler.opset import declared_opset


def walks(node: Node) -> bool:
    """A Transpose ORT's CPU kernel walks element by element: after merging the axes that stay side by side, the
    innermost axis moves and more than one axis moves. ORT (1.32) copies blocks where the innermost axis stays and
    has a blocked kernel for moving one axis; it does not drop size-1 axes. Single-op models on this Zen 5 (CPU
    time): 2.2-2.6 ns per element walked vs 0.10-0.22 blocked ([1, 196, 1, 4, 32] by [2, 0, 3, 4, 1], XCiT's
    q/k/v split: 2.25; the same data as [1, 196, 4, 32] by [0, 2, 3, 1]: 0.15). Calibration case transpose-walk."""
    return walks_perm([int(p) for p in node.attributes.get("perm") or ()])


def walks_perm(perm: list[int]) -> bool:
    """`walks` of a permutation."""
    if len(perm) < 3:
        return False
    runs = [[perm[0]]]
    for p in perm[1:]:
        if p == runs[-1][-1] + 1:
            runs[-1].append(p)
        else:
            runs.append([p])
    order = sorted(range(len(runs)), key=lambda i: runs[i][0])
    q = [order.index(i) for i in range(len(runs))]  # the merged permutation
    if q[-1] == len(q) - 1:
        return False
    return not any(q[:j] + q[j + 1:] == sorted(q[:j] + q[j + 1:]) for j in range(len(q)))


def copy_runs(node: Node, graph: Graph) -> float:
    """Runs a Transpose copies one memcpy each: its elements over the run's length (the trailing axes it leaves in
    place), where that length is 2 or more and the permutation is not a plain copy; else 0. A transformer's head
    transpose ([1, tokens, heads, dim] by [0, 2, 1, 3]) copies runs of `dim` elements: each run costs a fixed time
    beside its bytes (`<kind>.<tag>.run`, calibrated on such transposes; single-op models on a Zen 4, thread CPU
    time: 197x3x64 0.22 ns per element, 3136x2x32 0.33, 197x12x64 0.20, i.e. ~7 ns per run beyond the bytes)."""
    if node.op_type != "Transpose" or not node.inputs:
        return 0.0
    v = graph.values.get(node.inputs[0])
    perm = [int(p) for p in node.attributes.get("perm") or ()]
    if v is None or not v.is_static or len(perm) != len(v.shape or ()):  # type: ignore[arg-type]
        return 0.0
    dims = [int(d) for d in v.shape]  # type: ignore[union-attr]
    moved = [p for p in perm if dims[p] > 1]
    if moved == sorted(moved):
        return 0.0  # IsTransposeReshape: a plain copy
    run = 1
    for i in range(len(perm) - 1, -1, -1):
        if perm[i] != i:
            break
        run *= dims[i]
    return math.prod(dims) / run if run > 1 else 0.0


# Output elements a walk writes between two steps of the input's innermost axis (so between two reads of one input
# cache line) from which those lines no longer stay cached (`far_walk`).
FAR_RUN = 1024


def far_walk(node: Node, graph: Graph) -> float:
    """Elements of a walk (`walks`) that reads a cache line of its input again only after FAR_RUN or more output
    elements: the output elements after the position the input's innermost axis (of more than one element) takes in
    the output, each on a line (and a page, past a few KB of stride) of its own. Beyond the core's L2 each element
    then misses it: `<kind>.<tag>.far` per output byte beyond the L2 (roofline). Single-op models on a Zen 4 (thread
    CPU time, 2026-12-04, load ~7): [1, 1, A, B] by [3, 1, 2, 0] 3.3-3.6 ns per element up to 512 x 512, 4.7 at 1024
    x 1024, 6.2-7.5 from 4 MB (MViT-v2-S's 25088 x 393 attention maps: 7.5); the same data read the other way round
    ([393, 1, 25088, 1] by [2, 1, 3, 0]: 393 elements between reuses) 3.5. 0 for other ops and near walks."""
    v = graph.values.get(node.inputs[0]) if node.inputs else None
    perm = [int(p) for p in node.attributes.get("perm") or ()]
    if not walks(node) or v is None or not v.is_static or len(perm) != len(v.shape or ()):  # type: ignore[arg-type]
        return 0.0
    return far_elements([int(d) for d in v.shape], perm)  # type: ignore[union-attr]


def far_elements(dims: list[int], perm: list[int]) -> float:
    """`far_walk` of a walk of `dims` by `perm`."""
    inner = max((i for i, d in enumerate(dims) if d > 1), default=-1)
    if inner < 0:
        return 0.0
    after = math.prod(dims[p] for p in perm[perm.index(inner) + 1:])
    return float(math.prod(dims)) if after >= FAR_RUN else 0.0


# ORT's NCHWc reorder into blocks of 8 / 16 channels, reading 8-16 channel planes (or NHWC rows, `channels_last`) at
# once. Not the reorder back (ReorderOutput): inside PVT-v2-B0 its 3.2 MB ones profiled 0.12-0.15 ms, near the 0.085
# priced, where ReorderInput's took 0.38-0.48 (a Zen 4, 2026-12-04, load ~7).
REORDERS = frozenset({"ReorderInput"})


def strided_move(node: Node, graph: Graph) -> float:
    """Output elements of a data move that reads or writes across lines of its own: a blocked Transpose moving the
    innermost axis (not a walk: `walks`; not a copy of runs: `copy_runs`; not a plain copy) and an NCHWc ReorderInput. Beyond
    the core's L2 each such element costs `<kind>.<tag>.far` per output byte (roofline, as a far walk's): PVT-v2-B0's
    [1, 256, 3136] -> [1, 3136, 256] Transposes and 3.2 MB ReorderInputs profiled 0.38-0.57 ms inside the model on a
    Zen 4 (2026-12-04, load ~7), 0.16 alone, priced 0.085 at the cache's rate. 0 for other ops."""
    out = graph.values.get(node.outputs[0]) if node.outputs else None
    if out is None or not out.is_static:
        return 0.0
    n = float(math.prod(int(d) for d in out.shape))  # type: ignore[union-attr]
    if node.op_type in REORDERS:
        return n
    v = graph.values.get(node.inputs[0]) if node.op_type == "Transpose" and node.inputs else None
    perm = [int(p) for p in node.attributes.get("perm") or ()]
    if v is None or not v.is_static or len(perm) != len(v.shape or ()) or walks(node):  # type: ignore[arg-type]
        return 0.0
    dims = [int(d) for d in v.shape]  # type: ignore[union-attr]
    moved = [p for p in perm if dims[p] > 1]
    return n if moved != sorted(moved) and not copy_runs(node, graph) else 0.0


_INNER_AXIS_OPS = frozenset({"Softmax", "LogSoftmax"})


def inner_axis_transposes(node: Node, graph: Graph) -> tuple[float, float, float]:
    """The two Transposes ORT's Softmax / LogSoftmax (opset 13 on) runs inside its kernel over an axis that is not the
    last one (onnxruntime/core/providers/cpu/math/softmax.cc): it swaps that axis with the last into a buffer
    (TransposeBase::DoTranspose), runs its row kernel there, and swaps back. Returns (elements those two walk element
    by element (`walks`), elements they move blocked, how many of them are far walks (`far_elements`)); zeros for
    other ops, the last axis, and an opset before 13 (whose Softmax flattens the axes from `axis` into one row).
    CoaT's factorized attention, `k.softmax(dim=2)` of [1, 8, tokens, 8]: ORT's transpose pass moves the heads out
    and leaves Softmax(axis=1) of [1, 3137, 8, 8], whose swap [0, 3, 2, 1] walks (on an Emerald Rapids Xeon,
    2026-12-05, eight of them profiled 10.7 ms in CoaT-Lite-Tiny, priced 0.32 as row kernels)."""
    opset = declared_opset(graph.metadata) or 99  # a graph that declares none: an export of today
    if node.op_type not in _INNER_AXIS_OPS or not node.inputs or opset < 13:
        return 0.0, 0.0, 0.0
    v = graph.values.get(node.inputs[0])
    if v is None or not v.is_static or not v.shape:
        return 0.0, 0.0, 0.0
    dims = [int(d) for d in v.shape]  # type: ignore[union-attr]
    given = node.attributes.get("axis")
    axis = int(-1 if given is None else given) % len(dims)  # type: ignore[arg-type]
    if axis == len(dims) - 1:
        return 0.0, 0.0, 0.0
    perm = list(range(len(dims)))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    n = float(math.prod(dims))
    walked = moved = far = 0.0
    for shape in (dims, [dims[p] for p in perm]):  # in, then back (a swap is its own inverse)
        if walks_perm(perm):
            walked += n
            far += 1.0 if far_elements(shape, perm) else 0.0
        else:
            moved += n
    return walked, moved, far

