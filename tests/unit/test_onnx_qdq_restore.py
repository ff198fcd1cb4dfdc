"""compiler/optimize/onnx_qdq.restore_float: a QDQ upload's float graph, on a hand-written graph (a per-channel
int8 weight behind DequantizeLinear, an activation pair with torch's Cast inside, the graph output read from a DQ)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from compiler.optimize.onnx_qdq import activation_pairs, restore_float


def _model() -> onnx.ModelProto:
    q = np.array([[[[1]], [[-2]]], [[[3]], [[4]]]], dtype=np.int8)  # [2, 2, 1, 1]
    inits = [numpy_helper.from_array(q, "wq"), numpy_helper.from_array(np.array([0.5, 0.25], np.float32), "ws"),
             numpy_helper.from_array(np.array([0, 1], np.int8), "wz"),
             numpy_helper.from_array(np.array(0.1, np.float32), "s"), numpy_helper.from_array(np.array(128, np.uint8), "z")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q0"),
             helper.make_node("Cast", ["xq"], ["xc"], to=TensorProto.UINT8, name="cast0"),
             helper.make_node("DequantizeLinear", ["xc", "s", "z"], ["xd"], name="dq0"),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], axis=0, name="dqw"),
             helper.make_node("Conv", ["xd", "w"], ["y"], name="conv"),
             helper.make_node("QuantizeLinear", ["y", "s", "z"], ["yq"], name="q1"),
             helper.make_node("DequantizeLinear", ["yq", "s", "z"], ["out"], name="dq1")]
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 2, 4, 4])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_weights_are_dequantized_and_pairs_bypassed() -> None:
    m = _model()
    assert [n.op_type for n in m.graph.node].count("DequantizeLinear") == 3
    assert restore_float(m) == 3
    ops = [n.op_type for n in m.graph.node]
    assert ops == ["Conv", "Identity"]  # the Q / Cast / DQ of the pairs are gone; the output keeps its name
    conv = m.graph.node[0]
    assert conv.input[0] == "x" and m.graph.node[1].input[0] == "y" and m.graph.node[1].output[0] == "out"
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    assert set(inits) == {"w"}  # scales and zero points no longer read
    np.testing.assert_allclose(inits["w"][:, :, 0, 0], [[0.5, -1.0], [0.5, 0.75]])  # (q - zp) * scale per channel
    onnx.checker.check_model(m)


def test_a_float_model_is_left_alone() -> None:
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "m",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    m = helper.make_model(g)
    before = m.SerializeToString()
    assert restore_float(m) == 0 and m.SerializeToString() == before


def test_activation_pairs_counts_the_8_bit_ones() -> None:
    """A file whose int8-static export is the upload as it is: 8-bit activation pairs (through torch's Cast too);
    weight DequantizeLinears and 16-bit pairs (w8a16, whose int8-static is not the file) do not count."""
    m = _model()
    assert activation_pairs(m) == 2
    for t in m.graph.initializer:
        if t.name == "z":  # zero point of every pair: 16-bit activations
            t.CopyFrom(numpy_helper.from_array(np.array(32768, np.uint16), "z"))
    for n in m.graph.node:
        if n.op_type == "Cast":
            n.attribute[0].i = TensorProto.UINT16
    assert activation_pairs(m) == 0
