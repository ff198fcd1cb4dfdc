"""Calibrate LiteRT's data-movement operators for `litert-cpu/host`: XNNPACK's TRANSPOSE and RESIZE_BILINEAR (at a
rate of its own per output element, `layout.fp32.RESIZE_BILINEAR`), a CONCATENATION on the channels (XNNPACK's
`Copy (NC, X32)`, a call per pixel and input) and TFLite's own RESIZE_NEAREST_NEIGHBOR (XNNPACK does not take it: a
memcpy of the channels per output pixel) at a cost per run copied (RUN_KEYS, Work.copy_runs).

Without these, they took the ORT calibration's layout rate (its copies, at the bound: the bytes alone), about 0.1 ns
per element and nothing per run, where LiteRT's profiler read (LiteRT 2.3.0, 1 thread, Zen 4, load ~3, 2026-12-06,
the corpus's `.tflite` files): LR-ASPP's x8 RESIZE_BILINEAR of 21 channels to 512x512 2.22 ms against 0.34 predicted;
a DBNet-like detector's x4 / x8 nearest resizes of 24 channels to 184x184 0.34 ms each against 0.05, its
CONCATENATION of two 736x736x1 maps on the channels 2.25 ms against 0.12. On this module's cases (16:31 UTC, load 2):
RESIZE_BILINEAR 0.27-0.40 ns per output element, the nearest resize 10-11 ns per output pixel at 8 to 64 channels
(0.18-1.37 ns per element), the channel concatenation 3.6 ns per element of 1-float runs and 0.12-0.18 at 16-64
channels. A concatenation on another axis copies a block per input (an SSDlite head's anchors: 0.066 ms, 0.033
predicted): one run each, at the layout rate. TRANSPOSE (session 53: 0.05-0.8 ns per element in the corpus's files,
one rate per element put ShuffleNetV2's and ViT-Ti's transposes 2-3x over) is costed as XNNPACK runs it
(simulator.tflite_ops.transpose_calls): its kernel calls, a memcpy per run kept in place or an 8 x 8 tile, at
`layout.transpose.run` each, its bytes at a bandwidth of its own (`layout.transpose`) while they fit in the L2 (beyond
it at the cache's or memory's rate: on a Zen 3 that fitted its 11 cases better, median |log error| 0.13 against 0.21
at one rate for every size), and where its tiles write far-apart rows, its output bytes beyond the L2 at
`layout.transpose.far`, and where those rows are a page or more apart, its output bytes beyond what the last-level
cache keeps at `layout.transpose.farmem` (transpose_fit: the four at once).

Each case is a file of R operators reading the same NHWC input (a resize's or a concatenation's output cannot feed
the next one alike), timed per operator by LiteRT's profiler in a sandboxed child, the first dropped from the fit (it
reads the model's input cold). A rate is the efficiency whose predictions are closest to each case's median operator
(simulator.litert_cases.median_fit: a median fit, as single operators read far apart on a loaded host); a cost per
run is the median over the cases of what brings each case's median operator to its time; the channel
concatenation's with a rate for its bytes of its own, the two fitted at once (interleave_fit).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from compiler.graph import Graph
from simulator.litert_cases import median_fit, predicted_ms, profile_cases
from simulator.profiles import CONCAT_INTERLEAVE, XNN_TRANSPOSE_KEY, HardwareProfile

TRANSPOSE_TAG_KEY = XNN_TRANSPOSE_KEY.rsplit(".", 1)[0]  # `layout.transpose`

R = 4  # operators per case (the first dropped)
# The efficiency each op's cases fit (simulator.roofline.efficiency reads `<kind>.<tag>.<op>` for that op only).
KEYS = {"RESIZE_BILINEAR": "layout.fp32.RESIZE_BILINEAR",
        "RESIZE_NEAREST_NEIGHBOR": "layout.fp32.RESIZE_NEAREST_NEIGHBOR",
        "CONCATENATION": CONCAT_INTERLEAVE}
# Ops costed per run copied (Work.copy_runs): a channel concatenation (XNNPACK's Copy, a call per pixel and input) and
# TFLite's own nearest resize (a memcpy per output pixel); their cost per run, `<kind>.<tag>.run`.
RUN_KEYS = {"CONCATENATION": "layout.interleave.run", "RESIZE_NEAREST_NEIGHBOR": "layout.fp32.run"}


@dataclass(frozen=True)
class Case:
    name: str
    op: str
    shape: tuple[int, ...]  # the input's
    arg: int  # a resize: its scale; CONCATENATION: inputs
    perm: tuple[int, ...] = ()  # TRANSPOSE's


# Upsampling x2 to x8 with few and many channels (segmentation heads, FPNs); channel concatenations of 1-64
# channels per input.
CASES: tuple[Case, ...] = (
    *(Case(f"resize{op[7]}-{h}x{c}-x{s}", op, (1, h, h, c), s)
      for op in ("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR") for h, c, s in ((64, 16, 2), (32, 64, 2), (32, 8, 8))),
    # (three of few channels, where the runs cost most: no one case alone sets the cost per run; interleave_fit)
    *(Case(f"concat-{h}x{c}x{n}", "CONCATENATION", (1, h, h, c), n) for h, c, n in (
        (256, 1, 2), (192, 2, 2), (160, 4, 2), (128, 16, 2), (64, 64, 2), (96, 24, 4))),
    # TRANSPOSE (simulator.tflite_ops.transpose_calls): 8 x 8 tiles full (NHWC <-> NCHW in cache: a channel shuffle's
    # outer transposes) and partial (an image's 3 channels, a shuffle's pairs), memcpy runs (heads, a shuffle's middle
    # transpose), and outputs of 8-22 MB whose tiles write far-apart rows (LR-ASPP's output to NCHW).
    *(Case(f"transpose-{n}", "TRANSPOSE", shape, 0, perm) for n, shape, perm in (
        ("img3x224", (1, 3, 224, 224), (0, 2, 3, 1)), ("nchw56x24", (1, 56, 56, 24), (0, 3, 1, 2)),
        ("nchw28x116", (1, 28, 28, 116), (0, 3, 1, 2)), ("pairs784x58", (1, 784, 2, 58), (0, 1, 3, 2)),
        ("kt3x197x64", (1, 3, 197, 64), (0, 1, 3, 2)), ("heads197x12x64", (1, 197, 12, 64), (0, 2, 1, 3)),
        ("qkv197x3x3x64", (1, 197, 3, 3, 64), (2, 0, 3, 1, 4)), ("shuffle2x58x784", (1, 2, 58, 784), (0, 2, 1, 3)),
        ("nchw512x21", (1, 512, 512, 21), (0, 3, 1, 2)), ("nchw256x32", (1, 256, 256, 32), (0, 3, 1, 2)),
        ("nchw736x4", (1, 736, 736, 4), (0, 3, 1, 2)),
        # (outputs beyond what the last-level cache keeps: `layout.transpose.farmem`)
        ("nchw448x21", (1, 448, 448, 21), (0, 3, 1, 2)), ("nchw512x32", (1, 512, 512, 32), (0, 3, 1, 2)),
        ("nchw724x21", (1, 724, 724, 21), (0, 3, 1, 2)))),
)


def output_shape(case: Case) -> list[int]:
    if case.op == "TRANSPOSE":
        return [case.shape[a] for a in case.perm]
    n, h, w, c = case.shape
    if case.op == "CONCATENATION":
        return [n, h, w, c * case.arg]
    return [n, h * case.arg, w * case.arg, c]


def build(case: Case, path: Path) -> Path:
    """R operators of `case` reading one fp32 input, written to `path` (resizes as litert-torch writes PyTorch's:
    half-pixel centres, no aligned corners)."""
    from compiler.frontends.tflite_writer import TfliteWriter

    w = TfliteWriter(description="edgescope calibration")
    x = w.tensor("x", list(case.shape))
    out = output_shape(case)
    outs = []
    for i in range(R):
        y = w.tensor(f"op{i}/out", out)
        if case.op == "CONCATENATION":
            w.op("CONCATENATION", [x] * case.arg, [y], w.options("ConcatenationOptions", axis=3))
        elif case.op == "TRANSPOSE":
            w.op("TRANSPOSE", [x, w.const(f"op{i}/perm", np.array(case.perm, np.int32))], [y])
        else:
            size = w.const(f"op{i}/size", np.array(out[1:3], np.int32))
            kind = "ResizeBilinearOptions" if case.op == "RESIZE_BILINEAR" else "ResizeNearestNeighborOptions"
            w.op(case.op, [x, size], [y], w.options(kind, alignCorners=False, halfPixelCenters=True))
        outs.append(y)
    return w.save(path, [x], outs)


def measure(tmp: Path, progress: Callable[[str], None] = lambda s: None, runs: int = 20,
            cases: tuple[Case, ...] = CASES, rounds: int = 1) -> dict[str, tuple[Graph, list[float]]]:
    """{case: (its graph, measured ms of each operator but the first)}."""
    from compiler.frontends import tflite

    timed = profile_cases(cases, build, lambda c: c.name, tmp, "LiteRT RESIZE and CONCATENATION cases",
                          runs, progress=progress, rounds=rounds)
    out: dict[str, tuple[Graph, list[float]]] = {}
    for case, path, res in timed:
        g = tflite.load(path)
        out[case.name] = (g, [res["tasks"].get(n.id, [0.0])[0] for n in g.nodes[1:]])
    return out


def run_fit(cases: list[tuple[Graph, list[float]]], hw: HardwareProfile, key: str) -> float:
    """The cost per run `key` (s) that brings each case's median operator to its measured median, the median over the
    cases (>= 0): the prediction is linear in it (Work.copy_runs per operator)."""
    def at(s: float) -> list[float]:
        h = hw.with_overrides({"units": {"cpu": {"kind_overhead_s": {key: s}}}})
        return [float(np.median(predicted_ms(g, h, "fp32"))) for g, _ in cases]

    base, unit = at(0.0), at(1e-9)
    per_case = [(float(np.median(ms)) - b) / (u - b) * 1e-9 for (_, ms), b, u in zip(cases, base, unit) if u > b]
    return max(float(np.median(per_case)), 0.0) if per_case else 0.0


def interleave_fit(cases: list[tuple[Graph, list[float]]], hw: HardwareProfile,
                   eff: dict[str, float]) -> tuple[float, float]:
    """A channel concatenation's rate for its bytes (CONCAT_INTERLEAVE) and cost per run, at once: for each rate (a
    search over its log) the run cost of run_fit, the pair whose predictions are least off their cases in sum of
    |log|. With the bytes at the layout path's rate, the run cost alone took up what the bytes cost more: on session
    56's Xeon the 16-64 channel cases put it at 7.5 ns per run, and the 1-float case at 3.2x its time."""
    from simulator.calibration_fit import best_log_efficiency

    meas = np.array([float(np.median(ms)) for _, ms in cases])

    def fitted(x: float) -> tuple[HardwareProfile, float]:
        h = hw.with_overrides({"units": {"cpu": {"efficiency": {**eff, CONCAT_INTERLEAVE: float(np.exp(x))}}}})
        return h, run_fit(cases, h, RUN_KEYS["CONCATENATION"])

    def err(x: float) -> float:
        h, run = fitted(x)
        h = h.with_overrides({"units": {"cpu": {"kind_overhead_s": {RUN_KEYS["CONCATENATION"]: run}}}})
        pred = np.array([float(np.median(predicted_ms(g, h, "fp32"))) for g, _ in cases])
        return float(np.sum(np.abs(np.log(pred / meas))))

    x = best_log_efficiency(err)
    return float(np.exp(x)), fitted(x)[1]


