"""Calibrate LiteRT's data-movement operators for `litert-cpu/host`: XNNPACK's RESIZE_BILINEAR at a rate of its own
per output element (`layout.fp32.RESIZE_BILINEAR`), a CONCATENATION on the channels (XNNPACK's `Copy (NC, X32)`, a
call per pixel and input) and TFLite's own RESIZE_NEAREST_NEIGHBOR (XNNPACK does not take it: a memcpy of the
channels per output pixel) at a cost per run copied (RUN_KEYS, Work.copy_runs).

Without these, they took the ORT calibration's layout rate (its copies, at the bound: the bytes alone), about 0.1 ns
per element and nothing per run, where LiteRT's profiler read (LiteRT 2.3.0, 1 thread, Zen 4, load ~3, 2026-12-06,
the corpus's `.tflite` files): LR-ASPP's x8 RESIZE_BILINEAR of 21 channels to 512x512 2.22 ms against 0.34 predicted;
a DBNet-like detector's x4 / x8 nearest resizes of 24 channels to 184x184 0.34 ms each against 0.05, its
CONCATENATION of two 736x736x1 maps on the channels 2.25 ms against 0.12. On this module's cases (16:31 UTC, load 2):
RESIZE_BILINEAR 0.27-0.40 ns per output element, the nearest resize 10-11 ns per output pixel at 8 to 64 channels
(0.18-1.37 ns per element), the channel concatenation 3.6 ns per element of 1-float runs and 0.12-0.18 at 16-64
channels. A concatenation on another axis copies a block per input (an SSDlite head's anchors: 0.066 ms, 0.033
predicted): one run each, at the layout rate. TRANSPOSE keeps the layout rate: in the corpus's files it ran 0.05-0.8
ns per element (in-cache head splits and channel shuffles 0.05-0.16, an image's NCHW -> NHWC 0.3-0.5, LR-ASPP's
22 MB output 0.8), and one rate per element fitted on such cases (0.16-0.49) put ShuffleNetV2's 50 and ViT-Ti's 39
transposes 2-3x over (the files +13% / +2% over their thread CPU time): its cost is not yet a rule here.

Each case is a file of R operators reading the same NHWC input (a resize's or a concatenation's output cannot feed
the next one alike), timed per operator by LiteRT's profiler in a sandboxed child, the first dropped from the fit (it
reads the model's input cold). A rate is the efficiency whose predictions are closest to each case's median operator
(simulator.litert_cases.median_fit: a median fit, as single operators read far apart on a loaded host); a cost per
run is the median over the cases of what brings each case's median operator to its time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from compiler.graph import Graph
from simulator.litert_cases import median_fit, predicted_ms, profile_cases
from simulator.profiles import CONCAT_INTERLEAVE, HardwareProfile

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
    shape: tuple[int, int, int, int]  # the input's
    arg: int  # a resize: its scale; CONCATENATION: inputs


# Upsampling x2 to x8 with few and many channels (segmentation heads, FPNs); channel concatenations of 1-64
# channels per input.
CASES: tuple[Case, ...] = (
    *(Case(f"resize{op[7]}-{h}x{c}-x{s}", op, (1, h, h, c), s)
      for op in ("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR") for h, c, s in ((64, 16, 2), (32, 64, 2), (32, 8, 8))),
    *(Case(f"concat-{h}x{c}x{n}", "CONCATENATION", (1, h, h, c), n) for h, c, n in ((256, 1, 2), (128, 16, 2),
                                                                                    (64, 64, 2), (96, 24, 4))),
)


def output_shape(case: Case) -> list[int]:
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
        else:
            size = w.const(f"op{i}/size", np.array(out[1:3], np.int32))
            kind = "ResizeBilinearOptions" if case.op == "RESIZE_BILINEAR" else "ResizeNearestNeighborOptions"
            w.op(case.op, [x, size], [y], w.options(kind, alignCorners=False, halfPixelCenters=True))
        outs.append(y)
    return w.save(path, [x], outs)


def measure(tmp: Path, progress: Callable[[str], None] = lambda s: None, runs: int = 20
            ) -> dict[str, tuple[Graph, list[float]]]:
    """{case: (its graph, measured ms of each operator but the first)}."""
    from compiler.frontends import tflite

    timed = profile_cases(CASES, build, lambda c: c.name, tmp, "LiteRT RESIZE and CONCATENATION cases",
                          runs, progress=progress)
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
        if op in RUN_KEYS:
            eff[key] = efficiency(next(u for u in hw.units if u.name == "cpu"), "layout", "fp32")
            runs[RUN_KEYS[op]] = run_fit(cases, hw.with_overrides({"units": {"cpu": {"efficiency": eff}}}),
                                         RUN_KEYS[op])
        else:
            eff[key] = median_fit(cases, hw, key, "fp32")
    return {"units": {"cpu": {"efficiency": eff, "kind_overhead_s": runs}}}


def calibrate(tmp: Path, hw: HardwareProfile, progress: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    return fit(measure(tmp, progress), hw)
