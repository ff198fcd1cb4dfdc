"""Per-op file bytes are never negative and still add up to the written file (simulator.file_bytes). The upload's
bytes no task's own bytes explain (node names, doc strings, debug records) are the float state's; every option that
rewrites the file drops them. Given to every task, a kernel-less one whose weights stay float under a weight-only
option (an LSTM's) kept its share, which `_rewrite_share` then took back from the kernels: torch/lstm-kws's head
Gemm, its one small kernel, was sized -2.6 KB under int8-dynamic. Now the kernels carry them."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.backends import compile_for_target
from compiler.optimize.onnx_export import export_onnx
from simulator.model import load_source
from simulator.profiles import load_profile
from simulator.sweep import sweep
from simulator.totals import evaluate

warnings.filterwarnings("ignore")
logging.getLogger().setLevel(logging.ERROR)

HOST = "ort-cpu/host"
S, F, HID, CLS = 20, 16, 64, 4  # steps, features, hidden, classes


def _lstm_head(path: Path) -> Path:
    """An LSTM (its weights float under every option but fp16) then a small MatMul + Add head, with 8 KB of doc
    strings on the nodes: bytes of the upload that no exported file keeps."""
    rng = np.random.default_rng(0)
    consts = [numpy_helper.from_array(rng.standard_normal((1, 4 * HID, F)).astype(np.float32), "W"),
              numpy_helper.from_array(rng.standard_normal((1, 4 * HID, HID)).astype(np.float32), "R"),
              numpy_helper.from_array(np.zeros((1, 8 * HID), np.float32), "B"),
              numpy_helper.from_array(np.array([S, HID], np.int64), "flat"),
              numpy_helper.from_array(rng.standard_normal((HID, CLS)).astype(np.float32), "w_head"),
              numpy_helper.from_array(np.zeros(CLS, np.float32), "b_head")]
    doc = "x" * 2048
    nodes = [helper.make_node("LSTM", ["x", "W", "R", "B"], ["y"], name="lstm", hidden_size=HID, doc_string=doc),
             helper.make_node("Reshape", ["y", "flat"], ["y2"], name="flatten", doc_string=doc),
             helper.make_node("MatMul", ["y2", "w_head"], ["m"], name="head_mm", doc_string=doc),
             helper.make_node("Add", ["m", "b_head"], ["out"], name="head_add", doc_string=doc)]
    g = helper.make_graph(nodes, "lstm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [S, 1, F])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, [S, CLS])], consts)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    d = tmp_path_factory.mktemp("lstm")
    src = _lstm_head(d / "lstm.onnx")
    source = load_source(src)
    compiled, _ = compile_for_target(src, HOST, d, source)
    return src, sweep(compiled, HOST, hardware=load_profile("host-cpu", "ort-cpu"), source=source)


@pytest.mark.parametrize("option", ["fp32", "int8-dynamic", "int4-weights", "palettize-4bit", "int8-static"])
def test_per_op_bytes_are_not_negative(table: tuple[Path, object], option: str) -> None:
    _, r = table
    ev = evaluate(r.bulk, r.per_op, option, {})
    assert ev.weight_bytes.min() >= 0, dict(zip(r.bulk["ops"], ev.weight_bytes))


@pytest.mark.parametrize("option", ["fp32", "int8-dynamic"])
def test_totals_are_the_written_file(table: tuple[Path, object], tmp_path: Path, option: str) -> None:
    src, r = table
    written = export_onnx(src, tmp_path / f"{option}.onnx", option, check=False)
    predicted = evaluate(r.bulk, r.per_op, option, {}).totals["size_bytes"]
    assert abs(predicted / written.size_bytes - 1) < 0.01, (option, predicted, written.size_bytes)
