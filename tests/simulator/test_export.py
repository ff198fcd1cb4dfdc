"""Exported models: they load and run in ONNX Runtime, their sizes match the predictions, and Core ML
compression (coremltools, on Linux) changes sizes as predicted."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper

from compiler.frontends import onnx as onnx_frontend
from compiler.optimize.onnx_export import export_onnx, prune
from compiler.optimize.palette import kmeans_1d
from compiler.vocabulary.options import OptionError
from simulator.sweep import sweep
from simulator.totals import totals
from testkit import modelzoo

warnings.filterwarnings("ignore")
logging.getLogger().setLevel(logging.ERROR)


@pytest.fixture(scope="module")
def bert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    d = tmp_path_factory.mktemp("bert")
    src = modelzoo.bert_like(d / "bert.onnx")
    g = onnx_frontend.load(src)  # the upload, its own compiled graph
    g.metadata["file_size_bytes"] = str(src.stat().st_size)
    g.metadata["source_weight_bytes"] = str(g.weight_bytes)
    r = sweep(g, "ort-cpu/host")
    return src, {"result": r, "dir": d}


def _run(path: Path) -> list[np.ndarray]:
    s = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feeds = {}
    for i in s.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        feeds[i.name] = np.ones(shape, np.int64) if "int64" in i.type else np.random.rand(*shape).astype(np.float32)
    return s.run(None, feeds)


@pytest.mark.parametrize("option", ["fp32", "fp16", "int8-dynamic", "int8-static", "int4-weights", "palettize-4bit",
                                    "palettize-6bit", "prune-50+int8-static"])
def test_exported_model_runs_and_size_matches_prediction(bert: tuple[Path, dict], option: str) -> None:
    src, ctx = bert
    out = export_onnx(src, ctx["dir"] / f"{option}.onnx", option)
    y = _run(out.path)
    assert all(np.isfinite(a).all() for a in y)
    r = ctx["result"]
    predicted = totals(r.bulk, r.per_op, option, {})["size_bytes"]
    assert abs(predicted / out.size_bytes - 1) < 0.02, (option, predicted, out.size_bytes)


def test_per_op_selection_and_override(bert: tuple[Path, dict]) -> None:
    src, ctx = bert
    target = "/encoder.0/attention/query/MatMul"
    out = export_onnx(src, ctx["dir"] / "mixed.onnx", "int8-static", {target: "fp32"})
    m = onnx.load(str(out.path))
    node = next(n for n in m.graph.node if n.name == target)
    w = next(t for t in m.graph.initializer if t.name == node.input[1])
    assert w.data_type == onnx.TensorProto.FLOAT  # the override kept it float
    assert any(t.data_type == onnx.TensorProto.INT8 for t in m.graph.initializer)  # the rest is int8
    assert out.choices[target] == "fp32/fp32/fp32/0"
    _run(out.path)
    with pytest.raises(OptionError, match="not a node of this model"):
        export_onnx(src, ctx["dir"] / "bad.onnx", "fp32", {"/nope": "fp16"})


def test_pruning_and_palettization_write_into_the_weights() -> None:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((64, 32)).astype(np.float32)
    p = prune(w, 75)
    assert (p == 0).mean() == pytest.approx(0.75, abs=1 / w.size)
    assert np.abs(p[p != 0]).min() >= np.abs(w[p == 0]).max()  # the smallest magnitudes went
    table, idx = kmeans_1d(w, 4)
    assert table.size == 16 and idx.max() < 16
    assert np.abs(table[idx] - w.reshape(-1)).mean() < 0.1 * np.abs(w).mean()


def test_a_large_weights_palette_is_fitted_on_a_sample_and_assigns_every_value(monkeypatch: pytest.MonkeyPatch
                                                                                ) -> None:
    """VGG-16's export check spent 300 of its 561 s in k-means over all 138 M values; past KMEANS_FIT_VALUES the table
    is fitted on a seeded sample, as good a palette, and every value still takes its nearest entry."""
    import compiler.optimize.palette as palette

    w = np.random.default_rng(1).standard_normal(3 << 20).astype(np.float32)
    table, idx = kmeans_1d(w, 4)
    d = np.abs(w[:, None].astype(np.float64) - table[None, :])
    assert (d[np.arange(w.size), idx] <= d.min(axis=1) + 1e-6).all()  # its nearest entry, every value
    err = np.abs(table[idx] - w).mean()
    monkeypatch.setattr(palette, "KMEANS_FIT_VALUES", w.size)
    full, full_idx = kmeans_1d(w, 4)
    assert err <= 1.01 * np.abs(full[full_idx] - w).mean()


def test_palettized_model_decodes_at_load(bert: tuple[Path, dict]) -> None:
    src, ctx = bert
    out = export_onnx(src, ctx["dir"] / "lut2.onnx", "palettize-2bit")
    m = onnx.load(str(out.path))
    assert any(n.op_type == "BitShift" for n in m.graph.node)
    # ORT folds the decode subgraph: the optimized graph has no Gather over a table left.
    so = ort.SessionOptions()
    so.optimized_model_filepath = str(ctx["dir"] / "lut2.opt.onnx")
    ort.InferenceSession(str(out.path), so, providers=["CPUExecutionProvider"])
    opt = onnx.load(so.optimized_model_filepath)
    assert not any(n.op_type == "BitShift" for n in opt.graph.node)
    ws = [numpy_helper.to_array(t) for t in opt.graph.initializer if t.dims and len(t.dims) == 2 and t.dims[0] >= 128]
    # Every MatMul weight (24 in the encoder + pooler) is a 2-bit palette: 4 distinct values; embeddings are not.
    assert sum(len(np.unique(a)) <= 4 for a in ws) >= 24


def test_coreml_compression_changes_size_as_predicted(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from torch import nn

    from compiler.graph import Node
    from compiler.optimize.coreml_export import convert, export_coreml, weight_names
    from tests.simulator.helpers import act, graph, weight

    m = nn.Sequential(nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(),
                      nn.Flatten(), nn.Linear(64 * 8 * 8, 128))
    ml = convert(m, [torch.randn(1, 32, 8, 8)])
    names = weight_names(ml)
    assert sorted(names.values()) == [18432, 36864, 524288]
    # The same three kernels in the IR, predicted on coreml/apple-a17.
    g = graph([Node("c1", "c1", "Conv", inputs=["x", "w1"], outputs=["y1"]),
               Node("c2", "c2", "Conv", inputs=["y1", "w2"], outputs=["y2"]),
               Node("fc", "fc", "MatMul", inputs=["f", "w3"], outputs=["y"])],
              [act("x", [1, 32, 8, 8]), weight("w1", [64, 32, 3, 3]), act("y1", [1, 64, 8, 8]),
               weight("w2", [64, 64, 3, 3]), act("y2", [1, 64, 8, 8]), act("f", [1, 4096]),
               weight("w3", [4096, 128]), act("y", [1, 128])], ["x"], ["y"])
    r = sweep(g, "coreml/apple-a17")
    pred = lambda o: totals(r.bulk, r.per_op, o, {})["size_bytes"] - r.bulk["constants"]["size_overhead_bytes"]  # noqa
    base = export_coreml(ml, tmp_path / "fp16.mlpackage", "fp16").size_bytes
    header = base - pred("fp16")  # program + manifest: what compression does not touch
    # Joint options too: pruning renames each weight (`<w>_sparsified`), which the passes after it used to miss.
    for option in ("int8-dynamic", "int8-static", "palettize-4bit", "palettize-2bit", "prune-75",
                   "prune-50+int8-dynamic", "prune-50+palettize-4bit"):
        actual = export_coreml(ml, tmp_path / f"{option}.mlpackage", option).size_bytes - header
        assert abs(actual / pred(option) - 1) < 0.05, (option, actual, pred(option))
    per_weight = export_coreml(ml, tmp_path / "one.mlpackage", "fp16", {"op_5_weight_to_fp16": "palettize-4bit"})
    assert per_weight.size_bytes < base - 0.7 * 524288 * 2 * 0.75  # only the big Linear weight shrank 4x
    with pytest.raises(OptionError, match="not a compressible weight"):
        export_coreml(ml, tmp_path / "bad.mlpackage", "fp16", {"conv1.weight": "palettize-4bit"})
