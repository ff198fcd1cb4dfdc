"""Calibrate TFLite's own signal kernels on this machine, for `litert-cpu/host`: RFFT2D's rate, GATHER's, and
STRIDED_SLICE's where XNNPACK leaves it to TFLite (`SLICE_CASES`).

An audio model's front end computes its spectrogram in the graph (TF's `tf.signal.stft` becomes RFFT2D with
fft_length [1, n] over frames of n samples): BirdNET's two STFTs (511 frames of 2048 samples, 511 of 1024) are
most of its time. XNNPACK does not take RFFT2D; TFLite's builtin kernel (kernels/rfft2d.cc) copies each frame to
doubles, runs Ooura's rdft2d and copies the result back, far below the element-wise rate its FLOPs were costed at
(BirdNET fp32, 2026-12-03: predicted -55% of measured). Its work is counted as real FFTs (simulator.tflite_ops,
5/2 n log2 n FLOPs per frame); this fits the rate TFLite's kernel runs that count at: `other.fp32.RFFT2D`, the
op's own efficiency (simulator.roofline.efficiency reads it for RFFT2D tasks only). The frames themselves are cut
by a GATHER of 1-2 float slices per index (BirdNET: 511 x 1024 indices), which TFLite's own kernel copies one
memcpy per index: its work is a call per index (simulator.tflite_ops), its rate `layout.fp32.GATHER`
(GATHER_CASES; profiled 2.7-3.4 ns per index for 1-2 float slices, 7.7 for 64), its slices bytes.

Each case is a file of R RFFT2D operators reading the same input [1, frames, 1, n] (an RFFT2D's complex output
cannot feed another), timed per operator by LiteRT's profiler in a sandboxed child, the first dropped from the
fit (it reads the model's input cold). Profiled here (LiteRT 2.3.0, 1 thread, load ~9): 0.41-0.59 ns per FLOP of
that count from 64x256 to 511x2048 (10-13 ns per input sample), so one efficiency holds across the shapes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from compiler.graph import Graph
from simulator.litert_cases import median_fit, predicted_ms, profile_cases
from simulator.litert_paths import PAD_CALL_KEYS
from simulator.profiles import HardwareProfile

R = 4  # operators per case (the first dropped)
KEY = "other.fp32.RFFT2D"  # the efficiency fitted (kind other, fp32 path, the op's own)
GATHER_KEY = "layout.fp32.GATHER"
# TFLite's builtin STRIDED_SLICE (simulator.litert_paths.BUILTIN_SLICE: one the XNNPACK delegate does not take).
SLICE_KEY = "layout.builtin.STRIDED_SLICE"
# TFLite's own PADV2 (simulator.litert_paths.BUILTIN_PAD) on fp32 and on int8 data: profiled 0.22 and 0.48 ns per
# output element, so a rate each; on fp32 data also a cost per output pixel (PAD_CALL_KEYS: a memcpy of the channels
# each), fitted with the rate (pad_fit).
PAD_KEYS = {"float32": "layout.builtin.PADV2", "int8": "layout.builtin8.PADV2"}


@dataclass(frozen=True)
class Case:
    name: str
    frames: int
    n: int  # FFT length (samples per frame)


# BirdNET's lengths (1024, 2048) and shorter ones, with few and many frames.
CASES: tuple[Case, ...] = tuple(Case(f"rfft-{f}x{n}", f, n) for f, n in
                                ((64, 256), (256, 256), (64, 1024), (256, 1024), (128, 2048)))


@dataclass(frozen=True)
class GatherCase:
    name: str
    rows: int  # the table's rows
    slice: int  # floats per row (per index)
    indices: tuple[int, int]


# Frames of 1-2 samples per index (BirdNET's framing), and wider slices where the copy's bytes start to count.
GATHER_CASES: tuple[GatherCase, ...] = (GatherCase("gather-72000x2-128x1024", 72000, 2, (128, 1024)),
                                        GatherCase("gather-144000x1-256x1024", 144000, 1, (256, 1024)),
                                        GatherCase("gather-8000x64-128x64", 8000, 64, (128, 64)))


@dataclass(frozen=True)
class SliceCase:
    name: str
    shape: tuple[int, ...]  # the input's
    begin: tuple[int, ...]
    end: tuple[int, ...]


# BirdNET's slices of its 144,000 samples (begin 0, `end` computed), a shorter signal, and NHWC maps cut on the
# channels (short rows) and on H and W: the reference kernel's cost is per element, whatever the row length.
SLICE_CASES: tuple[SliceCase, ...] = (SliceCase("slice-144000", (1, 144000), (0, 0), (1, 143360)),
                                      SliceCase("slice-16000", (1, 16000), (0, 160), (1, 16000)),
                                      SliceCase("slice-28x28x128-c", (1, 28, 28, 128), (0, 0, 0, 0), (1, 28, 28, 64)),
                                      SliceCase("slice-56x56x32-hw", (1, 56, 56, 32), (0, 1, 1, 0), (1, 55, 55, 32)))


@dataclass(frozen=True)
class PadCase:
    name: str
    shape: tuple[int, ...]  # the NHWC input's; padded by 1 on H and W
    dtype: str  # float32, or int8 (the static int8 form)


# TFLite's own PADV2 (simulator.litert_paths.BUILTIN_PAD): a max pool's padding in both forms, ShuffleNetV2's and
# ResNet's stem maps (112x112x24, 112x112x64) and a smaller one; fp32 also at 56x56 of 48 and 96 channels, where
# the pixels' share of its time differs from 112x112x24's (what pins the cost per pixel apart from the rate).
PAD_CASES: tuple[PadCase, ...] = tuple(PadCase(f"padv2-{h}x{c}-{d}", (1, h, h, c), d) for h, c, d in (
    (112, 24, "int8"), (112, 64, "int8"), (28, 96, "int8"), (112, 24, "float32"), (28, 96, "float32"),
    (56, 48, "float32"), (56, 96, "float32")))
PAD_PRESET = {"int8": "int8-static", "float32": "fp32"}


def build_pad(case: PadCase, path: Path) -> Path:
    """R PADV2s of one input (H and W by 1, the type's lowest value, as litert-torch pads a max pool), written to
    `path`."""
    from compiler.frontends.tflite_writer import TfliteWriter

    w = TfliteWriter(description="edgescope calibration")
    q = dict(dtype="int8", quant=([0.05], [0], 0)) if case.dtype == "int8" else {}
    x = w.tensor("x", list(case.shape), **q)
    low = np.array(-128 if case.dtype == "int8" else np.finfo(np.float32).min, case.dtype)
    pads = w.const("pads", np.array([[0, 0], [1, 1], [1, 1], [0, 0]], np.int32))
    n, h, wd, c = case.shape
    outs = []
    for i in range(R):
        y = w.tensor(f"op{i}/out", [n, h + 2, wd + 2, c], **q)
        w.op("PADV2", [x, pads, w.tensor(f"op{i}/value", [], **q, data=low)], [y])
        outs.append(y)
    return w.save(path, [x], outs)


def build_slice(case: SliceCase, path: Path) -> Path:
    """R STRIDED_SLICEs of one input whose `end` a CONCATENATION of two constants computes (as BirdNET's is
    computed), so that XNNPACK leaves them to TFLite's builtin kernel, written to `path`. Operator 0 is that
    CONCATENATION; the slices follow."""
    from compiler.frontends.tflite_writer import TfliteWriter

    w = TfliteWriter(description="edgescope calibration")
    x = w.tensor("x", list(case.shape))
    rank = len(case.shape)
    begin = w.const("begin", np.array(case.begin, np.int32))
    strides = w.const("strides", np.ones(rank, np.int32))
    head, tail = w.const("end_head", np.array(case.end[:1], np.int32)), w.const("end_tail", np.array(case.end[1:], np.int32))
    end = w.tensor("end", [rank], "int32")
    w.op("CONCATENATION", [head, tail], [end], w.options("ConcatenationOptions", axis=0))
    out_shape = [e - b for b, e in zip(case.begin, case.end)]
    outs = []
    for i in range(R):
        y = w.tensor(f"op{i}/out", out_shape)
        w.op("STRIDED_SLICE", [x, begin, end, strides], [y], w.options("StridedSliceOptions"))
        outs.append(y)
    return w.save(path, [x], outs)


def build_gather(case: GatherCase, path: Path) -> Path:
    """R GATHERs of the same constant indices from one [rows, slice] input, written to `path`."""
    from compiler.frontends.tflite_writer import TfliteWriter

    w = TfliteWriter(description="edgescope calibration")
    x = w.tensor("x", [case.rows, case.slice])
    idx = w.const("idx", np.random.default_rng(0).integers(0, case.rows, case.indices).astype(np.int32))
    outs = []
    for i in range(R):
        y = w.tensor(f"op{i}/out", [*case.indices, case.slice])
        w.op("GATHER", [x, idx], [y], w.options("GatherOptions", axis=0))
        outs.append(y)
    return w.save(path, [x], outs)


def build(case: Case, path: Path) -> Path:
    """R RFFT2D operators over the same [1, frames, 1, n] input, written to `path`."""
    from compiler.frontends.tflite_writer import TfliteWriter

    w = TfliteWriter(description="edgescope calibration")
    x = w.tensor("x", [1, case.frames, 1, case.n])
    length = w.const("fft_length", np.array([1, case.n], np.int32))
    outs = []
    for i in range(R):
        y = w.tensor(f"op{i}/out", [1, case.frames, 1, case.n // 2 + 1], "complex64")
        w.op("RFFT2D", [x, length], [y])
        outs.append(y)
    return w.save(path, [x], outs)


def measure(tmp: Path, progress: Callable[[str], None] = lambda s: None, runs: int = 20
            ) -> dict[str, tuple[Graph, list[float]]]:
    """{case: (its graph, measured ms of each operator but the first)}: RFFT2D's, GATHER's, STRIDED_SLICE's and PADV2's
    cases."""
    from compiler.frontends import tflite

    cases: list[Case | GatherCase | SliceCase | PadCase] = [*CASES, *GATHER_CASES, *SLICE_CASES, *PAD_CASES]
    builders = {Case: build, GatherCase: build_gather, SliceCase: build_slice, PadCase: build_pad}
    timed = profile_cases(cases, lambda c, p: builders[type(c)](c, p), lambda c: c.name, tmp,  # type: ignore[operator]
                          "LiteRT RFFT2D, GATHER, STRIDED_SLICE and PADV2 cases", runs, progress=progress)
    out: dict[str, tuple[Graph, list[float]]] = {}
    for case, path, res in timed:
        g = tflite.load(path)
        kept = [n for n in g.nodes if n.op_type != "CONCATENATION"][1:]  # a slice case's `end` is not timed
        out[case.name] = (g, [res["tasks"][n.id][0] for n in kept])
    return out


def pad_fit(cases: list[tuple[Graph, list[float]]], hw: HardwareProfile, key: str, call_key: str,
            preset: str) -> tuple[float, float]:
    """PADV2's rate `key` and its cost per call `call_key` (s; one call per output pixel, Path.call_elements), at once:
    for each rate (a search over its log) the cost per call that brings the cases' median operators closest to
    their measured medians in relative least squares (>= 0: the prediction is linear in it), the pair whose
    predictions are least off in sum of |log|. A rate alone priced fp32's 112x112x24 case 0.043 ms against 0.068
    (its fit swung 1.4x between calibrations with the cases it leaned on)."""
    from simulator.calibration_fit import best_log_efficiency

    meas = np.array([float(np.median(ms)) for _, ms in cases])

    def pred(log_eff: float, call_s: float) -> np.ndarray:
        h = hw.with_overrides({"units": {"cpu": {"efficiency": {key: float(np.exp(log_eff))},
                                                 "kind_overhead_s": {call_key: call_s}}}})
        return np.array([float(np.median(predicted_ms(g, h, preset))) for g, _ in cases])

    slope = (pred(0.0, 1e-9) - pred(0.0, 0.0)) / 1e-9  # ms per s of the cost per call: what the calls are

    def solve(log_eff: float) -> tuple[float, float]:
        base = pred(log_eff, 0.0)
        a, b = slope / meas, 1 - base / meas
        call = max(float(a @ b / (a @ a)), 0.0) if (a @ a) > 0 else 0.0
        return float(np.sum(np.abs(np.log((base + slope * call) / meas)))), call

    x = best_log_efficiency(lambda v: solve(v)[0])
    return float(np.exp(x)), solve(x)[1]


def fit(measured: dict[str, tuple[Graph, list[float]]], hw: HardwareProfile) -> dict[str, Any]:
    """Profile overrides {"units": {"cpu": {"efficiency": {KEY: e, GATHER_KEY: e, SLICE_KEY: e, *PAD_KEYS: e},
    "kind_overhead_s": {*PAD_CALL_KEYS: s}}}}: per op, the efficiency whose predictions are closest to each of its
    cases' median operator (litert_cases.median_fit; the median over a case's operators: a slice case's CONCATENATION
    is one cheap operator among R + 1); PADV2's with its cost per output pixel where that type has one (pad_fit)."""
    out: dict[str, float] = {}
    for key, names in ((KEY, {c.name for c in CASES}), (GATHER_KEY, {c.name for c in GATHER_CASES}),
                       (SLICE_KEY, {c.name for c in SLICE_CASES})):
        cases = [gm for name, gm in measured.items() if name in names]
        if cases:
            out[key] = median_fit(cases, hw, key, "fp32")
    calls: dict[str, float] = {}
    for dtype, key in PAD_KEYS.items():  # a rate per output element (at the fp32 peak's share) for each type
        pads = [measured[c.name] for c in PAD_CASES if c.dtype == dtype and c.name in measured]
        shapes = {c.shape for c in PAD_CASES if c.dtype == dtype and c.name in measured}
        if pads and dtype in PAD_CALL_KEYS and len(shapes) >= 2:
            out[key], calls[PAD_CALL_KEYS[dtype]] = pad_fit(pads, hw, key, PAD_CALL_KEYS[dtype], PAD_PRESET[dtype])
        elif pads:
            out[key] = median_fit(pads, hw, key, PAD_PRESET[dtype])
    return {"units": {"cpu": {"efficiency": out, "kind_overhead_s": calls}}}


def calibrate(tmp: Path, hw: HardwareProfile, progress: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    return fit(measure(tmp, progress), hw)
