"""Static int8 on ONNX Runtime's CPU: Convs that MLAS's symmetric conv kernels refuse (grouped ones, stems with 3 input
channels) run an NHWC im2col and a GEMM per group, costed per GEMM row and per im2col copy (simulator/ort_int8.py);
calibration fits that path on grouped convs and stems. Integration tier: graphs are compiled by ONNX Runtime."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.ort_int8 import ORT_INT8_QGEMM, QGEMM_RATE_KIND, ort_task_facts
from simulator.profiles import load_profile

HOST = get_target("ort-cpu/host")
HW = load_profile("host-cpu")


def test_convs_off_the_symmetric_kernel_are_task_facts_with_their_rows_and_copies(tmp_path: Path) -> None:
    from simulator import calibration_bench
    from simulator.costs import work_of

    for name, build, off in (("grouped", calibration_bench._conv_act(48, 28, 3, group=6), True),
                             ("stem", calibration_bench._stem_act(32, 64, 3), True),
                             ("dense", calibration_bench._conv_act(64, 28, 3), False)):
        g = calibration_bench.compile_for_host(build(tmp_path / f"{name}.onnx"), tmp_path / f"{name}.opt.onnx")
        convs = [i for i, nd in enumerate(g.nodes) if nd.op_type in ("Conv", "FusedConv")]
        facts = ort_task_facts(g)
        assert convs and all((ORT_INT8_QGEMM in facts[i]) is off for i in convs), (name, facts)
        w = work_of(g.nodes[convs[0]], g)
        if name == "grouped":  # 28 x 28 pixels x 6 groups; 9 taps each
            assert (w.qgemm_rows, w.qgemm_taps) == (28 * 28 * 6, 28 * 28 * 6 * 9)
        if name == "stem":  # stride 2: 32 x 32 output pixels, one group: one copy per kernel row (3 adjacent taps)
            assert (w.qgemm_rows, w.qgemm_taps) == (32 * 32, 32 * 32 * 3)


def test_the_per_group_gemm_path_under_static_int8_only() -> None:
    from simulator.backends import plan

    fact = frozenset({ORT_INT8_QGEMM})
    static, dyn = Combo("int8", "int8", "int8", 0), Combo("fp32", "fp32", "int8", 0)
    p = plan(HOST, HW, "FusedConv", "gconvnchw", static, True, True, facts=fact)
    assert p.qgemm and p.rate_kind == QGEMM_RATE_KIND and not p.setup_per_channel and not p.im2col
    assert plan(HOST, HW, "Conv", "convsmall", static, True, True, facts=fact).rate_kind == QGEMM_RATE_KIND
    assert plan(HOST, HW, "Conv", "convsmall", dyn, True, True, facts=fact) == plan(HOST, HW, "Conv", "convsmall",
                                                                                     dyn, True, True)


def test_calibration_fits_the_per_group_gemm_path_on_grouped_convs_and_stems(tmp_path: Path) -> None:
    """Its cases are in the bench (grouped widths 8 and 24, a 1x1, stems), and the joint fit finds known figures
    (rate, cost per GEMM row, per im2col copy) again from measurements the model makes with them."""
    from simulator import calibration_bench, calibration_fit

    cases = [c for c in calibration_bench.CASES if ("int8-static", "convgemm.int8") in c.variants]
    assert {c.kind for c in cases} == {"gconvnchw", "convsmall"} and len(cases) >= 6
    graphs = [calibration_bench.compile_for_host(c.build(tmp_path / f"{c.name}.onnx"), tmp_path / f"{c.name}.opt.onnx")
              for c in cases]
    truth = HW.with_overrides({"units": {"cpu": {"efficiency": {"convgemm.int8": 0.8}, "kind_overhead_s": {
        "convgemm.int8": 0.0, "convgemm.int8.row": 4e-9, "convgemm.int8.tap": 3e-9}}}})
    measured = [(g, "int8-static", calibration_fit._predict_ms(g, truth, "int8-static")) for g in graphs]
    eff, s = calibration_fit._fit_eff_setup(measured, HW, "convgemm.int8")
    assert eff == pytest.approx(0.8, rel=0.15)
    assert s["convgemm.int8.row"] == pytest.approx(4e-9, rel=0.15)
    assert s["convgemm.int8.tap"] == pytest.approx(3e-9, rel=0.15)
