""".pt2 on ort-cpu/host keeps its module groups: the tasks compiled from the converted file get the namespaces of the
modules (`nn_module_stack`) the ONNX export of the same network gives its tasks, and the names the decomposition
changed (`getitem` for `batch_norm`) are renamed back so tasks map to the .pt2's FX nodes."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from compiler import frontends
from compiler.backends import compile_for_target
from compiler.frontends.pt2 import module_path
from compiler.graph import Graph

pytestmark = pytest.mark.slow


def _compiled(path: Path, workdir: Path) -> tuple[Graph, Graph]:
    source = frontends.load(path)
    compiled, _ = compile_for_target(path, "ort-cpu/host", workdir, source)
    return source, compiled


def _top2_pt2(namespace: str) -> str:
    """Qualified name of the second-level module: the .pt2's parts are qualified (`features/features.3 (...)`)."""
    parts = namespace.split("/")[:2]
    return module_path(parts[-1]) if namespace else ""


def _top2_onnx(namespace: str) -> str:
    """The dynamo ONNX export's parts are relative (`features/3`)."""
    return ".".join(namespace.split("/")[:2]) if namespace else ""


@pytest.fixture(scope="module")
def both(shared_models, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """((source, compiled) of MobileNetV3-Small's .pt2, (source, compiled) of its dynamo ONNX export) on
    ort-cpu/host."""
    pt2 = shared_models.path("pt2_mobilenet_v3_small")
    onnx = shared_models.path("mobilenet_v3_small_dynamo")
    return _compiled(pt2, tmp_path_factory.mktemp("pt2")), _compiled(onnx, tmp_path_factory.mktemp("onnx"))


def test_conv_tasks_get_the_onnx_exports_module_paths(both) -> None:  # type: ignore[no-untyped-def]
    (_, pt2), (_, onnx) = both
    convs_pt2 = Counter(_top2_pt2(t.namespace) for t in pt2.nodes if t.op_type in ("Conv", "FusedConv"))
    convs_onnx = Counter(_top2_onnx(t.namespace) for t in onnx.nodes if t.op_type in ("Conv", "FusedConv"))
    assert sum(convs_pt2.values()) == sum(convs_onnx.values()) >= 50
    same = sum((convs_pt2 & convs_onnx).values())
    assert same >= 0.9 * sum(convs_onnx.values()), (convs_pt2, convs_onnx)
    assert "" not in convs_pt2  # every conv task sits in a module group
    assert set(convs_pt2) >= {f"features.{i}" for i in range(12)}
    # groups are labelled by module and class, as the graph shows them
    spaces = {t.namespace for t in pt2.nodes}
    assert "features/features.3 (InvertedResidual)/features.3.block" in {"/".join(ns.split("/")[:3]) for ns in spaces}
    assert any(ns.startswith("features/features.0 (Conv2dNormActivation)") for ns in spaces)


def test_tasks_map_to_pt2_nodes_through_decomposed_names(both) -> None:  # type: ignore[no-untyped-def]
    (source, pt2), _ = both
    fx = {n.id: n for n in source.nodes}
    convs = [t for t in pt2.nodes if t.op_type in ("Conv", "FusedConv")]
    # batch_norm became `getitem` of `_native_batch_norm_legit_no_training` in the converted file; renamed back,
    # each conv task implements the .pt2's conv2d and the batch_norm folded into it
    mapped = [t for t in convs if any(fx[s].op_type == "aten.conv2d" for s in t.source_nodes)]
    assert len(mapped) == len(convs)
    bn = {s for t in convs for s in t.source_nodes if fx[s].op_type == "aten.batch_norm"}
    assert len(bn) == sum(1 for n in source.nodes if n.op_type == "aten.batch_norm")
    unmapped = [t.id for t in pt2.nodes if not t.source_nodes and not t.namespace]
    assert len(unmapped) <= 2, unmapped


def test_renames_reach_initializers_and_never_collide(tmp_path: Path) -> None:
    """A converted file's folded constant read under a decomposed name (EfficientFormerV2's attention bias, `view_26`)
    is renamed with its readers, so ONNX Runtime still loads the file; a rename whose new name stays taken is dropped
    with every rename that would have taken its old name."""
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    from compiler.backends.pt2_modules import rename_onnx_values

    bias = numpy_helper.from_array(np.ones((1, 4), np.float32), "view_26")
    g = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["view_17"], name="node_view_17"),
         helper.make_node("Mul", ["view_17", "view_26"], ["mul"], name="node_mul"),
         helper.make_node("Relu", ["mul"], ["view_14"], name="node_relu")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("view_14", TensorProto.FLOAT, [1, 4])],
        [bias, numpy_helper.from_array(np.array([1, 4], np.int64), "shape")])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    # view_17 -> view_14 cannot happen (view_14 stays), so view_26 -> view_17 must not either; mul -> mul_bias may
    assert rename_onnx_values(path, {"view_17": "view_14", "view_26": "view_17", "mul": "mul_bias"}) == 1
    m = onnx.load(path)
    assert {t.name for t in m.graph.initializer} == {"view_26", "shape"}
    assert [list(n.output) for n in m.graph.node] == [["view_17"], ["mul_bias"], ["view_14"]]
    # An initializer renamed with its readers
    assert rename_onnx_values(path, {"view_26": "attention_biases"}) == 1
    m = onnx.load(path)
    assert "attention_biases" in {t.name for t in m.graph.initializer} and "attention_biases" in m.graph.node[1].input
    out = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": np.ones(4, np.float32)})
    assert out[0].shape == (1, 4)
