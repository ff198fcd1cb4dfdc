"""Calibrate what one execution of a TFLite IF / WHILE costs on LiteRT's CPU, for `litert-cpu/host`.

TFLite's IF kernel (kernels/if.cc) reads its condition, hands its operands to the branch's subgraph, invokes it
and hands the results back; WHILE does the same per trip. The simulator charged them as ORT's If / Loop: six
kernel dispatches per execution (simulator.control_flow). This times the IF's own cost here: a chain of R IFs
whose then-branch is one ADD of N floats, against the same R ADDs without the IFs, both whole models timed
without LiteRT's profiler (the interpreter, as the model's latency is measured: compiler.backends.litert), each
the 5th percentile of its thread CPU time over many runs, the two interleaved. The IF's cost per execution,
`KEY` in the CPU unit's kind_overhead_s, is fitted through the sweep: the value whose predicted difference between
the two models equals the measured one (the sweep charges it per execution of a TFLite IF / WHILE, in place of
the dispatches).

LiteRT's per-operator profiler is no measure of it: with profiling on, each IF reads 72-80 us (its branch's
Invoke is recorded and set up per execution), while the whole un-profiled run of 4 IFs and their ADDs takes 5-6 us
(LiteRT 2.3.0, Zen 4, load ~4, 2026-12-03; the CompiledModel API the same: 468 us per run profiled, 6.4 not).
Measured here un-profiled: 0.46-0.50 us per IF (5th percentile; medians 0.5-1.2 us at load ~4), where the six
dispatches charged 1.3 us.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from compiler.graph import Graph
from simulator.control_flow import TFLITE_CONTROL_KEY as KEY  # seconds per execution of an IF / WHILE
from simulator.profiles import HardwareProfile

R = 16  # IFs per case
N = 16  # floats the branch's ADD reads


def build(path: Path, with_if: bool) -> Path:
    """R IFs on a constant true condition, each then-branch x + x (else hands x back), or the R ADDs alone."""
    from compiler.frontends.tflite_writer import TfliteWriter

    w = TfliteWriter(description="edgescope calibration")
    x = w.tensor("x", [1, N])
    cond = w.const("cond", np.ones(1, np.bool_))
    cur = x
    for i in range(R):
        y = w.tensor(f"op{i}/out", [1, N])
        if with_if:
            def then(b: TfliteWriter, i: int = i) -> tuple[list[int], list[int]]:
                xi, yi = b.tensor(f"then{i}/x", [1, N]), b.tensor(f"then{i}/y", [1, N])
                b.op("ADD", [xi, xi], [yi], b.options("AddOptions"))
                return [xi], [yi]

            def other(b: TfliteWriter, i: int = i) -> tuple[list[int], list[int]]:
                xi = b.tensor(f"else{i}/x", [1, N])
                return [xi], [xi]

            t, e = w.subgraph(f"then{i}", then), w.subgraph(f"else{i}", other)
            w.op("IF", [cond, cur], [y], w.options("IfOptions", thenSubgraphIndex=t, elseSubgraphIndex=e))
        else:
            w.op("ADD", [cur, cur], [y], w.options("AddOptions"))
        cur = y
    return w.save(path, [x], [cur])


def time_child(payload: dict[str, Any]) -> list[float]:
    """Seconds per run of each of payload["models"] (un-profiled interpreter, 1 thread): the 5th percentile of
    thread CPU time, over payload["rounds"] interleaved rounds of payload["runs"] runs (the lowest round's)."""
    from ai_edge_litert.interpreter import Interpreter

    its = []
    for m in payload["models"]:
        it = Interpreter(model_path=m, num_threads=1)
        it.allocate_tensors()
        d = it.get_input_details()[0]
        it.set_tensor(d["index"], np.ones(d["shape"], np.float32))
        for _ in range(50):
            it.invoke()
        its.append(it)
    best = [float("inf")] * len(its)
    for _ in range(int(payload["rounds"])):
        for j, it in enumerate(its):
            ts = []
            for _ in range(int(payload["runs"])):
                c = time.thread_time()
                it.invoke()
                ts.append(time.thread_time() - c)
            best[j] = min(best[j], float(np.percentile(ts, 5)))
    return best


def measure(tmp: Path, progress: Callable[[str], None] = lambda s: None, runs: int = 2000, rounds: int = 3
            ) -> tuple[Graph, Graph, float, float]:
    """(the IF chain, the ADD chain, their measured seconds per run)."""
    from compiler.frontends import tflite
    from compiler.sandbox import Limits, run

    a, b = build(tmp / "if-chain.tflite", True), build(tmp / "add-chain.tflite", False)
    progress(f"timing LiteRT's IF: {R} IFs against their {R} ADDs, un-profiled")
    ta, tb = run("simulator.litert_control:time_child", {"models": [os.fspath(a), os.fspath(b)], "runs": runs,
                                                         "rounds": rounds}, Limits(300.0, what="timing LiteRT's IF"))
    return tflite.load(a), tflite.load(b), float(ta), float(tb)


def predicted_s(g: Graph, hw: HardwareProfile) -> float:
    """The sweep's fp32 whole-model time on litert-cpu/host (tasks only: the run's fixed cost is in both)."""
    from simulator.sweep import sweep

    r = sweep(g, "litert-cpu/host", hardware=hw, presets_only=("fp32",))
    col = [p["name"] for p in r.bulk["presets"]].index("fp32")
    return float(sum(row[col] for row in r.bulk["metrics"]["latency_ms"])) * 1e-3


def fit(a: Graph, b: Graph, ta: float, tb: float, hw: HardwareProfile) -> dict[str, Any]:
    """Profile overrides {"units": {"cpu": {"kind_overhead_s": {KEY: s}}}}: the s >= 0 whose predicted difference
    between the IF chain and the ADD chain is the measured one (the prediction is linear in s)."""
    at = lambda s: predicted_s(a, hw.with_overrides({"units": {"cpu": {"kind_overhead_s": {KEY: s}}}})) - \
        predicted_s(b, hw)  # noqa: E731
    d0, d1 = at(0.0), at(1e-6)
    s = (ta - tb - d0) / ((d1 - d0) / 1e-6) if d1 > d0 else 0.0
    return {"units": {"cpu": {"kind_overhead_s": {KEY: max(0.0, float(s))}}}}


def calibrate(tmp: Path, hw: HardwareProfile, progress: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    return fit(*measure(tmp, progress), hw)
