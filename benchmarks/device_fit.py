"""Fit device profiles to published on-device measurements, with leave-one-family-out cross-validation.

    python benchmarks/device_fit.py [--target T ...] [--write] [--cache DIR] [--max-nfev N] [--cv-nfev N] [--json F]
                                    [--built-only] [--refit]
    python benchmarks/device_fit.py --from-json F [--from-json G ...] [--write]   # print / write earlier runs

For each target with public data (TARGETS below), the dataset rows of its chip and runtime
(simulator/published/*.csv) are predicted by the simulator itself (simulator.sweep on the architecture rebuilt in
code, benchmarks/published_models.py) under the preset each published precision means (PRESETS). The profile's
free parameters (FitSpec.params: efficiencies, bandwidth efficiency, per-call and per-task overheads) are fitted by
least squares on log(predicted / published) with a robust loss.

- Cross-validation: for each model family, the parameters are fitted on the other families and the held-out
  family is predicted. Reported: median |error|, share within +-25%, points, models.
- Validation: MobileNetV2 and ResNet-50 (architectures.yaml `validation: true`) are never fitted on, on any
  device; the final fit (every other family) predicts them, reported apart.
- Placement: where AI Hub gives layer counts, whether the prediction puts tasks on the CPU exactly when AI Hub
  does (any CPU layers vs none).

--write puts the final fit's values into simulator/hardware/<profile>.yaml (their source becomes the dataset and
this script) and the held-out figures into simulator/published/heldout.json, which the device labels read.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compiler.vocabulary.targets import get_target  # noqa: E402
from simulator import published  # noqa: E402
from simulator.profiles import HARDWARE_DIR, HardwareProfile, load_profile  # noqa: E402
from simulator.published import Measurement  # noqa: E402
from simulator.published.latency import LatencyPlan, latency_ms, plan_latency  # noqa: E402
from simulator.roofline import efficiency  # noqa: E402

# What each published precision is in Edgescope's options. AI Hub's "float" is the fp32 model (run at fp16 on the
# HTP); w8a16 (int8 weights, 16-bit activations) has no int16 activation format here: fp16 activations with int8
# weights (`int8-dynamic` on the HTP: int8 weights read, 16-bit compute) is the nearest. Core ML's "w8" is the
# weight-only int8 model.
PRESETS: dict[str, str] = {"float": "fp32", "w8a8": "int8-static", "w8a16": "int8-dynamic", "fp16": "fp16",
                           "w8": "int8-dynamic",
                           # coremltools' palettization (k-means LUT weights, fp16 compute) and pruning (unstructured
                           # sparse fp16 weights) tables
                           **{f"lut{b}": f"palettize-{b}bit" for b in (2, 4, 6, 8)},
                           **{f"sparse{s}": f"prune-{s}" for s in (50, 75, 90)}}


@dataclass(frozen=True, slots=True)
class Param:
    unit: str
    field: str  # a Unit field (run_overhead_s, ...) or "efficiency"
    key: str = ""  # the efficiency key ("conv.int8")
    lo: float = 1e-3
    hi: float = 1.0
    # Where the fit starts: the profile's estimate before any fit. Fixed here, not read from the YAML, because
    # --write replaces the YAML's value with the fitted one, and folds started there would have seen every family.
    start: float | None = None

    @property
    def name(self) -> str:
        return f"{self.unit}.{self.field}" + (f".{self.key}" if self.key else "")


@dataclass(frozen=True, slots=True)
class FitSpec:
    target: str
    chip: str
    runtimes: tuple[str, ...]
    params: tuple[Param, ...]
    # False: the profile's figures are evaluated as they are (validation error only), not fitted again.
    refit: bool = True
    # Rows of another chip fitted as this one's, with the precisions where the two run alike ({chip: precisions}).
    stand_ins: Mapping[str, frozenset[str]] | None = None
    # Stand-in chips whose rows are predicted with their own peaks and memory ({chip: profile}; `chip_hardware`), the
    # other stand-ins with the target's profile as it is.
    chip_profiles: Mapping[str, str] | None = None


def _npu_params(unit: str, conv_apart: bool = False) -> tuple[Param, ...]:
    # Starts: the snapdragon-8g3.yaml estimates before the first fit. One conv efficiency for fp16 and int8: the
    # profile's int8 peak is twice its fp16 one, as AI Hub's w8a8 / float ratios of conv nets (0.43-0.59) have it;
    # fitted apart, the int8 one was poorly held when ResNets were held out (cross-validation within +-25%: 8 Gen 3
    # 73.5% -> 75.5%, 8 Elite 66.0% -> 74.0% with one figure).
    # LiteRT's QNN delegate (`conv_apart`): fitted apart they cross-validate better (with the float-graph term, in a
    # run that left ViT out too: 8 Gen 3 16.6% -> 9.0%, 71.8% -> 74.4% within +-25%; README).
    conv = ((Param(unit, "efficiency", "conv.fp16", start=0.3), Param(unit, "efficiency", "conv.int8", start=0.3))
            if conv_apart else (Param(unit, "efficiency", "conv.fp16+conv.int8", start=0.3),))
    return (*conv,
            Param(unit, "efficiency", "dwconv", start=0.05), Param(unit, "efficiency", "gemm+matmul", start=0.15),
            Param(unit, "efficiency", "default", 1e-4, start=0.05),
            Param(unit, "bandwidth_efficiency", "", 0.05, 1.0, 0.6),
            Param(unit, "run_overhead_s", "", 1e-6, 2e-3, 3e-4), Param(unit, "dispatch_overhead_s", "", 1e-8, 2e-5, 5e-6),
            # How fast activations move on chip: not published. (How much stays there is: the VTCM, 8 MB on both chips,
            # the YAML's V1; fitted before, at 8.8-20 MB, the 8 Gen 3's fit moved between 10 and 20 MB as rules changed.)
            Param(unit, "cache_bandwidth_bytes_per_s", "", 5e10, 5e12, 3e11))


# The CPU EP's int8 rate as AI Hub's ORT jobs run it (all cores, not the profile's one-thread estimate): the quantized
# MatMuls the QNN EP leaves to it (`quantized_ops_except`) set the time of the rows with CPU layers. Start: the
# profile's estimate before the first fit.
def _cpu_int8(start: float) -> Param:
    return Param("cpu", "peak_ops_per_s", "int8", 1e10, 1e13, start)


_FLOAT_GRAPH = Param("htp", "float_graph_run_s", "", 1e-6, 2e-3, 1e-4)
# The share of a task's weight time from memory on its critical path (roofline `weights_exposed_share`): the HTP
# DMAs weights from DDR into its VTCM while HMX / HVX compute on what is there (double-buffered weight loads in
# repo timxu826/htp-ops-lib, src/dsp/ops/mat_mul.c, `dma_issue_load_from_ddr`; llama.cpp's Hexagon backend overlaps
# HMX matmuls with its DMA stages, repo ggml-org/llama.cpp pull request #21554). Start: every weight exposed (1, the
# roofline's default). LiteRT QNN targets: cross-validated 8 Gen 3 73.2% -> 78.0% within +-25% with it (README).
_WEIGHTS_EXPOSED = Param("htp", "weights_exposed_share", "", 1e-3, 1.0, 1.0)

# The rate element-wise ops move their activations at, whatever their size (`kind_bandwidth_bytes_per_s`; start: the
# cache rate's start, as the ORT 8 Elite fit's): the HTP runs them on its vector units out of the VTCM, or in a conv's
# output stage, where the other kinds' activations share the cache rate. LiteRT QNN targets, with the channel-shuffle
# rule (simulator/device_facts.py "shuffle_layout"): cross-validated 8 Gen 3 13.3% -> 12.6% median, 75.6% -> 78.0%
# within +-25%; 8 Elite 13.8% -> 14.5%, 75.6% -> 80.5% (README). Without that rule it cross-validated worse (13.5%,
# 73.2% on the 8 Gen 3, 2026-12-03 h30device).
_ELEMENTWISE_RATE = Param("htp", "kind_bandwidth_bytes_per_s", "elementwise", 1e9, 1e13, 3e11)

# The rows that stand in for the A17 Pro's (coreml/apple-a17 below): the A16's fp16 and compressed weights (fp16
# compute); the A15's fp16 rows (SwiftFormer) with its own peaks and memory (apple-a15.yaml: the same 16-core Neural
# Engine at 15.8 against the A16's 17 TOPS, repo hollance/neural-engine, docs/supported-devices.md; LPDDR4X).
_AS_A17 = {"apple-a16": frozenset({"fp16", "w8", "lut2", "lut4", "lut6", "lut8", "sparse50", "sparse75"}),
           "apple-a15": frozenset({"fp16"})}

TARGETS: dict[str, FitSpec] = {s.target: s for s in (
    FitSpec("ort-qnn/snapdragon-8g3", "snapdragon-8g3", ("onnx",), (*_npu_params("htp"), _cpu_int8(2.112e11))),
    # The 8 Elite's element-wise ops move their activations at a rate of their own (`kind_bandwidth_bytes_per_s`;
    # start: the cache rate's start): cross-validated median 15.6% -> 14.5%, within +-25% 76.0% -> 78.0%. Not on the
    # 8 Gen 3, where it cross-validated worse (12.0% -> 12.7%, 81.6% -> 77.6%; MobileNetV2 float +27% -> +32%).
    FitSpec("ort-qnn/snapdragon-8-elite", "snapdragon-8-elite", ("onnx",),
            (*_npu_params("htp"), _cpu_int8(2.765e11),
             Param("htp", "kind_bandwidth_bytes_per_s", "elementwise", 1e9, 1e13, 3e11))),
    # LiteRT with the QNN delegate: AI Hub's TFLite jobs on the same phones. Every published TFLite job runs all its
    # layers on the NPU (aihub.csv), so the HTP's figures only, fitted to the TFLite rows of every architecture whose
    # TFLite file is built (litert-torch; 1-3 min each on the 2026-12-03 host, 6-19 on the one before).
    # AI Hub's float TFLite jobs run ~0.2-0.3 ms slower per run than the w8a8 ones (SqueezeNet 0.45 -> 0.15 ms on
    # the S24), whatever their work: the HTP's fixed cost per run of a float graph (`float_graph_run_s`, the totals
    # rule's float-graph term; README "Why float jobs cost more per run"). Start: 0.1 ms.
    FitSpec("litert-qnn/snapdragon-8g3", "snapdragon-8g3", ("tflite",),
            (*_npu_params("htp", True), _FLOAT_GRAPH, _WEIGHTS_EXPOSED, _ELEMENTWISE_RATE)),
    FitSpec("litert-qnn/snapdragon-8-elite", "snapdragon-8-elite", ("tflite",),
            (*_npu_params("htp", True), _FLOAT_GRAPH, _WEIGHTS_EXPOSED, _ELEMENTWISE_RATE)),
    # Public A17 Pro data besides the validation models: MobileViTv2 (fp16, w8, w8a8), Depth Anything small and DETR
    # (fp16; Apple's Hugging Face cards and Hugging Face's Core ML tutorial, corpus/hf_models.py). The A16's
    # (iPhone 14 Pro) fp16 and weight-compressed rows of the same coremltools tables stand in for the A17 Pro's:
    # the same 16-core ANE at fp16 (the tables' fp16 / weight-only columns of MobileViTv2 agree within 1-4%:
    # 1.38 / 1.36 ms, 1.43 / 1.37 ms), which adds MobileNetV3-small (fp16, 2-8 bit palettized, 50 / 75% sparse) as
    # a second family; not their W8A8 rows (the A17 Pro's int8 x int8 path is new: C4 in apple-a17.yaml).
    # Parameters (README "The A17 Pro's activations through memory"): the rate every task's activations move at on
    # the ANE (`kind_bandwidth_bytes_per_s` default; an element-wise op in a conv's output stage too, coreml_rules
    # "conv_stage"), the rate of its other element-wise ops, the share of weight traffic on the critical path (the
    # palettized / sparse rows: time flat from 2-bit to fp16 weights) and its memory rate, one GEMM / MatMul
    # efficiency (the transformers' Linears and attention products; start: the A14's fitted 0.29, apple-a14.yaml, the
    # same 16-core ANE design) and the per-run cost (the A16's MobileNetV3-small rows, 0.12-0.13 ms, bound it from
    # above; start 10 us). Cross-validated 6.5%, 94.7% within +-25% (19 rows, 5 families); the former two figures with
    # the on-chip rate by size 10.8%, 84.2%; the GEMM efficiency started at 0.5 7.0%, 84.2% (Depth Anything held out
    # -39%), not fitted (1) 14.3%, 84.2%; the per-task cost freed too 9.8%, 78.9% (it stays the YAML's; README).
    FitSpec("coreml/apple-a17", "apple-a17", ("coreml",),
            (Param("ane", "kind_bandwidth_bytes_per_s", "default", 1e10, 2e12, 2e11),  # starts: the 200 GB/s on-chip
             Param("ane", "kind_bandwidth_bytes_per_s", "elementwise", 1e10, 5e12, 2e11),  # estimate
             Param("ane", "weights_exposed_share", "", 1e-3, 1.0, 1.0),  # every weight shown, at 0.7 of the memory
             Param("ane", "bandwidth_efficiency", "", 0.05, 1.0, 0.7),
             Param("ane", "efficiency", "gemm+matmul", 0.02, 1.0, 0.29),
             Param("ane", "run_overhead_s", "", 1e-6, 2e-4, 1e-5)),
            stand_ins=_AS_A17, chip_profiles={"apple-a15": "apple-a15"}),
    # The A14's ANE from the papers' iPhone 12 tables (5 families, fp16 only): the NPU's free figures, no int8 one.
    FitSpec("coreml/apple-a14", "apple-a14", ("coreml",),
            (Param("ane", "efficiency", "conv", start=0.3), Param("ane", "efficiency", "dwconv", start=0.3),
             Param("ane", "efficiency", "gemm+matmul", start=0.3), Param("ane", "efficiency", "default", 1e-4, start=0.3),
             Param("ane", "bandwidth_efficiency", "", 0.05, 1.0, 0.7),
             Param("ane", "run_overhead_s", "", 1e-6, 2e-3, 2e-4), Param("ane", "dispatch_overhead_s", "", 1e-8, 2e-5, 5e-6),
             Param("ane", "onchip_memory_bytes", "", 2 ** 20, 2 ** 25, 4194304),
             Param("ane", "cache_bandwidth_bytes_per_s", "", 5e10, 5e12, 2e11))),
)}

Graphs = Mapping[str, tuple[Any, Any]]  # model id -> (source graph, compiled graph)

def rows_for(spec: FitSpec, rows: Sequence[Measurement] | None = None) -> list[Measurement]:
    """The target's rows: its chip's, and its stand-in chips' in the precisions they stand in for (fitted rows
    only: a validation model is validated on the target's own chip)."""
    extra = spec.stand_ins or {}
    archs = published.architectures()
    return [r for r in (rows if rows is not None else published.load())
            if r.runtime in spec.runtimes and r.precision in PRESETS
            and (r.chip == spec.chip or (r.precision in extra.get(r.chip, ()) and not archs[r.model].validation))]


