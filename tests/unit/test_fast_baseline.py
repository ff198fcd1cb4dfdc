"""An analysis' measured baseline in the machine's fast state: ORT's profile times the model's fast CPU time as
calibration times its cases (compiler.profile.fast_cpu_ms: a low percentile of runs pooled over short rounds, half
before the profile's round and half after it in a session made anew), and the sweep scales the measured tasks and
the time they leave unexplained to it (simulator.measured.fast_scale), the other kernels of those tasks taking how
the fast-state tasks ran against their prediction (in_model_factor), not the speed probe around the round. Profiles
are built here; nothing is timed."""

from __future__ import annotations

import dataclasses

import pytest

from compiler.profile import (FAST_BUDGET_S, FAST_GAP_S, FAST_PERCENTILE, FAST_ROUNDS, Profile, TaskTiming,
                              fast_cpu_ms)
from simulator.measured import IN_MODEL_BOUNDS, fast_scale
from simulator.profiles import load_profile
from simulator.sweep import sweep
from tests.simulator.helpers import conv_chain

HOST = "ort-cpu/host"


class _Clock:
    """A thread clock each run advances by the next of `costs` (seconds), cycling."""

    def __init__(self, costs: list[float]) -> None:
        self.t, self.costs, self.i = 0.0, costs, 0

    def __call__(self) -> float:
        return self.t

    def run(self) -> None:
        self.t += self.costs[self.i % len(self.costs)]
        self.i += 1


def test_fast_cpu_time_is_a_low_percentile_pooled_over_rounds_with_a_fresh_session_halfway() -> None:
    clock, events = _Clock([0.002, 0.003, 0.010]), []

    def run() -> None:
        clock.run()
        events.append("run")

    ms = fast_cpu_ms(run, lambda: events.append("reopen"), rounds=4, budget_s=0.0, gap_s=0.0, min_runs=3,
                     sleep=lambda s: None, clock=clock)
    # 4 rounds of 3 timed runs; the new session (after round 2) is warmed by one untimed run
    assert events.count("reopen") == 1 and events.index("reopen") == 6 and len(events) == 4 * 3 + 2
    # timed: 2, 3, 10, 2, 3, 10 | (2 untimed) 3, 10, 2, 3, 10, 2 ms: the low percentile is a 2 ms run
    assert FAST_PERCENTILE < 100 / 3 and ms == pytest.approx(2.0)
    assert fast_cpu_ms(run, lambda: None, rounds=0, sleep=lambda s: None, clock=clock) == 0.0


def test_the_fast_rounds_lie_on_both_sides_of_the_profiles_round_gapped_within_each_half() -> None:
    """Rounds timed back to back met a slow state of the machine whole (README Round 31): half the rounds come
    before the profile's own round (`between`), half after it in a session made anew, `gap_s` apart within a half."""
    clock, events = _Clock([0.004]), []

    def run() -> None:
        clock.run()
        events.append("run")

    def sleep(s: float) -> None:
        events.append(f"gap {s}")

    ms = fast_cpu_ms(run, lambda: events.append("reopen"), rounds=4, budget_s=0.0, gap_s=0.35, min_runs=1,
                     sleep=sleep, clock=clock, between=lambda: events.append("profile"))
    assert events == ["run", "gap 0.35", "run", "profile", "reopen", "run", "run", "gap 0.35", "run"]
    assert ms == pytest.approx(4.0)
    # no rounds: the profile's round still runs, once
    events.clear()
    assert fast_cpu_ms(run, lambda: None, rounds=0, sleep=sleep, clock=clock,
                       between=lambda: events.append("profile")) == 0.0 and events == ["profile"]
    # the product's rounds: at most 3 s of wall time besides the profile's round, most of it gaps
    assert FAST_ROUNDS * FAST_BUDGET_S + (FAST_ROUNDS - 2) * FAST_GAP_S <= 3.0 and FAST_ROUNDS % 2 == 0


def _profile(noise: dict, threads: int = 1) -> tuple:
    """conv_chain swept as predicted, and a profile that measured every task at 1.5x its fp32 prediction."""
    g = conv_chain()
    r0 = sweep(g, HOST)
    f32 = [p["name"] for p in r0.bulk["presets"]].index("fp32")
    lat = r0.bulk["metrics"]["latency_ms"]
    tasks = {nd.id: TaskTiming(*(3 * [1.5 * lat[i][f32]]), runs=10)
             for i, nd in enumerate(g.nodes) if lat[i][f32] > 0}
    run_ms = load_profile("host-cpu").units[0].run_overhead_s * 1e3
    whole = sum(t.median_ms for t in tasks.values()) + run_ms
    prof = Profile(target=HOST, runtime="onnxruntime test", device="cpu", threads=threads, runs=10, warmup=1,
                   latency_ms=whole, latency_p90_ms=0.0, peak_memory_bytes=0, input_shapes={}, tasks=tasks,
                   noise={"speed": {"before_gflops": 50.0, "after_gflops": 50.0}, **noise})
    return g, r0, prof, whole


def test_the_fast_scale_is_the_fast_time_over_the_rounds_within_bounds() -> None:
    _, _, prof, whole = _profile({"fast_cpu_ms": 0})
    assert fast_scale(prof) is None and fast_scale(None) is None
    for fast, scale in ((0.8, 0.8), (1.3, 1.0), (0.1, IN_MODEL_BOUNDS[0])):
        p = dataclasses.replace(prof, noise={**prof.noise, "fast_cpu_ms": fast * whole})
        assert fast_scale(p) == pytest.approx(scale)
    # several intra-op threads: the calling thread's CPU time is not the run's
    assert fast_scale(dataclasses.replace(prof, threads=2, noise={**prof.noise, "fast_cpu_ms": 0.8 * whole})) is None


def test_the_baseline_is_scaled_to_the_fast_time_and_the_other_kernels_take_its_in_model_factor() -> None:
    g, r0, prof, whole = _profile({})
    prof = dataclasses.replace(prof, noise={**prof.noise, "fast_cpu_ms": 0.8 * whole})
    r1 = sweep(g, HOST, prof, hardware=dataclasses.replace(load_profile("host-cpu", "ort-cpu"), speed_gflops=100.0))
    before, after = r0.bulk["metrics"]["latency_ms"], r1.bulk["metrics"]["latency_ms"]
    names = [p["name"] for p in r0.bulk["presets"]]
    i = next(i for i, nd in enumerate(g.nodes) if nd.op_type == "Conv")
    assert after[i][names.index("fp32")] == pytest.approx(0.8 * 1.5 * before[i][names.index("fp32")], rel=1e-6)
    # the other kernels take how the fast-state tasks ran against their prediction (1.2x), not the probe (50
    # against the rates' 100 would double them)
    for option in ("int8-static", "int8-dynamic"):
        assert after[i][names.index(option)] == pytest.approx(0.8 * 1.5 * before[i][names.index(option)])
    label = r1.bulk["label"]
    assert label["baseline_fast_cpu_ms"] == pytest.approx(0.8 * whole) and "fast CPU time" in label["text"]
    # fp32's total: the tasks at their fast time and the runtime's fixed cost per run (nothing left unexplained)
    run_ms = load_profile("host-cpu").units[0].run_overhead_s * 1e3
    assert r1.bulk["base"]["latency_ms"] == pytest.approx(0.8 * (whole - run_ms) + run_ms)
