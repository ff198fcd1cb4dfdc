"""Calibration's fit: the host profile's figures that make the sweep's own prediction of each bench model equal its
measured time (simulator/calibration_bench.py builds the models, calibration_timing.py times them).

Every figure is fitted through the same code as every prediction (simulator.sweep evaluating simulator.roofline's
formulas), in stages: the fixed costs and bandwidths from element-wise chains, an efficiency per kind and path,
then efficiency and fixed setups jointly for paths measured at 3+ shapes, the decode rates, the fixed setup per
kind from the small cases and last the data movement of a mixed graph.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from compiler.graph import Graph
from simulator.calibration_bench import R, Bench, Case
from simulator.calibration_alias import fit_alias
from simulator.calibration_beyond import fit_beyond
from simulator.calibration_eviction import eviction_fit
from simulator.calibration_index import fit_index
from simulator.calibration_inner import fit_inner
from simulator.calibration_packb import fit_packb
from simulator.calibration_packed import fit_packed
from simulator.calibration_llc import fit_llc
from simulator.calibration_nhwc import fit_nhwc
from simulator.calibration_rnn import fit_rnn
from simulator.calibration_sense import unpriced
from simulator.calibration_spans import fit_spans
from simulator.calibration_subnormal import fit_subnormal
from simulator.costs import kind_of
from simulator.host_machine import machine_overrides
from simulator.ort_fp16 import SHARED_WEIGHTS_KEY
from simulator.calibration_timing import machine, profiler_overhead
from simulator.conversions import cast_element
from simulator.profiles import HardwareProfile, load_profile
from simulator.sweep import sweep
from simulator.totals import totals

# The cache's format: bump it when the bench, the fit or the cost formulas change, so caches refit.
CACHE_VERSION = 106  # 29: the machine's own facts (peaks, L2, description); 30: weights read from memory;
# 31: static int8 depthwise convs on MLAS's generic kernel (dwconv.int8gen); 32: static int8 convs as per-group GEMMs
# (convgemm.int8); 33: fp16 depthwise Convs in NCHW (dwconvnchw.cast16nchw); 34: weight eviction fitted; 35:
# activations' own rates (elementwise.fp32.<op>); 36: LRN's (norm.fp32.LRN); 37: ReduceL2's (reduce.fp32.ReduceL2); 38:
# Transposes ORT walks element by element (walk.fp32); 39: linear Resizes (resize.fp32); 40: LayerNorm rows
# (costs.LAYERNORM_ROW_FLOPS, a 32-wide case) 41: dynamic int8's DynamicQuantizeLinear / Cast / Mul / Add passes priced
# at the fp32 element-wise rate; 42: 5x5 depthwise ConvInteger cases; 43: grouped NCHW Convs of wide groups, 1x1
# (gconvnchw.nchw's MAC rate) 44: grouped 1x1 NCHW Convs pay SGEMM columns padded to 16 (Work.sgemm_macs) 45: static
# int8 SiLU (QLinearSigmoid + QLinearMul: elementwise.int8.QuickGelu) 46: grouped 1x1 NCHW Convs' SGEMM columns padded
# to the machine's block, 8 with AVX2 (Unit.sgemm_column_block) 47: NCHW-path cases fitted only where ORT leaves them in
# NCHW; grouped cases of widths 12 and 132 48: static int8 element-wise kernels broadcasting a per-channel operand over
# NHWC data, a cost per call (.span) 49: fp32 5x5 depthwise cases in dwconv.fp32's median 50: fp32 NCHW depthwise cases
# of 5x5-9x9 kernels, with a cost per im2col row (dwconvnchw.nchw.im2col.row) 51: static int8 stems' own figures
# (stemgemm.int8), apart from grouped convs' (convgemm.int8); one-row static int8 GEMMs' (gemm.int8gemv); raw timings
# kept 52: layout fitted jointly (efficiency, setup, output bytes beyond the L2: layout.fp32.spill) on mixed graphs with
# MixNet-shaped channel-group blocks 53: fp16's NCHW depthwise convs at stride 2 (cases and a cost per strided im2col
# element: *.im2col.strided); dynamic int8 depthwise ConvIntegers' cost per im2col row fitted
# (dwconv.int8dyn.im2col.row) 54: GlobalAveragePools ORT leaves in NCHW, a rate of their own
# (poolnchw.fp32.GlobalAveragePool) 55: dynamic int8 Convs pack their weights once per 256 output pixels
# (roofline.QGEMM_STRIDE_N); stride-2 ConvInteger cases and their strided im2col figure (<kind>.int8dyn.im2col.strided)
# 56: a cost per run a Transpose copies (layout.fp32.run, three head-transpose cases); recurrent MACs priced by reads
# 57: fp32 stems (3-channel convs) in the bench, convsmall.fp32 fitted jointly with a setup per task (JOINT_FP32) 58:
# 3-D convs' own figures (conv3d.nchw: calibration_video); walks fitted jointly with a cost per byte beyond the L2 of
# those that miss the cache (walk.fp32.far) 59: weights evicted by the run's own traffic beyond the L2 (reuse-spill
# cases, llc_spill_*_bytes) 60: dynamic int8 stems' own figures (stemgemm.int8dyn) and ResNet-shaped 3x3 ConvInteger
# cases (calibration_int8dyn); the Cast / Mul / Add after a ConvInteger cost their bytes alone 61: index ops' cost per
# lookup fitted (layout.fp32.index.<op>: Expand per memcpy call, ScatterND per index tuple); blocked Transposes and
# NCHWc reorders beyond the L2 (layout.fp32.far): PVT-shaped MLP blocks among the mixed graphs 62: nearest Resizes off
# ORT's 2x copy on its generic kernel (nearest.fp32: a by-3 case) 63: STFT and GridSample count their work
# (simulator/other_ops.py); float element-wise ops over short broadcast spans and Reduce* over short kept blocks pay a
# cost per kernel call (simulator/ort_broadcast.py) 64: a Gemm's bias pass over its output (costs.Work.bias_pass): the
# mixed graphs' Linear layers refit layout.fp32 65: fp16 constants inside If / Loop / Scan bodies cast at every
# execution (control_flow.fp16_body_casts), priced from the fitted dispatch, weight-streaming and cache figures 66:
# under fp16 a Conv's fused activation without an fp16 kernel (Relu...) stays fused (ort_fp16.FP16_FUSION_KEPT): the
# fp16 convact cases (Relu and Clip alternating) refit conv.cast16 67: a TFLite EMBEDDING_LOOKUP's table is the option's
# weight (costs.Work.lookup_table): sized as ai-edge-quantizer writes it, the int8 hybrid lookup at layout.hybrid.out
# per element (litert_paths.lookup_path); no figure refitted 68: broadcast spans under 128 elements and innermost reduce
# rows under 64 pay a call each (ort_broadcast); Softplus fits its own rate (case softplus-1x65536) 69: int8 Convs and
# fp16's NCHW Convs pay the model's own channels, not ORT's NCHWc filter padded to whole blocks
# (conv_work.nchwc_padding, roofline.Rates.plain) 70: bicubic Resizes priced by their interpolation-cache misses and
# output elements (kind cubic, four cases) 71: fp32 <-> fp16 Casts at their own rate (quant.fp32.Cast: cast-* cases):
# fp16's conversions (simulator.conversions) 72: an uploaded dynamic-int8 .tflite is the int8-dynamic preset as it is
# (sweep.native_preset), its int8 EMBEDDING_LOOKUP table a lookup table, its quantization records out of the overhead
# (tflite_ops); ORT's NCHWc Upsample (a linear Resize after an NCHWc Conv) fits its own rate, resize.fp32.Upsample
# (upsample-nchwc-* cases) 73: the CPU's speed probe around the case timings (`speed_probe`), which host profiles are
# held against; none refitted 74: ORT's CPU ConvTranspose at its own figures (deconv.fp32, .col2im per column element,
# .out, .spill; deconv-* cases) 75: an fp16 Gemm / MatMul whose weight is shared keeps a run-time Cast and packs it
# every run (gemm.cast16.weights, gemm-shared-* cases; ort_fp16.fp16_shared_casts) 76: a Gelu under static int8 at its
# own figure (elementwise.int8.Gelu, gelu-int8-* case: the quantizer's split of it); a fusion static int8 breaks
# (SkipLayerNormalization, Gelu) keeps no measured fp32 time 77: an upload's own ConvInteger / MatMulInteger /
# DynamicQuantizeMatMul at dynamic int8's figures (ORT_INT8DYN_NATIVE) 78: a reuse case's share uncertain by at most 0.5
# (SHARE_SIGMA_MAX): the longest case counts in the time ramp's fit 79: an NCHWc Conv's MACs count its padded filter's
# every output row (conv_work.nchwc_output_padding) 80: reuse cases after runs of 36 and 48 convs too
# (calibration_models.REUSE_CONVS): the time ramp pinned at 3-8 ms 81: a recurrent op's reads of R at a rate fitted on
# GRU / LSTM cases (matmul.fp32.reread, calibration_rnn) 82: subnormals a -100 attention mask makes
# (simulator/subnormals.py): <kind>.fp32.subnormal, calibration_subnormal 83: 7x7 static int8 depthwise cases on the
# symmetric kernel beside the 3x3 ones (dwconvact-*-7x7: dwconv.int8) 84: the blocked swaps inside a Softmax over an
# inner axis (layout.fp32.inner, calibration_inner) 85: the bytes of weights the last-level cache keeps between runs,
# from a ladder of chains (calibration_llc) 86: static int8 1x1 Convs on a one-pixel map (squeeze-excite) at their own
# figures (conv.int8px, calibration_se) 87: a static int8 file's ReduceMean over H, W of NHWC data at its own figure
# (reduce.int8.nhwc, calibration_nhwc)
# 88: conv.int8px fitted on squeeze-excite blocks (pool, one-pixel convs, gate), not on chains of the convs alone
# 89: ORT's fp32 Softmax pays a cost per row, one per row off a cache line and its rows padded to whole registers
#     (softmax.fp32.row, .tap; softmax_rows): rows of 49, 196 and 16 beside the rows of 128, fitted jointly; a bicubic
#     Resize's misses weighted by the fraction maps they spread over (resizes.CUBIC_MAPS_FULL)
# 90: windowed MaxPool / AveragePool ORT leaves in NCHW, rates of their own (poolnchw.fp32.MaxPool / .AveragePool)
# 91: static int8 depthwise convs on MLAS's generic kernel priced in 16-lane blocks and scalar channel-taps
#     (dwconv.int8gen.scalar: conv_work.generic_depthwise_lanes), four more dwconvact-gen-* cases
# 92: weights a several-row fp32 SGEMM reads from memory at a figure of their own (calibration_packed); 93: static
#     int8 QLinearConcat's table lookups (calibration_nhwc); 94: its and Split's call per row (qcall-*, ort_int8_rows)
# 95: a non-constant B MLAS packs on every run, per element and per call, fitted ahead of the efficiencies (packb)
# 96: fp32 NCHW depthwise convs at stride 2 (dwconvact-nchw-*-s2, dwconvnchw.nchw.im2col.strided) 97: calibration_sense
# 98: ORT's fp32 element-wise bytes beyond the L2 at a figure of their own (elementwise.fp32.beyond_l2, calibration_beyond)
# 99: a joint fit's setups of 0 written where its cases pay them (_fit_joint), not left to the profile's estimate
# (stemgemm.int8.tap); static int8 stems' cost per output element (stemgemm.int8.out)
# 100: fp16 stems behind a shared bias's Cast (ORT's plain NCHW Conv) at figures of their own (convsmall.cast16nchw,
# stemact-shared-* cases) 101: a fifth static int8 stem, 5x5 (stemact-3x24-160-5x5): stemgemm.int8's five figures
# 102: an fp32 SGEMM whose rows of A share one L1 set (K a multiple of 1024) pays a cost per MAC (gemm.fp32.alias:
# sgemm_alias, calibration_alias's gemm-alias-* cases against twins one line longer)
# 103: a Reduce*'s cost per short kept block fitted per machine (reduce.fp32.span, calibration_spans); GatherND's
# cost per index tuple (layout.fp32.index.GatherND, calibration_index)
# 104: static int8 1x1 unit-stride convs on the symmetric kernel at figures of their own (conv.int8pw, ort_int8_dense;
#     two more 1x1 cases); dense 1x1 convs off its alignment (qdense-* cases) fitted with the grouped ones (convgemm.int8)
# 105: ONNX STFT at a rate of its own (other.fp32.STFT: a radix-2 and a Bluestein case; other_ops counts Bluestein)
# 106: three many-row fp32 gemm cases (gemm-197x384, -401x192, -256x512: calibration_bench.MANY_ROWS), so the median
# that sets gemm.fp32 is a ViT's rate, not the few-row weight-streaming cases'

# Paths whose im2col cost per row (Work.im2col_rows) is fitted with the rest: fp16 depthwise Convs in NCHW, where 5x5
# kernels on small maps copy many short rows (single-op chains on a Zen 5: per channel + per element alone left
# 5x5 at 7-14 px -15..-18%, with the row term all six 3x3 / 5x5 shapes within 4%). Elsewhere the row cost stays the
# profile's measured figure (ConvInteger's) or 0. fp32's NCHW depthwise path runs the same im2col + per-group SGEMM:
# its 5x5-9x9 cases fit the row cost too. So do dynamic int8's depthwise ConvIntegers (ORT's Im2col<uint8_t>, row by
# row): with the profile's 3.8 ns per row (measured on a Zen 5) a Zen 4's calibration left its 5x5 cases -16..-17%
# and the 5x5 depthwise convs of EfficientNet-B0 and MNASNet made their int8-dynamic files -18..-20% (2026-12-04);
# fitted there (5.95 ns per row on the same timings), the 5x5 cases -6..-8%, the 3x3 ones within 7%. Dense
# ConvIntegers keep the profile's: fitted, their cases came out worse (small 3x3 ones +27..+33%).
_ROW_FITTED = frozenset({"dwconvnchw.cast16nchw", "dwconvnchw.nchw", "dwconv.int8dyn"})
# Paths whose im2col gathers strided rows element by element (conv_work.strided_im2col), fitted on stride-2 cases:
# NCHW depthwise convs, fp16's and fp32's. Stride 1 alone could not price them (a Zen 4's stride-2 fp16 cases -37..-52%
# fitted on the stride-1 ones; with them in the same four figures -12..-33%, the stride-1 ones off by 28%). And dynamic
# int8's ConvIntegers (Im2col<uint8_t> copies a strided row element by element): on a Zen 4 (2026-12-04) main's fit
# left its stride-2 dense cases at ResNet-18's shapes -22% and -21%, fitted with them +5% and -15% (0.35 ns per
# element); the depthwise ones were within 11% either way, the stems (all stride 2) cannot tell it from the rest.
_STRIDED_FITTED = frozenset({"dwconvnchw.cast16nchw", "dwconvnchw.nchw", "conv.int8dyn", "convsmall.int8dyn",
                             "dwconv.int8dyn"})

# Paths with a cost per output byte beyond the core's L2 (Path.spill): ORT's fp32 data movement (_fit_layout).
_SPILL_FITTED = frozenset({"layout.fp32", "deconv.fp32"})  # and ORT's ConvTranspose (its columns and output)

# fp32 paths fitted jointly (efficiency and a setup per task) rather than as the median of per-case efficiencies: NCHWc
# convs of few input channels, whose cases are 8-channel convs on 24-48 px maps (mostly fixed cost: 0.27 and 0.68 of the
# peak on a Sapphire Rapids, 2026-12-04) and the stems real CNNs have (3 channels, 16-64 outputs, 100M+ MACs), which the
# median of the two small ones priced at 1.5-2.3x their profile. ORT's Softmax: its rate, a setup, a cost per row and
# one per row off a cache line (softmax.fp32.row, .tap) on rows of 128, 49, 196 and 16.
ONE_PIXEL_KEY = "conv.int8px"  # ort_int8.ONE_PIXEL_TAG's path, fitted on squeeze-excite blocks (fit_in_blocks)
JOINT_FP32 = frozenset({"convsmall.fp32", "walk.fp32", "cubic.fp32", "deconv.fp32", "softmax.fp32"})

# Paths with a cost per byte beyond the core's L2 of walks that miss the cache (transposes.far_walk): ORT's walks,
# fitted jointly with their rate and setup on walks within and beyond the cache (calibration_video); and of its
# blocked Transposes and NCHWc reorders (transposes.strided_move), with the layout rate on the mixed graphs
# (calibration_layout).
_FAR_FITTED = frozenset({"walk.fp32", "layout.fp32"})

# Paths with a cost per column element ORT's ConvTranspose scatters back (Path.col2im, Work.col2im_elements), fitted
# with its GEMM's rate, a setup, a cost per output element and one per output byte beyond the L2 (calibration_deconv).
_COL2IM_FITTED = frozenset({"deconv.fp32"})

# Efficiencies are relative to the nominal peak at the base clock (the machine's, host_machine.peak_per_cycle);
# turbo and a kernel's fused epilogue exceed it: a fit may reach this many times the peak.
EFF_MAX = 6.0


def _predict_ms(g: Graph, hw: HardwareProfile, preset: str) -> float:
    """Predicted latency of `preset` on g, without the per-inference fixed cost."""
    # Only the preset's column: the fit calls this thousands of times, and the full option sweep is 5x the work.
    r = sweep(g, "ort-cpu/host", hardware=hw, presets_only=(preset,))
    return totals(r.bulk, r.per_op, preset, {})["latency_ms"] - hw.units[0].run_overhead_s * 1e3


def _fit_eff(g: Graph, hw: HardwareProfile, preset: str, key: str, measured_ms: float) -> float:
    """Efficiency for `key` (e.g. conv.int8) that makes the prediction equal the measurement."""
    lo, hi = np.log(1e-4), np.log(EFF_MAX)
    for _ in range(14):
        mid = (lo + hi) / 2
        p = _predict_ms(g, hw.with_overrides({"units": {"cpu": {"efficiency": {key: float(np.exp(mid))}}}}), preset)
        if p > measured_ms:
            lo = mid  # too slow: needs a higher efficiency
        else:
            hi = mid
    return float(np.exp((lo + hi) / 2))


def _fit_eff_setup(cases: list[tuple[Graph, str, float]], hw: HardwareProfile,
                   key: str) -> tuple[float, dict[str, float]]:
    """_fit_eff_setup_paid's efficiency and setups."""
    eff, setups, _ = _fit_eff_setup_paid(cases, hw, key)
    return eff, setups


