"""Dynamic int8 on ONNX Runtime's CPU: a Conv whose output's innermost axis is 1 (a 1-D conv written as 2-D over
[N, C, L, 1], magika's) has quantize_dynamic's scale Mul called once per element by ORT's Broadcaster, priced per call
(`elementwise.fp32.span`, simulator/ort_int8.py ORT_INT8DYN_UNIT_SPAN). Integration tier: graphs are compiled by ONNX
Runtime."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.ort_int8 import ORT_INT8DYN_UNIT_SPAN, UNIT_SPAN_KEY, ort_task_facts
from simulator.profiles import load_profile

HOST = get_target("ort-cpu/host")
HW = load_profile("host-cpu")


def _conv(path: Path, width: int) -> Path:
    """One 64 -> 64 Conv with a 5x1 kernel over [1, 64, 128, width]."""
    w = numpy_helper.from_array(np.ones((64, 64, 5, 1), np.float32) * 0.01, "w")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 128, width])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[5, 1]),
                           helper.make_node("Relu", ["c"], ["y"])], "g", [x], [y], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, path)
    return path


def test_a_conv_with_an_innermost_axis_of_one_is_a_task_fact(tmp_path: Path) -> None:
    from simulator import calibration_bench

    for width, unit in ((1, True), (8, False)):
        src = _conv(tmp_path / f"c{width}.onnx", width)
        g = calibration_bench.compile_for_host(src, tmp_path / f"c{width}.opt.onnx")
        facts = [f for nd, f in zip(g.nodes, ort_task_facts(g)) if nd.op_type in ("Conv", "FusedConv")]
        assert facts and all((ORT_INT8DYN_UNIT_SPAN in f) is unit for f in facts), (width, facts)


def test_dynamic_int8_pays_one_call_per_element_there_only() -> None:
    from simulator.backends import plan
    from simulator.roofline import rates

    fact = frozenset({ORT_INT8DYN_UNIT_SPAN})
    dyn, static = Combo("fp32", "fp32", "int8", 0), Combo("int8", "int8", "int8", 0)
    fp32 = Combo("fp32", "fp32", "fp32", 0)
    p = plan(HOST, HW, "Conv", "conv", dyn, True, False, facts=fact)
    assert (p.span_elements, p.span_key) == (1.0, UNIT_SPAN_KEY)
    assert rates(HW, p, "conv", False).span_s == HW.units[p.unit].kind_overhead_s[UNIT_SPAN_KEY] > 0
    assert rates(HW, plan(HOST, HW, "Conv", "conv", dyn, True, False), "conv", False).span_s == 0
    for other in (static, fp32):  # no scale Mul: nothing to charge
        assert plan(HOST, HW, "Conv", "conv", other, True, False, facts=fact).span_elements == 0
