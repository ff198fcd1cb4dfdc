"""ONNX-vocabulary view of TFLite / Core ML / pt2 graphs: what the simulator's cost model reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler import frontends
from compiler.frontends.onnx_view import onnx_view
from simulator.costs import work_of
from testkit import coreml_builder as cb
from testkit import tflite_builder as tb
from tests.formats.test_pt2 import SRC


def _macs(g, node_id: str) -> float:  # type: ignore[no-untyped-def]
    return work_of(g.node(node_id), g).macs


def test_tflite_view(models) -> None:  # type: ignore[no-untyped-def]
    src = frontends.load(models.get("cnn.tflite", tb.cnn))
    v = onnx_view(src)
    assert [n.id for n in v.nodes] == [n.id for n in src.nodes]  # per-op results map back by id
    assert [n.op_type for n in v.nodes][:3] == ["FusedConv", "FusedConv", "Conv"]
    assert v.values["net/stem/conv/weights"].shape == [16, 3, 3, 3]  # OHWI -> OIHW
    assert v.values["net/block1/dw/weights"].shape == [16, 1, 3, 3]
    assert src.values["net/block1/dw/weights"].shape == [1, 3, 3, 16]  # the loaded graph is untouched
    assert v.node("DEPTHWISE_CONV_2D_1").attributes["group"] == 16
    assert v.node("CONV_2D_0").attributes["activation"] == "Clip"
    assert _macs(v, "CONV_2D_0") == 16 * 16 * 16 * 27
    assert _macs(v, "DEPTHWISE_CONV_2D_1") == 16 * 16 * 16 * 9
    assert v.node("FULLY_CONNECTED_6").attributes["transB"] == 1


def test_transformer_views_count_matmuls(models) -> None:  # type: ignore[no-untyped-def]
    v = onnx_view(frontends.load(models.get("block.tflite", tb.transformer_block)))
    assert _macs(v, "FULLY_CONNECTED_0") == 16 * 32 * 32
    assert _macs(v, "BATCH_MATMUL_3") == 16 * 16 * 32  # q @ k^T
    c = onnx_view(frontends.load(models.get("block.mlpackage.zip", lambda p: cb.mlpackage_zip(p, "block"))))
    assert {"LayerNormalization", "Gemm", "MatMul", "Softmax", "Gelu"} <= {n.op_type for n in c.nodes}


def test_coreml_and_pt2_views(models) -> None:  # type: ignore[no-untyped-def]
    c = onnx_view(frontends.load(models.get("cnn.mlpackage.zip", lambda p: cb.mlpackage_zip(p, "cnn"))))
    convs = [n for n in c.nodes if n.op_type == "Conv"]
    assert [n.attributes["group"] for n in convs] == [1, 16]
    assert _macs(c, convs[0].id) == 16 * 16 * 16 * 27 and _macs(c, convs[1].id) == 16 * 16 * 16 * 9
    from edgescope.commands.export_pt2 import export_pt2

    p = onnx_view(frontends.load(models.get("net.pt2", lambda q: export_pt2(f"{SRC / 'net.py'}:build", q)[0])))
    assert p.node("conv2d_1").op_type == "Conv" and p.node("linear").op_type == "Gemm"
    assert _macs(p, "conv2d_1") == 16 * 16 * 8 * 72
    assert _macs(p, "linear") == 8 * 4


def test_onnx_graphs_pass_through(tmp_path: Path) -> None:
    from testkit import modelzoo

    g = frontends.load(modelzoo.tiny_cnn(tmp_path / "m.onnx"))
    assert onnx_view(g) is g


@pytest.mark.parametrize("fmt", ["tflite", "coreml", "pt2"])
def test_view_keeps_ids_and_locations(models, fmt: str) -> None:  # type: ignore[no-untyped-def]
    from edgescope.commands.export_pt2 import export_pt2

    build = {"tflite": ("cnn.tflite", tb.cnn), "coreml": ("cnn.mlmodel", cb.mlmodel_nn),
             "pt2": ("net.pt2", lambda q: export_pt2(f"{SRC / 'net.py'}:build", q)[0])}[fmt]
    g = frontends.load(models.get(*build))
    v = onnx_view(g)
    assert [(n.id, n.namespace, n.location, n.outputs) for n in v.nodes] == \
        [(n.id, n.namespace, n.location, n.outputs) for n in g.nodes]


def test_pt2_in_place_variants_take_their_ops_kernel() -> None:
    """`nn.ReLU6(inplace=True)` exports as `aten.hardtanh_`: a Clip, not an unknown op (it fell to the CPU of every
    device profile when a .pt2 was predicted on its FX graph)."""
    from compiler.graph import Graph, Node, Value

    g = Graph(name="m", format="pt2", nodes=[
        Node(id="hardtanh_", name="hardtanh_", op_type="aten.hardtanh_", inputs=["x"], outputs=["y"]),
        Node(id="relu_", name="relu_", op_type="aten.relu_", inputs=["y"], outputs=["z"])],
        values={v: Value(name=v, shape=[1, 8], dtype="float32") for v in "xyz"}, inputs=["x"], outputs=["z"])
    assert [n.op_type for n in onnx_view(g).nodes] == ["Clip", "Relu"]