def _fit_eff_setup_paid(cases: list[tuple[Graph, str, float]], hw: HardwareProfile,
                        key: str) -> tuple[float, dict[str, float], frozenset[str]]:
    """(efficiency, {key: fixed seconds per task, key.pixel: per output pixel, key.im2col: per im2col element,
    key.weights: per weight, key.row / key.tap: per GEMM row / im2col copy of a per-group GEMM, key.span: per call of
    a broadcasting element-wise kernel, key.out: per output element, key.scalar: per scalar channel-tap of the generic
    depthwise kernel}) for `key` (e.g. conv.int8dyn) that fit several cases at once in relative least squares: small
    shapes pin the fixed cost of the path's extra kernels, large ones its rate. The other costs are fitted only where
    the path pays them (depthwise int8: a loop over an indirection buffer per output pixel; ConvInteger and plain NCHW
    Conv: an expanded input for kernels above 1x1; ConvInteger: its weights packed on every run); else 0.
    Non-negative least squares by trying every subset of the columns. Third: the setups the cases pay (the columns
    their predictions move with), each fitted, at 0 too."""
    import itertools

    meas = np.array([ms for _, _, ms in cases])
    # The key present from the start: a path may take its own figures only once the profile has them
    # (backends._ort_fp16's `cast16nchw` depthwise path), and the setups' slopes are read on that path.
    hw = hw.with_overrides({"units": {"cpu": {"efficiency": {key: hw.units[0].efficiency.get(key, 1.0)}}}})
    subs = [key, key + ".pixel", key + ".im2col", key + ".weights", key + ".row", key + ".tap", key + ".span",
            key + ".out", key + ".scalar",
            *([key + ".im2col.row"] if key in _ROW_FITTED else []), *([key + ".spill"] if key in _SPILL_FITTED else []),
            *([key + ".im2col.strided"] if key in _STRIDED_FITTED else []),
            *([key + ".far"] if key in _FAR_FITTED else []), *([key + ".col2im"] if key in _COL2IM_FITTED else [])]

    def slope(sub: str) -> np.ndarray:
        # Setup units per case (tasks, channels or pixels, as the path pays it): the prediction's slope in s.
        h0, h1 = (hw.with_overrides({"units": {"cpu": {"kind_overhead_s": {sub: v}}}}) for v in (0.0, 1e-6))
        return np.array([(_predict_ms(g, h1, p) - _predict_ms(g, h0, p)) / 1e-3 for g, p, _ in cases])

    n = np.stack([slope(sub) for sub in subs], axis=1)
    cols = [j for j in range(len(subs)) if n[:, j].any()]
    uses = [list(c) for k in range(len(cols), 0, -1) for c in itertools.combinations(cols, k)]

    def at(log_eff: float) -> tuple[float, np.ndarray]:
        h = hw.with_overrides({"units": {"cpu": {"efficiency": {key: float(np.exp(log_eff))},
                                                 "kind_overhead_s": {sub: 0.0 for sub in subs}}}})
        pred = np.array([_predict_ms(g, h, preset) for g, preset, _ in cases])
        # Relative residual with setups s: (pred + n s) / meas - 1 = a s - b; least squares, s >= 0.
        a, b = n * 1e3 / meas[:, None], 1 - pred / meas
        return nonnegative_fit(a, b, uses)

    x = best_log_efficiency(lambda v: at(v)[0])
    s = at(x)[1]
    return float(np.exp(x)), {sub: float(v) for sub, v in zip(subs, s)}, frozenset(subs[j] for j in cols)


