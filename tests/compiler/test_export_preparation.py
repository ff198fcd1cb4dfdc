"""The export check (compiler.optimize.onnx_dry_run) of a large opset-12 model took minutes per option: every option
prepared the upload again (named copy, fp16 restore with a whole-model shape inference, ORT's basic optimizations,
Gemms split) and the options that need a newer opset prepared it twice (once to learn the opset, once converted);
VGG-16's TorchScript opset-12 file (528 MB) outlasted the session-43 sweep. Now each (upload, opset) is prepared once
per check, at the opset the option needs, and a model without fp16 values skips the shape inference; the files are
the same."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import compiler.optimize.onnx_export as onnx_export
import compiler.optimize.onnx_fp16 as onnx_fp16
from compiler import sandbox
from compiler.optimize.onnx_dry_run import DRY_RUN_OPTIONS, dry_run_child
from compiler.optimize.onnx_export import export_onnx, reuse_preparation


def _cnn_opset12(path: Path) -> Path:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((16, 3, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(np.zeros(16, np.float32), "b")
    fc = numpy_helper.from_array(rng.standard_normal((10, 16)).astype(np.float32), "fc")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
                           helper.make_node("Relu", ["c"], ["r"], name="relu"),
                           helper.make_node("GlobalAveragePool", ["r"], ["p"], name="pool"),
                           helper.make_node("Flatten", ["p"], ["f"], name="flat"),
                           helper.make_node("Gemm", ["f", "fc"], ["y"], name="gemm", transB=1)], "cnn12",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], [w, b, fc])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 12)]), path)
    return path


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    calls = {"preprocess": 0, "float_values": 0}
    pre, floats = onnx_export.preprocess, onnx_fp16._float_values

    def counting_preprocess(*a, **k):  # type: ignore[no-untyped-def]
        calls["preprocess"] += 1
        return pre(*a, **k)

    def counting_floats(*a, **k):  # type: ignore[no-untyped-def]
        calls["float_values"] += 1
        return floats(*a, **k)

    monkeypatch.setattr(onnx_export, "preprocess", counting_preprocess)
    monkeypatch.setattr(onnx_fp16, "_float_values", counting_floats)
    monkeypatch.setenv(sandbox.IN_CHILD, "1")  # the check runs in this process, as in the dry run's child
    return calls


def test_the_check_prepares_each_opset_once_and_writes_the_same_files(tmp_path: Path,
                                                                      counted: dict[str, int]) -> None:
    src = _cnn_opset12(tmp_path / "cnn12.onnx")
    reasons = dry_run_child({"model": str(src), "shapes": {"x": [1, 3, 32, 32]}, "values": {}})
    assert reasons == {o: None for o in DRY_RUN_OPTIONS}
    # opsets 12 (fp32, fp16, int4, int8-dynamic: its 11 is under 12), 13 (int8-static), 18 (both palettes): 3, not
    # 10 (7 options, 3 of them prepared again converted)
    assert counted["preprocess"] == 3
    assert counted["float_values"] == 0  # no fp16 value: restore_fp32 skips its whole-model shape inference
    # one option exported alone, prepared once at the opset it needs, with the note as before
    counted["preprocess"] = 0
    res = export_onnx(src, tmp_path / "s8.onnx", "int8-static", input_shapes={"x": [1, 3, 32, 32]})
    assert counted["preprocess"] == 1
    assert any("converted from ONNX opset 12 to 13" in n for n in res.notes), res.notes
    assert onnx.load(str(tmp_path / "s8.onnx")).opset_import[0].version == 13
    # an option that needs no conversion keeps the file's opset
    res = export_onnx(src, tmp_path / "i4.onnx", "int4-weights", input_shapes={"x": [1, 3, 32, 32]})
    assert not any("converted" in n for n in res.notes)
    # a prepared file kept for the next option gives the file a fresh preparation gives
    (tmp_path / "kept").mkdir()
    with reuse_preparation(tmp_path / "kept"):
        for name in ("a", "b"):
            export_onnx(src, tmp_path / f"{name}.onnx", "palettize-4bit", input_shapes={"x": [1, 3, 32, 32]})
        assert len(list((tmp_path / "kept").iterdir())) == 1
    export_onnx(src, tmp_path / "c.onnx", "palettize-4bit", input_shapes={"x": [1, 3, 32, 32]})
    assert (tmp_path / "a.onnx").read_bytes() == (tmp_path / "b.onnx").read_bytes() == (tmp_path / "c.onnx").read_bytes()
    assert not list((tmp_path / "kept").iterdir())  # removed when the check ends
