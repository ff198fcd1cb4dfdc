"""LiteRT exports of files as converters write them: fp16 weights behind DEQUANTIZE, dynamic input dims; every
written file checked (runs in the interpreter, stores the weights its option promises) before it is a success."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler.errors import ModelRunError
from compiler.optimize import litert_check, litert_prepare
from compiler.optimize.litert_export import export_tflite
from tests.formats import tflite_builder as tb


def _run(path: Path, x: np.ndarray) -> np.ndarray:
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(path))
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return it.get_tensor(it.get_output_details()[0]["index"])


def test_fp16_weights_restored_to_fp32_and_int8_kept(tmp_path: Path) -> None:
    src = tb.cnn(tmp_path / "cnn16.tflite", fp16=True)
    raw = src.read_bytes()
    out, n, upload_index = litert_prepare.dequantize_fp16_weights(raw)
    # The three conv filters were fp16; the classifier's int8 weight stays behind its DEQUANTIZE.
    assert n == 3 and upload_index == [1, 3, 5, 6, 7, 8, 9]  # DEQUANTIZEs 0, 2 and 4 went
    ks = litert_check.kernels(out, upload_index)
    assert {k.op_id: litert_check.TYPE_NAMES[k.weight_type] for k in ks.values()} == {
        "CONV_2D_1": "fp32", "DEPTHWISE_CONV_2D_3": "fp32", "CONV_2D_5": "fp32", "FULLY_CONNECTED_9": "int8"}
    rewritten = tmp_path / "cnn32.tflite"
    rewritten.write_bytes(out)
    x = np.random.default_rng(0).standard_normal((1, 32, 32, 3)).astype(np.float32)
    np.testing.assert_allclose(_run(rewritten, x), _run(src, x), rtol=1e-6, atol=1e-6)


def test_int8_dynamic_of_fp16_weights_really_quantizes(tmp_path: Path) -> None:
    src = tb.cnn(tmp_path / "cnn16.tflite", width=128, fp16=True)
    r = export_tflite(src, tmp_path / "int8.tflite", "int8-dynamic")
    # It wrote the input unchanged before; now the file is the one an fp32 upload of the same model gives.
    from32 = export_tflite(tb.cnn(tmp_path / "cnn32.tflite", width=128), tmp_path / "int8-32.tflite", "int8-dynamic")
    assert r.size_bytes < 0.7 * src.stat().st_size
    assert r.size_bytes == pytest.approx(from32.size_bytes, rel=0.01)
    types = {k.op_id: litert_check.TYPE_NAMES[k.weight_type]
             for k in litert_check.kernels(r.path.read_bytes()).values()}
    assert set(types.values()) == {"int8"} and len(types) == 4
    assert any("fp16 weight(s)" in n for n in r.notes)


def test_int8_static_of_fp16_weights_runs(tmp_path: Path) -> None:
    """int8-static used to write convs whose "weights" (a DEQUANTIZE output) had a non-zero zero point,
    which LiteRT refuses to prepare."""
    src = tb.cnn(tmp_path / "cnn16.tflite", fp16=True)
    r = export_tflite(src, tmp_path / "static.tflite", "int8-static")
    ks = litert_check.kernels(r.path.read_bytes())
    assert all(k.weight_type == litert_check.INT8 and k.input_type == litert_check.INT8 for k in ks.values())
    litert_check.run_once(str(r.path), {}, {})


def test_int8_static_of_dynamic_dims_calibrates_at_concrete_shapes(tmp_path: Path) -> None:
    """A VALID 3x3 conv on an input whose file shape is the placeholder [1, 1, 1, 3]: the quantizer cannot
    allocate it there; the export fixes the input at the shape asked and calibrates there."""
    w = tb.TfliteWriter()
    x = w.tensor("x", [1, 1, 1, 3], signature=[1, -1, -1, 3])
    y = w.tensor("y", [1, 1, 1, 8], signature=[1, -1, -1, 8])
    k = np.random.default_rng(0).standard_normal((8, 3, 3, 3)).astype(np.float32)
    w.op("CONV_2D", [x, w.const("w", k), w.const("b", np.zeros(8, np.float32))], [y],
         w.options("Conv2DOptions", padding=1, strideW=1, strideH=1))
    src = w.save(tmp_path / "dyn.tflite", [x], [y])
    r = export_tflite(src, tmp_path / "dyn-static.tflite", "int8-static", input_shapes={"x": [1, 20, 20, 3]})
    from ai_edge_litert.interpreter import Interpreter

    d = Interpreter(model_path=str(r.path)).get_input_details()[0]
    assert list(d["shape"]) == [1, 20, 20, 3] and d["dtype"] == np.int8
    assert any("inputs fixed at 1x20x20x3" in n for n in r.notes)
    # int8-dynamic needs no calibration: the dims stay dynamic.
    dyn = export_tflite(src, tmp_path / "dyn-dynamic.tflite", "int8-dynamic", input_shapes={"x": [1, 20, 20, 3]})
    assert list(Interpreter(model_path=str(dyn.path)).get_input_details()[0]["shape_signature"]) == [1, -1, -1, 3]


def test_check_refuses_a_file_that_is_not_what_was_promised(tmp_path: Path) -> None:
    raw = tb.cnn(tmp_path / "cnn.tflite").read_bytes()
    litert_check.check_kinds(raw, raw, {"*": "float"}, "fp32")
    with pytest.raises(ModelRunError, match=r"not what the option promises.*CONV_2D_0 stores fp32 weights, not int8"):
        litert_check.check_kinds(raw, raw, {"*": "dynamic8"}, "int8-dynamic")
    # An override promises its own kind for that operator only.
    with pytest.raises(ModelRunError, match=r"\(2 problem\(s\): DEPTHWISE_CONV_2D_1 .*CONV_2D_2 ") as e:
        litert_check.check_kinds(raw, raw, {"*": "dynamic8", "CONV_2D_0": "float"}, "int8-dynamic")
    assert "CONV_2D_0" not in str(e.value) and "FULLY_CONNECTED" not in str(e.value)  # int8 in the upload


def test_a_written_file_that_does_not_run_is_a_failed_export(tmp_path: Path) -> None:
    src = tb.with_custom_op(tmp_path / "custom.tflite")
    with pytest.raises(ModelRunError, match=r"does not run in the LiteRT interpreter.*EdgescopeTestOp"):
        export_tflite(src, tmp_path / "custom-int8.tflite", "int8-dynamic")


@pytest.mark.parametrize("option", ["fp32", "fp16", "int8-dynamic", "int8-static", "int4-weights"])
def test_fp16_weight_upload_exports_the_size_predicted(tmp_path: Path, calibration_dir: Path, option: str) -> None:
    """The simulator sizes the restored fp32 kernels, and drops the fp16 tensors' and DEQUANTIZEs' records."""
    from simulator.predict import optimize_model

    src = tb.cnn(tmp_path / "cnn16.tflite", width=128, fp16=True)
    (tmp_path / "w").mkdir()
    r = optimize_model(src, tmp_path / f"cnn-{option}.tflite", "litert-cpu/host", option, {}, tmp_path / "w",
                       calibration_dir / "host-cpu.json")
    assert abs(r["predicted"]["size_bytes"] / r["size_bytes"] - 1) < 0.02, (r["predicted"]["size_bytes"], r["size_bytes"])
