"""Weights a several-row fp32 SGEMM reads from memory at calibration's own figure (roofline.PACKED_FAR_KEY,
simulator/calibration_packed.py)."""

from __future__ import annotations

import pytest

from compiler.graph import Graph, Node
from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.calibration_packed import fit_packed, pairs_for
from simulator.costs import work_of
from simulator.profiles import HardwareProfile, load_profile
from simulator.roofline import PACKED_FAR_KEY, Counts, Residency, rates, stack, task_cost
from tests.simulator.helpers import act, graph, weight

HOST = get_target("ort-cpu/host")
# No weight evicted by the run's length: only a footprint beyond the last-level cache comes from memory.
HW = load_profile("host-cpu").with_overrides({"units": {"cpu": {"llc_evict_s": 0.0, "llc_keep_bytes": 0.0,
                                                                "llc_gone_bytes": 0.0}}})


def _at(s: float) -> HardwareProfile:
    return HW.with_overrides({"units": {"cpu": {"kind_overhead_s": {PACKED_FAR_KEY: s}}}})


def _gemms(m: int, k: int, n: int, count: int = 1) -> Graph:
    nodes = [Node(f"fc{i}", f"fc{i}", "Gemm", inputs=[f"x{i}", f"w{i}"], outputs=[f"x{i + 1}"]) for i in range(count)]
    values = [act("x0", [m, k])] + [v for i in range(count) for v in (weight(f"w{i}", [k, n]), act(f"x{i + 1}", [m, n]))]
    return graph(nodes, values, ["x0"], [f"x{count}"])


def _latency_s(g: Graph, hw: HardwareProfile, res: Residency, backend_passes: bool = True) -> float:
    w = work_of(g.nodes[0], g)
    p = plan(HOST, hw, "Gemm", w.kind, Combo("fp32", "fp32", "fp32", 0), True, False)
    r = stack([rates(hw, p, w.kind, epilogue_pass=backend_passes)])
    return float(task_cost(Counts.of([w]), r, res).latency_s[0, 0])


def test_a_several_row_gemm_pays_the_figure_on_the_weights_it_reads_from_memory() -> None:
    g = _gemms(49, 1024, 1024)
    w_bytes = 1024 * 1024 * 4
    gone, kept = Residency(False, 100e6), Residency(False, 4e6)  # beyond the 32 MiB cache / within it
    a, b = _latency_s(g, _at(1e-11), gone), _latency_s(g, _at(3e-11), gone)
    assert b - a == pytest.approx(2e-11 * w_bytes, rel=1e-6)  # linear in the figure, in full beside the arithmetic
    assert _latency_s(g, _at(3e-11), kept) == _latency_s(g, _at(0.0), kept)  # weights the cache keeps: no change
    # Figure 0 (an uncalibrated machine): the memory chain's rate, as before the rule.
    assert _latency_s(g, _at(0.0), gone) > _latency_s(g, _at(0.0), kept)
    # Other runtimes (no MLAS packing) never read it.
    assert _latency_s(g, _at(3e-11), gone, backend_passes=False) == _latency_s(g, _at(0.0), gone, False)


def test_a_batch1_gemv_streams_its_weights_at_the_memory_chains_rate() -> None:
    g, gone = _gemms(1, 1024, 1024), Residency(False, 100e6)
    assert _latency_s(g, _at(3e-11), gone) == _latency_s(g, _at(0.0), gone)


def _whole_ms(g: Graph, hw: HardwareProfile) -> float:
    from simulator.sweep import sweep

    r = sweep(g, "ort-cpu/host", hardware=hw, presets_only=("fp32",))
    j = [p["name"] for p in r.bulk["presets"]].index("fp32")
    return float(sum(row[j] for row in r.bulk["metrics"]["latency_ms"]))


def test_calibration_recovers_the_figure_from_a_case_against_its_reference() -> None:
    truth = 4.2e-11
    # three Gemms of 16.8 MB weights (50 MB: beyond the 32 MiB cache) against one (kept)
    graphs = {"case": _gemms(49, 2048, 2048, 3), "case-ref": _gemms(49, 2048, 2048, 1)}
    measured = {k: _whole_ms(g, _at(truth)) for k, g in graphs.items()}
    out: list[dict[str, object]] = []
    assert fit_packed(("case",), graphs, measured, HW, _whole_ms, out)[PACKED_FAR_KEY] == pytest.approx(truth, rel=1e-6)
    assert [o["case"] for o in out] == ["case"]
    # a case faster than its reference scaled leaves the rule off; no timings, no figure
    assert fit_packed(("case",), graphs, {"case": 2.0, "case-ref": 1.0}, HW, _whole_ms, []) == {}
    assert fit_packed(("case",), graphs, {}, HW, _whole_ms, []) == {}


def test_the_cases_weights_are_twice_the_last_level_cache() -> None:
    assert pairs_for(32 * 2**20) * 8 * 168 * 168 * 4 >= 2 * 32 * 2**20
    assert pairs_for(0.0) == 16 and pairs_for(4e9) == 512  # bounded either way
