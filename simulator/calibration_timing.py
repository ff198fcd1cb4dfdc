"""Calibration's timing: how a model's runs are timed (thread CPU time, a low percentile of many runs, models
interleaved round by round) and what else is read off this machine (its CPU's name, ORT's profiler cost).

Also used to measure what predictions are compared against (benchmarks/fidelity.py, corpus/check.py, `edgescope
simulate --measure`), so both sides take the same figure.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from compiler.profile import FAST_PERCENTILE

# Timer of one session.run: CPU time of the calling thread. With 1 intra-op thread ORT computes on the
# caller's thread, so this is the run's latency on a core of its own; wall-clock time on this shared
# 2-core machine doubled under other engineers' load (resnet-32-64: wall median 7.7 ms, CPU 3.4 ms).
clock = time.thread_time

# Figure taken from a model's timed runs: a low percentile of all of them, pooled over rounds and sessions.
# On this shared VM the other tenants slow runs by 10-25% in bursts of about a second (seen on 2026-11-30:
# resnet-32-64 ran 2.9 ms and 3.7 ms in consecutive seconds, CPU time, load 0.2). A round's median lands
# in whichever state the round hit; the 5th percentile of the pooled runs is the uncontended time (within
# about 2% between repeats a few seconds apart; slower drifts of the whole machine it cannot remove), and
# calibration and every timing compared against it use the same figure (FAST_PERCENTILE, defined beside the
# analysis' own fast timing: compiler.profile.fast_cpu_ms).


def fast_ms(times_s: list[float]) -> float:
    """`FAST_PERCENTILE` of run times (seconds) in ms."""
    return float(np.percentile(times_s, FAST_PERCENTILE)) * 1e3


def session(path: Path, opt: str = "all") -> Any:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    if opt == "disable":
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(os.fspath(path), so, providers=["CPUExecutionProvider"])


def default_feeds(sess: Any) -> dict[str, np.ndarray]:
    """Inputs for a session: small valid indices for integer inputs, random normals for float ones (symbolic dims 1)."""
    rng = np.random.default_rng(1)
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        if "uint8" in i.type:  # static int8's quantized maps (calibration_nhwc's QLinearConcats)
            feeds[i.name] = rng.integers(0, 256, shape, dtype=np.uint8)
        elif "int" in i.type:  # token ids and the like: small valid indices
            feeds[i.name] = np.ones(shape, np.int64 if "int64" in i.type else np.int32)
        else:
            feeds[i.name] = rng.standard_normal(shape).astype(np.float16 if "float16" in i.type else np.float32)
    return feeds


def wall_ms(path: Path, min_runs: int = 6, budget_s: float = 0.08, opt: str = "all", rounds: int = 3,
            feeds: dict[str, np.ndarray] | None = None) -> float:
    """Time of session.run (ms, `clock`, `fast_ms` of all runs), 1 intra-op thread, after warm-up, over
    `rounds` rounds, so a burst of load from other processes on a shared machine does not become the figure.
    `feeds`: the inputs to run with (default: calibration's own, symbolic dims at 1)."""
    sess = session(path, opt)
    feeds = feeds if feeds is not None else default_feeds(sess)
    for _ in range(3):
        sess.run(None, feeds)
    return fast_ms(timed_rounds(lambda: sess.run(None, feeds), min_runs, budget_s, rounds))


def timed_rounds(run: Callable[[], Any], min_runs: int, budget_s: float, rounds: int, gap_s: float = 0.0,
                 cap: int = 400, sleep: Callable[[float], None] = time.sleep) -> list[float]:
    """`clock` times of `run()` over `rounds` rounds of at least `min_runs` runs (more while `budget_s` lasts, at
    most `cap`), `gap_s` seconds apart: rounds spread over seconds meet more than one of the machine's states."""
    times: list[float] = []
    for r in range(rounds):
        if r and gap_s > 0:
            sleep(gap_s)
        t_end, n = time.perf_counter() + budget_s, len(times)
        while len(times) - n < min_runs or (time.perf_counter() < t_end and len(times) - n < cap):
            t0 = clock()
            run()
            times.append(clock() - t0)
    return times


def time_interleaved(models: dict[str, tuple[Path, str, int]], rounds: int = 6, budget_s: float = 0.06,
                     progress: Callable[[str], None] = lambda s: None,
                     inputs: dict[str, dict[str, np.ndarray]] | None = None,
                     after_round: Callable[[], None] = lambda: None) -> dict[str, float]:
    """{key: ms (`clock`, `fast_ms` of all its runs)} of `models` ({key: (path, optimization level, min
    runs)}), timed round-robin: each round times every model once, so every case gets runs spread over the
    whole timing and a burst of load from other work on a shared machine hits all cases alike. Sessions
    are created anew for the second half of the rounds: one session of a model can be consistently slower
    than another of the same model (buffer placement), and the figure should not depend on that draw.
    `inputs`: {key: feeds} for the models whose feeds are given (else `default_feeds`); `after_round()` is called
    after each round (calibration probes the CPU's speed there)."""
    pooled: dict[str, list[float]] = {k: [] for k in models}
    sessions: dict[str, Any] = {}
    feeds: dict[str, dict[str, np.ndarray]] = {}
    for r in range(rounds):
        fresh = r in (0, rounds // 2)
        if fresh:
            sessions = {k: session(p, opt) for k, (p, opt, _) in models.items()}
            feeds = {k: (inputs or {}).get(k) or default_feeds(sess) for k, sess in sessions.items()}
        for k, sess in sessions.items():
            min_runs = models[k][2]
            for _ in range(3 if fresh else 1):  # warm-up (then re-warm caches another model evicted)
                sess.run(None, feeds[k])
            times: list[float] = []
            t_end = time.perf_counter() + budget_s
            while len(times) < min_runs or (time.perf_counter() < t_end and len(times) < 400):
                t0 = clock()
                sess.run(None, feeds[k])
                times.append(clock() - t0)
            pooled[k] += times
        after_round()
        progress(f"timing round {r + 1}/{rounds} done")
    return {k: fast_ms(v) for k, v in pooled.items()}


def profiler_overhead(model: Path, dispatch_s: float, tmp: Path) -> float:
    """Median profiled kernel time of a 1x8 Relu minus its dispatch cost from wall-clock timing."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.enable_profiling = True
    so.profile_file_prefix = os.fspath(tmp / "prof")
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    sess = ort.InferenceSession(os.fspath(model), so, providers=["CPUExecutionProvider"])
    feeds = default_feeds(sess)
    for _ in range(20):
        sess.run(None, feeds)
    trace = json.loads(Path(sess.end_profiling()).read_text())
    durs = [e["dur"] for e in trace if e.get("cat") == "Node" and str(e.get("name", "")).endswith("_kernel_time")]
    if not durs:
        return 0.0
    return max(0.0, statistics.median(durs) * 1e-6 - dispatch_s)


def machine() -> str:
    """The CPU this machine calibrates on: a cache made on another is stale. The model name alone is not enough (a
    VM's "AMD EPYC" is a Zen 3 with a 512 KiB L2 on one host and a Zen 4 with 1 MiB on another): its family, model
    and caches too."""
    try:
        from compiler.backends.ort import cpu_name

        name = cpu_name()
    except Exception:  # pragma: no cover - the compiler backend is optional here
        name = platform.processor() or platform.machine()
    from simulator.host_machine import cpu_facts

    f = cpu_facts()
    if not f["family"] and not f["caches"]:
        return name
    caches = ", ".join(f"L{lv} {whole >> 10} KiB" for lv, (_, whole) in sorted(f["caches"].items()))
    return f"{name} (family {f['family']} model {f['model']}, {f['cpus']} CPUs, {caches})"
