"""ONNX Einsum's arithmetic: a contraction of two or more operands is a (batched) matrix product.

costs.py priced every Einsum as a layout op (one move per output element): MViT-v2-S's 32 relative-position
Einsums ("bythwc,hkc->bythwk") were measured at 398 ms by ONNX Runtime (one thread, a loaded 2-vCPU Zen 4) and
predicted at 1.7 ms. ORT evaluates a contraction as transposes around a MatMul (onnxruntime/core/providers/cpu/math/
einsum_utils), so it is costed as a matmul whose MACs are the product of every index's size (each combination
of the indices is one multiply-add). A one-operand Einsum (a transpose, a diagonal or a sum) stays a layout op.

What ORT's CPU kernel runs around that product (`ort_steps`, onnxruntime/core/providers/cpu/math/einsum_utils/
einsum_compute_preprocessor.cc and einsum_typed_compute_processor.cc @08dc5afa / 06b97038): every operand is transposed
to one axis order (the letters in order of first appearance) and given every letter, size 1 where it has none; each
pair is transposed again to [batch, M, K] and [batch, K, N] (raw operands through a Transpose even where only size-1
axes move), multiplied as `batch` separate SGEMMs (einsum_auxiliary_ops.cc: math::MatMul per batch) and the result
transposed to the output order, then copied into the op's output buffer. Each Transpose is ORT's DoTranspose
(cpu/tensor/transpose.cc @a0d18347): a plain copy where the axes of more than one element keep their order, a blocked
move where one axis moves, else copies of the trailing axes left in place, element by element where that run is one
element: a trailing letter of size 1 (the one the other operand alone has) makes attention's `bqhd,bkhd->bhqk` walk
its first operand. Timed alone on a Zen 4 (thread CPU time, 2026-12-06, /work/h50attn/ops.py): that Einsum 250 us
against 85 for the MatMul of its product, `bhqk,bkhd->bqhd` 119 against 80.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from compiler.graph import Graph, Node
from simulator.transposes import inner_axis_transposes


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


@dataclass(frozen=True, slots=True)
class EinsumSteps:
    """What ORT's CPU Einsum runs for one two-operand contraction: elements its Transposes walk one at a time, elements
    they move blocked or copy (the final copy into the output too), runs they copy one memcpy each, and the batched
    product's shape (`batches` SGEMMs of M x K by K x N)."""

    walked: float
    moved: float
    runs: float
    batches: int
    m: int
    k: int
    n: int


def moves_single_axis(perm: list[int]) -> bool:
    """ORT's IsTransposeMovingSingleAxis: the permutation is the identity with one axis taken out and put back
    elsewhere (size-1 axes count: ORT does not drop them)."""
    ident = list(range(len(perm)))
    return perm != ident and any(perm[:j] + perm[j + 1:] == ident[:perm[j]] + ident[perm[j] + 1:]
                                 for j in range(len(perm)))


def transpose_steps(dims: list[int], perm: list[int]) -> tuple[float, float, float]:
    """(walked, moved, runs) of ORT's DoTranspose of `dims` by `perm` (see the module's docstring); zeros for the
    identity, which ORT skips."""
    if perm == list(range(len(perm))):
        return 0.0, 0.0, 0.0
    n = float(math.prod(dims))
    kept = [p for p in perm if dims[p] > 1]
    if kept == sorted(kept):  # IsTransposeReshape: a plain copy
        return 0.0, n, 0.0
    run = 1
    for i in range(len(perm) - 1, -1, -1):  # the trailing axes left in place (DoUntypedTranspose's suffix)
        if perm[i] != i:
            break
        run *= dims[i]
    if run > 1:  # runs of them copied one memcpy each (SingleAxisTranspose too, past 8 bytes)
        return 0.0, n, n / run
    return (0.0, n, 0.0) if moves_single_axis(perm) else (n, 0.0, 0.0)


