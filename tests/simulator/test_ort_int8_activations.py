"""Static int8 on ONNX Runtime's CPU: an activation ORT fuses into a Conv that a QDQ file cannot fold into the int8
output range (HardSwish, HardSigmoid, Sigmoid) runs as kernels of its own behind the QLinearConv
(simulator.backends.ort_task_facts). Integration tier: the graph is compiled by ONNX Runtime."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.ort_int8 import ORT_INT8_UNFOLDED, ort_task_facts
from simulator.profiles import load_profile

HOST = get_target("ort-cpu/host")


def _conv_act(path: Path, act: str) -> Path:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((32, 32, 3, 3)).astype(np.float32) * 0.1, "w")
    b = numpy_helper.from_array(np.zeros(32, np.float32), "b")
    # A second Conv reads the activation: ORT fuses an activation into the Conv before it only off the graph outputs.
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), helper.make_node(act, ["c"], ["a"]),
             helper.make_node("Conv", ["a", "w", "b"], ["y"], pads=[1, 1, 1, 1])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 28, 28])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 28, 28])], [w, b])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_fused_activations_int8_cannot_fold_are_task_facts(tmp_path: Path) -> None:
    from simulator.calibration_bench import compile_for_host

    for act, unfolded in (("HardSwish", True), ("Relu", False)):
        g = compile_for_host(_conv_act(tmp_path / f"{act}.onnx", act), tmp_path / f"{act}.opt.onnx")
        facts = ort_task_facts(g)
        convs = [i for i, n in enumerate(g.nodes) if n.op_type == "Conv"]
        assert len(convs) == 2 and len(g.nodes) == len(facts)
        assert facts[convs[0]] == (frozenset({ORT_INT8_UNFOLDED + act}) if unfolded else frozenset()), facts
        assert facts[convs[1]] == frozenset()


def test_an_unfolded_activation_costs_its_kernels_under_int8_activations_and_its_mul_under_int8_dynamic() -> None:
    """Static int8: DequantizeLinear, HardSigmoid, QuantizeLinear and QLinearMul behind the QLinearConv (4 kernels).
    int8-dynamic: the file's HardSigmoid + Mul (ort_fp16.split_hardswish), whose HardSigmoid pass ConvInteger's unfused
    activation already pays: the Mul's kernel and bytes only."""
    hw = load_profile("host-cpu")
    int8, dyn = Combo("int8", "int8", "int8", 0), Combo("fp32", "fp32", "int8", 0)
    for combo, kernels, mul_bytes in ((int8, 4, None), (dyn, 1, 12.0)):
        plain = plan(HOST, hw, "Conv", "conv", combo, True, True)
        p = plan(HOST, hw, "Conv", "conv", combo, True, True, facts=frozenset({ORT_INT8_UNFOLDED + "HardSwish"}))
        assert p.extra_out_bytes > plain.extra_out_bytes
        if mul_bytes is not None:
            assert p.extra_out_bytes == plain.extra_out_bytes + mul_bytes
        assert p.extra_dispatches == plain.extra_dispatches + kernels
        assert ("HardSwish not folded" in p.note) is (combo is int8)
        assert ("HardSigmoid + Mul" in p.note) is (combo is dyn)
    sig = plan(HOST, hw, "Conv", "conv", int8, True, True, facts=frozenset({ORT_INT8_UNFOLDED + "Sigmoid"}))
    hsw = plan(HOST, hw, "Conv", "conv", int8, True, True, facts=frozenset({ORT_INT8_UNFOLDED + "HardSwish"}))
    assert sig.extra_dispatches < hsw.extra_dispatches  # QLinearSigmoid: one kernel


def test_an_unfolded_activations_float_kernels_cost_the_fp32_elementwise_rate() -> None:
    """HardSwish behind a static int8 Conv: DequantizeLinear, HardSigmoid and QuantizeLinear compute in fp32 (7 ops per
    element at the fp32 element-wise rate), QLinearMul in int8 (3 at the int8 one); a QLinearSigmoid has no fp32
    kernel."""
    import pytest

    from simulator.roofline import efficiency, rates

    hw = load_profile("host-cpu")
    u = hw.units[0]
    int8 = Combo("int8", "int8", "int8", 0)
    plain = plan(HOST, hw, "Conv", "conv", int8, True, True)
    hsw = plan(HOST, hw, "Conv", "conv", int8, True, True, facts=frozenset({ORT_INT8_UNFOLDED + "HardSwish"}))
    sig = plan(HOST, hw, "Conv", "conv", int8, True, True, facts=frozenset({ORT_INT8_UNFOLDED + "Sigmoid"}))
    assert (hsw.extra_fp32_ops_per_out, hsw.extra_ops_per_out - plain.extra_ops_per_out) == (7.0, 3.0)
    assert sig.extra_fp32_ops_per_out == 0.0
    fp32_op = 1 / (u.peak_ops_per_s["fp32"] * efficiency(u, "elementwise", "fp32"))
    r, r0 = rates(hw, hsw, "conv", True), rates(hw, plain, "conv", True)
    assert float(r.extra_fp32_ops_s) == pytest.approx(7.0 * fp32_op) and float(r0.extra_fp32_ops_s) == 0.0