# Unit fields that are {key: figure} maps: a Param with key "*" scales every figure of the map.
_MAPS = ("efficiency", "peak_ops_per_s", "kind_overhead_s", "kind_bandwidth_bytes_per_s")
# Maps whose Param key "a+b" sets one figure for each of its keys (the others replace the unit's map whole).
_SHARED_KEYS = ("efficiency", "kind_overhead_s")


def _value(hw: HardwareProfile, p: Param) -> float:
    u = next(u for u in hw.units if u.name == p.unit)
    if p.field in _MAPS and p.key == "*":
        return 1.0  # a scale on every figure of the map
    if p.field == "peak_ops_per_s":
        return u.peak_ops_per_s[p.key]
    if p.field == "kind_overhead_s":
        return u.kind_overhead_s.get(p.key.split("+")[0], p.lo)
    if p.field == "kind_bandwidth_bytes_per_s":
        return u.kind_bandwidth_bytes_per_s.get(p.key, u.cache_bandwidth_bytes_per_s)  # small tasks' rate
    if p.field == "efficiency":
        kind, _, tag = p.key.split("+")[0].partition(".")
        return u.efficiency.get(p.key, efficiency(u, kind, tag) if tag else u.efficiency.get(kind, u.efficiency["default"]))
    return float(getattr(u, p.field))


