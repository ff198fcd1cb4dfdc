"""A dynamo export's rewritten files (every option but fp32, which writes the upload) are sized as written: the
exporter drops dynamo's records on the graph and its inputs and outputs, as on its nodes, and writes no empty doc
string (tests/unit/test_export_debug_records.py). torch/gnn's dynamo-dyn int4 file was -3.5% of its prediction."""

from __future__ import annotations

from pathlib import Path

from tests.unit.test_export_debug_records import _dynamo_like


def test_a_dynamo_files_rewritten_exports_are_sized_exactly(tmp_path: Path) -> None:
    from simulator.predict import optimize_model

    src = _dynamo_like(tmp_path / "d.onnx")
    (tmp_path / "w").mkdir()
    for option in ("int4-weights", "int8-dynamic"):
        out = optimize_model(src, tmp_path / f"{option}.onnx", "ort-cpu/host", option, {}, tmp_path / "w",
                             input_shapes={"x": [8, 64]})
        # dynamo's records were 0.8 KB of these 7-15 KB files; left: int8-dynamic's value_info, which the file writes
        # with its symbolic batch (`s77`) where the prediction has the analysed one (1.0% here, 0.3% on torch/gnn)
        assert abs(out["predicted"]["size_bytes"] / out["size_bytes"] - 1) < 0.012, (option, out["size_bytes"])
