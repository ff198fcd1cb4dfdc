"""benchmarks/cnn_parts.py: the files it builds have the shapes it says, and a model is cut where its prefixes name."""

from __future__ import annotations

from pathlib import Path

import onnx
from onnx import TensorProto, helper

from benchmarks.cnn_parts import BUILT, GROUPS, Builder, cut_points, pieces


def test_builder_shapes_and_weights() -> None:
    b = Builder()
    x = b.conv(b.input([1, 3, 224, 224]), 32, 3, 2)
    assert x[1] == [1, 32, 112, 112]
    assert b.depthwise(x, 5)[1] == [1, 32, 112, 112]
    y = b.head(b.input([1, 1280, 7, 7]))
    assert y[1] == [1, 1000]
    # every conv and the Gemm have weights of their own (a shared weight would stay in cache: no footprint)
    names = [i.name for i in b.inits]
    assert len(names) == len(set(names)) == 6


def test_every_group_names_built_files(tmp_path: Path) -> None:
    for name in {n for g in GROUPS.values() for n in g}:
        assert name in BUILT
    b = Builder()
    path = b.save(BUILT["blocks4+tail6+head"](b), tmp_path / "m.onnx")
    m = onnx.load(str(path))
    onnx.checker.check_model(m)
    assert [o.name for o in m.graph.output][1].startswith("y")  # the tail's classifier
    assert sum(n.op_type == "Conv" for n in m.graph.node) == 1 + 4 * 3 + 6 + 1


def _tiny(path: Path) -> Path:
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="/m/first/Relu"),
             helper.make_node("Neg", ["a"], ["b"], name="/m/second/Neg"),
             helper.make_node("Relu", ["b"], ["y"], name="/m/third/Relu")]
    vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4])  # noqa: E731
    g = helper.make_graph(nodes, "tiny", [vi("x")], [vi("y")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 9
    onnx.save(m, str(path))
    return path


def test_cut_points_and_pieces(tmp_path: Path) -> None:
    path = _tiny(tmp_path / "tiny.onnx")
    assert cut_points(onnx.load(str(path)), ["/m/second/", "/m/third"]) == ["x", "a", "b", "y"]
    parts = pieces(path, ["/m/third"], tmp_path)
    assert list(parts) == ["whole", "piece0", "piece1"]
    assert [n.op_type for n in onnx.load(str(parts["piece0"])).graph.node] == ["Relu", "Neg"]
    assert [n.op_type for n in onnx.load(str(parts["piece1"])).graph.node] == ["Relu"]