def overrides(params: Sequence[Param], x: Sequence[float], base: HardwareProfile | None = None) -> dict[str, Any]:
    """with_overrides() input for parameter values `x`. Key "*" of a map field (efficiency, peak_ops_per_s) scales
    every figure of the unit's map (as `base` has them; efficiency keys fitted on their own are set after it)."""
    units: dict[str, dict[str, Any]] = {}
    for p, v in sorted(zip(params, x), key=lambda pv: pv[0].key != "*"):
        u = units.setdefault(p.unit, {})
        if p.field in _MAPS and p.key == "*":
            assert base is not None, "a '*' scale needs the base profile"
            unit = next(un for un in base.units if un.name == p.unit)
            cap = 1.0 if p.field == "efficiency" else float("inf")  # a share of peak stays <= 1
            u.setdefault(p.field, {}).update({k: min(cap, e * float(v)) for k, e in getattr(unit, p.field).items()})
        elif p.field in _SHARED_KEYS:  # "gemm+matmul": one figure for both kinds
            u.setdefault(p.field, {}).update({k: float(v) for k in p.key.split("+")})
        elif p.field in _MAPS:  # with_overrides replaces other maps whole: start from the unit's
            assert base is not None, f"a {p.field} figure needs the base profile"
            unit = next(un for un in base.units if un.name == p.unit)
            u.setdefault(p.field, dict(getattr(unit, p.field)))[p.key] = float(v)
        else:
            u[p.field] = float(v)
    return {"units": units}


