"""Weights a shared last-level cache does not keep between runs: read again from memory (simulator.roofline)."""

from __future__ import annotations

import dataclasses

import pytest

from compiler.graph import Node
from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.costs import work_of
from simulator.profiles import load_profile
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
