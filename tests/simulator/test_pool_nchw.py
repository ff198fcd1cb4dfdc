"""Pools ORT leaves in NCHW (plain domain) are kind `poolnchw`: GlobalAveragePool, MaxPool and AveragePool there take
their own calibrated rates (MLAS's NCHW kernels), every other pool keeps the pool figures (costs.kind_of,
roofline.efficiency, calibration cases gap-nchw-100x28, maxpool-nchw-*, averagepool-nchw-*)."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.calibration_bench import CASES, compile_for_host
from simulator.costs import work_of
from simulator.profiles import load_profile
from simulator.roofline import efficiency


def test_calibration_case_stays_nchw(tmp_path: Path) -> None:
    # 100 channels fill no NCHWc block (8 wide with AVX2, 16 with AVX-512): ORT runs the plain kernel on any x86 host.
    case = next(c for c in CASES if c.name == "gap-nchw-100x28")
    g = compile_for_host(case.build(tmp_path / "gap.onnx"), tmp_path / "gap.opt.onnx")
    works = [work_of(n, g) for n in g.nodes]
    assert works and all(w.kind == "poolnchw" for w in works)
    assert all(w.flops == 100 * 28 * 28 for w in works)  # one add per element read
    assert case.variants == (("fp32", "poolnchw.fp32.GlobalAveragePool"),)


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_windowed_pool_cases_stay_nchw(tmp_path: Path, op: str) -> None:
    # 20 and 132 channels fill no 8- or 16-wide block either: each case times MLAS's NCHW kernel on any x86 host.
    cases = [c for c in CASES if c.variants == (("fp32", f"poolnchw.fp32.{op}"),)]
    assert len(cases) == 2
    for case in cases:
        g = compile_for_host(case.build(tmp_path / f"{case.name}.onnx"), tmp_path / f"{case.name}.opt.onnx")
        works = [(n.op_type, work_of(n, g)) for n in g.nodes]
        assert len(works) == 8 and all(t == op and w.kind == "poolnchw" for t, w in works)
        assert all(w.flops == w.out_elements * 9 for _, w in works)  # one reduction per window tap


def test_nchw_pools_take_their_own_rates() -> None:
    u = load_profile("host-cpu").units[0]
    for op in ("GlobalAveragePool", "MaxPool", "AveragePool"):
        own = efficiency(u, "poolnchw", "fp32", op)
        assert own == u.efficiency[f"poolnchw.fp32.{op}"]
        assert own < efficiency(u, "pool", "fp32", op)  # the plain kernels are the slower ones
    # Other NCHW pools and every NCHWc pool fall back to the pool figures (the parent kind's).
    assert efficiency(u, "poolnchw", "fp32", "LpPool") == efficiency(u, "pool", "fp32", "MaxPool")
    assert efficiency(u, "pool", "fp32", "GlobalAveragePool") == efficiency(u, "pool", "fp32", "MaxPool")
