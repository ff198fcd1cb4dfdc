"""A written ONNX file that crashes ONNX Runtime is a failed option, not a dead process. The session-38 sweep's CRNN
(conv + bidirectional LSTM, dynamic width, TorchScript export) crashed ORT (SIGSEGV in InferenceSession) in the fp16
export's check run, which killed `edgescope optimize` and the server with its embedded worker. The same happens with
a two-layer bidirectional LSTM of dynamic length made fp16 (onnxruntime 1.32): the check now runs in a sandboxed
child (compiler/optimize/onnx_verify.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

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


def test_an_export_that_crashes_onnx_runtime_is_a_failed_option(tmp_path: Path) -> None:
    torch.manual_seed(0)
    src = tmp_path / "lstm.onnx"
    torch.onnx.export(_BiLstm().eval(), (torch.randn(1, 10, 16),), str(src), dynamo=False, opset_version=17,
                      input_names=["x"], output_names=["y"], dynamic_axes={"x": {1: "t"}})
    shapes = {"x": [1, 10, 16]}
    with pytest.raises(OptionError, match="crashes ONNX Runtime.*SIGSEGV"):
        export_onnx(src, tmp_path / "fp16.onnx", "fp16", input_shapes=shapes)
    # this process lives on, and a file ORT runs still passes its check
    assert export_onnx(src, tmp_path / "fp32.onnx", "fp32", input_shapes=shapes).size_bytes > 0
