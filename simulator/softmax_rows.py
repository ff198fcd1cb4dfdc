"""ORT's fp32 Softmax / LogSoftmax row kernel, as MLAS runs it (onnxruntime/core/mlas/lib/compute.cpp,
MlasComputeSoftmaxThreaded): row by row, three kernels per row (ReduceMaximum, ComputeSumExp, then the output's scale or
log), each over the row's D floats in whole vector registers with the tail in a partial one. A row therefore costs a
fixed amount (three calls and their horizontal reductions) beside its elements, and its elements as D rounded up to
the register width: Softmax over rows of 49 (Swin's and MaxViT's 7x7 windows) costs what rows of 64 do.

Measured on an Emerald Rapids Xeon (AVX-512; eight Softmaxes side by side, thread CPU time, round-robin, 2026-12-06
10:33 UTC, probe 163 -> 147 GFLOP/s; /work/h51attn/ops.py), ns per row by D: 16: 15.6, 17: 19.4, 33: 24.0,
48: 23.2, 49: 29.9, 50: 30.9, 64: 30.8, 128: 48, 196: 82.4, i.e. ~10 ns per row plus ~5.5 per 16-float register;
priced per element (5 FLOPs each at the rate fitted on rows of 128) rows of 49 read 1.35x, of 17 3.0x, of 16 2.6x.
A row that starts off a cache line costs more again where the Softmax reads the output of the op before it, as in a
model (a chain of eight, 2026-12-06 11:06 UTC, probe 163 -> 156 GFLOP/s): rows of 16, 48, 64 and 128 take 14.2, 22.5,
27.6 and 46 ns (8.6 ns + 0.29 per element), rows of 49 44 ns, 16 more than rows of 64 (side by side, reading one
graph input, they took what rows of 64 do). Swin-T's window Softmaxes profiled 42.5 ns per row of 49.
So a Softmax pays `softmax.fp32.row` s per row (Work.row_calls) and `softmax.fp32.tap` per row off a 64-byte
line (Work.row_extra_calls: all but one in 16 / gcd(D, 16)), and D rounded up to Unit.sgemm_column_block
(Work.sgemm_columns / sgemm_align, as MLAS's SGEMM columns); calibration fits both row figures with the rate on
four shapes. Priced on ORT's CPU EP only (backends); other runtimes' Softmax kernels keep their per-element figures."""

from __future__ import annotations

import math

from compiler.graph import Graph, Node
from compiler.opset import declared_opset

_ROW_OPS = frozenset({"Softmax", "LogSoftmax"})
_ALIGN_CAP = 64  # alignments beyond any kernel's block count as this
_LINE_FLOATS = 16  # floats in a 64-byte cache line


def softmax_rows(node: Node, graph: Graph) -> dict[str, float]:
    """Work's {row_calls, row_extra_calls, sgemm_columns, sgemm_align} of an fp32 Softmax / LogSoftmax with a static
    input: the rows ORT's row kernel runs, those of them that start off a 64-byte line (all but one in 16 / gcd(D, 16)),
    each row's length D (the axis's size from opset 13 on, where an inner axis is swapped to the last first; before 13
    the axes from `axis` flattened into one row) and the largest power of two (up to 64) dividing D; {} for other ops
    and unknown shapes."""
    v = graph.values.get(node.inputs[0]) if node.op_type in _ROW_OPS and node.inputs else None
    if v is None or not v.is_static or not v.shape:
        return {}
    dims = [int(d) for d in v.shape]  # type: ignore[union-attr]
    opset = declared_opset(graph.metadata) or 99  # a graph that declares none: an export of today
    given = node.attributes.get("axis")
    axis = int((-1 if opset >= 13 else 1) if given is None else given) % len(dims)  # type: ignore[arg-type]
    d = dims[axis] if opset >= 13 else math.prod(dims[axis:])
    if d <= 0:
        return {}
    rows = float(math.prod(dims) // d)
    return {"row_calls": rows, "row_extra_calls": rows * (1.0 - math.gcd(d, _LINE_FLOATS) / _LINE_FLOATS),
            "sgemm_columns": float(d), "sgemm_align": float(min(d & -d, _ALIGN_CAP))}