# TRANSPOSE's figures (simulator.litert_paths.XNN_TRANSPOSE): its bytes' rate (`kind_bandwidth_bytes_per_s`), a cost
# per kernel call, per far output byte beyond the L2, and per output byte beyond what the last-level cache keeps
# (Unit.llc_keep_bytes, LiteRT's own ladder: simulator.litert_llc) where its tiles write rows a page or more apart
# (Work.page_walk) (`kind_overhead_s`). The last: XNNPACK's 8 x 8 tiles write each output row 32 bytes at a time, the
# rows a plane apart; once the output outgrows what the LLC keeps, those writes go to memory. NHWC -> NCHW of 21
# channels alone (LiteRT 2.3.0, 1 thread, Zen 4 with 32 MiB L3, 2026-12-08, probes 110 / 109 GFLOP/s): 0.19-0.31 ns
# per element up to a 12.4 MB output (362-384 px), then 0.69 (448 px, 16.9 MB), 0.73-0.81 (500-512 px), 1.10 (724 px,
# 44 MB), 1.34 (1024 px, 88 MB); 500 px as slow as 512 (no power-of-two aliasing): ~0.30 ns per output byte beyond
# ~12.7 MB. LR-ASPP's 22 MB output to NCHW ran 4.0 ms alone and 5.4 in the model, priced 1.2 by the three figures
# before.
TRANSPOSE_BW, TRANSPOSE_RUN, TRANSPOSE_FAR = TRANSPOSE_TAG_KEY, f"{TRANSPOSE_TAG_KEY}.run", f"{TRANSPOSE_TAG_KEY}.far"
TRANSPOSE_FARMEM = f"{TRANSPOSE_TAG_KEY}.farmem"
_BW_SCALE = 1e11  # bytes/s per unit of the log search (simulator.calibration_fit.best_log_efficiency's range)


