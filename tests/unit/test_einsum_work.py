"""A contracting Einsum is a matrix product (MViT-v2's relative-position Einsums were priced as data moves)."""

from __future__ import annotations

from compiler.graph import Graph, Node, Value
from simulator.costs import kind_of, work_of


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