@dataclass
class Prediction:
    row: Measurement
    latency_ms: float
    cpu_tasks: int  # tasks (not folded) placed on the CPU fallback
    tasks: int

    @property
    def error_pct(self) -> float:
        return (self.latency_ms / self.row.latency_ms - 1) * 100


Plans = Mapping[tuple[str, str], LatencyPlan]  # (model id, preset) -> its planned latency


def make_plans(spec: FitSpec, rows: Sequence[Measurement], graphs: Graphs, base: HardwareProfile) -> dict:
    """Each (model, preset) of `rows` planned once (simulator/published/latency.py): a fit's many profiles differ
    in figures only, so every evaluation after this one reuses the paths."""
    t = get_target(spec.target)
    return {(m, p): plan_latency(graphs[m][1], t, base, p, source=graphs[m][0])
            for m, p in sorted({(r.model, PRESETS[r.precision]) for r in rows})}


def chip_hardware(hw: HardwareProfile, profile: str) -> HardwareProfile:
    """`hw` (the target's profile, fitted figures applied) with another chip's own peaks and memory bandwidth: that
    chip as the target's fit has it (the same structure, so the target's planned paths hold)."""
    own = load_profile(profile)
    if own.structure() != hw.structure():
        raise ValueError(f"{profile}: not the structure of {hw.name} (its rows cannot use that target's plans)")
    return hw.with_overrides({"dram_bandwidth_bytes_per_s": own.dram_bandwidth_bytes_per_s,
                              "units": {u.name: {"peak_ops_per_s": dict(u.peak_ops_per_s)} for u in own.units}})