def nonnegative_fit(a: np.ndarray, b: np.ndarray, uses: list[list[int]]) -> tuple[float, np.ndarray]:
    """(squared error, s) of the least-squares a s = b with s >= 0, trying each subset of columns in `uses` (the
    columns left out are 0): few columns, so exact subsets beat an iterative NNLS."""
    best = (float((b ** 2).sum()), np.zeros(a.shape[1]))
    for use in uses:
        s_use = np.linalg.lstsq(a[:, use], b, rcond=None)[0]
        if (s_use < 0).any():
            continue
        s = np.zeros(a.shape[1])
        s[use] = s_use
        err = float(((a @ s - b) ** 2).sum())
        if err < best[0]:
            best = (err, s)
    return best


def best_log_efficiency(err: Callable[[float], float]) -> float:
    """The log efficiency in [1e-4, EFF_MAX] where `err` is least: the best of a 25-point grid, then golden-section
    refinement around it (the fits here have one basin but a flat floor, where a derivative gives little)."""
    grid = np.linspace(np.log(1e-4), np.log(EFF_MAX), 25)
    i = int(np.argmin([err(x) for x in grid]))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    for _ in range(12):
        m1, m2 = lo + 0.382 * (hi - lo), lo + 0.618 * (hi - lo)
        if err(m1) < err(m2):
            hi = m2
        else:
            lo = m1
    return float((lo + hi) / 2)


