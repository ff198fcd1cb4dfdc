"""Static int8 on ONNX Runtime's CPU: a Mul by a per-channel operand (a squeeze-excite gate) over data the int8 file
holds in NHWC is a QLinearMul ORT calls once per C elements, a fixed cost per call (simulator/ort_int8.py
ORT_INT8_SPAN, `elementwise.int8.span` fitted by calibration). Integration tier: the graph is compiled by ONNX
Runtime."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.ort_int8 import ORT_INT8_SPAN, ort_task_facts
from simulator.profiles import load_profile
from simulator.roofline import rates

HOST = get_target("ort-cpu/host")


def _se(path: Path, after_conv: bool) -> Path:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((16, 16, 3, 3)) * 0.1).astype(np.float32), "w")
    w1 = numpy_helper.from_array((rng.standard_normal((16, 16, 1, 1)) * 0.1).astype(np.float32), "w1")
    x = "c" if after_conv else "x"
    nodes = ([helper.make_node("Conv", ["x", "w"], ["c0"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c0"], ["c"])]
             if after_conv else [])
    nodes += [helper.make_node("GlobalAveragePool", [x], ["p"]), helper.make_node("Conv", ["p", "w1"], ["q"]),
              helper.make_node("Sigmoid", ["q"], ["g"]), helper.make_node("Mul", [x, "g"], ["m"]),
              helper.make_node("Conv", ["m", "w"], ["y"], pads=[1, 1, 1, 1])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 28, 28])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 28, 28])], [w, w1])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_a_gate_over_conv_output_is_called_per_pixel(tmp_path: Path) -> None:
    from simulator.model import compile_for

    for after_conv in (True, False):
        source, g, _ = compile_for(_se(tmp_path / f"se{after_conv}.onnx", after_conv), HOST.name, tmp_path / f"w{after_conv}")
        facts = ort_task_facts(g, source)
        spans = [f for nd, fs in zip(g.nodes, facts) if nd.op_type == "Mul" for f in fs if f.startswith(ORT_INT8_SPAN)]
        # Over the graph input (NCHW in the int8 file too: no Conv before it) ORT calls it once per channel.
        assert spans == ([ORT_INT8_SPAN + "16"] if after_conv else []), spans


def test_the_calls_cost_the_calibrated_figure_under_int8_only() -> None:
    hw = load_profile("host-cpu").with_overrides({"units": {"cpu": {"kind_overhead_s": {"elementwise.int8.span": 16e-9}}}})
    facts = frozenset({ORT_INT8_SPAN + "16"})
    int8, fp32 = Combo("int8", "int8", "-", 0), Combo("fp32", "fp32", "-", 0)
    p = plan(HOST, hw, "Mul", "elementwise", int8, False, False, facts=facts)
    assert p.span_elements == 16.0 and "one kernel call per span" in p.note
    assert float(rates(hw, p, "elementwise", True).span_s) == pytest.approx(1e-9)  # 16 ns per call of 16 elements
    assert plan(HOST, hw, "Mul", "elementwise", fp32, False, False, facts=facts).span_elements == 0.0


def test_calibration_times_such_calls_at_several_widths() -> None:
    from simulator.calibration_bench import CASES

    cases = [c for c in CASES if c.name.startswith("mul-span-")]
    assert len(cases) >= 2 and all(("int8-static", "int8") in c.variants for c in cases)
