"""Calibrate XNNPACK's fp32 element-wise operators for `litert-cpu/host`: the rate their bytes move at
(`kind_bandwidth_bytes_per_s` `elementwise.fp32`) and LOGISTIC's own efficiency (`elementwise.fp32.LOGISTIC`).

Without these they took the ORT calibration's cache rate (~81 GB/s on a Zen 4), while XNNPACK's vectorised kernels
(`Add (ND)`, `Multiply (ND)`, `HardSwish (NC)`) ran in chains at 0.35-0.6x that price (LiteRT 2.3.0, 1 thread, Zen 4,
load ~2, 2026-12-06: ADD of two 120x28x28 maps 0.07 ns per element, ~170 GB/s; HARD_SWISH 0.03-0.06 ns per element),
and the corpus's `.tflite` files showed the same (LOGISTIC, MUL, ADD, HARD_SWISH at 0.4-0.8x in every file:
EfficientNet-B0's fp32 file +10%). `Sigmoid (NC)` is bound by its arithmetic instead, ~0.18 ns per element at every
size (0.65x its price). Under load the same kernels read up to 2x slower (the fits are this machine's at that time).
The rate holds while an operator's bytes fit in the core's L2: on a Zen 3 (512 KiB L2, LiteRT 2.3.0, 2026-12-06 23:33)
ADD and MUL chains of 280-450 KB ran at 0.55-0.65x their price at the cache rate (~160 GB/s) and those of 0.9-2.7 MB
at ~75 GB/s; beyond the L2 they keep the rate they had (the cache's or memory's: in the corpus's models such maps ran
at about the cache rate, where one rate for every size priced them 0.5x).

Each case is a chain of R operators (ADD and MUL of the previous output and the model's input, as a residual and a
gate; LOGISTIC of the previous output) on NHWC maps of MobileNet-like sizes, timed per operator by LiteRT's profiler
in a sandboxed child, the first and last dropped (they read the model's input cold, write its output). A median
fit, as for simulator.litert_layout: the bandwidth whose predicted ADDs and MULs (those within the L2) are closest to
each case's median operator in absolute log ratio, then LOGISTIC's efficiency at that bandwidth. Not covered: a broadcast MUL of a
map by a [1, 1, 1, C] vector (a squeeze-excite gate: 0.3-1.3x at the cache rate, by the channels) and MEAN (the
reduce kind: 0.25-1.0x by the channels), which keep their figures.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from compiler.graph import Graph
from simulator.litert_cases import MIN_TIMED_MS, median_fit, predicted_ms, profile_cases
from simulator.profiles import HardwareProfile

R = 4  # operators per chain (the first and last dropped)
BW_KEY = "elementwise.fp32"  # kind_bandwidth_bytes_per_s of XNNPACK's fp32 element-wise ops (roofline: `<kind>.<tag>`)
LOGISTIC_KEY = "elementwise.fp32.LOGISTIC"
# XNNPACK's fp32 ADD and MUL (`Add (ND)`, `Multiply (ND)`) are bound by their bytes: on a Zen 5 (s61, LiteRT 2.3.0,
# 1 thread) a 24 x 56 x 56 ADD ran in 3.0 us, where the kind's arithmetic alone at ORT's `elementwise.fp32` efficiency
# (0.113) took 5.0 and the bandwidth fit ran to its grid's ceiling. Their own efficiency keeps the arithmetic off
# their price (calibration_fit.EFF_MAX, as fitted figures that do not bind read), so the bytes carry it.
BINARY_KEYS = ("elementwise.fp32.ADD", "elementwise.fp32.MUL")
_BW_SCALE = 1e11  # bytes/s per unit of the log search (simulator.calibration_fit.best_log_efficiency's range)


def with_bandwidths(hw: HardwareProfile, new: dict[str, float]) -> dict[str, float]:
    """The CPU unit's `kind_bandwidth_bytes_per_s` with `new` over it, the whole map LiteRT's overrides set:
    HardwareProfile.with_overrides replaces a unit's kind bandwidths (a device fit sets them as one, the ANE's), so
    LiteRT's own rates (`elementwise.fp32`, `layout.transpose`) join the profile's here."""
    cpu = next(u for u in hw.units if u.name == "cpu")
    return {**cpu.kind_bandwidth_bytes_per_s, **new}


@dataclass(frozen=True)
class Case:
    name: str
    op: str  # ADD | MUL | LOGISTIC
    c: int
    h: int


# Maps whose operator's bytes fit in a 512 KiB L2 (ADD's three maps 280-450 KB; smaller ones run under the profiler's
# whole microseconds) and beyond a 1 MiB one (0.9-2.7 MB): the bandwidth applies, and is fitted, only within the L2
# (simulator.roofline.Rates.own_bw). Within a 1 MiB L2 (Zen 5) the 280-450 KB maps ran in 0-1.5 us (~300 GB/s), under
# two ticks (litert_cases.MIN_TIMED_MS), and are left out: 0.75-0.9 MB maps (20 x 56 x 56, 88 x 28 x 28, 24 x 56 x 56;
# 2.5-3 us) carry the fit there.
CASES: tuple[Case, ...] = tuple(Case(f"{op.lower()}-{c}-{h}", op, c, h) for op in ("ADD", "MUL", "LOGISTIC")
                                for c, h in ((120, 14), (32, 28), (40, 28), (48, 28), (24, 56), (120, 28), (72, 56),
                                             (16, 112), (20, 56), (88, 28)))


def build(case: Case, path: Path) -> Path:
    """R operators of `case` in a chain on fp32 [1, h, h, c] maps, written to `path`."""
    from compiler.frontends.tflite_writer import TfliteWriter

    w = TfliteWriter(description="edgescope calibration")
    shape = [1, case.h, case.h, case.c]
    x = first = w.tensor("x", shape)
    for i in range(R):
        y = w.tensor(f"op{i}/out", shape)
        if case.op == "LOGISTIC":
            w.op("LOGISTIC", [x], [y])
        else:
            w.op(case.op, [x, first], [y], w.options(f"{case.op.title()}Options"))
        x = y
    return w.save(path, [first], [x])


def _inner(per_op: list[float]) -> list[float]:
    """A chain's operators 1.. but the last (it writes the model's output)."""
    return per_op[:-1]


def measure(tmp: Path, progress: Callable[[str], None] = lambda s: None, runs: int = 20
            ) -> dict[str, tuple[Graph, list[float]]]:
    """{case: (its graph, measured ms of each operator but the first and the last)}."""
    from compiler.frontends import tflite

    timed = profile_cases(CASES, build, lambda c: c.name, tmp, "LiteRT fp32 element-wise chains", runs,
                          progress=progress)
    out: dict[str, tuple[Graph, list[float]]] = {}
    for case, path, res in timed:
        g = tflite.load(path)
        out[case.name] = (g, _inner([res["tasks"].get(n.id, [0.0])[0] for n in g.nodes[1:]]))
    return out


def bandwidth_fit(cases: list[tuple[Graph, list[float]]], hw: HardwareProfile) -> float:
    """The `elementwise.fp32` bandwidth (bytes/s) whose predictions are closest to each case's median operator, in
    absolute log ratio."""
    from simulator.calibration_fit import best_log_efficiency

    meas = np.array([float(np.median(ms)) for _, ms in cases])

    def log_error(x: float) -> float:
        bw = {BW_KEY: _BW_SCALE * float(np.exp(x))}
        h = hw.with_overrides({"units": {"cpu": {"kind_bandwidth_bytes_per_s": with_bandwidths(hw, bw)}}})
        pred = np.array([float(np.median(_inner(predicted_ms(g, h, "fp32")))) for g, _ in cases])
        return float(np.abs(np.log(pred / meas)).sum())

    return _BW_SCALE * float(np.exp(best_log_efficiency(log_error)))


def fit(measured: dict[str, tuple[Graph, list[float]]], hw: HardwareProfile) -> dict[str, Any]:
    """Profile overrides {"units": {"cpu": {"kind_bandwidth_bytes_per_s": {BW_KEY: b}, "efficiency":
    {LOGISTIC_KEY: e, BINARY_KEYS: EFF_MAX}}}}: the bandwidth fitted on the ADD and MUL cases whose bytes fit in `hw`'s
    L2 (none without one), their arithmetic off their price, then LOGISTIC's efficiency at it on all of its cases. A
    case whose median operator read under two ticks is left out (s61, Zen 5: two ADDs read 0, every rate's log error
    was infinite, and the fit ran to its grid's floor, 15.8 MB/s, pricing a 120 x 14 x 14 ADD at 20.6 ms against
    ~1 us); a figure with no case left is not set."""
    l2 = next(u for u in hw.units if u.name == "cpu").l2_share_bytes
    by_op = {op: [measured[c.name] for c in CASES if c.op == op and c.name in measured
                  and float(np.median(measured[c.name][1])) >= MIN_TIMED_MS
                  and (op == "LOGISTIC" or 3 * 4 * c.c * c.h * c.h <= l2)]  # a binary op's three maps in the L2
             for op in ("ADD", "MUL", "LOGISTIC")}
    from simulator.calibration_fit import EFF_MAX

    out: dict[str, Any] = {"kind_bandwidth_bytes_per_s": {}, "efficiency": {key: EFF_MAX for key in BINARY_KEYS}}
    hw = hw.with_overrides({"units": {"cpu": {"efficiency": out["efficiency"]}}})
    if by_op["ADD"] + by_op["MUL"]:
        out["kind_bandwidth_bytes_per_s"][BW_KEY] = bandwidth_fit(by_op["ADD"] + by_op["MUL"], hw)
    if by_op["LOGISTIC"]:
        at = hw.with_overrides({"units": {"cpu": {
            "kind_bandwidth_bytes_per_s": with_bandwidths(hw, out["kind_bandwidth_bytes_per_s"])}}})
        out["efficiency"][LOGISTIC_KEY] = median_fit(by_op["LOGISTIC"], at, LOGISTIC_KEY, "fp32", _inner)
    return {"units": {"cpu": out}}


def calibrate(tmp: Path, hw: HardwareProfile, progress: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    return fit(measure(tmp, progress), hw)
