"""A contracting Einsum is a matrix product (MViT-v2's relative-position Einsums were priced as data moves)."""

from __future__ import annotations

import pytest

from compiler.graph import Graph, Node, Value
from simulator.costs import kind_of, work_of
from simulator.einsum import EinsumSteps, moves_single_axis, ort_steps, product_columns, transpose_steps
from simulator.profiles import load_profile
from tests.simulator.helpers import act, graph, host_fp32_ms, weight


def _einsum(equation: str, shapes: dict[str, list[int]], out: list[int]) -> tuple[Node, Graph]:
    names = list(shapes)
    node = Node("e", "e", "Einsum", inputs=names, outputs=["y"], attributes={"equation": equation})
    values = {n: Value(n, s, "float32") for n, s in shapes.items()} | {"y": Value("y", out, "float32")}
    return node, Graph("g", "onnx", [node], values, names, ["y"])


def test_a_two_operand_einsum_counts_one_multiply_add_per_index_combination() -> None:
    # MViT-v2-S: q [b, y, t, h, w, c] with the relative positions [h, k, c] -> [b, y, t, h, w, k]
    node, g = _einsum("bythwc,hkc->bythwk", {"q": [1, 1, 8, 56, 56, 96], "r": [56, 56, 96]}, [1, 1, 8, 56, 56, 56])
    assert kind_of(node, g) == "matmul"
    assert work_of(node, g).macs == 1 * 1 * 8 * 56 * 56 * 96 * 56
    # attention scores through einsum: [b, q, h, d] x [b, k, h, d] -> [b, h, q, k]
    node, g = _einsum("bqhd,bkhd->bhqk", {"q": [2, 128, 8, 32], "k": [2, 128, 8, 32]}, [2, 8, 128, 128])
    assert work_of(node, g).macs == 2 * 128 * 8 * 32 * 128


def test_a_one_operand_einsum_stays_a_data_move() -> None:
    node, g = _einsum("bhqk->bqhk", {"a": [2, 8, 128, 128]}, [2, 128, 8, 128])
    assert kind_of(node, g) == "layout" and work_of(node, g).macs == 0


def test_orts_steps_around_the_product_follow_its_einsum_kernel() -> None:
    """simulator.einsum.ort_steps mirrors onnxruntime's einsum_utils: operands to one axis order, each pair to
    [batch, M, K] x [batch, K, N], a batched SGEMM, the result to the output order, a copy into the output."""
    s, h, d = 128, 8, 32
    # q.k^T: k to [b, h, d, k] moves one axis (blocked); q, raw, to [h, q, d, b, k] keeps a trailing size-1 axis in
    # place, so ORT walks it element by element; k, q.k and the output copy are plain copies.
    node, g = _einsum("bqhd,bkhd->bhqk", {"q": [1, s, h, d], "k": [1, s, h, d]}, [1, h, s, s])
    steps = ort_steps(node, g)
    assert steps == EinsumSteps(walked=s * h * d, moved=2 * s * h * d + 2 * h * s * s, runs=0.0, batches=h, m=s,
                                k=d, n=s)
    # attention x v: v to [b, h, k, d] and the product to [b, q, h, d] copy runs of d elements (one axis moves)
    node, g = _einsum("bhqk,bkhd->bqhd", {"a": [1, h, s, s], "v": [1, s, h, d]}, [1, s, h, d])
    steps = ort_steps(node, g)
    assert (steps.walked, steps.runs, steps.batches, steps.m, steps.k, steps.n) == (0.0, 2 * s * h, h, s, s, d)
    assert steps.moved == h * s * s + 4 * s * h * d
    # a plain batched product needs no Transpose: only its two copies
    node, g = _einsum("bij,bjk->bik", {"a": [8, 64, 64], "b": [8, 64, 64]}, [8, 64, 64])
    assert ort_steps(node, g) == EinsumSteps(0.0, 2 * 8 * 64 * 64, 0.0, 8, 64, 64, 64)
    # what the kernel would sum within one operand, and three operands, are left to the product alone
    node, g = _einsum("bij,bjk->bk", {"a": [8, 64, 64], "b": [8, 64, 64]}, [8, 64])
    assert ort_steps(node, g) is None
    node, g = _einsum("ij,jk,kl->il", {"a": [4, 4], "b": [4, 4], "c": [4, 4]}, [4, 4])
    assert ort_steps(node, g) is None


