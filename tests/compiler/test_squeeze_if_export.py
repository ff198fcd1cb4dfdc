"""A TorchScript `squeeze(2)` at a dynamic height is an `If(H == 1, Squeeze, Identity)`. ORT's quantization
pre-processing (symbolic shape inference) took `H == 1` for a constant false and copied the else branch over the
then branch: every int8 file of such a CRNN failed in ORT ("perm size: 3 does not match input rank: 4")."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from compiler.optimize.onnx_export import export_onnx
from compiler.optimize.onnx_prepare import quant_ready
from testkit import controlflow_models as cm

SHAPE = [1, 8, 1, 10]


def _branch_ops(m: onnx.ModelProto, branch: str) -> list[str]:
    node = next(n for n in m.graph.node if n.op_type == "If")
    return [x.op_type for a in node.attribute if a.name == branch for x in a.g.node]


def test_quant_ready_keeps_both_branches(tmp_path: Path) -> None:
    src = cm.squeeze_if_model(tmp_path / "m.onnx")
    ready = quant_ready(src, tmp_path / "ready.onnx")
    assert ready != src  # the pre-processing ran (else this test would prove nothing)
    m = onnx.load(str(ready))
    assert "Squeeze" in _branch_ops(m, "then_branch") and _branch_ops(m, "else_branch") == ["Identity"]


@pytest.mark.parametrize("option", ["int8-dynamic", "int8-static"])
def test_int8_file_runs_at_the_height_that_takes_the_squeeze(tmp_path: Path, option: str) -> None:
    import onnxruntime as ort

    src = cm.squeeze_if_model(tmp_path / "m.onnx")
    res = export_onnx(src, tmp_path / f"{option}.onnx", option, input_shapes={"x": SHAPE})
    m = onnx.load(str(res.path))
    assert "Squeeze" in _branch_ops(m, "then_branch")
    x = np.random.default_rng(0).standard_normal(SHAPE).astype(np.float32)
    sess = ort.InferenceSession(str(res.path), providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, {"x": x})
    assert y.shape == (10, 1, 512)
    assert {n.op_type for n in m.graph.node} & {"ConvInteger", "QLinearConv", "DequantizeLinear", "MatMulInteger"}
