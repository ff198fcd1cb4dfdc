"""Large depthwise kernels (MixNet's 5x5-9x9 on channel groups ORT leaves in NCHW): im2col + one SGEMM per channel,
whose im2col copies many short rows; calibration times such chains and fits a cost per copied row for the path.
Integration tier: graphs compiled by ORT."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.profiles import load_profile

HW = load_profile("host-cpu")


def _nchw_cases() -> list:  # type: ignore[type-arg]
    from simulator import calibration_bench

    return [c for c in calibration_bench.CASES if c.kind == "dwconvnchw" and ("fp32", "nchw") in c.variants]


def test_nchw_depthwise_cases_cover_large_kernels_with_a_row_cost(tmp_path: Path) -> None:
    """MixNet-S's 90-channel depthwise groups (not a multiple of 4) stay NCHW. The bench times 7x7 and 9x9 ones there,
    which ORT leaves in NCHW on every ISA, and the path fits a cost per im2col row (a 9x9 on 14 px copies 81 rows of
    14 pixels per output row; the 3x3 cases alone cannot tell it from the per-element cost)."""
    from simulator import calibration_bench, calibration_fit
    from simulator.costs import work_of

    big = [c for c in _nchw_cases() if c.name.endswith(("7x7", "9x9"))]
    assert len(big) >= 2 and "dwconvnchw.nchw" in calibration_fit._ROW_FITTED
    for case in big:
        g = calibration_bench.compile_for_host(case.build(tmp_path / f"{case.name}.onnx"), tmp_path / f"{case.name}.opt.onnx")
        assert not calibration_fit.off_path(case, "fp32", "nchw", g)
        convs = [work_of(n, g) for n in g.nodes if "Conv" in n.op_type]
        assert len(convs) == calibration_bench.R and all(w.kind == "dwconvnchw" and w.im2col_rows > 0 for w in convs)


def test_joint_fit_recovers_the_nchw_depthwise_row_cost(tmp_path: Path) -> None:
    """Synthetic measurements made by the cost model with a known efficiency, per-element and per-row im2col cost:
    the joint fit of dwconvnchw.nchw over the bench's shapes finds the row cost again."""
    from simulator import calibration_bench, calibration_fit

    graphs = [calibration_bench.compile_for_host(c.build(tmp_path / f"{c.name}.onnx"), tmp_path / f"{c.name}.opt.onnx")
              for c in _nchw_cases()]
    truth = HW.with_overrides({"units": {"cpu": {
        "efficiency": {"dwconvnchw.nchw": 0.2},
        "kind_overhead_s": {"dwconvnchw.nchw": 2e-7, "dwconvnchw.nchw.im2col": 3e-11,
                            "dwconvnchw.nchw.im2col.row": 4e-9}}}})
    cases = [(g, "fp32", calibration_fit._predict_ms(g, truth, "fp32")) for g in graphs]
    eff, s = calibration_fit._fit_eff_setup(cases, HW, "dwconvnchw.nchw")
    assert s["dwconvnchw.nchw.im2col.row"] == pytest.approx(4e-9, rel=0.15)
    fitted = HW.with_overrides({"units": {"cpu": {"efficiency": {"dwconvnchw.nchw": eff}, "kind_overhead_s": s}}})
    for (g, _, ms) in cases:
        assert calibration_fit._predict_ms(g, fitted, "fp32") == pytest.approx(ms, rel=0.05)
