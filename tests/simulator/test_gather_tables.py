"""A Gather from a constant table (a word embedding) reads the rows it picks, not the table; the file still holds it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from compiler.frontends import onnx as onnx_frontend
from compiler.frontends import tflite
from simulator.costs import work_of
from simulator.predict import predict_model
from simulator.tflite_ops import tflite_works
from testkit import tflite_builder as tb

ROWS, DIM, IDS = 30000, 64, 16


def _embedding_onnx(path: Path) -> Path:
    table = numpy_helper.from_array(np.random.default_rng(0).standard_normal((ROWS, DIM)).astype(np.float32), "table")
    g = helper.make_graph([helper.make_node("Gather", ["table", "ids"], ["emb"], name="embed", axis=0),
                           helper.make_node("Relu", ["emb"], ["y"], name="relu")], "embedding",
                          [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, IDS])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, IDS, DIM])], [table])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_onnx_gather_reads_its_rows_and_the_file_keeps_the_table(tmp_path: Path) -> None:
    path = _embedding_onnx(tmp_path / "embedding.onnx")
    g = onnx_frontend.load(path)
    work = work_of(next(n for n in g.nodes if n.op_type == "Gather"), g)
    assert work.aux_weight_elements == IDS * DIM  # the rows read: 16 of 30000
    assert dict(work.aux_weights)["table"] == ROWS * DIM  # stored whole
    # On a device target the gather costs its rows (7.7 MB of table at tens of GB/s would be ~0.1-0.3 ms), and the
    # predicted size still counts the whole table.
    out, *_ = predict_model(path, "coreml/apple-a17", "fp32", {}, tmp_path / "work")
    gather = next(o for o in out["ops"] if o["type"] == "Gather")
    assert gather["latency_ms"] < 0.02, gather
    assert out["totals"]["size_bytes"] > ROWS * DIM * 2  # fp16 on the ANE: the table at 2 bytes a weight


def test_tflite_gather_reads_its_rows(tmp_path: Path) -> None:
    w = tb.TfliteWriter()
    ids, y = w.tensor("ids", [1, IDS], "int32"), w.tensor("y", [1, IDS, DIM])
    table = w.const("table", np.random.default_rng(0).standard_normal((ROWS, DIM)).astype(np.float32))
    w.op("GATHER", [table, ids], [y], w.options("GatherOptions", axis=0))
    (work,), _, _ = tflite_works(tflite.load(w.save(tmp_path / "embedding.tflite", [ids], [y])))
    assert work.aux_weight_elements == IDS * DIM
    assert sum(e for _, e in work.aux_weights) == ROWS * DIM
