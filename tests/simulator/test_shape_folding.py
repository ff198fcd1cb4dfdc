"""Shape arithmetic on tensors of known shape is folded at compile time by every runtime (a dynamo export's
sym_size -> Mul -> Concat feeding a Resize's sizes): predicted targets cost it as nothing, not as per-op calls."""

from __future__ import annotations

import pytest

from compiler.backends.base import as_tasks
from compiler.graph import Graph, Node
from simulator.sweep import sweep
from simulator.totals import totals
from tests.simulator.helpers import act, graph, weight


def _upsample_by_shape(h: int | str) -> Graph:
    """x -> Conv -> y; Shape(x)[2:] * 2 -> Concat([1, 8], .) -> Resize(y, sizes) -> z."""
    values = [act("x", [1, 8, h, 16]), weight("w", [8, 8, 3, 3]), act("y", [1, 8, h, 16]),
              act("hw", [2], "int64"), weight("two", [1], "int64"), act("hw2", [2], "int64"),
              weight("nc", [2], "int64"), act("sizes", [4], "int64"),
              act("z", [1, 8, 2 * h if isinstance(h, int) else "h2", 32])]
    nodes = [Node("conv", "conv", "Conv", inputs=["x", "w"], outputs=["y"],
                  attributes={"pads": [1, 1, 1, 1], "kernel_shape": [3, 3]}),
             Node("shape", "shape", "Shape", inputs=["x"], outputs=["hw"], attributes={"start": 2}),
             Node("mul", "mul", "Mul", inputs=["hw", "two"], outputs=["hw2"]),
             Node("concat", "concat", "Concat", inputs=["nc", "hw2"], outputs=["sizes"], attributes={"axis": 0}),
             Node("resize", "resize", "Resize", inputs=["y", "", "", "sizes"], outputs=["z"],
                  attributes={"mode": "nearest"})]
    return graph(nodes, values, ["x"], ["z"])


@pytest.mark.parametrize("target", ["ort-qnn/snapdragon-8g3", "coreml/apple-a17", "ort-xnnpack/rpi5"])
def test_shape_arithmetic_of_a_known_shape_costs_nothing(target: str) -> None:
    g = as_tasks(_upsample_by_shape(16))
    r = sweep(g, target, source=g)
    ids = [n.id for n in g.nodes]
    kinds = {i: w.kind for i, w in zip(ids, r.works)}
    lat = {i: row[0] for i, row in zip(ids, r.bulk["metrics"]["latency_ms"])}
    for shape_op in ("shape", "mul", "concat"):
        assert kinds[shape_op] == "folded" and lat[shape_op] == 0.0, (shape_op, kinds[shape_op], lat[shape_op])
    assert kinds["resize"] != "folded" and lat["resize"] > 0 and lat["conv"] > 0


def test_shape_of_a_symbolic_dim_is_not_folded() -> None:
    """With H unknown the shape is a run-time value: the Shape node runs (and its work is marked unknown elsewhere)."""
    g = as_tasks(_upsample_by_shape("h"))
    r = sweep(g, "ort-qnn/snapdragon-8g3", source=g)
    kinds = {n.id: w.kind for n, w in zip(g.nodes, r.works)}
    assert kinds["shape"] != "folded" and kinds["mul"] != "folded"


def _resize(by_shape: bool) -> Graph:
    """x -> Conv -> y -> Resize(y, sizes) -> z; sizes = Concat([1, 8], Shape(y)[2:] * 2), or a constant."""
    values = [act("x", [1, 8, 16, 16]), weight("w", [8, 8, 3, 3]), act("y", [1, 8, 16, 16]), act("hw", [2], "int64"),
              weight("two", [1], "int64"), act("hw2", [2], "int64"), weight("nc", [2], "int64"),
              act("sizes", [4], "int64") if by_shape else weight("sizes", [4], "int64"), act("z", [1, 8, 32, 32])]
    nodes = [Node("conv", "conv", "Conv", inputs=["x", "w"], outputs=["y"],
                  attributes={"pads": [1, 1, 1, 1], "kernel_shape": [3, 3]})]
    if by_shape:
        nodes += [Node("shape", "shape", "Shape", inputs=["y"], outputs=["hw"], attributes={"start": 2}),
                  Node("mul", "mul", "Mul", inputs=["hw", "two"], outputs=["hw2"]),
                  Node("concat", "concat", "Concat", inputs=["nc", "hw2"], outputs=["sizes"], attributes={"axis": 0})]
    nodes.append(Node("resize", "resize", "Resize", inputs=["y", "", "", "sizes"], outputs=["z"],
                      attributes={"mode": "nearest"}))
    return graph(nodes, values, ["x"], ["z"])


@pytest.mark.parametrize("target", ["coreml/apple-a17", "ort-qnn/snapdragon-8g3"])
def test_a_folded_shape_of_a_task_output_adds_no_partition_crossing(target: str) -> None:
    """A Shape no accelerator unit lists (Core ML's ANE) reads a conv's output: folded, it reads nothing at run time,
    so the model costs what it costs with the sizes written as a constant."""
    folded, constant = as_tasks(_resize(True)), as_tasks(_resize(False))
    rf, rc = sweep(folded, target, source=folded), sweep(constant, target, source=constant)
    ms_f = totals(rf.bulk, rf.per_op, "fp32", {})["latency_ms"]
    ms_c = totals(rc.bulk, rc.per_op, "fp32", {})["latency_ms"]
    assert ms_f == pytest.approx(ms_c, rel=1e-6), (ms_f, ms_c)
