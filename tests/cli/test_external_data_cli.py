"""CLI edges a new user meets: an ONNX file with its weights in an external data file beside it (torch's dynamo
exporter's default) is analysed as one file, refused in one sentence naming the file without it; a target that cannot run the format."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.external_data import ExternalDataError, external_locations, one_file
from tests.cli.test_cli import _cli


def _external_model(d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((16, 3, 3, 3)).astype(np.float32), "w")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    path = d / "model.onnx"
    onnx.save(m, path, save_as_external_data=True, location="model.onnx.data", size_threshold=0)
    return path


def test_one_file_reads_the_data_beside_the_model(tmp_path: Path) -> None:
    path = _external_model(tmp_path / "m")
    assert external_locations(path) == ["model.onnx.data"]
    (tmp_path / "w").mkdir()
    out = one_file(path, tmp_path / "w")
    assert out.name == "model.onnx" and out != path and external_locations(out) == []
    assert onnx.load(out).graph.initializer[0].dims == [16, 3, 3, 3]
    (tmp_path / "m" / "model.onnx.data").unlink()
    with pytest.raises(ExternalDataError, match="external data file 'model.onnx.data', not given"):
        one_file(path, tmp_path / "w")


def test_predict_and_analyze_a_model_with_external_data(calibration_dir: Path, tmp_path: Path) -> None:
    path = _external_model(tmp_path / "m")
    p = _cli("predict", str(path), "--target", "coreml/apple-a17", "--json",
             calibration_dir=calibration_dir, cwd=tmp_path / "run")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["ops"] and doc["ops"][0]["macs"] == 16 * 27 * 32 * 32
    (tmp_path / "m" / "model.onnx.data").unlink()
    p = _cli("analyze", str(path), "--target", "coreml/apple-a17", calibration_dir=calibration_dir,
             cwd=tmp_path / "run")
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert "external data file 'model.onnx.data', not given" in p.stderr.strip().splitlines()[-1]


def test_a_target_that_cannot_run_the_format_is_refused_before_calibrating(tmp_path: Path) -> None:
    """predict / optimize / solve of a .tflite on ort-cpu/host on a machine without a calibration calibrated for
    minutes before saying the target cannot run the file."""
    from testkit import tflite_builder

    model = tflite_builder.cnn(tmp_path / "cnn.tflite")
    empty = tmp_path / "no-calibration"
    for cmd, extra in (("predict", []), ("optimize", ["--model-wide", "fp16", "--out", str(tmp_path / "x.onnx")]),
                       ("solve", ["--latency-ms", "1"])):
        p = _cli(cmd, str(model), "--target", "ort-cpu/host", *extra, calibration_dir=empty, cwd=tmp_path / cmd)
        assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
        assert "no host calibration" not in p.stderr
        assert p.stderr.strip().splitlines()[-1].startswith("Error: target ort-cpu/host cannot run a tflite model")
    assert not (empty / "host-cpu.json").exists()