def ort_steps(node: Node, graph: Graph) -> EinsumSteps | None:
    """EinsumSteps of a two-operand Einsum with static shapes, no ellipsis, no repeated letter in an operand and no
    letter summed away within one operand (ORT's Diagonal and ReduceSum steps); None for any other."""
    t = _terms(node) if node.op_type == "Einsum" else None
    if t is None or len(t[0]) != 2 or len(node.inputs) != 2:
        return None
    terms, out = t
    shapes = []
    for term, name in zip(terms, node.inputs):
        v = graph.values.get(name)
        if v is None or v.shape is None or len(v.shape) != len(term) or len(set(term)) != len(term):
            return None
        if not all(isinstance(d, int) for d in v.shape):
            return None
        shapes.append([int(d) for d in v.shape])  # type: ignore[arg-type]
    order = list(dict.fromkeys(terms[0] + terms[1]))  # ORT's subscript indices: letters by first appearance
    if any(c not in terms[1] and c not in out for c in terms[0]) or any(c not in order for c in out):
        return None  # a letter summed within the first operand alone (ReduceSum) or an unknown output letter
    steps = [0.0, 0.0, 0.0]

    def add(dims: list[int], perm: list[int]) -> None:
        for i, x in enumerate(transpose_steps(dims, perm)):
            steps[i] += x

    homog = []
    for term, dims in zip(terms, shapes):
        add(dims, sorted(range(len(term)), key=lambda i: order.index(term[i])))  # to the common axis order
        homog.append([dims[term.index(c)] if c in term else 1 for c in order])
    left, right = homog
    red = [i for i, c in enumerate(order) if c not in out]
    if any((left[i] > 1) != (right[i] > 1) for i in red):
        return None  # summed within the second operand alone (ReduceSum)
    lro = [i for i in range(len(order)) if i not in red and left[i] > 1 and right[i] > 1]
    lo = [i for i in range(len(order)) if i not in red and i not in lro and left[i] > 1]
    ro = [i for i in range(len(order)) if i not in red and i not in lro and i not in lo]
    add(left, lro + lo + red + ro)
    add(right, lro + red + ro + lo)
    cand = lro + lo + red + ro  # the product's axes; the output's order of those it keeps
    kept = [i for i in cand if i not in red]
    add([left[i] if i in lro or i in lo else right[i] for i in kept],
        [kept.index(order.index(c)) for c in out])
    out_n = float(math.prod(max(left[i], right[i]) for i in kept))
    size = lambda ix, dims: math.prod(dims[i] for i in ix)  # noqa: E731
    return EinsumSteps(steps[0], steps[1] + out_n, steps[2], size(lro, left), size(lo, left), size(red, left),
                       size(ro, right))


# The ops MLAS's fp32 SGEMM runs with C's columns (N) as its vector lanes: each row block computes whole registers of
# columns, so N is paid rounded up to the machine's block (Unit.sgemm_column_block: 16 floats with AVX-512F) where it
# is not a multiple of it (roofline: Path.padded_sgemm, as a grouped NCHW Conv's per-group SGEMMs). Single ops on a
# Zen 4 (thread CPU time, 2026-12-06 07:15 UTC, /work/h50attn/ops.py): a Gemm of [9604, 16] by [16, 4] 49 us against
# 17 for [9604, 4] by [4, 16], the same MACs; Swin's q.k^T [192, 49, 32] by [192, 32, 49] 671 us against 435 for 48s.
_PRODUCTS = frozenset({"MatMul", "FusedMatMul", "Gemm", "FusedGemm"})
_ALIGN_CAP = 64  # alignments beyond any kernel's block count as this


def product_columns(node: Node, graph: Graph, kind: str) -> tuple[float, float]:
    """(Work.sgemm_columns, Work.sgemm_align) of an fp32 matrix product (MatMul, FusedMatMul, Gemm, FusedGemm, a
    contracting Einsum): N, and the largest power of two (up to 64) dividing it; (0, 0) for other ops and where N is
    unknown or B is a vector (a GEMV)."""
    if kind not in ("gemm", "matmul"):
        return 0.0, 0.0
    n = 0
    if node.op_type == "Einsum":
        steps = ort_steps(node, graph)
        n = steps.n if steps is not None else 0
    elif node.op_type in _PRODUCTS and len(node.inputs) > 1 and node.outputs:
        b, y = graph.values.get(node.inputs[1]), graph.values.get(node.outputs[0])
        if b is not None and b.shape is not None and len(b.shape) >= 2 and y is not None and y.shape:
            n = y.shape[-1] if isinstance(y.shape[-1], int) else 0
    if n <= 0:
        return 0.0, 0.0
    return float(n), float(min(n & -n, _ALIGN_CAP))