def _fit_setup(g: Graph, hw: HardwareProfile, kind: str, measured_ms: float) -> float:
    """Fixed seconds per task of `kind` that make the fp32 prediction equal the measurement (>= 0)."""
    lo, hi = 0.0, 2e-4
    for _ in range(20):
        mid = (lo + hi) / 2
        p = _predict_ms(g, hw.with_overrides({"units": {"cpu": {"kind_overhead_s": {kind: mid}}}}), "fp32")
        if p < measured_ms:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def fit_bench(bench: Bench, wall: dict[str, float], progress: Callable[[str], None] = lambda s: None
              ) -> dict[str, Any]:
    """Fit the host profile to the timings of `bench` (ms per key; other keys are ignored); returns the
    JSON-able cache (overrides for HardwareProfile.with_overrides)."""
    import onnxruntime as ort

    base = load_profile("host-cpu")
    over, run_s, prof_over = _fixed_costs(bench, wall, progress)
    kept, line = fit_llc(bench.llc_ladder, wall, bench.k_stream, bench.k_memory, over["units"]["cpu"])
    over["units"]["cpu"].update(kept)
    if line:
        progress(line)
    sub = tuple(k for n in (*bench.subnormal, *bench.inner, *bench.nhwc, *bench.packed, *bench.packb, *bench.alias)
                for k in (n, f"{n}-ref"))
    # (less the per-run cost)
    alone = {n: wall[n] - run_s * 1e3 for n in (*bench.index, *bench.rnn, *sub, *bench.beyond, *bench.spans)
             if n in wall}
    packb_cases: list[dict[str, Any]] = []  # fitted first: the MatMul cases' efficiency is then the kernel's alone
    packb = fit_packb(bench.packb, bench.graphs, alone, base.with_overrides(over),
                      lambda g, h: _predict_ms(g, h, "fp32"), packb_cases)
    over["units"]["cpu"]["kind_overhead_s"] = {**over["units"]["cpu"].get("kind_overhead_s", {}), **packb}
    cases_out, effs = _fit_efficiencies(bench, wall, base.with_overrides(over), run_s)
    over["units"]["cpu"]["efficiency"] = effs  # the stages below add to it
    joint_setups = {**packb, **_fit_joint(bench.graphs, cases_out, base.with_overrides(over), effs)}
    over["units"]["cpu"]["kind_overhead_s"] = dict(joint_setups)
    effs.update(_fit_decodes(bench.graphs, cases_out, base.with_overrides(over)))
    setups = _fit_setups(bench.graphs, cases_out, base.with_overrides(over))
    over["units"]["cpu"]["kind_overhead_s"] = {**joint_setups, **setups}
    effs["layout.fp32"], layout_setups = _fit_layout(bench, wall, run_s, cases_out, base.with_overrides(over))
    over["units"]["cpu"]["kind_overhead_s"].update(layout_setups)
    over["units"]["cpu"]["kind_overhead_s"].update(_fit_runs(bench, wall, run_s, cases_out, base.with_overrides(over)))
    over["units"]["cpu"]["kind_overhead_s"].update(cast_element(bench.graphs, cases_out, base.with_overrides(over)))
    over["units"]["cpu"]["kind_overhead_s"].update(fit_weights(bench.graphs, cases_out, base.with_overrides(over)))
    for fit, names in ((fit_index, bench.index), (fit_rnn, bench.rnn), (fit_subnormal, bench.subnormal),
                       (fit_inner, bench.inner), (fit_nhwc, bench.nhwc), (fit_packed, bench.packed),
                       (fit_beyond, bench.beyond), (fit_alias, bench.alias), (fit_spans, bench.spans)):
        over["units"]["cpu"]["kind_overhead_s"].update(fit(names, bench.graphs, alone, base.with_overrides(over),
                                                           lambda g, h: _predict_ms(g, h, "fp32"), cases_out))
    over["units"]["cpu"]["kind_overhead_s"].update(fit_in_blocks(bench.graphs, cases_out, base.with_overrides(over),
                                                                  over["units"]["cpu"]["efficiency"]))
    hw, cases_out = base.with_overrides(over), cases_out + packb_cases
    # Residuals of the fitted profile on its own cases (in-sample; fidelity.py measures held-out).
    for c in cases_out:
        c["predicted_ms"] = _predict_ms(bench.graphs[c["case"]], hw, c["preset"])
    return {
        "version": CACHE_VERSION, "profile": "host-cpu", "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine(), "onnxruntime": ort.__version__, "seconds": time.perf_counter() - bench.t_start,
        "profiler_overhead_s": prof_over, "overrides": over, "cases": cases_out,
    }


