"""Every per-op option the option table offers for a Conv is either exported exactly (the file loads in ONNX
Runtime and has the ops the option promises) or marked not exportable, and then refused in one sentence."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import onnx
import onnxruntime as ort
import pytest

from compiler.frontends import onnx as onnx_frontend
from compiler.optimize.onnx_export import export_onnx, preprocess
from compiler.vocabulary.options import OptionError, parse_combo
from simulator.sweep import sweep
from tests import modelzoo

warnings.filterwarnings("ignore")
logging.getLogger().setLevel(logging.ERROR)

CONV = "/conv/Conv"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    d = tmp_path_factory.mktemp("tiny")
    src = modelzoo.tiny_cnn(d / "tiny.onnx")
    preprocess(src, d / "pre.onnx")  # what the exporter starts from
    g = onnx_frontend.load(d / "pre.onnx")
    r = sweep(g, "ort-cpu/host")
    i = next(k for k, n in enumerate(g.nodes) if n.name == CONV)
    return src, {"entry": r.per_op[i], "bulk": r.bulk, "dir": d}


def _sampled(entry: dict) -> set[str]:
    """The exportable combos this test writes: every format (the combo without its sparsity) unpruned and at one
    sparsity, the levels taken in turn so each is written for some format. Pruning zeroes weights before any format
    is written, so the other 45 files differ from these only in their mask (writing all 75 took 29 s of the suite)."""
    ok = [c for c, x in zip(entry["combos"], entry["exportable"]) if x]
    formats = list(dict.fromkeys(c.rsplit("/", 1)[0] for c in ok))
    levels = sorted({int(c.rsplit("/", 1)[1]) for c in ok})
    return {f"{f}/{s}" for i, f in enumerate(formats) for s in (levels[0], levels[1 + i % (len(levels) - 1)])}


def test_every_offered_conv_option_exports_exactly_or_is_marked(tiny: tuple[Path, dict]) -> None:
    src, ctx = tiny
    e = ctx["entry"]
    assert len(e["exportable"]) == len(e["combos"])
    exported = refused = 0
    for combo, ok in zip(e["combos"], e["exportable"]):
        out = ctx["dir"] / "out.onnx"
        if ok and combo not in _sampled(e):
            continue
        if not ok:
            with pytest.raises(OptionError) as err:
                export_onnx(src, out, "fp32", {CONV: combo})
            assert "\n" not in str(err.value) and CONV in str(err.value), combo
            refused += 1
            continue
        res = export_onnx(src, out, "fp32", {CONV: combo})
        ort.InferenceSession(str(res.path), providers=["CPUExecutionProvider"])
        m = onnx.load(str(res.path))
        ops = {n.op_type for n in m.graph.node}
        c = parse_combo(combo)
        if c.input == "int8":
            assert {"QuantizeLinear", "DequantizeLinear"} <= ops, combo
        elif c.kernel == "int8":
            assert "ConvInteger" in ops, combo
        elif c.input == "fp16":
            conv = next(n for n in m.graph.node if n.name == CONV)
            w = next(t for t in m.graph.initializer if t.name == conv.input[1]) if c.kernel == "fp16" else None
            assert w is None or w.data_type == onnx.TensorProto.FLOAT16, combo
        exported += 1
    # Each of the 15 formats (fp32, fp16, int8 static and dynamic, int4, palettized) exported twice; the rest refused.
    assert exported == 2 * 15 and refused > 0
    for combo in ("fp32/fp32/fp32/0", "fp16/fp16/fp16/50", "int8/int8/int8/0", "fp32/fp32/int8/25"):
        assert e["exportable"][e["combos"].index(combo)], combo
    for combo in ("fp32/int8/int8/0", "fp16/int8/int8/0", "int8/int8/fp32/0", "fp16/fp16/int8/0"):
        assert not e["exportable"][e["combos"].index(combo)], combo


def test_model_wide_presets_are_marked_with_a_reason(tiny: tuple[Path, dict]) -> None:
    bulk = tiny[1]["bulk"]
    names = [p["name"] for p in bulk["presets"]]
    assert len(bulk["exportable"]) == len(names) == len(bulk["export_reasons"])
    for name in ("fp32", "fp16", "int8-static", "int8-dynamic", "prune-50+int8-static"):
        assert bulk["exportable"][names.index(name)], (name, bulk["export_reasons"][names.index(name)])
    assert all((r is None) == ok for r, ok in zip(bulk["export_reasons"], bulk["exportable"]))


def test_body_tasks_of_control_flow_take_no_per_op_export(tmp_path: Path) -> None:
    """The exporter's tools quantize the main graph only: an override on an If branch's node has nowhere to go, so
    the table marks every combo of a body task not exportable, and the main graph's stay offered."""
    from tests import controlflow_models as cf

    src = cf.if_model(tmp_path / "if.onnx")
    g = onnx_frontend.load(src)
    r = sweep(g, "ort-cpu/host")
    body = [i for i, n in enumerate(g.nodes) if n.parent]
    top = [i for i, n in enumerate(g.nodes) if not n.parent]
    assert body and top
    assert all(not any(r.per_op[i]["exportable"]) for i in body)
    assert all(any(r.per_op[i]["exportable"]) for i in top)
    with pytest.raises(OptionError, match="not a node of this model"):
        export_onnx(src, tmp_path / "o.onnx", "fp32", {g.nodes[body[0]].id: "fp16/fp16/-/0"})


