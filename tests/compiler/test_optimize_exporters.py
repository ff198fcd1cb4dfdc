"""Exporter choice and option mapping (compiler.optimize.export, litert_export, coreml_export), without the API."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.optimize.choices import resolve_option
from compiler.optimize.export import check_state, exporter
from compiler.optimize.litert_export import check_options, export_tflite, recipe_kind, with_signature
from compiler.vocabulary.options import OptionError


@pytest.mark.parametrize("option,kind", [
    ("fp32", "float"), ("fp16", "fp16"), ("int8-dynamic", "dynamic8"), ("int8-static", "static8"),
    ("int4-weights", "weights4"), ("palettize-4bit", None), ("prune-50", None), ("prune-25+int8-dynamic", None),
    ("int8/int8/int8/0", "static8"), ("fp32/fp32/int8/0", "dynamic8"), ("int8/int8/int4/0", None),
    ("fp32/int8/int8/0", None), ("int8/int8/fp32/0", None),
])
def test_litert_recipe_for_each_option(option: str, kind: str | None) -> None:
    assert recipe_kind(resolve_option(option, "fp32", True)) == kind


def test_litert_refusal_names_the_op_and_supported_options() -> None:
    assert check_options("int8-static", {"ADD_3": "fp32/fp32/-/0"}) == {"*": "static8", "ADD_3": "float"}
    with pytest.raises(OptionError, match=r"override of CONV_2D_0.*Supported: fp32, fp16, int8-dynamic"):
        check_options("int8-dynamic", {"CONV_2D_0": "fp32/fp32/lut4/0"})


def test_exporter_by_target_and_source() -> None:
    assert exporter("litert/pixel-8", "tflite") == "tflite"
    assert exporter("coreml/apple-a17", "pt2") == "coreml"
    assert exporter("ort-qnn/snapdragon-8g3", "onnx") == "onnx"
    with pytest.raises(OptionError, match="not from ONNX"):
        exporter("coreml/apple-a17", "onnx")
    with pytest.raises(OptionError, match="tflite"):
        check_state("litert-cpu/host", "onnx", "int8-dynamic", {})
    with pytest.raises(OptionError, match="palettization"):
        check_state("litert-cpu/host", "tflite", "palettize-2bit", {})


def test_signature_added_once(tmp_path: Path) -> None:
    from ai_edge_litert.interpreter import Interpreter

    from testkit import tflite_builder as tb

    raw = tb.cnn(tmp_path / "cnn.tflite").read_bytes()
    assert Interpreter(model_content=raw).get_signature_list() == {}
    signed = with_signature(raw)
    sig = Interpreter(model_content=signed).get_signature_list()["serving_default"]
    assert sig == {"inputs": ["input"], "outputs": ["logits"]}
    assert with_signature(signed) == signed


def test_litert_per_op_override_keeps_that_kernel_float(tmp_path: Path) -> None:
    from testkit import tflite_builder as tb

    src = tb.transformer_block(tmp_path / "block.tflite", seq=8, hidden=64)
    every = export_tflite(src, tmp_path / "all.tflite", "int8-dynamic")
    one = export_tflite(src, tmp_path / "one.tflite", "int8-dynamic", {"FULLY_CONNECTED_0": "fp32/fp32/fp32/0"})
    # The q projection's 64x64 kernel stays fp32: 3 bytes more per weight than int8.
    assert one.size_bytes - every.size_bytes == pytest.approx(64 * 64 * 3, rel=0.1)
    with pytest.raises(OptionError, match="not a TFLite operator id"):
        export_tflite(src, tmp_path / "x.tflite", "int8-dynamic", {"q_proj": "fp32/fp32/fp32/0"})


def test_coreml_neuralnetwork_is_refused(tmp_path: Path) -> None:
    from compiler.optimize.coreml_export import load_package
    from testkit import coreml_builder as cb

    nn_model = cb.mlmodel_nn(tmp_path / "cnn.mlmodel")
    with pytest.raises(OptionError, match="ML Program"):
        load_package(nn_model, tmp_path / "work")


@pytest.mark.parametrize("option", ["int8-dynamic", "int8-static", "int4-weights"])
def test_litert_export_size_as_predicted(tmp_path: Path, calibration_dir: Path, option: str) -> None:
    """ai-edge-quantizer's per-channel scales and int64 zero points are in the predicted size (within 2%)."""
    from simulator.predict import optimize_model
    from testkit import tflite_builder as tb

    src = tb.transformer_block(tmp_path / "block.tflite", seq=16, hidden=128)
    (tmp_path / "w").mkdir()
    r = optimize_model(src, tmp_path / f"block-{option}.tflite", "litert-cpu/host", option, {}, tmp_path / "w",
                       calibration_dir / "host-cpu.json")
    assert abs(r["predicted"]["size_bytes"] / r["size_bytes"] - 1) < 0.02, (r["predicted"]["size_bytes"], r["size_bytes"])