def fit_weights(graphs: dict[str, Graph], cases_out: list[dict[str, Any]], hw: HardwareProfile) -> dict[str, float]:
    """{SHARED_WEIGHTS_KEY: s per weight} from the `gemm-shared-*` cases (an fp16 MatMul chain reading one weight,
    cast and packed on every run), the other figures already fitted: relative least squares, >= 0 (as _fit_runs);
    {} without those cases."""
    cs = [c for c in cases_out if c["key"] == SHARED_WEIGHTS_KEY]
    if not cs:
        return {}
    meas = np.array([c["measured_ms"] for c in cs])
    h1 = hw.with_overrides({"units": {"cpu": {"kind_overhead_s": {SHARED_WEIGHTS_KEY: 1e-6}}}})
    pred0 = np.array([_predict_ms(graphs[c["case"]], hw, c["preset"]) for c in cs])
    a = (np.array([_predict_ms(graphs[c["case"]], h1, c["preset"]) for c in cs]) - pred0) / 1e-6 / meas
    b = 1 - pred0 / meas
    s = max(float(a @ b / (a @ a)), 0.0) if float(a @ a) > 0 else 0.0
    for c in cs:
        c["weights_s"] = s
    return {SHARED_WEIGHTS_KEY: s}


def _fixed_costs(bench: Bench, wall: dict[str, float], progress: Callable[[str], None]
                 ) -> tuple[dict[str, Any], float, float]:
    """(overrides with the fixed costs and bandwidths, fixed cost per run in s, the profiler's cost per task in s)
    from the element-wise chains: one Relu against 64 (dispatch), Adds that fit L2 (cache bandwidth) and a MatMul
    chain streaming its weights (memory bandwidth)."""
    t1, t64 = wall["one"], wall["many"]
    dispatch_s = max((t64 - t1) / 63 * 1e-3, 1e-8)
    run_s = max(t1 * 1e-3 - dispatch_s, 0.0)
    t_mid = (wall["mid"] * 1e-3 - run_s) / 16 - dispatch_s
    cache_bw = 3 * 4 * bench.n_mid / max(t_mid, 1e-9)
    t_stream = (wall["stream"] * 1e-3 - run_s) / R - dispatch_s
    dram_bw = bench.k_stream * bench.k_stream * 4 / max(t_stream, 1e-9)
    # Weights beyond the whole last-level cache, read from memory on every run (a batch-1 GEMM's arithmetic, one
    # multiply-add per weight, is a few percent of it).
    mem_bw = 0.0
    if bench.k_memory and "memory" in wall:
        t_mem = (wall["memory"] * 1e-3 - run_s) / R - dispatch_s
        mem_bw = bench.k_memory * bench.k_memory * 4 / max(t_mem, 1e-9)
    progress(f"fixed cost {run_s * 1e6:.1f} us, dispatch {dispatch_s * 1e6:.2f} us, "
             f"cache {cache_bw / 1e9:.1f} GB/s, weight streaming {dram_bw / 1e9:.1f} GB/s, "
             f"from memory {mem_bw / 1e9:.1f} GB/s")
    # The profiler adds its own cost to each task's recorded time; measured baselines subtract it.
    prof_over = profiler_overhead(bench.timings["many"][0], dispatch_s, bench.tmp)
    over: dict[str, Any] = {"dram_bandwidth_bytes_per_s": dram_bw, "units": {"cpu": {
        "run_overhead_s": run_s, "dispatch_overhead_s": dispatch_s, "profiler_overhead_s": prof_over,
        "cache_bandwidth_bytes_per_s": cache_bw, "llc_share_bytes": float(bench.llc), "llc_bytes": float(bench.llc_all),
        "bandwidth_efficiency": 1.0,
        "efficiency": {}}}}
    if mem_bw:
        over["units"]["cpu"]["evicted_bandwidth_bytes_per_s"] = mem_bw
    # This machine's fixed facts (description, nominal peaks, L2 and last-level cache) as Linux gives them.
    facts = machine_overrides()
    over["units"]["cpu"].update(facts.get("units", {}).get("cpu", {}))
    if mem_bw and bench.reuse:
        peak = over["units"]["cpu"].get("peak_ops_per_s", {}).get("fp32") or load_profile("host-cpu").units[0] \
            .peak_ops_per_s["fp32"]
        over["units"]["cpu"].update(eviction_fit(bench, wall, dispatch_s, (t_stream / bench.k_stream ** 2,
                                                                         t_mem / bench.k_memory ** 2),
                                              peak, cache_bw, l2=over["units"]["cpu"].get("onchip_memory_bytes") or
                                              float(load_profile("host-cpu").units[0].onchip_memory_bytes),
                                              progress=progress))
    if "description" in facts:
        over["description"] = facts["description"]
    # One core's L2, past which a layout task's output costs its spill figure (calibration_fit._fit_layout).
    over["units"]["cpu"]["l2_share_bytes"] = over["units"]["cpu"].get("onchip_memory_bytes") or float(
        load_profile("host-cpu").units[0].onchip_memory_bytes)
    return over, run_s, prof_over