def predict(spec: FitSpec, rows: Sequence[Measurement], plans: Plans, hw: HardwareProfile) -> list[Prediction]:
    """Each row predicted with profile `hw` (the sweep's total for its preset: simulator.published.latency); a
    `chip_profiles` chip's with its peaks and memory."""
    own = {c: chip_hardware(hw, prof) for c, prof in (spec.chip_profiles or {}).items()
           if any(r.chip == c for r in rows)}
    cpu = len(hw.units) - 1
    out = []
    for r in rows:
        lp = plans[r.model, PRESETS[r.precision]]
        out.append(Prediction(r, latency_ms(lp, own.get(r.chip, hw)), lp.tasks_on(cpu), int(lp.live.sum())))
    return out


# Weight of the prior: each parameter's distance (log units) from its start counts as a residual of this size per
# unit. The parameters trade off (efficiencies against overheads and bandwidth); without it a fold that holds out
# the one family a figure is seen in drifts to a bound (ViT held out: conv efficiencies at 1.0, dispatch at 0, and
# ViT +196%). 0.1: moving a figure e-fold costs what one row 10% off does.
PRIOR = 0.1


def fit(spec: FitSpec, rows: Sequence[Measurement], plans: Plans, base: HardwareProfile,
        max_nfev: int = 15, prior: float = PRIOR) -> np.ndarray:
    """Least squares on log(predicted / published) over `rows`, parameters in log space within their bounds,
    started from each parameter's `start` (else the profile's value; deterministic: no random start), with a weak
    prior at the start (`prior`)."""
    from scipy.optimize import least_squares

    params = spec.params
    lo = np.log([p.lo for p in params])
    hi = np.log([p.hi for p in params])
    x0 = np.clip(np.log([p.start if p.start is not None else _value(base, p) for p in params]), lo + 1e-9, hi - 1e-9)
    pub = np.log([r.latency_ms for r in rows])

    def resid(z: np.ndarray) -> np.ndarray:
        hw = base.with_overrides(overrides(params, np.exp(z), base))
        pred = np.array([p.latency_ms for p in predict(spec, rows, plans, hw)])
        return np.concatenate([np.log(np.maximum(pred, 1e-9)) - pub, prior * (z - x0)])

    r = least_squares(resid, x0, bounds=(lo, hi), loss="soft_l1", f_scale=0.15, diff_step=0.02,
                      max_nfev=max_nfev, x_scale=1.0)
    return np.exp(r.x)


def summary(preds: Sequence[Prediction]) -> dict[str, Any]:
    errs = [abs(p.error_pct) for p in preds]
    if not errs:
        return {"n_points": 0, "n_models": 0}
    return {"median_pct": round(statistics.median(errs), 1),
            "within25_pct": round(100 * sum(e <= 25 for e in errs) / len(errs), 1),
            "n_points": len(errs), "n_models": len({p.row.model for p in preds})}


def placement(preds: Sequence[Prediction]) -> dict[str, Any]:
    """Rows with layer counts: the prediction puts tasks on the CPU exactly when the publisher's counts do."""
    with_counts = [p for p in preds if p.row.layers is not None]
    agree = [p for p in with_counts if (p.cpu_tasks > 0) == (p.row.layers["cpu"] > 0)]  # type: ignore[index]
    return {"agree": len(agree), "n": len(with_counts),
            "pct": round(100 * len(agree) / len(with_counts), 1) if with_counts else None}


