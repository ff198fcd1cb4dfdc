"""Which input a failed run points at, and examples that fit it (pure, fast)."""

from __future__ import annotations

from compiler.concrete import Conflict, reshape_conflicts, reshaped
from compiler.graph import Graph, Node, Value, WeightStats
from compiler.input_hints import example, explain, required_fix, suspects
from compiler.input_plan import plan_inputs


def _vad_like() -> Graph:
    """An audio model: `sr` (set by the user) only steers an If; `audio` (defaulted) feeds the conv that fails."""
    values = {"audio": Value("audio", ["batch", "N"], "float32"), "sr": Value("sr", [], "int64"),
              "state": Value("state", [2, "batch", 64], "float32"),
              "k": Value("k", [16, 1, 256], "float32", weight=WeightStats(4096, 16384, -1.0, 1.0, 0.0)),
              "c16k": Value("c16k", [], "int64", weight=WeightStats(1, 8, 16000.0, 16000.0, 0.0))}
    nodes = [Node("eq", "eq", "Equal", inputs=["sr", "c16k"], outputs=["is16k"]),
             Node("if", "if", "If", inputs=["is16k"], outputs=["hop"]),
             Node("u", "u", "Unsqueeze", inputs=["audio"], outputs=["a3"]),
             Node("stft", "stft", "Conv", inputs=["a3", "k"], outputs=["spec"]),
             Node("mix", "mix", "Add", inputs=["spec", "state"], outputs=["y"])]
    for nd in nodes:
        for o in nd.outputs:
            values.setdefault(o, Value(o, None, "float32"))
    return Graph("vad", "onnx", nodes, values, ["audio", "sr", "state"], ["y"])


def test_failing_node_walks_back_to_the_defaulted_input() -> None:
    g = _vad_like()
    plans = plan_inputs(g, values={"sr": 16000})
    assert suspects(g, "stft", plans)[0] == "audio"  # not 'sr', which the user set and only reaches the If
    msg = explain("ONNX Runtime could not run the model with these inputs: Non-zero status code returned while "
                  "running Conv node. Name:'stft' Status Message: kernel larger than input", g, plans)
    assert "Most likely input: 'audio'" in msg and "--input audio=1x<N>" in msg
    assert "1x3x224x224" not in msg and "'sr'" not in msg.split("Most likely")[1]


def test_a_failure_inside_a_branch_walks_back_from_the_branch_node() -> None:
    # ORT names the If first and the failing node of its branch after it; sr (a default value here) only steers
    # the If, the branch's conv reads the 128-sample default audio: the hint names 'audio', not 'sr' again.
    g = _vad_like()
    g.nodes[3].parent = "if"  # the conv runs inside the If's branch
    plans = plan_inputs(g)
    msg = explain("ONNX Runtime could not run the model with these inputs: Non-zero status code returned while "
                  "running If node. Name:'if' Status Message: Non-zero status code returned while running Conv "
                  "node. Name:'stft' Status Message: Invalid input shape: {128}", g, plans)
    assert "Most likely input: 'audio'" in msg, msg


def test_examples_fit_rank_and_dtype() -> None:
    g = _vad_like()
    plans = plan_inputs(g)
    assert example(plans["audio"]) == "--input audio=1x<N>"
    assert example(plans["sr"]) == "--input-value sr=16000"  # a scalar parameter gets a value, not a shape
    assert example(plans["state"]) == "--input state=2x1x64"  # a batch dim anywhere is 1
    # A first dim taken for a batch by its place only, which ran at 1 (a GNN's node count): named, not 1 again.
    nodes = plan_inputs(Graph("g", "onnx", [], {"x": Value("x", ["x_dim0", 32], "float32")}, ["x"], []))
    assert example(nodes["x"]) == "--input x=<x_dim0>x32"


def test_an_integer_shape_input_with_made_up_values_is_blamed_before_a_fixed_float_input() -> None:
    # the onnx wheel's Expand test: X is fixed-shape float, `shape` a fixed-shape int64 input whose default values
    # are drawn from a range; the made-up shape is what breaks the Expand, and the example is a value, not a shape
    values = {"X": Value("X", [1, 3, 1], "float32"), "shape": Value("shape", [2], "int64"),
              "Y": Value("Y", None, "float32")}
    g = Graph("expand", "onnx", [Node("e", "e", "Expand", inputs=["X", "shape"], outputs=["Y"])], values,
              ["X", "shape"], ["Y"])
    plans = plan_inputs(g)
    assert suspects(g, "e", plans)[0] == "shape"
    msg = explain("ONNX Runtime could not run the model with these inputs: Non-zero status code returned while "
                  "running Expand node. Name:'e' Status Message: invalid expand shape", g, plans)
    assert "Most likely input: 'shape'" in msg and "--input-value shape=<integer>" in msg, msg


def test_crash_lists_the_inputs_used() -> None:
    g = _vad_like()
    msg = explain("ONNX Runtime crashed while running the model (signal 11: SIGSEGV)", None, plan_inputs(g))
    assert "'audio' (float32 [batch, N], ran at 1x16000" in msg and "--input" in msg


def test_reshape_arithmetic_and_conflicts() -> None:
    assert reshaped([1, 128], [1, 1, 1, 128]) == [1, 1, 1, 128]
    assert reshaped([2, 3, 4], [0, -1]) == [2, 12]
    assert reshaped([1, 128], [1, 1, 1, 64]) is None
    values = {"x": Value("x", [1, 128, 8], "float32"),
              "t": Value("t", [2], "int64", weight=WeightStats(2, 16, 8.0, 64.0, 0.0, ints=(64, 8)))}
    g = Graph("g", "onnx", [Node("r", "r", "Reshape", inputs=["x", "t"], outputs=["y"])],
              {**values, "y": Value("y", None, "float32")}, ["x"], ["y"])
    assert reshape_conflicts(g) == [Conflict("r", [1, 128, 8], [64, 8])]


def test_required_dim_is_solved_from_a_baked_reshape() -> None:
    """A traced export baked the sequence length 64 into a Reshape: the defaulted 128 is replaced by 64."""
    values = {"x": Value("x", ["batch", "seq", 8], "float32"),
              "t": Value("t", [2], "int64", weight=WeightStats(2, 16, 8.0, 64.0, 0.0, ints=(64, 8)))}
    g = Graph("g", "onnx", [Node("r", "r", "Reshape", inputs=["x", "t"], outputs=["y"])],
              {**values, "y": Value("y", None, "float32")}, ["x"], ["y"])
    plans = plan_inputs(g)
    assert plans["x"].shape == [1, 128, 8]
    name, shape, why = required_fix(Conflict("r", [1, 128, 8], [64, 8]), g, plans)
    assert (name, shape) == ("x", [1, 64, 8]) and "seq=64" in why
    user = plan_inputs(g, {"x": [1, 100, 8]})  # the user's own shapes are never changed behind their back
    assert required_fix(Conflict("r", [1, 100, 8], [64, 8]), g, user) is None