def _fit_efficiencies(bench: Bench, wall: dict[str, float], hw: HardwareProfile, run_s: float
                      ) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """(one record per case and variant, the efficiency per key: the median of its cases' fits). Keys fitted in a
    later stage (joint, decode, setup) are recorded here and fitted there."""
    cases_out: list[dict[str, Any]] = []
    fits: dict[str, list[float]] = {}
    n_cases: dict[str, int] = {}
    # An fp32 case of a path ORT leaves in NCHW calibrates it only where this machine's ORT leaves it so: a case whose
    # channels per group fill whole NCHWc blocks (8 wide with AVX2, 16 with AVX-512) runs the NCHWc kernels, where
    # the path's figures change nothing and the fit drifts to its bounds (a Zen 3, AVX2: RegNet-like width-8 cases
    # fitted gconvnchw.nchw at 6.0, the cap, and 19 us per group; a dense 58-channel 1x1 in NCHW was then predicted
    # at 0.42x its profile).
    variants = [v for v in bench.variants if not off_path(v[0], v[1], v[2], bench.graphs[v[0].name])]
    for case, preset, tag, _ in variants:
        k = tag if "." in tag else f"{case.kind}.{tag}"
        n_cases[k] = n_cases.get(k, 0) + 1
    for case, preset, tag, tkey in variants:
        g = bench.graphs[case.name]
        meas = wall[tkey] - run_s * 1e3
        key = tag if "." in tag else f"{case.kind}.{tag}"
        # Quantized and fp16 paths, and fp32 grouped Convs left in NCHW, with 3+ shapes fit efficiency and setup
        # jointly; setup and decode rates are fitted below, once the efficiencies they add to are known.
        joint = ((preset != "fp32" or key.endswith(".nchw") or key in JOINT_FP32) and not key.startswith("decode.")
                 and n_cases[key] >= 3)
        later = tag == "setup" or key.startswith("decode.") or key.endswith(".weights") or joint
        eff = _fit_eff(g, hw, preset, key, meas) if not later else float("nan")
        if not later:
            fits.setdefault(key, []).append(eff)
        cases_out.append({"case": case.name, "preset": preset, "key": key, "measured_ms": meas,
                          "efficiency": eff, "joint": joint})
    # The median of per-case fits (robust to one odd shape).
    effs = {k: float(np.median(v)) for k, v in fits.items()}
    effs["default"] = effs.get("elementwise.fp32", 0.1)
    # MatMulNBits (accuracy level 0) computes in fp32 with the SGEMM kernels; its extra cost is the decode. An fp16
    # MatMul runs the same SGEMM on weights cast back at load; its activation Casts are costed on their own. (Fitted
    # apart on one case it only added that case's noise: 0.566-0.658 between calibrations against 0.58-0.65 for fp32.)
    if "gemm.fp32" in effs:
        effs["gemm.int4w"] = effs["gemm.cast16"] = effs["gemm.fp32"]
    return cases_out, effs


