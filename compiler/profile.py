"""Result records of profiling a compiled model on a real runtime.

Every figure here was measured (`measured=True`, with `device` saying where). Predicted
figures come from `simulator/` and carry their own label.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from compiler.sandbox import DEFAULT_MEMORY_LIMIT


@dataclass(frozen=True, slots=True)
class TaskTiming:
    median_ms: float
    p25_ms: float
    p75_ms: float
    runs: int  # number of runs the task was seen in
    # Executions per run: 1, or a body node's trip count (its times are per run, all calls summed).
    calls: float = 1.0


# A whole-model timing is noisy when its runs spread wide or the process did not have the CPU for most of their
# wall time (other load on the machine). Such a round is timed again, after a pause, while that stays cheap.
NOISY_SPREAD = 1.3  # p90 / median of the runs
NOISY_CPU_SHARE = 0.85  # CPU time of the inference thread / wall time (1 thread: ~1.0 on an idle machine)
REMEASURE_ROUNDS = 3
REMEASURE_BUDGET_S = 5.0  # no further round once the rounds so far took this long
REMEASURE_PAUSE_S = 1.0

# The model's fast CPU time (Profile.noise["fast_cpu_ms"]), timed as calibration times its cases and
# benchmarks/export_rows.py its files: thread CPU time, FAST_PERCENTILE of runs pooled over FAST_ROUNDS short rounds
# FAST_GAP_S apart, half before the profile's round and half after it in a session made anew. A profile's round spans
# about a second and meets whatever state the shared machine is in then (session 54, a Zen 4: the same file's round
# median 1.0-1.45x its fast CPU time in one hold); the calibrated rates stand for the fast state, so an option's
# prediction is made against this figure (simulator.measured.fast_scale). The rounds are spread over the whole
# profile, not timed back to back: a slow state lasts seconds, and rounds within ~1.5 s at one point met it whole
# (session 58, a Zen 4: the same runs pooled from two rounds far apart within 4.7% of the fp32 export's interleaved
# figure, from two rounds side by side up to 9.9% off; README Round 31). Rounds of at least FAST_MIN_RUNS runs: a slow
# model pays ~2 runs a round. About 2.5 s per profile (6 x 0.15 s of runs, 4 gaps of 0.4 s; it was 1.4 s).
FAST_PERCENTILE = 5.0
FAST_ROUNDS = 6
FAST_BUDGET_S = 0.15
FAST_GAP_S = 0.4
FAST_MIN_RUNS = 2


@dataclass(frozen=True, slots=True)
class Round:
    """One round of timed runs of the whole model."""

    median_ms: float
    p90_ms: float
    cpu_median_ms: float  # CPU time of the calling thread per run (ORT runs 1 intra-op thread on it)
    cpu_share: float  # total CPU time / total wall time
    load_per_cpu: float  # 1-minute load average over the CPUs this process may use, after the round
    wall_s: float

    @property
    def spread(self) -> float:
        return self.p90_ms / self.median_ms if self.median_ms > 0 else 1.0

    @property
    def noisy(self) -> bool:
        return self.spread > NOISY_SPREAD or self.cpu_share < NOISY_CPU_SHARE

    def noise(self, rounds: int) -> dict[str, Any]:
        """The record a Profile carries (`Profile.noise`)."""
        reasons = []
        if self.spread > NOISY_SPREAD:
            reasons.append(f"runs spread wide (p90/median {self.spread:.2f})")
        if self.cpu_share < NOISY_CPU_SHARE:
            reasons.append(f"the process had the CPU for only {self.cpu_share:.0%} of the time (other load; "
                           f"load average {self.load_per_cpu:.1f} per CPU)")
        return {"noisy": self.noisy, "spread": round(self.spread, 3), "cpu_share": round(self.cpu_share, 3),
                "load_per_cpu": round(self.load_per_cpu, 2), "cpu_latency_ms": self.cpu_median_ms,
                "rounds": rounds, "reason": "; ".join(reasons)}


def _load_per_cpu() -> float:
    try:
        load = float(open("/proc/loadavg").read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return load / max(1, cpus)


def measure_rounds(first: Callable[[], Round], again: Callable[[], Round], reference: float | None = None,
                   probe: Callable[[], float] | None = None,
                   pause_s: float | None = None) -> tuple[Round, dict[str, Any]]:
    """The round a profile's latency comes from and its noise record (`Profile.noise`). `first()` times the first
    round, `again()` each further one; a speed probe runs before and after each (`compiler.speed_probe`; `probe`
    replaces it in tests). A round that is noisy, or whose probes drifted (apart, or from `reference`, the
    calibration's probe figure), is timed again after a pause (`pause_s`, default REMEASURE_PAUSE_S) while that
    stays cheap; the round counted is the fastest of those whose probes did not drift (the fastest of all if every
    one did)."""
    from compiler.speed_probe import SpeedCheck, mark, probe as speed_probe

    take = probe or speed_probe
    rounds: list[Round] = []
    checks: list[SpeedCheck] = []

    def timed(round_: Callable[[], Round]) -> None:
        before = take()
        rounds.append(round_())
        checks.append(SpeedCheck(before, take(), reference))

    timed(first)
    while (rounds[-1].noisy or checks[-1].drifted) and len(rounds) < REMEASURE_ROUNDS and \
            sum(r.wall_s for r in rounds) < REMEASURE_BUDGET_S:
        time.sleep(REMEASURE_PAUSE_S if pause_s is None else pause_s)
        timed(again)
    best = min(range(len(rounds)), key=lambda i: (checks[i].drifted, rounds[i].median_ms))
    return rounds[best], mark(rounds[best].noise(len(rounds)), checks[best])


def fast_cpu_ms(run: Callable[[], None], reopen: Callable[[], None], rounds: int = FAST_ROUNDS,
                budget_s: float = FAST_BUDGET_S, gap_s: float = FAST_GAP_S, min_runs: int = FAST_MIN_RUNS,
                sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.thread_time,
                between: Callable[[], None] | None = None) -> float:
    """The FAST_PERCENTILE of the calling thread's CPU time (`clock`) of `run()` (ms), pooled over `rounds` rounds of
    at least `min_runs` runs (more while `budget_s` lasts), `gap_s` apart within each half. After the first half
    `between()` runs (the profile's own round: the halves lie seconds apart, so a slow state of the machine meets
    only part of the runs), then `reopen()` makes the session anew (one session can run consistently slower than
    another of the same file: buffer placement) and `run` then runs the new one, warmed by a run. 0.0 for no
    rounds (`between` still runs)."""
    import numpy as np

    times: list[float] = []

    def timed_round() -> None:
        t_end, n = time.perf_counter() + budget_s, 0
        while n < min_runs or time.perf_counter() < t_end:
            c0 = clock()
            run()
            times.append(clock() - c0)
            n += 1

    half = rounds // 2
    for r in range(half):
        if r:
            sleep(gap_s)
        timed_round()
    if between is not None:
        between()
    if half:
        reopen()
        run()
    for r in range(rounds - half):
        if r:
            sleep(gap_s)
        timed_round()
    return float(np.percentile(times, FAST_PERCENTILE)) * 1e3 if times else 0.0


def timed_runs(run: Callable[[], None], n: int, between: Callable[[int], None] | None = None) -> Round:
    """Time `n` calls of `run` (wall and this thread's CPU time); `between(i)` runs untimed after call i."""
    import numpy as np

    wall, cpu = [], []
    t_start = time.perf_counter()
    for i in range(n):
        c0, t0 = time.thread_time(), time.perf_counter()
        run()
        t1, c1 = time.perf_counter(), time.thread_time()
        wall.append((t1 - t0) * 1e3)
        cpu.append((c1 - c0) * 1e3)
        if between is not None:
            between(i)
    total = sum(wall)
    return Round(median_ms=statistics.median(wall), p90_ms=float(np.percentile(wall, 90)),
                 cpu_median_ms=statistics.median(cpu), cpu_share=min(1.0, sum(cpu) / total) if total > 0 else 1.0,
                 load_per_cpu=_load_per_cpu(), wall_s=time.perf_counter() - t_start)


@dataclass(slots=True)
class Profile:
    target: str  # e.g. "ort-cpu/host"
    runtime: str  # e.g. "onnxruntime 1.32.0 CPUExecutionProvider"
    device: str  # e.g. CPU model string of this machine
    threads: int
    runs: int
    warmup: int
    latency_ms: float  # whole-model median
    latency_p90_ms: float
    peak_memory_bytes: int
    input_shapes: dict[str, list[int]]
    tasks: dict[str, TaskTiming] = field(default_factory=dict)  # compiled node id -> timing
    measured: bool = True
    kernels: dict[str, list[str]] = field(default_factory=dict)  # compiled node id -> kernels the runtime ran
    # Round.noise() of the round the latency comes from: {noisy, spread, cpu_share, load_per_cpu, cpu_latency_ms,
    # rounds, reason}, and `speed` (compiler.speed_probe.SpeedCheck.to_json) where the runtime probes the CPU's
    # speed (ORT); empty for profiles measured before it was recorded, without `speed` before session 43; ORT's
    # 1-thread profiles since session 55 also `fast_cpu_ms` (fast_cpu_ms above).
    noise: dict[str, Any] = field(default_factory=dict)
    # Compiled node id -> the shape and dtype of each output as the run saw it ([shape, dtype] or None).
    output_shapes: dict[str, list[Any]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        # Field by field, not dataclasses.asdict: its deep copy of every record costs seconds at 33,334 tasks.
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["tasks"] = {k: {"median_ms": t.median_ms, "p25_ms": t.p25_ms, "p75_ms": t.p75_ms, "runs": t.runs,
                          "calls": t.calls} for k, t in self.tasks.items()}
        for k in ("input_shapes", "kernels", "noise", "output_shapes"):
            d[k] = dict(d[k])
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Profile:
        d = dict(d)
        d["tasks"] = {k: TaskTiming(**v) for k, v in d.get("tasks", {}).items()}
        return cls(**d)


@dataclass(slots=True)
class ProfileSettings:
    warmup: int = 5
    runs: int = 30
    threads: int = 1  # intra-op threads; inter-op is always 1 (sequential execution)
    timeout_s: float = 600.0
    memory_limit_bytes: int | None = DEFAULT_MEMORY_LIMIT
    input_shapes: dict[str, list[int]] = field(default_factory=dict)
    input_values: dict[str, int | float | bool] = field(default_factory=dict)
    input_ranges: dict[str, list[int]] = field(default_factory=dict)  # integer inputs: drawn from [low, high)
    # The host calibration's speed probe (GFLOP/s, simulator.calibration.speed_reference), when one is known: a
    # round timed at another speed is timed again (measure_rounds) and the profile says so.
    speed_reference_gflops: float | None = None
    # The pause before such a round is timed again (the machine's state may change meanwhile); the test suite's
    # servers pause none (EDGESCOPE_PROFILE_REMEASURE_PAUSE_MS=0): no test there reads a figure's accuracy.
    remeasure_pause_s: float = REMEASURE_PAUSE_S
    # Rounds of the model's fast CPU time (fast_cpu_ms; ORT, 1 thread); 0: not timed.
    fast_rounds: int = FAST_ROUNDS


def profile_in_sandbox(child: str, model_path: str | os.PathLike[str], settings: ProfileSettings) -> Profile:
    """Run a backend's profiling child (`"module:function"`, returning Profile JSON) in the sandbox."""
    from compiler.sandbox import Limits, run

    if settings.runs < 1 or settings.warmup < 0 or settings.threads < 1:
        raise ValueError("runs and threads must be >= 1, warmup >= 0")
    payload = {"model": os.fspath(model_path), "settings": asdict(settings)}
    data = run(child, payload, Limits(settings.timeout_s, settings.memory_limit_bytes, what="profiling"))
    return Profile.from_json(data)
