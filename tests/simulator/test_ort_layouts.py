"""Which layout ONNX Runtime gives a Conv on this host, as the cost model reads it from the compiled graph."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def test_depthwise_conv_ort_cannot_block_stays_nchw(tmp_path: Path) -> None:
    """ShuffleNet v2's stage-2 depthwise convs (58 channels, after a channel shuffle) stay plain ONNX Convs in ORT's
    compiled graph, which the cost model prices as MLAS's NCHW path (kind dwconvnchw), not NCHWc's."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from simulator.calibration_bench import compile_for_host
    from simulator.costs import work_of

    c = 58
    rng = np.random.default_rng(0)
    w = lambda n, s: numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n)  # noqa: E731
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"]),
             helper.make_node("Reshape", ["a", "s1"], ["b"]),  # the channel shuffle
             helper.make_node("Transpose", ["b"], ["t"], perm=[0, 2, 1, 3, 4]),
             helper.make_node("Reshape", ["t", "s2"], ["u"]),
             helper.make_node("Conv", ["u", "w2"], ["y"], group=c, pads=[1, 1, 1, 1], strides=[2, 2])]
    inits = [w("w1", [c, c, 1, 1]), w("w2", [c, 1, 3, 3]), numpy_helper.from_array(np.array([1, 2, c // 2, 32, 32]), "s1"),
             numpy_helper.from_array(np.array([1, c, 32, 32]), "s2")]
    g = helper.make_graph(nodes, "shuffle", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 32, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, 16, 16])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 9
    onnx.save(m, tmp_path / "shuffle.onnx")
    compiled = compile_for_host(tmp_path / "shuffle.onnx", tmp_path / "opt.onnx")
    dw = [n for n in compiled.nodes if n.op_type == "Conv" and n.attributes.get("group") == c]
    assert len(dw) == 1 and dw[0].domain == ""
    assert work_of(dw[0], compiled).kind == "dwconvnchw"