def off_path(case: Case, preset: str, tag: str, g: Graph) -> bool:
    """An fp32 NCHW-path case (tag `nchw`) whose compiled graph has no task of its kind (costs.kind_of)."""
    return preset == "fp32" and tag == "nchw" and all(kind_of(n, g) != case.kind for n in g.nodes)


def _fit_joint(graphs: dict[str, Graph], cases_out: list[dict[str, Any]], hw: HardwareProfile,
               effs: dict[str, float]) -> dict[str, float]:
    """Efficiency (into `effs`) and fixed setups (returned, by kind_overhead_s key) of the paths fitted jointly."""
    joint_setups: dict[str, float] = {}
    for key in sorted({c["key"] for c in cases_out if c["joint"]} - unpriced(graphs, cases_out, hw, _predict_ms)):
        cs = [c for c in cases_out if c["key"] == key]
        eff, setups, paid = _fit_eff_setup_paid([(graphs[c["case"]], c["preset"], c["measured_ms"]) for c in cs],
                                                hw, key)
        effs[key] = eff
        # The task setup always (0 is a fit too); the per-pixel and im2col costs where the path has them.
        # (a fitted row cost of 0 too: the profile's own figure would otherwise stand in for it)
        # (an NCHW path's im2col cost of 0 too: backends._nchw_grouped takes the path where the profile has it; and
        # the ConvTranspose's col2im cost: backends._ort_deconv)
        # (and every other setup the cases pay, at 0 too: the fit priced them at 0, and the profile's estimate stood
        # in for it. An Emerald Rapids, 2026-12-07: stems' fitted cost per im2col copy 0, host-cpu.yaml's 2.5 ns
        # stood, and the four stem cases read +15..+40% in-sample; MobileNetV3-Small's stem 386 us against 265 profiled)
        kept = (".im2col.row", ".nchw.im2col", ".col2im")
        joint_setups.update({k: v for k, v in setups.items() if k == key or v or k.endswith(kept) or k in paid})
        for c in cs:
            c["efficiency"], c["setup_s"] = eff, setups[key]
            c.update({f"{k.rsplit('.', 1)[1]}_setup_s": v for k, v in setups.items() if k != key and v})
    return joint_setups