def run(spec: FitSpec, rows: Sequence[Measurement], plans: Plans, max_nfev: int = 15,
        log: Any = print, cv_nfev: int | None = None, prior: float = PRIOR) -> dict[str, Any]:
    """Cross-validation, final fit and validation for one target. Returns the report (JSON-able)."""
    archs = published.architectures()
    base = load_profile(get_target(spec.target).profile, get_target(spec.target).backend)
    rows = [r for r in rows if (r.model, PRESETS[r.precision]) in plans]
    train = [r for r in rows if not archs[r.model].validation]
    val = [r for r in rows if archs[r.model].validation]
    families = sorted({archs[r.model].family for r in train})
    held: list[Prediction] = []
    if len(families) >= 2 and spec.refit:
        for fam in families:
            fit_rows = [r for r in train if archs[r.model].family != fam]
            x = fit(spec, fit_rows, plans, base, cv_nfev or max_nfev, prior)
            hw = base.with_overrides(overrides(spec.params, x, base))
            got = predict(spec, [r for r in train if archs[r.model].family == fam], plans, hw)
            held += got
            log(f"  fold {fam}: {summary(got)}", flush=True)
    x = fit(spec, train, plans, base, max_nfev, prior) if train and spec.refit else np.array([_value(base, p)
                                                                                       for p in spec.params])
    # Not refitted: the profile as the YAML has it (overrides at the parameters' current values are not the identity:
    # a kind_bandwidth_bytes_per_s figure the unit lacks would be set to its small tasks' rate).
    hw = base.with_overrides(overrides(spec.params, x, base)) if spec.refit else base
    val_preds = predict(spec, val, plans, hw)
    train_preds = predict(spec, train, plans, hw)
    before = predict(spec, val, plans, base)
    return {
        "target": spec.target, "chip": spec.chip, "runtimes": list(spec.runtimes), "refit": spec.refit,
        "params": {p.name: float(v) for p, v in zip(spec.params, x)},
        "params_before": {p.name: p.start if p.start is not None else _value(base, p) for p in spec.params},
        "families": families, "train_rows": len(train),
        "heldout": summary(held) if held else None,
        "training": summary(train_preds),
        "validation": summary(val_preds),
        "validation_rows": [{"model": p.row.model, "precision": p.row.precision, "runtime": p.row.runtime,
                             "device": p.row.device, "published_ms": p.row.latency_ms,
                             "predicted_ms": round(p.latency_ms, 3), "error_pct": round(p.error_pct, 1),
                             "before_ms": round(b.latency_ms, 3)}
                            for p, b in zip(val_preds, before)],
        "placement": placement(held + val_preds if held else train_preds + val_preds),
        "heldout_rows": [{"model": p.row.model, "family": archs[p.row.model].family, "precision": p.row.precision,
                          "published_ms": p.row.latency_ms, "predicted_ms": round(p.latency_ms, 3),
                          "error_pct": round(p.error_pct, 1), "cpu_tasks": p.cpu_tasks, "tasks": p.tasks,
                          "published_layers": p.row.layers} for p in held],
    }


# ---------------------------------------------------------------------------------------------------- writing

def _fmt(v: float) -> str:
    return f"{v:.4g}" if 1e-3 <= abs(v) < 1e4 else f"{v:.4e}"


def write_yaml(profile: str, params: Mapping[str, float], source: str) -> None:
    """Replace each fitted figure's line in simulator/hardware/<profile>.yaml (comments and order kept); an
    efficiency key the file lacks is added under the unit's `efficiency:`."""
    path = HARDWARE_DIR / f"{profile}.yaml"
    lines = path.read_text().splitlines()
    for name, v in params.items():
        unit, field, *key = name.split(".", 2)
        start = next(i for i, ln in enumerate(lines) if re.fullmatch(rf"\s*- name: {re.escape(unit)}\s*", ln))
        end = next((i for i in range(start + 1, len(lines)) if re.match(r"\s*- name: ", lines[i])
                    or (lines[i] and not lines[i].startswith(" "))), len(lines))
        figure = f"{{value: {_fmt(v)}, source: \"{source}\"}}"
        if field in _MAPS:
            eff = next((i for i in range(start, end) if lines[i].strip() == f"{field}:"), None)
            if eff is None:  # a map the unit lacks (kind_bandwidth_bytes_per_s): before its bandwidth_efficiency
                eff = next(i for i in range(start, end) if lines[i].strip().startswith("bandwidth_efficiency:"))
                lines.insert(eff, lines[eff][: len(lines[eff]) - len(lines[eff].lstrip())] + f"{field}:")
                end += 1
            indent = " " * (len(lines[eff]) - len(lines[eff].lstrip()) + 2)
            stop = next((i for i in range(eff + 1, end) if not lines[i].startswith(indent)), end)
            hit = [i for i in range(eff + 1, stop) if lines[i].strip().startswith(f"{key[0]}:")]
            new = f"{indent}{key[0]}: {figure}"
            if hit:
                lines[hit[0]] = new
            else:
                lines.insert(eff + 1, new)
        else:
            i = next((i for i in range(start, end) if lines[i].strip().startswith(f"{field}:")), None)
            if i is None:  # a figure the unit lacks (float_graph_run_s): after its run_overhead_s
                i = next(i for i in range(start, end) if lines[i].strip().startswith("run_overhead_s:")) + 1
                lines.insert(i, lines[i - 1][: len(lines[i - 1]) - len(lines[i - 1].lstrip())])
                end += 1
            indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
            lines[i] = f"{indent}{field}: {figure}"
    path.write_text("\n".join(lines) + "\n")
    load_profile.cache_clear()
    load_profile(profile)  # still parses


