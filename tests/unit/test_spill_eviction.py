"""Weights a run's own traffic beyond the core's L2 evicts from the shared last-level cache (roofline.evicted_share's
`spill_bytes`, calibration_eviction.spill_ramp)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from compiler.graph import Node
from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.calibration_bench import R, Bench, reuse_model, compile_for_host
from simulator.calibration_eviction import reuse_shares, spill_ramp
from simulator.costs import work_of
from simulator.profiles import load_profile
from simulator.roofline import Counts, Residency, evicted_share, rates, spill_estimate_bytes, stack, task_cost
from tests.simulator.helpers import act, graph, weight

HOST = get_target("ort-cpu/host")
HW = load_profile("host-cpu")
L2 = 1 << 20


def _gemv(hw=HW):
    g = graph([Node("fc", "fc", "Gemm", inputs=["x", "w"], outputs=["y"])],
              [act("x", [1, 1024]), weight("w", [1024, 1000]), act("y", [1, 1000])], ["x"], ["y"])
    w = work_of(g.nodes[0], g)
    p = plan(HOST, hw, "Gemm", w.kind, Combo("fp32", "fp32", "fp32", 0), True, False)
    return w, stack([rates(hw, p, w.kind, epilogue_pass=True)])


def _relu(shape: list[int]):
    g = graph([Node("r", "r", "Relu", inputs=["x"], outputs=["y"])], [act("x", shape), act("y", shape)], ["x"], ["y"])
    return work_of(g.nodes[0], g)


def test_only_tasks_whose_activations_outgrow_the_l2_count_as_spilled_traffic() -> None:
    small, large = _relu([1, 32, 56, 56]), _relu([1, 32, 112, 112])  # 0.8 MB in + out; 3.2 MB
    assert spill_estimate_bytes([small, small], L2) == 0.0
    assert spill_estimate_bytes([small, large, large], L2) == pytest.approx(2 * 2 * 32 * 112 * 112 * 4)
    assert spill_estimate_bytes([large], 0.0) == 0.0  # no L2 known: not modelled


def test_the_runs_own_traffic_and_its_length_each_evict_a_share() -> None:
    _, r = _gemv()
    r = dataclasses.replace(r, llc_hold_s=r.llc_hold_s * 0 + 1e-3, llc_evict_s=r.llc_evict_s * 0 + 3e-3,
                            spill_hold=r.spill_hold * 0 + 10e6, spill_evict=r.spill_evict * 0 + 30e6)
    assert evicted_share(r, 0.5e-3, 5e6)[0] == 0.0
    assert evicted_share(r, 0.5e-3, 20e6)[0] == pytest.approx(0.5)  # by traffic alone
    assert evicted_share(r, 2e-3, 0.0)[0] == pytest.approx(0.5)  # by time alone
    assert evicted_share(r, 2e-3, 20e6)[0] == pytest.approx(0.75)  # kept only where neither evicts it
    assert evicted_share(r, 0.5e-3, 40e6)[0] == 1.0
    none = dataclasses.replace(r, spill_evict=r.spill_evict * 0)  # a profile without the figures
    assert evicted_share(none, 0.5e-3, 1e9)[0] == 0.0


def test_a_batch1_gemv_after_much_traffic_reads_its_weights_from_memory() -> None:
    hw = HW.with_overrides({"units": {"cpu": {"llc_evict_s": 0.0, "llc_spill_hold_bytes": 5e6,
                                              "llc_spill_evict_bytes": 20e6}}})
    w, r = _gemv(hw)
    c = Counts.of([w])
    quiet = float(task_cost(c, r, Residency(False, 8e6, run_s=1e-3, spill_bytes=1e6)).latency_s[0, 0])
    busy = float(task_cost(c, r, Residency(False, 8e6, run_s=1e-3, spill_bytes=40e6)).latency_s[0, 0])
    u = hw.units[0]
    assert busy - quiet == pytest.approx(w.kernel_elements * 4 * (1 / u.evicted_bandwidth_bytes_per_s
                                                                  - 1 / hw.dram_bandwidth_bytes_per_s), rel=0.2)


def test_calibration_fits_the_traffic_ramp_where_shares_rise_beyond_the_time_ramps() -> None:
    # Shares measured on this Zen 4 (probe1.json, load 6): 8.4 MB of weights after 1-8 depthwise convs on 1.6 MB maps.
    spilled = [9.6e6, 12.8e6, 19.3e6, 32.1e6]
    hold, evict = spill_ramp([0.0] * 4, spilled, [0.18, 0.26, 0.26, 0.65], [0.05] * 4)
    assert 0 < hold < 12e6 < 32e6 < evict < 128e6
    # The time ramp explains them already (long runs): no traffic ramp.
    assert spill_ramp([0.2, 0.3, 0.3, 0.6], spilled, [0.18, 0.26, 0.26, 0.65], [0.05] * 4) == (0.0, 0.0)
    # Flat within their noise: none.
    assert spill_ramp([0.0] * 4, spilled, [0.02, 0.0, 0.03, 0.05], [0.05] * 4) == (0.0, 0.0)


def test_a_spill_case_moves_more_beyond_the_l2_the_more_convs_it_runs(tmp_path: Path) -> None:
    k, convs = 64, (1, 4)
    graphs = {f"reuse-spill-{n}": compile_for_host(reuse_model(k, n, tmp_path / f"s{n}.onnx", spill=True),
                                                   tmp_path / f"s{n}.opt.onnx") for n in convs}
    bench = Bench(tmp_path, 0.0, {}, graphs, [], [], 0, k, 16e6, 32e6, 256)
    hot, cold, dispatch = 0.01e-9, 0.03e-9, 1e-7
    wall = {}
    for n, per_w in zip(convs, (hot, cold)):
        wall[f"reuse-spill-{n}-base"] = 0.1 * n
        wall[f"reuse-spill-{n}"] = 0.1 * n + (per_w * k * k + dispatch) * R * 1e3
    got = reuse_shares(bench, wall, dispatch, hot, cold, 1e11, 1e11, l2=L2, spill=True)
    assert [g["evicted_share"] for g in got] == pytest.approx([0.0, 1.0], abs=1e-6)
    # Each depthwise conv on a 32x112x112 map moves its 1.6 MB input and output through the L3 (more with reorders).
    assert got[0]["spill_bytes"] >= 2 * 32 * 112 * 112 * 4
    assert got[1]["spill_bytes"] - got[0]["spill_bytes"] == pytest.approx(3 * 2 * 32 * 112 * 112 * 4, rel=0.01)