def fit_in_blocks(graphs: dict[str, Graph], cases_out: list[dict[str, Any]], hw: HardwareProfile,
                   effs: dict[str, float]) -> dict[str, float]:
    """`conv.int8px` (efficiency into `effs`, its setups returned) fitted again on its squeeze-excite blocks
    (calibration_se) with the profile as the later stages left it: a block's pool, Sigmoid and gating Mul take
    figures fitted after the joint stage (their setups, the gate's cost per call), which the joint fit saw at 0 and
    the convs' figures made up for (an Emerald Rapids, 2026-12-06: the blocks +20..+47% in-sample after it)."""
    cs = [c for c in cases_out if c["key"] == ONE_PIXEL_KEY]
    if not cs:
        return {}
    eff, setups = _fit_eff_setup([(graphs[c["case"]], c["preset"], c["measured_ms"]) for c in cs], hw, ONE_PIXEL_KEY)
    effs[ONE_PIXEL_KEY] = eff
    for c in cs:
        c["efficiency"], c["setup_s"] = eff, setups[ONE_PIXEL_KEY]
        c.update({f"{k.rsplit('.', 1)[1]}_setup_s": v for k, v in setups.items() if k != ONE_PIXEL_KEY and v})
    kept = hw.units[0].kind_overhead_s
    return {k: v for k, v in setups.items() if k == ONE_PIXEL_KEY or v or k in kept}


def _fit_decodes(graphs: dict[str, Graph], cases_out: list[dict[str, Any]], hw: HardwareProfile
                 ) -> dict[str, float]:
    """The decode rates (`decode.<path>` efficiencies: MatMulNBits' per-run unpacking), the median per key."""
    decodes: dict[str, list[float]] = {}
    for c in cases_out:
        if c["key"].startswith("decode."):
            c["efficiency"] = e = _fit_eff(graphs[c["case"]], hw, c["preset"], c["key"], c["measured_ms"])
            decodes.setdefault(c["key"], []).append(e)
    return {k: float(np.median(v)) for k, v in decodes.items()}


def _fit_setups(graphs: dict[str, Graph], cases_out: list[dict[str, Any]], hw: HardwareProfile
                ) -> dict[str, float]:
    """Fixed setup per kind from the small cases, with the efficiencies fitted before in place."""
    setups: dict[str, list[float]] = {}
    for c in cases_out:
        if c["key"].endswith(".setup"):
            kind = c["key"].split(".")[0]
            s = _fit_setup(graphs[c["case"]], hw, kind, c["measured_ms"])
            c["setup_s"] = s
            setups.setdefault(kind, []).append(s)
    return {k: float(np.median(v)) for k, v in setups.items()}


def _fit_layout(bench: Bench, wall: dict[str, float], run_s: float, cases_out: list[dict[str, Any]],
                hw: HardwareProfile) -> tuple[float, dict[str, float]]:
    """Data movement (transposes, NCHWc reorders, channel Split / Concat) from mixed graphs, every other kind already
    fitted (chains of transposes alone are cancelled by ORT's transpose optimizer): the efficiency, a setup per task
    and a cost per output byte beyond the core's L2 (`layout.fp32.spill`, Path.spill) jointly. Fitted as one median
    efficiency over the two small Conv / Transpose graphs alone, it sat at EFF_MAX on every Zen 4 calibration (their
    layout tasks stay in L2 and cost their bytes at the cache's rate) and a MixNet-shaped block at 56 px, whose
    Split, Concat and reorders write 1.8 MB each, was predicted at 0.74x (24x144 channels, a Zen 4, thread CPU
    time, 2026-12-03): its layout tasks profiled at 2-3x their prediction beyond the L2, 1.0-1.3x within it."""
    cases = [(bench.graphs[name], "fp32", wall[name] - run_s * 1e3) for name in bench.mixed]
    eff, setups = _fit_eff_setup(cases, hw, "layout.fp32")
    for name, (_, _, meas) in zip(bench.mixed, cases):
        cases_out.append({"case": name, "preset": "fp32", "key": "layout.fp32", "measured_ms": meas,
                          "efficiency": eff, "setup_s": setups["layout.fp32"],
                          **{f"{k.rsplit('.', 1)[1]}_setup_s": v for k, v in setups.items() if k != "layout.fp32" and v}})
    return eff, {k: v for k, v in setups.items() if k == "layout.fp32" or v}


def _fit_runs(bench: Bench, wall: dict[str, float], run_s: float, cases_out: list[dict[str, Any]],
              hw: HardwareProfile) -> dict[str, float]:
    """The cost per run a Transpose copies (`layout.fp32.run`, transposes.copy_runs) from the head-transpose cases,
    the layout rate already fitted: relative least squares, >= 0. Fitted into the layout rate instead (two such
    transposes among the mixed graphs, a Zen 4, 2026-12-04), the rate fell to 0.075 and priced the mixed CNN graphs
    18-26% over their time: one rate per element does not hold both streams and short runs."""
    key = "layout.fp32.run"
    names = [n for n in bench.transposes if n in wall]
    if not names:
        return {}
    meas = np.array([wall[n] - run_s * 1e3 for n in names])
    h1 = hw.with_overrides({"units": {"cpu": {"kind_overhead_s": {key: 1e-6}}}})
    pred0 = np.array([_predict_ms(bench.graphs[n], hw, "fp32") for n in names])
    a = (np.array([_predict_ms(bench.graphs[n], h1, "fp32") for n in names]) - pred0) / 1e-6 / meas
    b = 1 - pred0 / meas
    s = max(float(a @ b / (a @ a)), 0.0) if float(a @ a) > 0 else 0.0
    for n, m in zip(names, meas):
        cases_out.append({"case": n, "preset": "fp32", "key": key, "measured_ms": float(m), "run_s": s})
    return {key: s}