def inner_moves(node: Node, graph: Graph) -> dict[str, float]:
    """Work's counts of the data moves ORT runs inside one kernel: a Softmax's inner-axis swaps
    (transposes.inner_axis_transposes) or a contracting Einsum's Transposes and copies (`ort_steps`)."""
    steps = ort_steps(node, graph) if node.op_type == "Einsum" else None
    if steps is not None:
        return {"inner_walked": steps.walked, "inner_moved": steps.moved, "inner_runs": steps.runs}
    return dict(zip(("inner_walked", "inner_moved", "inner_far"), inner_axis_transposes(node, graph)))


# MLAS's SGEMM (onnxruntime/core/mlas/lib/sgemm.cpp @00ca1689, MlasSgemmOperation) copies each panel of B into a local
# buffer of 16-float column strips (MlasSgemmCopyPackB, or MlasSgemmTransposePackB for a transposed B: zeros past N)
# before its kernel runs the rows of A over it, on every call, unless B was packed once ahead (ORT prepacks a
# MatMul's / Gemm's constant B at load); one row (M == 1) runs the GEMV kernel on B as it is. ORT's MatMul calls one
# SGEMM per batch where B has batch axes (MatMulComputeHelper; a 2-D B takes A's batches as rows) and a contracting
# Einsum one per batch of its product (einsum_auxiliary_ops.cc), so attention's q.k^T and a.v pack their B once per
# head and window. The counts price at `matmul.fp32.packb` s per packed element (roofline.PACKB_KEY) and
# `matmul.fp32.packcall` s per call (PACKCALL_KEY: the call's panel setup and kernel entries beside the copy).
PACK_STRIP = 16  # floats a packed strip of B holds: MLAS_SGEMM_STRIDEN's column block on x86 whatever the ISA


def packed_b(node: Node, graph: Graph, kind: str) -> tuple[float, float]:
    """(elements, SGEMM calls): the elements of B that MLAS packs on each run of an fp32 product whose B is no constant
    (batches x K x N rounded up to PACK_STRIP) and the calls that pack them (one per batch); (0, 0) for a constant B
    (prepacked), one row of A, other ops and unknown shapes."""
    if kind != "matmul":
        return 0.0, 0.0
    if node.op_type == "Einsum":
        steps = ort_steps(node, graph)
        if steps is None or steps.m <= 1:
            return 0.0, 0.0
        return float(steps.batches * steps.k * math.ceil(steps.n / PACK_STRIP) * PACK_STRIP), float(steps.batches)
    if node.op_type not in ("MatMul", "FusedMatMul") or len(node.inputs) < 2 or not node.outputs:
        return 0.0, 0.0
    a, b, y = (graph.values.get(n) for n in (node.inputs[0], node.inputs[1], node.outputs[0]))
    if a is None or b is None or y is None or b.weight is not None or not (a.is_static and b.is_static and y.is_static):
        return 0.0, 0.0
    if len(b.shape) < 2 or len(y.shape) < 2:  # type: ignore[arg-type]
        return 0.0, 0.0
    k = a.shape[-2] if node.attributes.get("transA") else a.shape[-1]  # type: ignore[index]
    rows, n = int(y.shape[-2]), int(y.shape[-1])  # type: ignore[index]
    if rows <= 1 or n <= 1:  # MLAS's GEMV paths (one row, or one column)
        return 0.0, 0.0
    batches = math.prod(int(d) for d in y.shape[:-2]) if len(b.shape) > 2 else 1  # type: ignore[index,misc]
    return float(batches * int(k) * math.ceil(n / PACK_STRIP) * PACK_STRIP), float(batches)
