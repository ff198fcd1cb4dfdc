"""7x7 static int8 depthwise calibration cases (ConvNeXt's depthwise convs): 49 taps per output pixel beside the 3x3
cases, so the joint fit of dwconv.int8 tells the cost per MAC from the cost per pixel (simulator/calibration_bench.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.profiles import load_profile


def test_the_7x7_cases_take_the_symmetric_path_and_the_joint_fit_separates_taps_from_pixels(tmp_path: Path) -> None:
    from simulator.calibration_bench import CASES, compile_for_host
    from simulator.calibration_fit import _fit_eff_setup, _predict_ms
    from simulator.costs import kind_of
    from simulator.ort_int8 import ORT_INT8_DW_GENERIC, ort_task_facts

    sevens = [c for c in CASES if c.name in ("dwconvact-80x28-7x7", "dwconvact-320x7-7x7")]
    assert len(sevens) == 2
    cases = [next(c for c in CASES if c.name == n) for n in ("dwconvact-64x56", "dwconvact-256x14")] + sevens
    graphs = []
    for case in cases:
        assert ("int8-static", "int8") in case.variants
        g = compile_for_host(case.build(tmp_path / f"{case.name}.onnx"), tmp_path / f"{case.name}.opt.onnx")
        dw = [n for n in g.nodes if kind_of(n, g) == "dwconv"]
        assert dw, case.name
        # channels a multiple of 16: MLAS's symmetric depthwise kernel, not the generic one (dwconv.int8gen)
        assert not any(ORT_INT8_DW_GENERIC in f for f in ort_task_facts(g))
        graphs.append(g)
    base = load_profile("host-cpu")
    truth = base.with_overrides({"units": {"cpu": {"efficiency": {"dwconv.int8": 0.12},
                                                   "kind_overhead_s": {"dwconv.int8": 2e-7, "dwconv.int8.pixel": 7e-9}}}})
    eff, s = _fit_eff_setup([(g, "int8-static", _predict_ms(g, truth, "int8-static")) for g in graphs], base,
                            "dwconv.int8")
    assert eff == pytest.approx(0.12, rel=0.1) and s["dwconv.int8.pixel"] == pytest.approx(7e-9, rel=0.2)
