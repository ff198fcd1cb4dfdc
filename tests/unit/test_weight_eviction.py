"""Weights a shared last-level cache does not keep between runs: read again from memory (simulator.roofline)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from compiler.graph import Node
from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.calibration_bench import R, REUSE_CONVS, Bench, compile_for_host, reuse_model
from simulator.calibration_eviction import eviction_ramp, reuse_shares
from simulator.costs import work_of
from simulator.profiles import load_profile
from simulator.ramp_fit import SHARE_SIGMA_MAX
from simulator.roofline import Counts, Residency, evicted_share, rates, run_estimate_s, stack, task_cost
from tests.simulator.helpers import act, graph, weight

HOST = get_target("ort-cpu/host")
# The cache rates as calibration measures them on this host (the YAML's own figures are rough estimates).
HW = load_profile("host-cpu").with_overrides({"dram_bandwidth_bytes_per_s": 9.7e10,
                                              "units": {"cpu": {"cache_bandwidth_bytes_per_s": 1.1e11}}})
U = HW.units[0]


def _gemv(k: int = 1024, n: int = 1000):
    g = graph([Node("fc", "fc", "Gemm", inputs=["x", "w"], outputs=["y"])],
              [act("x", [1, k]), weight("w", [k, n]), act("y", [1, n])], ["x"], ["y"])
    w = work_of(g.nodes[0], g)
    p = plan(HOST, HW, "Gemm", w.kind, Combo("fp32", "fp32", "fp32", 0), True, False)
    return w, stack([rates(HW, p, w.kind, epilogue_pass=True)])  # as the sweep holds them: arrays over combos


def test_the_share_evicted_grows_with_the_runs_length() -> None:
    _, r = _gemv()
    hold, evict = U.llc_hold_s, U.llc_evict_s
    assert 0 < hold < evict  # measured on this host (host-cpu.yaml)
    assert evicted_share(r, 0.5 * hold)[0] == 0.0 and evicted_share(r, hold)[0] == 0.0
    assert evicted_share(r, (hold + evict) / 2)[0] == pytest.approx(0.5)
    assert evicted_share(r, evict)[0] == 1.0 and evicted_share(r, 10 * evict)[0] == 1.0
    # A profile without the figures keeps every weight in its last-level cache.
    bare = dataclasses.replace(r, llc_evict_s=r.llc_evict_s * 0)
    assert evicted_share(bare, 10 * evict)[0] == 0.0


def test_a_batch1_gemv_in_a_long_run_reads_its_weights_at_the_memory_rate() -> None:
    w, r = _gemv()
    c = Counts.of([w])
    weight_bytes = w.kernel_elements * 4
    short = float(task_cost(c, r, Residency(False, 20e6, run_s=0.0)).latency_s[0, 0])
    long = float(task_cost(c, r, Residency(False, 20e6, run_s=1.0)).latency_s[0, 0])
    kept = float(task_cost(c, r, Residency(True, 20e6, run_s=1.0)).latency_s[0, 0])
    # Bound by its weights: from the last-level cache in a short run, from memory once the run outlasts the cache.
    assert long - short == pytest.approx(weight_bytes * (1 / U.evicted_bandwidth_bytes_per_s
                                                         - 1 / HW.dram_bandwidth_bytes_per_s), rel=0.2)
    assert long > 2 * short > 2 * kept  # weights in the unit's own cache stay there whatever the run's length


def test_the_run_estimate_is_arithmetic_at_peak_plus_activations_at_the_cache_rate() -> None:
    w, _ = _gemv()
    est = run_estimate_s([w, w], 1e11, 1e10)
    assert est == pytest.approx(2 * (2 * w.macs / 1e11 + (w.in_elements + w.out_elements) * 4 / 1e10))
    assert run_estimate_s([], 1e11, 1e10) == 0.0


# Calibration fits the ramp on the machine (calibration_eviction: eviction_ramp, reuse_shares): shares of the weights read
# from memory after runs of each length, with their uncertainty (the timing's 2% repeatability over the weights' time).
def test_calibration_fits_the_ramp_where_the_shares_rise_beyond_their_noise() -> None:
    # The Zen 3 VM's reuse measurements (host-cpu.yaml's llc_hold_s source) as shares between 0.046 ns per weight
    # (kept) and 0.141 (evicted): a ramp from about 0.4 ms to 1.5 ms.
    runs = [0.1e-3, 0.22e-3, 0.4e-3, 0.75e-3, 1.5e-3, 2.8e-3, 5.3e-3]
    hold, evict = eviction_ramp(runs, [0.0, 0.02, 0.04, 0.33, 0.89, 1.0, 0.91], [0.05] * 7)
    assert 0.2e-3 < hold < 0.5e-3 and 1.2e-3 < evict < 2.0e-3


def test_calibration_evicts_none_where_the_shares_stay_within_their_noise() -> None:
    # This Zen 5 VM (2026-12-03, load ~6): its 32 MB L3 kept 8 MB of weights through runs of 0.25-8 ms; the longest
    # runs' shares are within their uncertainty (the weights' time is 2% of an 8 ms run).
    runs = [0.25e-3, 0.91e-3, 2.68e-3, 7.99e-3]
    hold, evict = eviction_ramp(runs, [0.04, 0.10, 0.17, 0.28], [0.05, 0.15, 0.41, 1.2])
    assert (hold, evict) == (7.99e-3, 0.0)
    _, r = _gemv()
    assert evicted_share(dataclasses.replace(r, llc_hold_s=r.llc_hold_s * 0 + hold, llc_evict_s=r.llc_evict_s * 0),
                         20e-3)[0] == 0.0


def test_a_reuse_case_reads_its_share_between_the_cache_and_memory_rates(tmp_path: Path) -> None:
    k, convs = 64, (2, 8)
    graphs = {f"reuse-{n}": compile_for_host(reuse_model(k, n, tmp_path / f"r{n}.onnx"), tmp_path / f"r{n}.opt.onnx")
              for n in convs}
    bench = Bench(tmp_path, 0.0, {}, graphs, [], [], 0, k, 16e6, 32e6, 256, convs)
    hot, cold, dispatch = 0.01e-9, 0.03e-9, 1e-7  # s per weight kept / evicted; per kernel
    per_run = {2: hot, 8: (hot + cold) / 2}  # weights kept after the short run, half gone after the long one
    wall = {}
    for n in convs:
        wall[f"reuse-{n}-base"] = 0.1 * n
        wall[f"reuse-{n}"] = 0.1 * n + (per_run[n] * k * k + dispatch) * R * 1e3
    got = reuse_shares(bench, wall, dispatch, hot, cold, 1e11, 1e11)
    assert [g["evicted_share"] for g in got] == pytest.approx([0.0, 0.5], abs=1e-6)
    # The run's length is the sweep's estimate (arithmetic at the nominal peak): four times the convs, ~4x as long.
    assert got[1]["run_estimate_s"] == pytest.approx(4 * got[0]["run_estimate_s"], rel=0.1)
    # a longer run: a noisier share, up to half the share's range (here both: 64 x 64 weights are a sliver of a run)
    assert 0 < got[0]["sigma"] <= got[1]["sigma"] == SHARE_SIGMA_MAX


def test_weights_beyond_the_whole_last_level_cache_come_from_memory_when_none_are_evicted() -> None:
    # A machine whose L3 keeps weights between runs (calibration fitted no eviction: llc_evict_s 0) still reads a
    # model's weights from memory once they outgrow the whole cache (AlexNet: 244 MB on a 32 MB L3).
    w, r = _gemv()
    keep = dataclasses.replace(r, llc_evict_s=r.llc_evict_s * 0)
    c = Counts.of([w])
    small = float(task_cost(c, keep, Residency(False, 8e6, run_s=1.0)).latency_s[0, 0])
    large = float(task_cost(c, keep, Residency(False, 244e6, run_s=1.0)).latency_s[0, 0])
    assert large - small == pytest.approx(w.kernel_elements * 4 * (1 / U.evicted_bandwidth_bytes_per_s
                                                                   - 1 / HW.dram_bandwidth_bytes_per_s), rel=0.2)


def test_a_long_reuse_cases_uncertainty_is_capped_at_half_the_shares_range(tmp_path: Path) -> None:
    # A share is clipped to [0, 1]: no spread beyond 0.5 (SHARE_SIGMA_MAX). Uncapped, a 16.5 ms case whose weights
    # are 3% of its run weighed nothing: this Zen 4's quiet calibration (2026-12-05, load 1.1) read 0.04, 0.09, 0.36
    # and 1.00 evicted after 0.5, 1.9, 5.5 and 16.5 ms (sigmas 0.04, 0.13, 0.36, 1.07) and kept no ramp; its batch-1
    # classifiers then read their weights at the L3's rate, 2.1-3.3x under their profile.
    k, convs = 64, (2, 72)
    graphs = {f"reuse-{n}": compile_for_host(reuse_model(k, n, tmp_path / f"r{n}.onnx"), tmp_path / f"r{n}.opt.onnx")
              for n in convs}
    bench = Bench(tmp_path, 0.0, {}, graphs, [], [], 0, k, 16e6, 32e6, 256, convs)
    hot, cold, dispatch = 1e-9, 3e-9, 1e-7  # s per weight: all gone costs 0.066 ms a run
    wall = {}
    for n in convs:
        wall[f"reuse-{n}-base"] = 0.1 * n  # the long case (7.2 ms): the weights' time a sliver of its run
        wall[f"reuse-{n}"] = 0.5 * n + (cold * k * k + dispatch) * R * 1e3
    got = reuse_shares(bench, wall, dispatch, hot, cold, 1e11, 1e11)
    assert got[0]["sigma"] < SHARE_SIGMA_MAX and got[1]["sigma"] == SHARE_SIGMA_MAX
    runs, shares = [0.51e-3, 1.88e-3, 5.55e-3, 16.53e-3], [0.04, 0.09, 0.36, 1.0]
    assert eviction_ramp(runs, shares, [0.04, 0.13, 0.36, 1.07]) == (16.53e-3, 0.0)  # uncapped: none
    hold, evict = eviction_ramp(runs, shares, [0.04, 0.13, 0.36, SHARE_SIGMA_MAX])
    assert hold < 1e-3 and 12e-3 < evict < 18e-3


def test_the_reuse_cases_pin_the_ramp_where_mobile_cnns_runs_fall() -> None:
    # Spaced by 3x (2, 8, 24, 72 convs: 0.3 / 1.0 / 2.8 / 8.3 ms) the cases left the ramp free between 3 and 8 ms. A
    # Sapphire Rapids-class Xeon (2026-12-05, the session-45 baseline's timings and two cases more) read these shares;
    # fitted on the four 3x-spaced cases, the ramp put 0.94 of the weights out after 5.6 ms where 0.72 were measured.
    assert sum(24 < n < 72 for n in REUSE_CONVS) >= 2
    runs = [0.29e-3, 0.98e-3, 2.81e-3, 4.19e-3, 5.57e-3, 8.32e-3]
    shares, sigmas = [0.03, 0.04, 0.12, 0.37, 0.72, 1.0], [0.04, 0.05, 0.10, 0.15, 0.19, 0.29]
    _, r = _gemv()

    def share_at(t: float, keep: list[int]) -> float:
        hold, evict = eviction_ramp([runs[i] for i in keep], [shares[i] for i in keep], [sigmas[i] for i in keep])
        return float(evicted_share(dataclasses.replace(r, llc_hold_s=r.llc_hold_s * 0 + hold,
                                                       llc_evict_s=r.llc_evict_s * 0 + evict), t)[0])

    assert share_at(5.57e-3, [0, 1, 2, 5]) > 0.9
    assert share_at(5.57e-3, list(range(6))) == pytest.approx(0.72, abs=0.05)
    assert share_at(4.19e-3, list(range(6))) == pytest.approx(0.37, abs=0.08)