def transpose_fit(cases: list[tuple[Graph, list[float]]], hw: HardwareProfile) -> dict[str, Any]:
    """TRANSPOSE's figures that bring each case's median operator closest to its measured median in relative least
    squares (each >= 0): for each bandwidth (a search over its log), the costs per call, per far byte beyond the L2
    and per byte of rows a page apart beyond the LLC's keep, which the prediction is linear in (Work.copy_runs,
    Work.far_walk, Work.page_walk), solved at once from the sweep's own slopes."""
    import itertools

    from simulator.calibration_fit import best_log_efficiency, nonnegative_fit
    from simulator.litert_elementwise import with_bandwidths
    from simulator.roofline import efficiency

    cpu = next(u for u in hw.units if u.name == "cpu")
    eff = {XNN_TRANSPOSE_KEY: efficiency(cpu, "layout", "fp32")}
    meas = np.array([float(np.median(ms)) for _, ms in cases])
    keys = (TRANSPOSE_RUN, TRANSPOSE_FAR, TRANSPOSE_FARMEM)
    uses = [list(c) for k in (3, 2, 1) for c in itertools.combinations(range(len(keys)), k)]

    def at(bw: float, costs: dict[str, float]) -> np.ndarray:
        h = hw.with_overrides({"units": {"cpu": {
            "efficiency": eff, "kind_overhead_s": {**dict.fromkeys(keys, 0.0), **costs},
            "kind_bandwidth_bytes_per_s": with_bandwidths(hw, {TRANSPOSE_BW: bw})}}})
        return np.array([float(np.median(predicted_ms(g, h, "fp32"))) for g, _ in cases])

    def solve(x: float) -> tuple[float, np.ndarray]:
        bw = _BW_SCALE * float(np.exp(x))
        base = at(bw, {})
        slopes = np.stack([at(bw, {k: 1e-9}) - base for k in keys], axis=1) / 1e-9
        return nonnegative_fit(slopes / meas[:, None], 1 - base / meas, uses)

    x = best_log_efficiency(lambda v: solve(v)[0])
    costs = {k: float(c) for k, c in zip(keys, solve(x)[1])}
    return {"units": {"cpu": {"efficiency": eff, "kind_overhead_s": costs,
                              "kind_bandwidth_bytes_per_s": {TRANSPOSE_BW: _BW_SCALE * float(np.exp(x))}}}}


