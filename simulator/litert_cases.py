"""What LiteRT's calibrations share (simulator.litert_calibration, litert_lut, litert_signal): cases written as
`.tflite` files, timed per operator by LiteRT's own profiler in one sandboxed child, predicted by the sweep as every
model is, and a one-efficiency fit on each case's median operator. Kept apart from litert_calibration, which runs
the other calibrations (they import this, it imports them: one module for both would be an import loop)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from compiler.graph import Graph
from simulator.profiles import HardwareProfile

TARGET = "litert-cpu/host"
# An operator timed under two ticks of LiteRT's profiler (whole microseconds) says nothing in relative terms, and one
# read at 0 makes a log or relative error infinite at every figure: the fits leave such cases out.
MIN_TIMED_MS = 0.002
C = TypeVar("C")


def predicted_ms(g: Graph, hw: HardwareProfile, preset: str) -> list[float]:
    """The sweep's per-operator prediction on litert-cpu/host, operators 1.. (the first pays the run's cost)."""
    from simulator.sweep import sweep

    r = sweep(g, TARGET, hardware=hw, presets_only=(preset,))  # the fits' thousands of calls need one column
    col = [p["name"] for p in r.bulk["presets"]].index(preset)
    return [row[col] for row in r.bulk["metrics"]["latency_ms"][1:]]


def profile_cases(cases: Sequence[C], build: Callable[[C, Path], Path], name: Callable[[C], str], tmp: Path,
                  what: str, runs: int, warmup: int = 3, limit_s: float = 600.0,
                  progress: Callable[[str], None] = lambda s: None, rounds: int = 1
                  ) -> list[tuple[C, Path, dict[str, Any]]]:
    """Each case built to `tmp/<name>.tflite` and profiled (1 thread, `runs` after `warmup`), all in one sandboxed
    child: [(case, its file, the profiler's result: {"tasks": {operator id: [median ms, calls]}, ...})].
    `rounds` > 1: the cases are timed round by round, each round a child of its own timing every case in turn (its
    model compiled anew, `warmup`, then `runs` / `rounds` runs), and each case's result is its fastest round
    (`fastest_round`): a burst of other load on a shared machine lands in one round of a case, not in its figure."""
    from compiler.sandbox import Limits, run

    paths = [build(c, tmp / f"{name(c)}.tflite") for c in cases]
    per_round = max(1, -(-runs // max(1, rounds)))
    timed: list[list[dict[str, Any]]] = []
    for r in range(max(1, rounds)):
        progress(f"timing {len(paths)} {what}" + (f", round {r + 1}/{rounds}" if rounds > 1 else ""))
        timed.append(run("compiler.backends.litert_profiler:per_op_many_child",
                         {"models": [os.fspath(p) for p in paths], "threads": 1, "warmup": warmup,
                          "runs": per_round},
                         Limits(limit_s, what=f"calibrating {what}")))
    return list(zip(cases, paths, [fastest_round(list(res)) for res in zip(*timed)]))


def fastest_round(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The one of a case's rounds (the profiler's results) whose operators summed least: the least of its rounds'
    medians, as ORT's calibration takes a model's fastest timing (compiler.profile.measure_rounds), whole, so a
    chain's operators come from one round."""
    return min(results, key=lambda res: sum(v[0] for v in res["tasks"].values()))


def median_fit(measured: Sequence[tuple[Graph, list[float]]], hw: HardwareProfile, key: str, preset: str,
               select: Callable[[list[float]], list[float]] = lambda ms: ms) -> float:
    """The efficiency `key` whose predictions are closest to each case's median measured operator, in absolute log
    ratio (a median fit: on a loaded host one operator of a case read 0.28 ms and another 2.9, and relative least
    squares followed such outliers). `select`: the operators of a case's prediction that were measured."""
    from simulator.calibration_fit import best_log_efficiency

    measured = [(g, ms) for g, ms in measured if float(np.median(ms)) > 0]  # a 0 is infinitely far at every figure
    meas = np.array([float(np.median(ms)) for _, ms in measured])

    def log_error(log_eff: float) -> float:
        h = hw.with_overrides({"units": {"cpu": {"efficiency": {key: float(np.exp(log_eff))}}}})
        pred = np.array([float(np.median(select(predicted_ms(g, h, preset)))) for g, _ in measured])
        return float(np.abs(np.log(pred / meas)).sum())

    return float(np.exp(best_log_efficiency(log_error)))
