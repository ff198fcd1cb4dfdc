"""`predict` of a file (simulator.predict) under a per-op override reports the unit each op runs on; the
crossing rule itself is tested without files in tests/unit/test_crossings.py."""

from __future__ import annotations

from pathlib import Path


def test_predict_reports_an_overridden_ops_own_unit(tmp_path: Path) -> None:
    from simulator.predict import predict_model
    from tests.simulator.test_ort_eps import _conv_graph

    path = _conv_graph(tmp_path, None)  # conv1 -> mid (Relu) -> conv2
    # The NNAPI accelerator has no int8 kernels (QNN's HTP runs every float format, fp32 at fp16).
    res, _, _ = predict_model(path, "ort-nnapi/pixel-8", "fp16", {"mid": "int8/int8/-/0"}, tmp_path / "w")
    assert [r["unit"] for r in res["ops"]] == ["gpu", "cpu", "gpu"]