def heldout_entry(rep: Mapping[str, Any]) -> dict[str, Any]:
    """What a label shows: cross-validated error, else the validation models' error (never fitted)."""
    cv = rep["heldout"]
    entry: dict[str, Any] = {"runtimes": rep["runtimes"], "families": len(rep["families"]),
                             "refit": rep.get("refit", True)}
    if cv:
        entry.update(kind="leave-one-family-out", **cv)
    elif rep["validation"]["n_points"]:
        entry.update(kind="validation models only", **rep["validation"])
    entry["validation"] = rep["validation"]
    entry["placement"] = rep["placement"]
    return entry


# ---------------------------------------------------------------------------------------------------- report

def print_report(rep: Mapping[str, Any]) -> None:
    print(f"\n== {rep['target']} ({rep['chip']}, runtime {', '.join(rep['runtimes'])}): "
          f"{rep['train_rows']} fitted rows, {len(rep['families'])} families")
    h = rep["heldout"]
    if h:
        print(f"cross-validated (leave one family out): median |error| {h['median_pct']}%, "
              f"{h['within25_pct']}% within +-25%, n = {h['n_points']} points / {h['n_models']} models")
    else:
        print("cross-validation: not possible (fewer than 2 families of public data besides the validation models)"
              if rep.get("refit", True) else "not refitted (FitSpec.refit): the profile's figures evaluated as they are")
    t = rep["training"]
    if t["n_points"]:
        print(f"training fit: median |error| {t['median_pct']}%, {t['within25_pct']}% within +-25%")
    pl = rep["placement"]
    print(f"placement (CPU layers or none, vs published counts): {pl['agree']}/{pl['n']} agree")
    print("validation (never fitted):")
    print(f"  {'model':<16} {'precision':<9} {'runtime':<8} {'device':<18} {'published':>9} {'predicted':>9} "
          f"{'error':>7} {'before':>8}")
    for v in rep["validation_rows"]:
        print(f"  {v['model']:<16} {v['precision']:<9} {v['runtime']:<8} {v['device']:<18} {v['published_ms']:>9.3f} "
              f"{v['predicted_ms']:>9.3f} {v['error_pct']:>+6.1f}% {v['before_ms']:>8.3f}")
    print("fitted:", ", ".join(f"{k}={_fmt(v)} (was {_fmt(rep['params_before'][k])})" for k, v in rep["params"].items()))
    print_residuals(rep.get("heldout_rows") or [])


def print_residuals(rows: Sequence[Mapping[str, Any]]) -> None:
    """Held-out errors by family and by precision (median signed error, points), then the worst rows."""
    for key in ("family", "precision"):
        groups: dict[str, list[float]] = {}
        for r in rows:
            groups.setdefault(str(r.get(key)), []).append(r["error_pct"])
        print(f"held out by {key}: " + ", ".join(f"{k} {statistics.median(v):+.0f}% ({len(v)})"
                                                for k, v in sorted(groups.items())))
    worst = sorted(rows, key=lambda r: -abs(r["error_pct"]))[:8]
    print("worst held out: " + "; ".join(
        f"{r['model']} {r['precision']} {r['published_ms']}->{r['predicted_ms']} ms ({r['error_pct']:+.0f}%, CPU tasks "
        f"{r.get('cpu_tasks')}, published CPU layers {(r.get('published_layers') or {}).get('cpu', '?')})"
        for r in worst))


def load_plans(spec: FitSpec, rows: Sequence[Measurement], cache: Path, built_only: bool = False
               ) -> dict[tuple[str, str], LatencyPlan]:
    """Every (model, preset) of `rows` planned for the target (benchmarks/published_models.py: built, compiled and
    planned once per code version, then read from the cache). `built_only`: leave out the architectures whose
    model file (ONNX export, TFLite conversion) is not built yet."""
    from benchmarks.published_models import is_built, plans

    archs = published.architectures()
    presets: dict[str, set[str]] = {}
    for r in rows:
        presets.setdefault(r.model, set()).add(PRESETS[r.precision])
    out = {}
    for m in sorted(presets):
        if built_only and not is_built(archs[m], spec.target, cache):
            print(f"  {m}: left out (not built; --built-only)")
            continue
        try:
            got = plans(archs[m], spec.target, cache)
        except Exception as e:  # noqa: BLE001  (a model that cannot be rebuilt or compiled is left out, said so)
            print(f"  {m}: left out ({e})")
            continue
        lost = lost_layers(m, rows, got)
        if lost:
            print(f"  {m}: left out ({lost})")
            continue
        out.update({(m, p): got[p] for p in presets[m]})
    return out


