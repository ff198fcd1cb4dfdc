"""Two static int8 figures on ORT's CPU (simulator.ort_int8, simulator.roofline): a stem's im2col + GEMM path pays a cost
per output element (`stemgemm.int8.out`), the grouped convs' path its own (`convgemm.int8.out`: the dense 1x1 convs
off the alignment it also prices write 58 outputs per GEMM row where a width-8 group writes 8); a HardSwish or HardSigmoid behind a
QLinearConv runs its HardSigmoid at that op's own calibrated fp32 rate, its DequantizeLinear / QuantizeLinear at the
generic one (an Emerald Rapids, 2026-12-07: HardSigmoid 1.6x the generic rate)."""

from __future__ import annotations

import pytest

from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.ort_int8 import ORT_INT8_QGEMM, ORT_INT8_QGEMM_DENSE, ORT_INT8_UNFOLDED, ORT_INT8DYN_STEM, STEM_RATE_KIND
from simulator.profiles import load_profile
from simulator.roofline import efficiency, rates

HOST = get_target("ort-cpu/host")
STATIC = Combo("int8", "int8", "int8", 0)


def test_a_stem_and_a_grouped_conv_each_pay_their_own_cost_per_output_element() -> None:
    hw = load_profile("host-cpu").with_overrides({"units": {"cpu": {"kind_overhead_s": {"stemgemm.int8.out": 3e-10,
                                                                                         "convgemm.int8.out": 5e-10}}}})
    stem = plan(HOST, hw, "Conv", "convsmall", STATIC, True, True,
                facts=frozenset({ORT_INT8_QGEMM_DENSE, ORT_INT8DYN_STEM}))
    grouped = plan(HOST, hw, "Conv", "conv", STATIC, True, True, facts=frozenset({ORT_INT8_QGEMM}))
    assert stem.rate_kind == STEM_RATE_KIND and stem.out_cost and grouped.out_cost
    assert float(rates(hw, stem, "convsmall", True).out_s) == 3e-10
    assert float(rates(hw, grouped, "conv", True).out_s) == 5e-10


@pytest.mark.parametrize("act", ["HardSwish", "HardSigmoid"])
def test_the_unfolded_hardsigmoid_runs_at_its_own_rate(act: str) -> None:
    hw = load_profile("host-cpu")
    generic = efficiency(hw.units[0], "elementwise", "fp32")
    hw = hw.with_overrides({"units": {"cpu": {"efficiency": {"elementwise.fp32.HardSigmoid": 1.6 * generic}}}})
    u = hw.units[0]
    p = plan(HOST, hw, "Conv", "conv", STATIC, True, True, facts=frozenset({ORT_INT8_UNFOLDED + act}))
    assert (p.extra_fp32_ops_per_out, p.extra_act_flops_per_out, p.extra_act_op) == (7.0, 3.0, "HardSigmoid")
    peak = u.peak_ops_per_s["fp32"]
    want = 4.0 / (peak * generic) + 3.0 / (peak * 1.6 * generic)  # DequantizeLinear + QuantizeLinear, HardSigmoid
    assert float(rates(hw, p, "conv", True).extra_fp32_ops_s) == pytest.approx(want)
    sig = plan(HOST, hw, "Conv", "conv", STATIC, True, True, facts=frozenset({ORT_INT8_UNFOLDED + "Sigmoid"}))
    assert float(rates(hw, sig, "conv", True).extra_fp32_ops_s) == 0.0  # QLinearSigmoid: no fp32 kernel
