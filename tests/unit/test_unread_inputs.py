"""The saved ORT graph's inputs that nothing reads (compiler.backends.ort.drop_unread_inputs): an IR 3 file lists its
initializers as inputs, and where ORT folds one away the input stays behind, to be fed on every timed run."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from compiler.backends.ort import drop_unread_inputs


def _saved(extra_inputs: list[str], body_reads: str = "") -> object:
    """x -> Relu -> y, with `extra_inputs` listed as inputs, `w` an input with its initializer (IR 3 style), and an
    If whose branch reads `body_reads` when given."""
    f = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [1])  # noqa: E731
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    outputs = [f("y")]
    if body_reads:
        branch = helper.make_graph([helper.make_node("Identity", [body_reads], ["o"], name="id")], "b", [], [f("o")])
        nodes.append(helper.make_node("If", ["c"], ["z"], name="if", then_branch=branch, else_branch=branch))
        outputs.append(f("z"))
    w = numpy_helper.from_array(np.ones(1, np.float32), "w")
    g = helper.make_graph(nodes, "g", [f("x"), f("w"), *(f(n) for n in extra_inputs)], outputs, [w])
    return helper.make_model(g)


def test_unread_inputs_without_initializer_go() -> None:
    m = _saved(["w_SHAPE", "OC2_DUMMY_7"])
    assert drop_unread_inputs(m, ["x"])
    assert [i.name for i in m.graph.input] == ["x", "w"]  # the initializer's input stays (IR 3 needs it listed)


def test_inputs_read_in_a_body_or_uploaded_stay() -> None:
    m = _saved(["c", "v", "mask", "gone"], body_reads="v")
    assert drop_unread_inputs(m, ["x", "mask"])  # "mask": an input of the upload no node reads, fed as the upload is
    assert [i.name for i in m.graph.input] == ["x", "w", "c", "v", "mask"]
    assert not drop_unread_inputs(m, ["x", "mask"])
