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


def test_format_errors_come_back_as_such(tmp_path: Path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07" + b"\xff" * 100)
    with pytest.raises(ModelFormatError):
        load_isolated(bad)