def _deconv_model(path: Path) -> Path:
    """A Conv, then a stride-2 ConvTranspose (a DBNet-style text detector's upsampling head)."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((32, 3, 3, 3)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((32, 16, 4, 4)).astype(np.float32), "w2")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w1"], ["a"], name="conv", pads=[1, 1, 1, 1]),
                           helper.make_node("Relu", ["a"], ["b"], name="relu"),
                           helper.make_node("ConvTranspose", ["b", "w2"], ["y"], name="deconv", strides=[2, 2],
                                            pads=[1, 1, 1, 1])], "deconv",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 64, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w1, w2])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_int8_dynamic_of_a_model_with_a_conv_transpose_writes_it_float(tmp_path: Path) -> None:
    """The whole int8-dynamic option was refused for a model with one ConvTranspose (ORT's dynamic quantization has
    no integer ConvTranspose). The preset now writes it float, as quantize_dynamic leaves it: offered, priced as the
    fp32 deconv beside an int8 conv, exported and sized so; asked per op, it is still refused."""
    from simulator.predict import optimize_model

    src = _deconv_model(tmp_path / "deconv.onnx")
    g = onnx_frontend.load(src)
    r = sweep(g, "ort-cpu/host")
    names = [p["name"] for p in r.bulk["presets"]]
    p = names.index("int8-dynamic")
    assert r.bulk["exportable"][p], r.bulk["export_reasons"][p]
    combos = {n.name: r.bulk["combos"][i][p] for i, n in enumerate(g.nodes)}
    assert combos["deconv"] == "fp32/fp32/fp32/0" and combos["conv"] == "fp32/fp32/int8/0"
    (tmp_path / "w").mkdir()
    out = optimize_model(src, tmp_path / "dyn.onnx", "ort-cpu/host", "int8-dynamic", {}, tmp_path / "w")
    ops = {n.name: n.op_type for n in onnx.load(str(tmp_path / "dyn.onnx")).graph.node}
    assert ops["deconv"] == "ConvTranspose" and "ConvInteger" in ops.values()
    assert abs(out["predicted"]["size_bytes"] / out["size_bytes"] - 1) < 0.02
    with pytest.raises(OptionError, match="ConvTranspose"):
        export_onnx(src, tmp_path / "o.onnx", "fp32", {"deconv": "fp32/fp32/int8/0"})
