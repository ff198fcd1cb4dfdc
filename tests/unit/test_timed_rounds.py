"""simulator.calibration_timing.timed_rounds: the rounds a timing is spread over."""

from __future__ import annotations

from simulator import calibration_timing
from simulator.calibration_timing import timed_rounds


def test_rounds_are_paused_between_not_after(monkeypatch) -> None:
    now = [0.0]
    monkeypatch.setattr(calibration_timing.time, "perf_counter", lambda: now[0])
    monkeypatch.setattr(calibration_timing, "clock", lambda: now[0])
    pauses: list[float] = []
    runs: list[float] = []

    def run() -> None:
        runs.append(now[0])
        now[0] += 0.01

    times = timed_rounds(run, min_runs=3, budget_s=0.0, rounds=4, gap_s=0.4, sleep=pauses.append)
    assert pauses == [0.4, 0.4, 0.4]  # between the 4 rounds, none after the last
    assert len(times) == 12 and all(abs(t - 0.01) < 1e-9 for t in times)


def test_budget_and_cap_bound_each_round(monkeypatch) -> None:
    now = [0.0]
    monkeypatch.setattr(calibration_timing.time, "perf_counter", lambda: now[0])
    monkeypatch.setattr(calibration_timing, "clock", lambda: now[0])

    def run() -> None:
        now[0] += 0.001

    # 0.05 s of budget at 1 ms a run: ~50 runs a round; a cap of 20 stops each round at 20 (min_runs first)
    assert len(timed_rounds(run, min_runs=2, budget_s=0.05, rounds=2)) in (100, 101, 102)
    assert len(timed_rounds(run, min_runs=2, budget_s=0.05, rounds=2, cap=20)) == 40
    assert len(timed_rounds(run, min_runs=30, budget_s=0.0, rounds=2, cap=20)) == 60  # min_runs beats the cap
