"""Static int8 on ONNX Runtime's CPU: Convs that MLAS's symmetric conv kernels refuse (grouped ones, stems with 3 input
channels) run an NHWC im2col and a GEMM per group, costed per GEMM row and per im2col copy (simulator/ort_int8.py);
calibration fits that path on grouped convs, and the stems' own figures on stems. Integration tier: graphs are
compiled by ONNX Runtime."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.ort_int8 import (ORT_INT8_QGEMM, ORT_INT8_QGEMM_DENSE, ORT_INT8DYN_STEM, QGEMM_RATE_KIND, STEM_RATE_KIND,
                                ort_task_facts)
from simulator.profiles import load_profile

HOST = get_target("ort-cpu/host")
HW = load_profile("host-cpu")


def test_convs_off_the_symmetric_kernel_are_task_facts_with_their_rows_and_copies(tmp_path: Path) -> None:
    from simulator import calibration_bench
    from simulator.costs import work_of

    for name, build, fact in (("grouped", calibration_bench.conv_act(48, 28, 3, group=6), ORT_INT8_QGEMM),
                              ("stem", calibration_bench.stem_act(32, 64, 3), ORT_INT8_QGEMM_DENSE),
                              ("dense", calibration_bench.conv_act(64, 28, 3), None)):
        g = calibration_bench.compile_for_host(build(tmp_path / f"{name}.onnx"), tmp_path / f"{name}.opt.onnx")
        convs = [i for i, nd in enumerate(g.nodes) if nd.op_type in ("Conv", "FusedConv")]
        facts = ort_task_facts(g)
        assert convs and all(facts[i] & {ORT_INT8_QGEMM, ORT_INT8_QGEMM_DENSE} == ({fact} if fact else set())
                             for i in convs), (name, facts)
        w = work_of(g.nodes[convs[0]], g)
        if name == "grouped":  # 28 x 28 pixels x 6 groups; 9 taps each
            assert (w.row_calls, w.row_extra_calls) == (28 * 28 * 6, 28 * 28 * 6 * 9)
        if name == "stem":  # stride 2: 32 x 32 output pixels, one group: one copy per kernel row (3 adjacent taps)
            assert (w.row_calls, w.row_extra_calls) == (32 * 32, 32 * 32 * 3)


def test_the_per_group_gemm_path_under_static_int8_only() -> None:
    from simulator.backends import plan

    fact = frozenset({ORT_INT8_QGEMM})
    static, dyn = Combo("int8", "int8", "int8", 0), Combo("fp32", "fp32", "int8", 0)
    p = plan(HOST, HW, "FusedConv", "gconvnchw", static, True, True, facts=fact)
    assert p.qgemm and p.rate_kind == QGEMM_RATE_KIND and not p.setup_per_channel and not p.im2col
    stem = plan(HOST, HW, "Conv", "convsmall", static, True, True,
                facts=frozenset({ORT_INT8_QGEMM_DENSE, ORT_INT8DYN_STEM}))
    assert stem.qgemm and stem.rate_kind == STEM_RATE_KIND and stem.out_cost
    assert plan(HOST, HW, "Conv", "convsmall", dyn, True, True, facts=fact) == plan(HOST, HW, "Conv", "convsmall",
                                                                                     dyn, True, True)


def test_a_dense_conv_off_the_alignment_that_is_no_stem_takes_the_per_group_figures(tmp_path: Path) -> None:
    """ShuffleNet v2's 58-channel 1x1 convs (ReXNet's 27..., GhostNet's 8-output ones) are one-group GEMMs of K = 58:
    the grouped convs' figures per GEMM row, MAC and output element (`convgemm.int8`), not the stems', whose fit can
    hold a setup per conv (111 us on a Zen 5, 2026-12-07: each 58 x 58 1x1 at 28 px priced 142 us against 30 in
    fp32). The cost per output element (its int32 buffer requantized) tells a dense GEMM's 58 outputs per row from a
    grouped one's 8: without it, calibration's dense cases were -21..+12% in-sample on a Zen 4 (2026-12-08)."""
    from simulator import calibration_bench
    from simulator.backends import plan

    g = calibration_bench.compile_for_host(calibration_bench.conv_act(58, 28, 1)(tmp_path / "c58.onnx"),
                                           tmp_path / "c58.opt.onnx")
    convs = [i for i, nd in enumerate(g.nodes) if nd.op_type in ("Conv", "FusedConv")]
    facts = ort_task_facts(g)
    assert convs and all(ORT_INT8_QGEMM_DENSE in facts[i] and ORT_INT8DYN_STEM not in facts[i] for i in convs)
    static = Combo("int8", "int8", "int8", 0)
    p = plan(HOST, HW, "FusedConv", "convnchw", static, True, True, facts=facts[convs[0]])
    assert p.qgemm and p.rate_kind == QGEMM_RATE_KIND and p.out_cost


@pytest.mark.parametrize("key,kinds,n", [("convgemm.int8", {"gconvnchw", "conv"}, 9),
                                         ("stemgemm.int8", {"convsmall"}, 4)])
def test_calibration_fits_each_gemm_path_on_its_own_cases(tmp_path: Path, key: str, kinds: set[str], n: int) -> None:
    """Grouped convs (and dense 1x1 ones off the alignment) and stems each have their cases in the bench, and the joint
    fit finds known figures (rate, cost per GEMM row, per im2col copy, per output element) again from measurements the
    model makes with them."""
    from simulator import calibration_bench, calibration_fit

    cases = [c for c in calibration_bench.CASES if ("int8-static", key) in c.variants]
    assert {c.kind for c in cases} == kinds and len(cases) >= n
    graphs = [calibration_bench.compile_for_host(c.build(tmp_path / f"{c.name}.onnx"), tmp_path / f"{c.name}.opt.onnx")
              for c in cases]
    out = 3e-10 if key == "convgemm.int8" else 0.0  # the grouped path's cost per output element (the dense cases')
    truth = HW.with_overrides({"units": {"cpu": {"efficiency": {key: 0.8}, "kind_overhead_s": {
        key: 0.0, f"{key}.row": 4e-9, f"{key}.tap": 3e-9, f"{key}.out": out}}}})
    measured = [(g, "int8-static", calibration_fit._predict_ms(g, truth, "int8-static")) for g in graphs]
    eff, s = calibration_fit._fit_eff_setup(measured, HW, key)
    # (the stems also pay their image input's NHWC Transpose, a fixed share of each case the figures cannot move:
    # the least-squares optimum sits a little further from the truth, 18% on the row cost)
    tol = 0.2 if key == "stemgemm.int8" else 0.15
    assert eff == pytest.approx(0.8, rel=tol)
    assert s[f"{key}.row"] == pytest.approx(4e-9, rel=tol)
    assert s[f"{key}.tap"] == pytest.approx(3e-9, rel=tol)
    assert s[f"{key}.out"] == pytest.approx(out, rel=tol, abs=2e-11)
