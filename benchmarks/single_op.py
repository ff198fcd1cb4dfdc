"""What the single-op benchmarks share (dilated_convs.py, nms.py): writing their small ONNX files and their command
line (a calibration of this code's CACHE_VERSION, the profiled runs per file)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any


def save_onnx(path: Path, name: str, nodes: list[Any], inputs: list[Any], outputs: list[Any], consts: list[Any]) -> Path:
    """An opset-13 ONNX file (IR version 8, which this ORT loads) of `nodes`, written to `path`."""
    from onnx import helper, save

    model = helper.make_model(helper.make_graph(nodes, name, inputs, outputs, consts),
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    save(model, os.fspath(path))
    return path


def arguments(doc: str, runs: int, keep: bool = False) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--calibration", type=Path, required=True, help="host calibration of this code's CACHE_VERSION")
    ap.add_argument("--runs", type=int, default=runs)
    if keep:
        ap.add_argument("--keep", type=Path, default=None, help="write the files to this directory, kept")
        ap.add_argument("--only", nargs="+", default=None, help="the files whose names start with these")
    return ap.parse_args()
