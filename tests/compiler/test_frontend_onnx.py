"""IR produced by the ONNX frontend for every zoo model."""

from __future__ import annotations

import json
import time
from collections import Counter

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler import frontends
from compiler.graph import Graph, ModelFormatError


def ops(g: Graph) -> Counter[str]:
    return Counter(n.op_type for n in g.nodes)


def test_mobilenet_ir(zoo) -> None:
    g = zoo.graph("mobilenet_v2_like")
    c = ops(g)
    assert (c["Conv"], c["BatchNormalization"], c["Clip"], c["Add"], c["Gemm"]) == (25, 25, 17, 3, 1)
    x = g.values[g.inputs[0]]
    assert (x.shape, x.dtype) == ([1, 3, 96, 96], "float32")
    assert g.values[g.outputs[0]].shape == [1, 10]
    # shape inference filled every conv output, statically
    for n in g.nodes:
        if n.op_type == "Conv":
            assert g.values[n.outputs[0]].is_static and len(g.values[n.outputs[0]].shape) == 4
    conv = g.node("/features/features.1/conv/conv.0/conv.0.0/Conv")
    assert conv.namespace == "features/features.1/conv/conv.0/conv.0.0"
    # expand ratio 1: the block opens with the depthwise 3x3
    (w,) = g.weights_of(conv)
    assert conv.attributes["kernel_shape"] == [3, 3] and conv.attributes["group"] == w.shape[0] > 1
    assert w.weight.elements == int(np.prod(w.shape)) and w.weight.bytes == 4 * w.weight.elements
    assert g.weight_bytes == sum(v.weight.bytes for v in g.values.values() if v.weight)
    # Clip bounds are Constant nodes in the file: folded values (weights), not nodes of the graph
    assert not any(n.op_type == "Constant" for n in g.nodes)
    clip = next(n for n in g.nodes if n.op_type == "Clip")
    bound = g.values[clip.inputs[1]]
    assert bound.weight is not None and bound.weight.elements == 1 and bound.weight.min == 0.0


def test_bert_ir(zoo) -> None:
    g = zoo.graph("bert_like")
    c = ops(g)
    assert (c["LayerNormalization"], c["MatMul"], c["Softmax"], c["Erf"]) == (9, 32, 4, 4)
    assert [(g.values[i].dtype, g.values[i].shape) for i in g.inputs] == [("int64", [1, 32])] * 2
    assert {n.namespace for n in g.nodes if n.op_type == "Softmax"} == {f"encoder.{i}/attention" for i in range(4)}
    word = g.values["word.weight"].weight
    assert word.elements == 1000 * 128 and word.min < 0 < word.max and word.sparsity == 0


def test_dynamic_dims_stay_symbolic(zoo) -> None:
    g = zoo.graph("dynamic_dims")
    assert g.values["input_ids"].shape == ["batch", "seq"]
    assert (g.values["mask"].shape, g.values["mask"].dtype) == (["batch", "seq"], "bool")
    assert g.values["emb"].shape == ["batch", "seq", 32]  # inferred through Gather
    assert g.values["logits"].shape == ["batch", 4]
    assert not g.values["logits"].is_static and g.values["logits"].bytes is None


def test_namespaces_from_names(zoo) -> None:
    g = zoo.graph("namespaced")
    assert g.node("/encoder/layer.0/attention/MatMul").namespace == "encoder/layer.0/attention"
    assert g.node("/encoder/layer.1/attention/query/MatMul").namespace == "encoder/layer.1/attention/query"
    assert g.node("/head/Relu").namespace == "head"


def test_flat_names_ids_unique_and_stable(zoo) -> None:
    path = zoo.path("flat_names")
    g = frontends.load(path)
    ids = [n.id for n in g.nodes]
    assert len(set(ids)) == len(ids)
    assert ids[0] == "Conv_0"  # unique name kept
    assert g.nodes[1].name == "" and ids[1] == "Relu_1"  # unnamed -> <op>_<index>
    assert "dup" not in ids and {g.nodes[3].name, g.nodes[5].name} == {"dup"}
    assert all(n.namespace == "" for n in g.nodes)
    assert [n.id for n in frontends.load(path).nodes] == ids  # stable across loads


def test_tiny_cnn_weight_stats(zoo) -> None:
    g = zoo.graph("tiny_cnn")
    w = g.values["conv.weight"].weight
    assert (w.elements, w.bytes) == (216, 864)
    assert w.sparsity == pytest.approx(1 / 8)  # one dead filter of eight
    arr = numpy_helper.to_array(next(t for t in onnx.load(zoo.path("tiny_cnn")).graph.initializer if t.name == "conv.weight"))
    assert (w.min, w.max) == (pytest.approx(float(arr.min())), pytest.approx(float(arr.max())))
    assert ops(g) == Counter({"Conv": 1, "Relu": 1, "GlobalAveragePool": 1, "Flatten": 1, "Gemm": 1})


