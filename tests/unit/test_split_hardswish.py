"""A HardSwish ORT fused into an NCHWc Conv of the fp32 graph runs as the file writes it, HardSigmoid + Mul, wherever the
Conv is no NCHWc Conv: under fp16 behind a shared Cast (a plain NCHW Conv) and under int8-dynamic (ConvInteger). Both
kernels are paid there (simulator.ort_fp16.split_hardswish); the fp16 Conv that stays NCHWc fuses them back, and static
int8 has its own four kernels (ort_int8's unfolded activations). README "Exporting the optimized model", Round 33."""

from __future__ import annotations

import pytest

from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.ort_fp16 import FP16_FUSION_KEPT, SPLIT_HARDSWISH
from simulator.profiles import load_profile
from simulator.roofline import efficiency, rates

HOST = get_target("ort-cpu/host")
HW = load_profile("host-cpu")
FP16 = Combo("fp16", "fp16", "fp16", 0)
DYN = Combo("fp32", "fp32", "int8", 0)
STATIC = Combo("int8", "int8", "int8", 0)
SPLIT = frozenset({SPLIT_HARDSWISH, FP16_FUSION_KEPT})


def _both(combo: Combo, shared_cast: bool):  # type: ignore[no-untyped-def]
    return [plan(HOST, HW, "Conv", "conv", combo, True, True, shared_cast=shared_cast, facts=f)
            for f in (SPLIT, frozenset({FP16_FUSION_KEPT}))]


def test_fp16_behind_a_shared_cast_pays_the_hardsigmoid_and_the_mul() -> None:
    split, relu = _both(FP16, True)
    assert split.extra_out_bytes - relu.extra_out_bytes == 20.0  # HardSigmoid 4 + 4, Mul 4 + 4 + 4 bytes
    assert split.extra_dispatches - relu.extra_dispatches == 2 and not split.fp32_equivalent
    assert (split.extra_fp32_ops_per_out, split.extra_act_flops_per_out, split.extra_act_op) == (4.0, 3.0, "HardSigmoid")
    # the NCHWc Conv (no shared Cast) fuses the pair back: as before
    nchwc, plain = _both(FP16, False)
    assert (nchwc.extra_out_bytes, nchwc.extra_dispatches, nchwc.extra_fp32_ops_per_out) == \
        (plain.extra_out_bytes, plain.extra_dispatches, 0.0)


def test_int8_dynamic_adds_the_mul_to_its_unfused_activation_pass() -> None:
    split, one = _both(DYN, False)
    assert split.extra_out_bytes - one.extra_out_bytes == 12.0 and split.extra_dispatches - one.extra_dispatches == 1
    u = HW.units[0]
    peak = u.peak_ops_per_s["fp32"]
    want = 1.0 / (peak * efficiency(u, "elementwise", "fp32")) + 3.0 / (peak * efficiency(u, "elementwise", "fp32",
                                                                                          "HardSigmoid"))
    assert float(rates(HW, split, "conv", True).extra_fp32_ops_s) == pytest.approx(want)
    # static int8's own rule prices its kernels; the split adds nothing there
    s = plan(HOST, HW, "Conv", "conv", STATIC, True, True, facts=SPLIT)
    assert s.extra_fp32_ops_per_out == 7.0 and s.extra_act_flops_per_out == 3.0
