"""Core ML exports: int8-static is predicted as what is written (for an uploaded ML Program int8 weights with fp16
activations: W8A8 needs calibration that runs Core ML, macOS only; W8A8 elsewhere: tests/compiler/test_coreml_w8a8.py),
and every saved package is loaded back and checked for the decompression op of each weight its option compresses."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.errors import ModelRunError
from compiler.graph import Node
from simulator.sweep import sweep
from simulator.totals import totals
from tests.simulator.helpers import act, graph, weight


def test_int8_static_of_an_uploaded_ml_program_is_predicted_as_the_weights_only_file_written() -> None:
    g = graph([Node("c1", "c1", "conv", inputs=["x", "w1"], outputs=["y1"]),
               Node("c2", "c2", "conv", inputs=["y1", "w2"], outputs=["y2"])],
              [act("x", [1, 32, 16, 16]), weight("w1", [64, 32, 3, 3]), act("y1", [1, 64, 16, 16]),
               weight("w2", [64, 64, 3, 3]), act("y2", [1, 64, 16, 16])], ["x"], ["y2"])
    g.format = "coreml"  # as uploaded: no `converted_from` (a .pt2 Edgescope converted is calibrated, W8A8)
    r = sweep(g, "coreml/apple-a17")
    static, dynamic = totals(r.bulk, r.per_op, "int8-static", {}), totals(r.bulk, r.per_op, "int8-dynamic", {})
    assert static == dynamic
    p = [x["name"] for x in r.bulk["presets"]].index("int8-static")
    assert r.bulk["combos"][0][p] == "fp16/fp16/int8/0" and r.bulk["supported"][0][p] is False
    note = next(n for n in r.per_op[0]["notes"] if n.startswith("int8/int8/int8/0:"))
    assert note.startswith("int8/int8/int8/0: the Core ML export writes fp16/fp16/int8/0 (int8 activations need "
                           "calibration: an uploaded ML Program runs on macOS only); int8 weights decompressed")
    g.metadata["converted_from"] = "pt2 (coremltools, ML Program, iOS17)"
    w8a8 = sweep(g, "coreml/apple-a17")
    assert w8a8.bulk["combos"][0][p] == "int8/int8/int8/0" and w8a8.bulk["supported"][0][p] is True
    assert totals(w8a8.bulk, w8a8.per_op, "int8-static", {})["latency_ms"] < static["latency_ms"]


def test_package_check_refuses_a_weight_left_uncompressed(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from torch import nn

    from compiler.optimize.choices import resolve_option
    from compiler.optimize.coreml_export import check_package, convert, export_coreml, weight_names

    ml = convert(nn.Sequential(nn.Conv2d(16, 32, 3), nn.ReLU(), nn.Conv2d(32, 32, 3)), [torch.randn(1, 16, 12, 12)])
    names = list(weight_names(ml))
    plain = export_coreml(ml, tmp_path / "fp16.mlpackage", "fp16")
    check_package(plain.path, {n: resolve_option("fp16", "fp16", True) for n in names})
    with pytest.raises(ModelRunError,
                       match=r"2 weight\(s\) or op\(s\) left uncompressed: .* has no constexpr_blockwise_shift_scale"):
        check_package(plain.path, {n: resolve_option("int8-dynamic", "fp16", True) for n in names})
    joint = export_coreml(ml, tmp_path / "joint.mlpackage", "prune-50+int8-dynamic")
    assert joint.size_bytes < 0.5 * plain.size_bytes  # half the values, int8 instead of fp16, plus a bit mask
    with pytest.raises(ModelRunError, match="does not load back"):
        check_package(tmp_path / "missing.mlpackage", {})


def test_palettization_of_random_weights_needs_no_scikit_learn(tmp_path: Path) -> None:
    """coremltools' `kmeans` mode clusters with scikit-learn (or kmeans1d), neither of which Edgescope installs: a
    .pt2's Core ML palettize-4bit export failed with "Internal error ... scikit-learn is required" (timm convnext_atto,
    random weights). The k-means is the ONNX exporter's own (compiler.optimize.palette.kmeans_1d)."""
    import numpy as np

    torch = pytest.importorskip("torch")
    from torch import nn

    from compiler.optimize.choices import resolve_option
    from compiler.optimize.coreml_export import check_package, convert, export_coreml, weight_names

    torch.manual_seed(0)
    ml = convert(nn.Sequential(nn.Conv2d(16, 32, 3), nn.ReLU(), nn.Conv2d(32, 32, 3)), [torch.randn(1, 16, 12, 12)])
    names = list(weight_names(ml))
    plain = export_coreml(ml, tmp_path / "fp16.mlpackage", "fp16")
    for bits in (4, 8):
        out = export_coreml(ml, tmp_path / f"p{bits}.mlpackage", f"palettize-{bits}bit")
        check_package(out.path, {n: resolve_option(f"palettize-{bits}bit", "fp16", True) for n in names})
        assert out.size_bytes < plain.size_bytes * (0.4 if bits == 4 else 0.7)
