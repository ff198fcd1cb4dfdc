"""Pools ORT leaves in NCHW (plain domain) are kind `poolnchw`: GlobalAveragePool there takes its own calibrated rate,
every other pool keeps the pool figures (costs.kind_of, roofline.efficiency, calibration case gap-nchw-100x28)."""

from __future__ import annotations

from pathlib import Path

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


def test_only_global_average_pool_takes_the_nchw_rate() -> None:
    u = load_profile("host-cpu").units[0]
    gap = efficiency(u, "poolnchw", "fp32", "GlobalAveragePool")
    assert gap == u.efficiency["poolnchw.fp32.GlobalAveragePool"]
    # An NCHW MaxPool and every NCHWc pool fall back to the pool figures (the parent kind's).
    assert efficiency(u, "poolnchw", "fp32", "MaxPool") == efficiency(u, "pool", "fp32", "MaxPool")
    assert efficiency(u, "pool", "fp32", "GlobalAveragePool") == efficiency(u, "pool", "fp32", "MaxPool")
    assert gap < efficiency(u, "pool", "fp32", "GlobalAveragePool")  # the plain kernel is the slower one
