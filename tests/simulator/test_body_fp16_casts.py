"""fp16 constants read inside a Loop body on ORT's CPU EP: an op without an fp16 kernel runs fp32 behind Casts ORT
inserts, and inside a body the Casts of initializers (the body's own or the outer graph's) are not folded at load,
so they run at every trip (simulator.control_flow.fp16_body_casts). The corpus's greedy decoder's fp16 export was
predicted 34-40% under its measured time for want of them."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler import frontends
from compiler.backends import as_tasks
from compiler.optimize.onnx_export import export_onnx
from compiler.vocabulary.targets import get_target
from simulator import sweep as sweep_module
from simulator.control_flow import body_cast_ms
from simulator.profiles import load_profile
from simulator.sweep import sweep

warnings.filterwarnings("ignore")
logging.getLogger().setLevel(logging.ERROR)

D, TRIPS = 256, 8


def _loop(path: Path) -> Path:
    """x @ w_top, then a Loop of 8 trips over s = tanh(s @ w_body + b): the body's MatMul reads a 256 x 256 weight
    of the outer graph, its Add a bias of its own."""
    rng = np.random.default_rng(0)
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"], name="keep_going"),
         helper.make_node("MatMul", ["s_in", "w_body"], ["m"], name="body_mm"),
         helper.make_node("Add", ["m", "b"], ["ma"], name="body_add"),
         helper.make_node("Tanh", ["ma"], ["s_out"], name="body_tanh")], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("s_in", TensorProto.FLOAT, [1, D])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("s_out", TensorProto.FLOAT, [1, D])],
        [numpy_helper.from_array(rng.standard_normal((1, D)).astype(np.float32), "b")])
    w = [numpy_helper.from_array((rng.standard_normal((D, D)) / D ** 0.5).astype(np.float32), n)
         for n in ("w_top", "w_body")]
    nodes = [helper.make_node("MatMul", ["x", "w_top"], ["r"], name="top_mm"),
             helper.make_node("Loop", ["trips", "cond", "r"], ["y"], name="loop", body=body)]
    g = helper.make_graph(nodes, "loop", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, D])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, D])],
                          [*w, numpy_helper.from_array(np.array(TRIPS, np.int64), "trips"),
                           numpy_helper.from_array(np.array(True), "cond")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_ort_casts_a_bodys_fp16_constants_at_run_time(tmp_path: Path) -> None:
    """The fact: in ORT's optimized fp16 graph the body Casts the outer weight and its own bias, the top level
    reads its weight cast at load (no Cast)."""
    out = tmp_path / "fp16.onnx"
    export_onnx(_loop(tmp_path / "loop.onnx"), out, "fp16", {})
    so = ort.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "opt.onnx")
    so.log_severity_level = 3
    ort.InferenceSession(str(out), so, providers=["CPUExecutionProvider"])
    m = onnx.load(str(tmp_path / "opt.onnx"))
    body = next(a.g for n in m.graph.node if n.op_type == "Loop" for a in n.attribute if a.name == "body")
    cast = {n.input[0] for n in body.node if n.op_type == "Cast"}
    assert {"w_body", "b"} <= cast
    assert not [n for n in m.graph.node if n.op_type == "Cast" and n.input[0] == "w_top"]


def _cell(bulk: dict, preset: str, op: str) -> float:  # type: ignore[type-arg]
    return float(bulk["metrics"]["latency_ms"][bulk["ops"].index(op)][[p["name"] for p in bulk["presets"]].index(
        preset)])


def test_a_bodys_fp16_casts_are_priced_per_trip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    g = as_tasks(frontends.load(_loop(tmp_path / "loop.onnx")))
    with_casts = sweep(g, "ort-cpu/host").bulk
    monkeypatch.setattr(sweep_module, "fp16_body_casts", lambda t, graph: [()] * len(graph.nodes))
    without = sweep(g, "ort-cpu/host").bulk
    hw = load_profile(get_target("ort-cpu/host").profile, "ort-cpu")
    u = hw.units[0]
    # one Cast of the 256 x 256 weight: a dispatch, 2 bytes streamed and 4 written per value
    per_value = 2 / hw.dram_bandwidth_bytes_per_s + 4 / u.cache_bandwidth_bytes_per_s
    one = (u.dispatch_overhead_s + D * D * per_value) * 1e3
    assert _cell(with_casts, "fp16", "body_mm") - _cell(without, "fp16", "body_mm") == pytest.approx(TRIPS * one)
    assert TRIPS * one > 0.3 * _cell(without, "fp16", "body_mm")  # not a rounding: a third of the MatMul's time
    bias = body_cast_ms(hw, D)
    assert _cell(with_casts, "fp16", "body_add") - _cell(without, "fp16", "body_add") == pytest.approx(TRIPS * bias)
    for op, preset in (("body_mm", "fp32"), ("top_mm", "fp16"), ("body_tanh", "fp16")):  # no Cast of a constant
        assert _cell(with_casts, preset, op) == _cell(without, preset, op), (op, preset)