# A converted graph with fewer tasks than this share of the layers of the model's published float job has lost part
# of the network (LeViT-128S with its zero initial weights, now randomised: 74 operators, 2 of its 11 attention blocks,
# 7.6 MB of its 31 MB of weights, where AI Hub's TFLite job has 280 layers: 0.26; 334 operators randomised). The other 29 conversions have 0.8-1.3x, but ViT-B/16 0.43:
# a whole model (12 attention blocks, 346 MB), its LayerNorms and attention in fewer operators than AI Hub's job.
MIN_TASK_SHARE = 0.35


def lost_layers(model: str, rows: Sequence[Measurement], plans: Mapping[str, LatencyPlan]) -> str | None:
    """Why the model's built graph cannot stand for its published jobs, or None: fewer tasks than MIN_TASK_SHARE of
    the layers its published float job counts."""
    float_layers = [r.layers["total"] for r in rows if r.model == model and r.precision == "float" and r.layers
                    and r.layers.get("total")]
    tasks = len(plans["fp32"].works) if "fp32" in plans else None
    if not float_layers or tasks is None or tasks >= MIN_TASK_SHARE * max(float_layers):
        return None
    return (f"its built graph has {tasks} tasks where the published float job counts {max(float_layers)} layers: the "
            f"conversion lost part of the model")


def main(argv: list[str] | None = None) -> int:
    from benchmarks.published_models import DEFAULT_CACHE

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", action="append", choices=list(TARGETS))
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--max-nfev", type=int, default=15, help="least-squares iterations of the final fit")
    ap.add_argument("--cv-nfev", type=int, default=8, help="iterations of each cross-validation fold's fit")
    ap.add_argument("--json", type=Path, help="write the full reports here")
    ap.add_argument("--built-only", action="store_true",
                    help="leave out architectures whose model file is not built yet (a TFLite conversion takes minutes)")
    ap.add_argument("--write", action="store_true", help="write fitted figures to the YAML and heldout.json")
    ap.add_argument("--refit", action="store_true",
                    help="fit and cross-validate targets marked not to be refitted (FitSpec.refit) too; not --write")
    ap.add_argument("--from-json", type=Path, action="append",
                    help="reports of earlier runs (--json) to print and --write instead of fitting again")
    a = ap.parse_args(argv)
    if a.refit and a.write:
        ap.error("--refit is for reading the cross-validation of targets not refitted; it does not --write")
    reports = [rep for path in a.from_json or [] for rep in json.loads(path.read_text())]
    for rep in reports:
        print_report(rep)
    for name in [] if a.from_json else a.target or list(TARGETS):
        spec = dataclasses.replace(TARGETS[name], refit=True) if a.refit else TARGETS[name]
        rows = rows_for(spec)
        t0 = time.time()
        plans = load_plans(spec, rows, a.cache, a.built_only)
        t1 = time.time()
        rep = run(spec, rows, plans, a.max_nfev, cv_nfev=a.cv_nfev)
        print_report(rep)
        print(f"(models planned or read in {t1 - t0:.1f} s, fitted in {time.time() - t1:.1f} s; CPU "
              f"{time.process_time():.1f} s so far)")
        reports.append(rep)
    if a.json:
        a.json.write_text(json.dumps(reports, indent=1))
    if a.write:
        held = published.heldout_all()
        for rep in reports:
            n, m = rep["train_rows"], len(rep["families"])
            src = (f"fitted by benchmarks/device_fit.py to simulator/published ({n} {rep['chip']} "
                   f"{'/'.join(rep['runtimes'])} rows, {m} families; MobileNetV2/ResNet-50 not fitted)")
            t = get_target(rep["target"])
            spec = TARGETS[rep["target"]]
            ov = overrides(spec.params, [rep["params"][p.name] for p in spec.params], load_profile(t.profile, t.backend))
            # A map other than efficiency comes whole from overrides(): only its fitted keys are written.
            fitted = {(p.unit, p.field, p.key) for p in spec.params}
            flat = {f"{u}.{f}" + (f".{k}" if f in _MAPS else ""): v
                    for u, d in ov["units"].items() for f, val in d.items()
                    for k, v in (val.items() if f in _MAPS else [("", val)])
                    if f in _SHARED_KEYS or f not in _MAPS or {(u, f, k), (u, f, "*")} & fitted}
            if rep.get("refit", True):
                write_yaml(t.profile, flat, src)
            held[rep["target"]] = heldout_entry(rep)
        published.HELDOUT_PATH.write_text(json.dumps(held, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
