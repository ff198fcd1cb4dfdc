"""Parsing in the sandbox (the pipeline's parse stage) gives the same graph as parsing in process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compiler.frontends import load, load_isolated
from compiler.graph import ModelFormatError
from testkit import controlflow_models, modelzoo


@pytest.mark.parametrize("builder,name", [("tiny_cnn", "m.onnx"), ("pt2_net_with_sources", "m.pt2"),
                                          ("coreml_cnn_mlpackage_zip", "m.mlpackage.zip")])
def test_same_graph_in_and_out_of_the_sandbox(tmp_path: Path, builder: str, name: str) -> None:
    path = getattr(modelzoo, builder)(tmp_path / name)
    assert json.dumps(load_isolated(path).to_json(), sort_keys=True) == json.dumps(load(path).to_json(), sort_keys=True)


def test_control_flow_bodies_survive_the_round_trip(tmp_path: Path) -> None:
    path = controlflow_models.nested_model(tmp_path / "nested.onnx")
    g = load_isolated(path)
    assert json.dumps(g.to_json(), sort_keys=True) == json.dumps(load(path).to_json(), sort_keys=True)
    assert any(n.parent for n in g.nodes)


def test_a_scalar_input_stays_a_scalar(tmp_path: Path) -> None:
    # A rank-0 input (a sample rate) read back from the sandbox was "rank unknown", and planning the inputs then
    # refused the model: "input 'sr' (int64) declares no shape".
    import onnx
    from onnx import TensorProto, helper

    from compiler.input_plan import plan_inputs

    graph = helper.make_graph(
        [helper.make_node("Cast", ["sr"], ["srf"], to=TensorProto.FLOAT), helper.make_node("Mul", ["x", "srf"], ["y"])],
        "scalar_in", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8]),
                      helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])])
    path = tmp_path / "scalar.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    g = load_isolated(path)
    assert g.values["sr"].shape == [] and g.values["x"].shape == [1, 8]
    assert plan_inputs(g)["sr"].shape == []


def test_format_errors_come_back_as_such(tmp_path: Path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07" + b"\xff" * 100)
    with pytest.raises(ModelFormatError):
        load_isolated(bad)