def fit(measured: dict[str, tuple[Graph, list[float]]], hw: HardwareProfile) -> dict[str, Any]:
    """Profile overrides {"units": {"cpu": {"efficiency": {...}, "kind_overhead_s": {...}}}}: RESIZE_BILINEAR's
    efficiency whose predictions are closest to each of their cases' median operator; a channel
    CONCATENATION's and RESIZE_NEAREST_NEIGHBOR's cost per run (RUN_KEYS; the channel concatenation's bytes at the
    layout rate, its key there to say it was calibrated)."""
    from simulator.roofline import efficiency

    eff: dict[str, float] = {}
    runs: dict[str, float] = {}
    for op, key in KEYS.items():
        cases = [measured[c.name] for c in CASES if c.op == op and c.name in measured]
        if not cases:
            continue
        if op == "CONCATENATION":
            eff[key], runs[RUN_KEYS[op]] = interleave_fit(cases, hw, eff)
        elif op in RUN_KEYS:
            eff[key] = efficiency(next(u for u in hw.units if u.name == "cpu"), "layout", "fp32")
            runs[RUN_KEYS[op]] = run_fit(cases, hw.with_overrides({"units": {"cpu": {"efficiency": eff}}}),
                                         RUN_KEYS[op])
        else:
            eff[key] = median_fit(cases, hw, key, "fp32")
    out: dict[str, Any] = {"efficiency": eff, "kind_overhead_s": runs}
    transposes = [measured[c.name] for c in CASES if c.op == "TRANSPOSE" and c.name in measured]
    if transposes:
        t = transpose_fit(transposes, hw)["units"]["cpu"]
        eff.update(t["efficiency"])
        runs.update(t["kind_overhead_s"])
        out["kind_bandwidth_bytes_per_s"] = t["kind_bandwidth_bytes_per_s"]
    return {"units": {"cpu": out}}


def calibrate(tmp: Path, hw: HardwareProfile, progress: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    return fit(measure(tmp, progress), hw)
