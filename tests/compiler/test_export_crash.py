"""A written ONNX file that crashes ONNX Runtime is a failed option, not a dead process. The session-38 sweep's CRNN
(conv + bidirectional LSTM, dynamic width, TorchScript export) crashed ORT (SIGSEGV in InferenceSession) in the fp16
export's check run, which killed `edgescope optimize` and the server with its embedded worker: the check now runs
in a sandboxed child (compiler/optimize/onnx_verify.py).

What crashed it (onnxruntime 1.32): a Transpose moving the batch axis, then a Cast, then a MatMul. At
ORT_ENABLE_ALL, MatmulTransposeFusion swaps the Cast and the Transpose (ReorderCastAndTranspose) to fold the
Transpose into a FusedMatMul, and the NCHWc transformer that runs next segfaults; in an fp16 file the Cast is ORT's
own, before the MatMul it has no fp16 kernel for. The fp16 option now keeps such a Transpose fp32
(compiler.optimize.onnx_rules.fp16_kept), so that LSTM's fp16 file loads; the pattern written in float64 still
crashes ORT, and is the failed option here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import corpus  # noqa: F401  (torch pinned as the corpus pins it)
import torch
from torch import nn

from compiler.optimize.onnx_export import export_onnx
from compiler.vocabulary.options import OptionError


class _BiLstm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.LSTM(16, 8, 2, bidirectional=True, batch_first=True)
        self.fc = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.rnn(x)
        return self.fc(y)


def _crashing_file(path: Path) -> Path:
    """x (float64, [t, b, 8]) -> Transpose(1, 0, 2) -> Cast(to float) -> MatMul: ORT segfaults loading it."""
    w = numpy_helper.from_array(np.ones((8, 4), np.float32), "w")
    g = helper.make_graph([helper.make_node("Transpose", ["x"], ["t"], name="swap", perm=[1, 0, 2]),
                           helper.make_node("Cast", ["t"], ["c"], name="cast", to=TensorProto.FLOAT),
                           helper.make_node("MatMul", ["c", "w"], ["y"], name="fc")], "crash",
                          [helper.make_tensor_value_info("x", TensorProto.DOUBLE, ["t", "b", 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", "t", 4])], [w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_an_export_that_crashes_onnx_runtime_is_a_failed_option(tmp_path: Path) -> None:
    src = _crashing_file(tmp_path / "crash.onnx")
    with pytest.raises(OptionError, match="crashes ONNX Runtime.*SIGSEGV"):
        export_onnx(src, tmp_path / "fp32.onnx", "fp32", input_shapes={"x": [5, 2, 8]})
    # this process lives on, and a file ORT runs still passes its check
    fixed = tmp_path / "fixed.onnx"
    m = onnx.load(str(src))
    m.graph.node[1].CopyFrom(helper.make_node("Identity", ["t"], ["t2"], name="cast"))
    m.graph.node.insert(0, helper.make_node("Cast", ["x"], ["x32"], name="first", to=TensorProto.FLOAT))
    m.graph.node[1].input[0] = "x32"
    m.graph.node[3].input[0] = "t2"
    onnx.save(m, str(fixed))
    assert export_onnx(fixed, tmp_path / "ok.onnx", "fp32", input_shapes={"x": [5, 2, 8]}).size_bytes > 0


def test_the_fp16_export_of_a_bidirectional_lstm_at_dynamic_length_loads(tmp_path: Path) -> None:
    """It crashed ORT before (the check caught it): its output's batch Transpose into the Linear is now kept fp32."""
    torch.manual_seed(0)
    src = tmp_path / "lstm.onnx"
    torch.onnx.export(_BiLstm().eval(), (torch.randn(1, 10, 16),), str(src), dynamo=False, opset_version=17,
                      input_names=["x"], output_names=["y"], dynamic_axes={"x": {1: "t"}})
    res = export_onnx(src, tmp_path / "fp16.onnx", "fp16", input_shapes={"x": [1, 10, 16]})  # loads, runs: checked
    assert any("Transpose" in n and "fp32" in n for n in res.notes), res.notes