def test_json_round_trip(zoo) -> None:
    g = zoo.graph("mobilenet_v2_like")
    data = json.loads(json.dumps(g.to_json()))  # attributes must be JSON-able
    back = Graph.from_json(data)
    assert [n.id for n in back.nodes] == [n.id for n in g.nodes]
    assert back.weight_bytes == g.weight_bytes


def test_large_chain_loads_fast(zoo) -> None:
    g = zoo.graph("large_chain", n_nodes=10_000)
    assert len(g.nodes) == 10_000
    assert g.nodes[123].namespace == "stage.0/block.2"
    t = time.process_time()  # CPU time: wall time on a loaded shared host was 26 s once
    frontends.load(zoo.path("large_chain", n_nodes=10_000))
    assert time.process_time() - t < 5  # ~0.2 s here; a quadratic step would take minutes


def test_dynamo_export_namespaces_from_metadata(zoo) -> None:
    g = zoo.graph("bert_like", layers=1, dynamo=True)
    assert any(n.name and "/" not in n.name for n in g.nodes)  # flat names ...
    softmax = next(n for n in g.nodes if n.op_type == "Softmax")
    assert softmax.namespace == "encoder.0/attention"  # ... namespaces from metadata
    assert softmax.location is not None and softmax.location.file.endswith("modelzoo.py")
    assert "softmax" in softmax.location.code


def test_branches_of_constants_add_no_nodes(tmp_path) -> None:
    def branch(name: str, value: float) -> onnx.GraphProto:
        c = helper.make_node("Constant", [], [f"{name}_out"], value=numpy_helper.from_array(np.array([value], np.float32)))
        return helper.make_graph([c], name, [], [helper.make_tensor_value_info(f"{name}_out", TensorProto.FLOAT, [1])])

    g = helper.make_graph(
        [helper.make_node("If", ["cond"], ["y"], then_branch=branch("then", 1.0), else_branch=branch("else", 0.0), name="if")],
        "with_if", [helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    path = tmp_path / "if.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), path)
    graph = frontends.load(path)
    assert [n.op_type for n in graph.nodes] == ["If"]  # the branches' Constants are values, not nodes
    then = {"graph": "then", "nodes": 1, "inputs": [], "outputs": ["then_out"]}
    assert graph.nodes[0].attributes["then_branch"] == then
    assert graph.values["else_out"].weight is not None and graph.values["else_out"].weight.max == 0.0


def test_external_data_refused(tmp_path, zoo) -> None:
    model = onnx.load(zoo.path("tiny_cnn"))
    path = tmp_path / "ext.onnx"
    onnx.save(model, path, save_as_external_data=True, all_tensors_to_one_file=True, location="w.bin", size_threshold=0)
    with pytest.raises(ModelFormatError, match="external data"):
        frontends.load(path)


def test_unknown_op_is_still_a_valid_graph(zoo) -> None:
    g = zoo.graph("unknown_op")
    assert [n.op_type for n in g.nodes] == ["Relu", "FooBar"]


def test_name_by_id_renames_only_empty_or_repeated_names() -> None:
    from compiler.frontends.onnx_scopes import name_by_id

    def model(names: list[str]) -> onnx.ModelProto:
        nodes = [helper.make_node("Relu", [f"v{i}"], [f"v{i + 1}"], name=n) for i, n in enumerate(names)]
        g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info(f"v{len(names)}", TensorProto.FLOAT, [1])])
        return helper.make_model(g)

    unique = model(["a", "b", "c"])
    assert not name_by_id(unique) and [n.name for n in unique.graph.node] == ["a", "b", "c"]
    for names, ids in ((["a", "a", "c"], ["Relu_0", "Relu_1", "c"]), (["a", "", "c"], ["a", "Relu_1", "c"])):
        m = model(names)
        assert name_by_id(m) and [n.name for n in m.graph.node] == ids


def test_string_attributes_are_read_decoded_through_node_text(tmp_path) -> None:
    """The frontend stores a STRING attribute as str, so the simulator's rules read it with Node.text and
    never see bytes; an absent attribute reads as the default the rule gives."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph([helper.make_node("GridSample", ["x", "g"], ["y"], name="gs", mode="nearest"),
                           helper.make_node("Relu", ["x"], ["r"], name="r")], "g",
                          [x, helper.make_tensor_value_info("g", TensorProto.FLOAT, [1, 8, 8, 2])], [y])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    ir = frontends.load(path)
    gs, relu = (next(n for n in ir.nodes if n.op_type == t) for t in ("GridSample", "Relu"))
    assert gs.attributes["mode"] == "nearest" and gs.text("mode", "linear") == "nearest"
    assert relu.text("activation") == "" and relu.text("mode", "linear") == "linear"
