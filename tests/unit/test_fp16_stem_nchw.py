"""Under fp16 on ORT's x86 CPU EP an image stem (3 input channels) whose bias other Convs read too keeps a run-time
Cast and runs MLAS's plain NCHW Conv (im2col + SGEMM), as the TorchScript files' stems with their shared zero biases
do. It takes figures of its own, `convsmall.cast16nchw`, fitted on calibration's `stemact-shared-*` cases (stems
reading one bias), not the dense NCHW convs' `conv.cast16nchw`, with a cost per output element (its SGEMM of K = 3 x kh x
kw: `convsmall.cast16nchw.out`) beside its rate, setup and im2col (README "Exporting the optimized model", Round 33)."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.calibration_bench import CASES
from simulator.profiles import load_profile
from simulator.roofline import efficiency, rates

HOST = get_target("ort-cpu/host")
FP16 = Combo("fp16", "fp16", "fp16", 0)
KEY = "convsmall.cast16nchw"


def test_the_bench_times_fp16_stems_reading_one_bias_on_their_own_key(tmp_path: Path) -> None:
    cases = [c for c in CASES if c.name.startswith("stemact-shared-")]
    assert len(cases) >= 4  # a rate, a setup and a cost per im2col element, jointly (calibration_fit: 3+ shapes)
    assert all(c.kind == "convsmall" and c.variants == (("fp16", "cast16nchw"),) for c in cases)
    m = onnx.load(cases[0].build(tmp_path / "stem.onnx"))
    convs = [n for n in m.graph.node if n.op_type == "Conv"]
    assert len(convs) > 1 and {n.input[2] for n in convs} == {convs[0].input[2]}  # one bias, read by every stem
    assert all(n.input[0] == convs[0].input[0] for n in convs)  # side by side on one image


def test_a_shared_cast_stem_reads_its_own_figures_where_calibrated() -> None:
    hw = load_profile("host-cpu")
    p = plan(HOST, hw, "Conv", "convsmall", FP16, True, False, shared_cast=True)
    assert p.rate_kind in ("", "convsmall") and (p.tag, p.im2col) == ("cast16nchw", True)  # '': the task's kind
    dense = efficiency(hw.units[0], "conv", "cast16nchw")
    own = hw.with_overrides({"units": {"cpu": {"efficiency": {KEY: 0.5 * dense},
                                               "kind_overhead_s": {KEY: 3e-6, KEY + ".im2col": 4e-10}}}})
    r = rates(own, p, "convsmall", True)
    assert efficiency(own.units[0], "convsmall", "cast16nchw") == pytest.approx(0.5 * dense)
    assert (float(r.setup_s), float(r.im2col_s)) == (3e-6, 4e-10)


def test_a_shared_cast_stem_pays_a_cost_per_output_element_and_a_dense_conv_does_not() -> None:
    hw = load_profile("host-cpu").with_overrides({"units": {"cpu": {"kind_overhead_s": {
        KEY + ".out": 5e-10, "conv.cast16nchw.out": 7e-10}}}})
    stem = plan(HOST, hw, "Conv", "convsmall", FP16, True, False, shared_cast=True)
    dense = plan(HOST, hw, "Conv", "conv", FP16, True, False, shared_cast=True)
    nchwc = plan(HOST, hw, "Conv", "convsmall", FP16, True, False)  # its bias its own: an NCHWc Conv
    assert stem.out_cost and not dense.out_cost and not nchwc.out_cost
    assert float(rates(hw, stem, "convsmall", True).out_s) == 5e-10
    assert float(rates(hw, dense, "conv", True).out_s) == 0.0
