"""A browser export is measured at the inputs its analysis ran at, dims the model set included."""

from __future__ import annotations

from pathlib import Path

from tests.compiler.test_concrete import _baked_reshape_model
from tests.server.test_exports import _post, _wait_export


def test_export_of_a_model_whose_sequence_length_was_set_by_the_model(live_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A TorchScript export with dynamic length still bakes the traced length into its Reshapes: the analysis sets
    seq=64 (the default 128 cannot run), and the export was measured at 128 ("could not run the model with these
    inputs ... Reshape"), so every export of such a transformer failed in the browser while the CLI's worked."""
    m = live_server.upload(_baked_reshape_model(tmp_path / "baked.onnx"), targets=["ort-cpu/host"])
    assert m["status"] == "ready", m["error"]
    r = _post(live_server, m["id"], {"target": "ort-cpu/host", "model_wide": "fp16", "overrides": {}})
    assert r.status_code == 202, r.text
    e = _wait_export(live_server, m["id"], r.json()["id"])
    assert e["status"] == "ready", e["error"]
    assert e["measured"]["latency_ms"] > 0
