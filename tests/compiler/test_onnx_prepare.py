"""Real files, as ORT's quantizers meet them: empty and repeated node names, stale value_info, an opset older than
per-channel QDQ. The exporter prepares them instead of crashing, refusing or writing a file ORT rejects."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from compiler.frontends import onnx as onnx_frontend
from compiler.optimize.onnx_export import export_onnx
from compiler.vocabulary.options import OptionError
from tests import modelzoo

warnings.filterwarnings("ignore")
logging.getLogger().setLevel(logging.ERROR)


def _messy(tmp: Path) -> Path:
    m = onnx.load(str(modelzoo.tiny_cnn(tmp / "tiny.onnx")))
    for n in m.graph.node:  # dynamo-like: names repeated or missing
        n.name = "dup" if n.op_type in ("Conv", "Relu") else ""
    m.opset_import[0].version = 12
    # A shape ORT's rewrites made stale: quantize_static's own inference then disagrees with it.
    m.graph.value_info.append(helper.make_tensor_value_info("flat", TensorProto.FLOAT, [1, 192]))
    p = tmp / "messy.onnx"
    onnx.save(m, str(p))
    return p


@pytest.fixture(scope="module")
def messy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _messy(tmp_path_factory.mktemp("messy"))


def test_opset12_int8_static_is_converted_and_loads(messy: Path, tmp_path: Path) -> None:
    res = export_onnx(messy, tmp_path / "s.onnx", "int8-static")
    m = onnx.load(str(res.path))
    assert m.opset_import[0].version == 13 and any("opset 12 to 13" in n for n in res.notes)
    axes = [a for n in m.graph.node if n.op_type == "DequantizeLinear" for a in n.attribute if a.name == "axis"]
    assert axes  # per-channel weights: what opset 12 could not hold


@pytest.mark.parametrize("option,op", [("int8-dynamic", "ConvInteger"), ("fp16", "Conv")])
def test_repeated_names_are_assigned_not_refused(messy: Path, tmp_path: Path, option: str, op: str) -> None:
    res = export_onnx(messy, tmp_path / f"{option}.onnx", option)
    m = onnx.load(str(res.path))
    names = [n.name for n in m.graph.node]
    assert len(set(names)) == len(names) and op in {n.op_type for n in m.graph.node}
    assert onnx.load(str(messy)).opset_import[0].version == m.opset_import[0].version == 12  # no needless convert


def test_override_keyed_by_analysis_id_reaches_its_node(messy: Path, tmp_path: Path) -> None:
    g = onnx_frontend.load(messy)
    conv = next(n for n in g.nodes if n.op_type == "Conv")
    assert conv.id != "dup"  # the analysis could not key it by its repeated name
    res = export_onnx(messy, tmp_path / "o.onnx", "int8-static", {conv.id: "fp32"})
    m = onnx.load(str(res.path))
    node = next(n for n in m.graph.node if n.name == conv.id)
    assert node.op_type == "Conv" and node.input[1] == "conv.weight"  # kept float, no DequantizeLinear
    assert any(n.op_type == "DequantizeLinear" for n in m.graph.node)  # the Gemm is int8
    assert res.choices[conv.id] == "fp32/fp32/fp32/0"
    with pytest.raises(OptionError, match="not a node of this model"):
        export_onnx(messy, tmp_path / "bad.onnx", "fp32", {"dup": "fp16"})


def test_dry_run_checks_each_way_of_writing_the_file_and_marks_the_table(messy: Path) -> None:
    from compiler.optimize.onnx_dry_run import DRY_RUN_OPTIONS, dry_run, dry_run_option, mark_dry_run
    from compiler.vocabulary.options import BULK_PRESETS

    reasons = dry_run(messy, {"input": [1, 3, 16, 16]}, timeout_s=300)
    assert set(reasons) == set(DRY_RUN_OPTIONS) and all(r is None for r in reasons.values()), reasons
    # Every preset is checked through the option whose file has its structure.
    assert {dry_run_option(p) for p in BULK_PRESETS} == set(DRY_RUN_OPTIONS)
    bulk = {"presets": [{"name": p} for p in BULK_PRESETS], "exportable": [True] * len(BULK_PRESETS),
            "export_reasons": [None] * len(BULK_PRESETS)}
    why = "ORT's static quantization failed on this model (ValueError: x)"
    mark_dry_run(bulk, {**reasons, "int8-static": why})
    marked = [p for p, ok in zip(BULK_PRESETS, bulk["exportable"]) if not ok]
    assert marked == [p for p in BULK_PRESETS if p.endswith("int8-static")]
    assert all(r == why for p, r in zip(BULK_PRESETS, bulk["export_reasons"]) if p in marked)


def test_calibration_inputs_take_each_inputs_dtype_and_value(tmp_path: Path) -> None:
    """A uint8 image and a scalar sample-rate input: calibration and the load check feed what the model takes."""
    import numpy as np
    from onnx import numpy_helper

    w = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    g = helper.make_graph(
        [helper.make_node("Cast", ["img"], ["f"], to=TensorProto.FLOAT, name="cast"),
         helper.make_node("Cast", ["sr"], ["srf"], to=TensorProto.FLOAT, name="cast_sr"),
         helper.make_node("Div", ["f", "srf"], ["d"], name="div"),
         helper.make_node("MatMul", ["d", "w"], ["y"], name="mm")],
        "u8", [helper.make_tensor_value_info("img", TensorProto.UINT8, [1, 4]),
               helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 9
    p = tmp_path / "u8.onnx"
    onnx.save(m, str(p))
    res = export_onnx(p, tmp_path / "s.onnx", "int8-static", input_values={"sr": 16000})
    assert "DequantizeLinear" in {n.op_type for n in onnx.load(str(res.path)).graph.node}


def test_quant_ready_leaves_no_partial_model_in_the_working_directory(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # ORT's symbolic shape inference cannot finish on an op it does not know: it saved the model and its weights
    # (sym_shape_infer_temp.onnx + <uuid>.data) into the server's or the user's working directory, once per export.
    import numpy as np
    from onnx import numpy_helper

    from compiler.optimize.onnx_prepare import quant_ready

    w = numpy_helper.from_array(np.ones((32, 32), np.float32), "w")  # 4 KB: saved as external data
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["h"]),
                           helper.make_node("Foo", ["h"], ["y"], domain="my.domain")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    src = tmp_path / "models" / "custom.onnx"
    src.parent.mkdir()
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("my.domain", 1)]),
              str(src))
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (cwd / "mine.txt").write_text("the user's")
    monkeypatch.chdir(cwd)
    assert quant_ready(src, tmp_path / "ready.onnx") == src  # the inference failed: the file goes on as it was
    assert sorted(p.name for p in cwd.iterdir()) == ["mine.txt"]


@pytest.mark.parametrize("version,option", [(6, "fp16"), (6, "int8-dynamic"), (6, "int8-static"), (9, "int8-dynamic")])
def test_an_old_opset_model_exports(tmp_path: Path, version: int, option: str) -> None:
    """The onnx wheel's pytorch-converted BatchNorm tests are opset 6: every export was refused ("Could not find an
    implementation for BatchNormalization(6)") although the analysis (converted to opset 7) was ready. Its light zoo
    is opset 9, weights not listed as graph inputs: int8-dynamic failed in quantize_dynamic's own conversion to 11
    ("Input conv1_w_0 is undefined!")."""
    import numpy as np
    from onnx import numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w")]
    inits += [numpy_helper.from_array((1 + 0.1 * rng.standard_normal(8)).astype(np.float32), n)
              for n in ("scale", "bias", "mean", "var")]
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
                           helper.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["y"],
                                            name="bn", **({"is_test": 1} if version < 7 else {}))], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", version)])
    m.ir_version = 3 if version < 7 else 4
    if version < 7:  # IR 3 lists every initializer as a graph input
        m.graph.input.extend(helper.make_tensor_value_info(i.name, i.data_type, list(i.dims)) for i in inits)
    src = tmp_path / "old.onnx"
    onnx.save(m, src)
    res = export_onnx(src, tmp_path / f"{option}.onnx", option)
    assert onnx.load(str(res.path)).opset_import[0].version >= 7
    assert any(f"from ONNX opset {version} to" in n for n in res.notes)