def test_ort_transpose_kinds() -> None:
    assert transpose_steps([2, 3], [0, 1]) == (0.0, 0.0, 0.0)  # identity: skipped
    assert transpose_steps([1, 128, 8, 32, 1], [2, 1, 3, 0, 4]) == (32768.0, 0.0, 0.0)  # walked
    assert transpose_steps([1, 8, 128, 32, 1], [1, 2, 3, 0, 4]) == (0.0, 32768.0, 0.0)  # a reshape: copied
    assert transpose_steps([1, 128, 8, 32], [0, 2, 3, 1]) == (0.0, 32768.0, 0.0)  # one axis moves: blocked
    assert transpose_steps([8, 128, 32], [1, 0, 2]) == (0.0, 32768.0, 1024.0)  # runs of 32
    assert moves_single_axis([0, 3, 1, 2, 4]) and moves_single_axis([0, 2, 3, 1])
    assert not moves_single_axis([2, 1, 3, 0, 4]) and not moves_single_axis([0, 1, 2])


def test_an_einsum_costs_its_transposes_and_copies_beside_its_product() -> None:
    """On ORT's CPU EP an Einsum prices above a MatMul of the same product by what its Transposes and copies cost:
    walked elements at the walk's rate, moved ones at `layout.fp32.inner`, runs at `layout.fp32.run`."""
    hw = load_profile("host-cpu").with_overrides({"units": {"cpu": {
        "efficiency": {"walk.fp32": 0.004}, "kind_overhead_s": {"layout.fp32.inner": 2e-10, "layout.fp32.run": 8e-9}}}})
    s, h, d = 128, 8, 32
    mm = graph([Node("m", "m", "MatMul", inputs=["q", "k"], outputs=["y"])],
               [act("q", [1, h, s, d]), act("k", [1, h, d, s]), act("y", [1, h, s, s])], ["q", "k"], ["y"])
    node, g = _einsum("bqhd,bkhd->bhqk", {"q": [1, s, h, d], "k": [1, s, h, d]}, [1, h, s, s])
    steps = ort_steps(node, g)
    assert steps is not None
    walk = 1 / (hw.units[0].peak_ops_per_s["fp32"] * 0.004)
    extra = (steps.walked * walk + steps.moved * 2e-10) * 1e3
    assert host_fp32_ms(g, hw) - host_fp32_ms(mm, hw) == pytest.approx(extra, rel=0.02)
    node, g = _einsum("bhqk,bkhd->bqhd", {"a": [1, h, s, s], "v": [1, s, h, d]}, [1, s, h, d])
    mm = graph([Node("m", "m", "MatMul", inputs=["a", "v"], outputs=["y"])],
               [act("a", [1, h, s, s]), act("v", [1, h, s, d]), act("y", [1, h, s, d])], ["a", "v"], ["y"])
    steps = ort_steps(node, g)
    assert steps is not None
    extra = (steps.moved * 2e-10 + steps.runs * 8e-9) * 1e3
    assert host_fp32_ms(g, hw) - host_fp32_ms(mm, hw) == pytest.approx(extra, rel=0.02)


@pytest.mark.parametrize(("n", "padded"), [(4, 16), (8, 16), (49, 64), (197, 208), (48, 48), (1000, 1008)])
def test_sgemm_columns_pay_the_machines_block(n: int, padded: int) -> None:
    """MLAS's fp32 SGEMM computes C's columns in whole vector registers (16 floats with AVX-512F): a product whose N
    is not a multiple of the block pays its MACs with N rounded up (einsum.product_columns, roofline's padding), on
    ORT's CPU EP; a machine without the figure pays none."""
    m, k = 4096, 256
    g = graph([Node("g", "g", "Gemm", inputs=["x", "w"], outputs=["y"])],
              [act("x", [m, k]), weight("w", [k, n]), act("y", [m, n])], ["x"], ["y"])
    assert product_columns(g.nodes[0], g, kind_of(g.nodes[0], g)) == (float(n), float(min(n & -n, 64)))
    # compute-bound: activations at a very high rate, so the latency is the MACs over the GEMM's rate
    fast = {"cache_bandwidth_bytes_per_s": 1e18, "kind_bandwidth_bytes_per_s": {"default": 1e18},
            "dispatch_overhead_s": 0.0, "kind_overhead_s": {"gemm": 0.0, "gemm.fp32": 0.0}}
    hw = load_profile("host-cpu").with_overrides({"units": {"cpu": {**fast, "sgemm_column_block": 16.0}}})
    unpadded = hw.with_overrides({"units": {"cpu": {"sgemm_column_block": 0.0}}})
    assert host_fp32_ms(g, hw) / host_fp32_ms(g, unpadded) == pytest.approx(padded / n, rel=0.02)
    mm = graph([Node("m", "m", "MatMul", inputs=["a", "b"], outputs=["y"])],
               [act("a", [8, m // 8, k]), act("b", [8, k, n]), act("y", [8, m // 8, n])], ["a", "b"], ["y"])
    assert host_fp32_ms(mm, hw) / host_fp32_ms(mm, unpadded) == pytest.approx(padded / n, rel=0.02)
