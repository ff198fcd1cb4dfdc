"""Shapes of nodes a runtime merged (common-subexpression elimination) reach their twins in other targets' graphs."""

from __future__ import annotations

from compiler.concrete import fill_from_twins
from compiler.graph import Graph, Node, Value


def _twins(attrs_b: dict | None = None, parent_b: str = "") -> Graph:  # type: ignore[type-arg]
    """mask -> NonZero (a) -> Transpose (ta); mask -> NonZero (b) -> Transpose (tb): a's chain was profiled."""
    values = {"mask": Value("mask", [3234], "bool"),
              "a": Value("a", [1, 17], "int64"), "ta": Value("ta", [17, 1], "int64"),
              "b": Value("b", [1, "unk__1"], "int64"), "tb": Value("tb", ["unk__1", 1], "int64")}
    nodes = [Node("nz", "nz", "NonZero", inputs=["mask"], outputs=["a"]),
             Node("t", "t", "Transpose", inputs=["a"], outputs=["ta"], attributes={"perm": [1, 0]}),
             Node("nz_1", "nz_1", "NonZero", inputs=["mask"], outputs=["b"], parent=parent_b),
             Node("t_1", "t_1", "Transpose", inputs=["b"], outputs=["tb"],
                  attributes=attrs_b if attrs_b is not None else {"perm": [1, 0]})]
    return Graph("g", "onnx", nodes, values, ["mask"], ["ta", "tb"])


def test_a_twin_and_what_follows_it_take_the_profiled_shapes() -> None:
    g = _twins()
    assert fill_from_twins(g) == 2
    assert g.values["b"].shape == [1, 17] and g.values["tb"].shape == [17, 1]


def test_different_attributes_or_a_body_node_are_not_twins() -> None:
    g = _twins(attrs_b={"perm": [0, 1]})
    assert fill_from_twins(g) == 1 and g.values["tb"].shape == ["unk__1", 1]  # the NonZero is, the Transpose not
    g = _twins(parent_b="loop")
    assert fill_from_twins(g) == 0 and g.values["b"].shape == [1, "unk__1"]


def test_the_first_twin_takes_the_shapes_of_a_later_one_the_runtime_kept() -> None:
    """ORT kept RetinaNet's second NonZero of each pair (and what follows it) under its own name: the first stayed
    unknown on every device target (5 NonZero -> Transpose -> GatherND chains)."""
    g = _twins()
    for name, twin in (("a", "b"), ("ta", "tb")):
        g.values[name], g.values[twin] = Value(name, g.values[twin].shape, "int64"), Value(twin, g.values[name].shape,
                                                                                              "int64")
    assert g.values["a"].shape == [1, "unk__1"] and g.values["b"].shape == [1, 17]
    assert fill_from_twins(g) == 2
    assert g.values["a"].shape == [1, 17] and g.values["ta"].shape == [17, 1]
