"""An If whose condition is constant at the analysis' shapes (a TorchScript `squeeze(2)` at a dynamic height,
`If(H == 1)`) is inlined by ORT, yet its branch still reads an activation: the tasks after it are no constant
folding. Taken as such, they lost their source nodes, and a CRNN's int8-dynamic file was sized +119%."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import pytest

from simulator.predict import optimize_model, predict_model
from testkit import controlflow_models as cm

warnings.filterwarnings("ignore")
logging.getLogger().setLevel(logging.ERROR)

HOST = "ort-cpu/host"
SHAPES = {"x": [1, 8, 1, 10]}


def test_tasks_after_an_inlined_if_keep_their_source_nodes(tmp_path: Path) -> None:
    src = cm.squeeze_if_model(tmp_path / "m.onnx")
    (tmp_path / "w").mkdir()
    _, _, compiled = predict_model(src, HOST, "fp32", {}, tmp_path / "w", input_shapes=SHAPES)
    by_type = {n.op_type: n.source_nodes for n in compiled.nodes}
    assert "If" not in by_type  # ORT inlined it: the case this test is about
    assert "fc" in by_type["MatMul"] and "transpose" in by_type["Transpose"]
    assert not {"fc", "transpose"} & set(compiled.eliminated)


@pytest.mark.parametrize("option", ["int8-dynamic", "int8-static"])
def test_int8_size_after_an_inlined_if(tmp_path: Path, option: str) -> None:
    src = cm.squeeze_if_model(tmp_path / "m.onnx")
    (tmp_path / "w").mkdir()
    r = optimize_model(src, tmp_path / f"{option}.onnx", HOST, option, {}, tmp_path / "w", input_shapes=SHAPES)
    assert abs(r["size_error_pct"]) < 2.0, r["size_error_pct"]
