"""The shapes a profiled run saw, as the analysis takes them (compiler.concrete.fill_observed): they fill what
inference left unknown; they replace a known shape only in a .tflite, whose stored shapes are placeholders. ORT's
profiler reports its NCHWc kernels' blocked outputs (channels padded to the block), which replaced the inferred
logical shapes and moved the Optimize dialog's export predictions (LCNet-050 int8-static +1% -> +142%)."""

from __future__ import annotations

from compiler.concrete import fill_observed
from compiler.graph import Graph, Node, Value


def _graph(fmt: str, conv_shape: list[int | str], act_shape: list[int | str] | None) -> Graph:
    nodes = [Node(id="conv", name="conv", op_type="Conv", inputs=["x"], outputs=["c"]),
             Node(id="act", name="act", op_type="Relu", inputs=["c"], outputs=["y"])]
    values = {"x": Value("x", [1, 40, 56, 56], "float32"), "c": Value("c", conv_shape, "float32"),
              "y": Value("y", act_shape, "float32")}
    return Graph(name="g", format=fmt, nodes=nodes, values=values, inputs=["x"], outputs=["y"])


def test_an_onnx_graph_keeps_its_inferred_shapes_and_fills_the_unknown() -> None:
    g = _graph("onnx", [1, 40, 56, 56], ["N", 40, 56, 56])
    source = _graph("onnx", [1, 40, 56, 56], None)
    seen = {"conv": [[[1, 48, 56, 56], "float32"]], "act": [[[1, 40, 56, 56], "float32"]]}
    fill_observed(g, seen, [source])
    assert g.values["c"].shape == [1, 40, 56, 56]  # the blocked [1, 48, 56, 56] does not replace it
    assert g.values["y"].shape == [1, 40, 56, 56]  # the symbolic batch is filled
    assert source.values["y"].shape == [1, 40, 56, 56] and source.values["c"].shape == [1, 40, 56, 56]


def test_a_tflite_placeholder_batch_takes_the_run_s() -> None:
    g = _graph("tflite", [1, 40, 56, 56], [1, 40, 56, 56])
    fill_observed(g, {"conv": [[[4, 40, 56, 56], "float32"]], "act": [[[4, 40, 56, 56], "float32"]]})
    assert g.values["c"].shape == [4, 40, 56, 56] and g.values["y"].shape == [4, 40, 56, 56]
