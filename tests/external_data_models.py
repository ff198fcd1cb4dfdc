"""A real torch.onnx.export(..., dynamo=True) pair: `<name>.onnx` plus `<name>.onnx.data`, as the exporter writes it
by default (external_data=True), for the upload tests of the API, the CLI and the browser."""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from pathlib import Path


def dynamo_with_data(folder: Path, name: str = "small_cnn") -> tuple[Path, Path]:
    """A small CNN (conv, relu, conv, pool, linear: ~150 KB of weights) exported by dynamo with external data."""
    import torch
    from torch import nn

    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    torch.manual_seed(0)
    module = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
                           nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 100)).eval()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.onnx"
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (torch.randn(1, 3, 32, 32),), str(path), dynamo=True, input_names=["image"],
                          output_names=["logits"], external_data=True)
    data = folder / f"{name}.onnx.data"
    assert data.is_file(), "torch's dynamo exporter wrote no external data file"
    return path, data
