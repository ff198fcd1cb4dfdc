"""Every cost formula of the simulator, in one place: a task's latency (a roofline with the unit's efficiency and
overheads), its DRAM traffic, the memory power of a whole run, a format conversion and a partition crossing.

Pure: numbers in, numbers out, no I/O and no state. What a task does comes in as counts (simulator.costs.Work), how the
backend runs it as a `Path` (simulator.kernel_path, planned by simulator.backends: bytes per element, extra passes, the
efficiency key; software behaviour, so it lives in code there), and the hardware as a HardwareProfile passed in
(simulator/hardware/*.yaml, with calibration's fitted figures on top). Every task formula works on floats and,
element-wise, on numpy arrays: the sweep (simulator/sweep.py) evaluates them for every task x combo at once, calibration
(simulator/calibration*.py) fits the profile's figures so that they reproduce measured times, and the totals rule
(simulator/totals.py, mirrored by web/src/totals.ts) adds conversions and crossings on edges."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from simulator.costs import PARENT_KIND, Work
from simulator.kernel_path import Path
from simulator.profiles import CAST16NCHW, NHWC_INPUT_KEY, HardwareProfile, Unit
from simulator.sgemm_alias import ALIAS_KEY

Num = Any  # a float, or a numpy array of them (the formulas broadcast)


# --- the unit's figures --------------------------------------------------------------------------------------------

def efficiency(unit: Unit, kind: str, path: str, op_type: str = "") -> float:
    """Share of peak for `kind` on `path`: the most specific figure the profile has, down to one op's own
    (`elementwise.fp32.QuickGelu`: an activation calibration timed, whose kernel differs from the kind's)."""
    e = unit.efficiency
    parent = PARENT_KIND.get(kind, kind)
    grand = PARENT_KIND.get(parent, parent)  # a cubic Resize: resize's figures, else layout's
    for key in ((f"{kind}.{path}.{op_type}",) if op_type else ()) + (f"{kind}.{path}", kind, f"{parent}.{path}", parent,
                                                                      f"{grand}.{path}", grand):
        if key in e:
            return e[key]
    if path == "cast16nchw":  # an fp16 Conv left in NCHW: the NCHWc path's figure until calibrated
        return efficiency(unit, kind, "cast16", op_type)
    if path == "cast16":  # fp16 through casts computes in fp32
        return efficiency(unit, kind, "fp32", op_type)
    return e.get("default", 0.1)


@dataclass(frozen=True, slots=True)
class Rates:
    """One path on its unit: every figure the task formulas read; floats, or arrays over a signature's combos."""
    peak: Num  # ops/s the path reaches (peak of its compute format x efficiency)
    in_b: Num  # bytes per input / output activation element
    out_b: Num
    w_rt: Num  # bytes per kernel element streamed per run
    rt_keep: Num  # share of kernel bytes streamed (1 - sparsity where JIT sparse)
    rt_mask: Num  # mask bytes per kernel element (JIT sparse)
    aux_b: Num  # bytes per bias / gamma element read
    extra_in: Num  # extra traffic per input / output element
    extra_out: Num
    bias_b: Num  # bytes per element of a Gemm's bias pass over its output (Counts.bias_pass): written, then read back
    cached_extra_in: Num  # extra bytes per input element at the cache rate (Path.cached_extra_in_bytes)
    dispatches: Num  # kernels launched (1 + extra)
    dispatch_s: Num  # launch cost per kernel
    setup_s: Num  # fixed setup per task (per group where `setup_rows`)
    setup_rows: Num  # bool
    pixel_s: Num  # seconds per output pixel (output elements / kernel rows) on top of setup_s
    im2col_s: Num  # seconds per element of the im2col buffer (kernels larger than 1x1 only)
    im2col_row_s: Num  # seconds per row the im2col copies (`<kind>.<tag>.im2col.row`; where im2col_s applies)
    im2col_strided_s: Num  # seconds per element of a strided conv's buffer (`<kind>.<tag>.im2col.strided`; ditto)
    repack_s: Num  # seconds per weight of packing the weights on every run
    spill_s: Num  # seconds per output byte beyond `l2` (a kernel whose working set leaves the core's L2)
    row_s: Num  # seconds per Work.row_calls: a per-group GEMM path's rows (Path.qgemm), a Softmax's rows
    tap_s: Num  # seconds per Work.row_extra_calls: its NHWC im2col's copies, a Softmax's rows off a line
    span_s: Num  # seconds per output element of the calls of a broadcasting element-wise kernel (Path.span_elements)
    call_s: Num  # seconds per output element of a copy kernel's calls (Path.call_elements)
    out_s: Num  # seconds per output element (Path.out_cost)
    igemm_s: Num  # seconds per output element and kernel tap (Path.tap_cost, Counts.igemm_taps)
    run_s: Num  # seconds per run a Transpose copies with its own memcpy (`<kind>.<tag>.run`, Counts.copy_runs)
    far_s: Num  # seconds per byte beyond `l2` of a walk that misses the cache (`<kind>.<tag>.far`, Counts.far_walk)
    index_s: Num  # seconds per element an index op looks up (`<kind>.<tag>.index.<op>`, Counts.indexed)
    col2im_s: Num  # seconds per column element a ConvTranspose scatters (Path.col2im, Counts.col2im_elements)
    subnormal_s: Num  # seconds per subnormal written or multiplied (`<kind>.<tag>.subnormal`, Counts.subnormals)
    l2: Num  # the core's share of its L2 (0: no spill cost)
    extra_ops_s: Num  # seconds per output element of the path's extra element-wise kernels
    extra_in_ops_s: Num  # seconds per input element of the path's extra element-wise kernels
    extra_fp32_ops_s: Num  # seconds per output element of its extra fp32 kernels beside an int8 one
    epilogue_s: Num  # seconds per epilogue FLOP where the backend runs it as its own pass (else 0)
    decode_s: Num  # seconds per kernel element of per-run weight unpacking (one activation row)
    decode_rows_s: Num  # the same when the task has several rows (M > 1): a different kernel
    overlap: Num  # share of the smaller of compute and memory time left exposed
    cache_bw: Num
    dram_bw: Num
    kind_bw: Num  # the rate the kind's activations move at whatever their size (0: cache or memory by size)
    onchip: Num
    llc: Num  # the core's share of the last-level cache (0: not modelled)
    llc_all: Num  # the whole last-level cache (<= llc: a step at llc)
    llc_keep: Num  # weights up to this footprint stay in it between runs, none beyond llc_gone (0: a step at llc_all)
    llc_gone: Num
    llc_hold_s: Num  # weights re-read within this long stay in the shared last-level cache
    llc_evict_s: Num  # ... and none after this long (linear between; 0: they all stay)
    spill_hold: Num  # ... and within this many bytes of the run's own traffic beyond the L2 (Unit.llc_spill_hold_bytes)
    spill_evict: Num  # ... none after this many (linear between; 0: not modelled)
    evicted_bw: Num  # the rate evicted weights come back from memory at
    w_exposed: Num  # share of the weights' time from memory on the task's critical path (the rest streams in ahead)
    eliminated: Num  # bool: the task disappears on this path
    fp32_equiv: Num  # bool: runs the fp32 kernel (a measured fp32 time applies)
    padded_sgemm: Num  # bool: compute counts the padded MACs (Path.padded_sgemm)
    sgemm_block: Num  # columns MLAS's SGEMM pads to on this path (Path.padded_sgemm; 0: none)
    int8_kb: Num  # XNNPACK's GEMM blocks, reduction and output channels (Path.padded_sgemm; 0: none; fp32: 1, N)
    int8_nb: Num
    plain: Num = False  # bool: runs the model's own Conv, not ORT's NCHWc one with its padded filter (Counts.plain_*)
    lanes: Num = False  # bool: MACs in whole blocks of lanes (Path.lanes, Counts.lane_macs)
    scalar_s: Num = 0.0  # seconds per scalar channel-tap (Path.lanes, Counts.scalar_taps)
    int8_nb2: Num = 0.0  # the N block below int8_nb output channels (XNNPACK's F32 IGEMM's `nr2`; 0: int8_nb)
    dw_tile: Num = 0.0  # channels per tile of XNNPACK's fp32 depthwise kernel (Path.dw_tiles; 0: as counted)
    peak_nr2: Num = 0.0  # the rate of XNNPACK's F32 IGEMM's nr2 kernels, below int8_nb outputs (NR2_SUFFIX; 0: peak)
    dw_lanes: Num = 0.0  # fp32 lanes of a depthwise tile's loads (Path.dw_tiles, Unit.f32_vector_floats; 0: none)
    peak_split: Num = 0.0  # its rate where the channels are not whole vectors of them (SPLIT_SUFFIX; 0: peak)
    reread_s: Num = 0.0  # s per byte a recurrent op reads again from the core's cache (0: at cache_bw)
    # The Transposes ORT's fp32 Softmax runs over an inner axis (Counts.inner_*): s per element walked and moved
    inner_walk_s: Num = 0.0  # (at the walk's and layout's rates), s per byte beyond `l2` of a far walk (walk.<tag>.far)
    inner_move_s: Num = 0.0
    inner_far_s: Num = 0.0
    inner_run_s: Num = 0.0  # s per run an Einsum's Transposes copy one memcpy each (a Transpose's `layout.fp32.run`)
    in_move_s: Num = 0.0  # s per input element of a move ahead of the kernel (Path.nhwc_input)
    packed_far_s: Num = 0.0  # s per weight byte from memory of a packed SGEMM of several rows (PACKED_FAR_KEY)
    packb_s: Num = 0.0  # s per element of a non-constant B an fp32 SGEMM packs on every run (PACKB_KEY)
    packcall_s: Num = 0.0  # s per SGEMM call that packs one (PACKCALL_KEY)
    own_bw: Num = 0.0  # a path's own rate (`<kind>.<tag>`: LiteRT's fp32 element-wise ops) while its bytes fit in l2
    beyond_s: Num = 0.0  # s per byte where a task's bytes exceed l2 (ELEMENTWISE_BEYOND_KEY: ORT's fp32 element-wise)
    cold_out: Num = 0.0  # 1: its output beyond l2 goes to lines the run's own traffic evicted (cold_output_s)
    alias_s: Num = 0.0  # s per MAC of an SGEMM whose rows of A share an L1 set (sgemm_alias.ALIAS_KEY)
    farmem_s: Num = 0.0  # s per byte of a walk of rows a page apart beyond `llc_keep` (`<kind>.<tag>.farmem`)


# MLAS's QGEMM packs a panel of A for every panel of B, StrideN columns of C at a time (microsoft/onnxruntime
# onnxruntime/core/mlas/lib/qgemm.h @ca8d49fc, MlasGemmQuantOperation): ConvInteger passes its weights as A and its
# im2col buffer as B, N = output pixels (core/providers/cpu/quantization/conv_integer.cc @009855cf), and has no
# pre-packing, so it packs its weights (uint8 widened to int16) once per 256 output pixels on every run
# (MLAS_GEMM_U8U8_KERNEL_AVX2: Strides{24, 256, 128}, core/mlas/lib/qgemm_kernel_avx2.cpp @9f69f5d0).
QGEMM_STRIDE_N = 256.0
INNER_MOVE_KEY = "layout.fp32.inner"  # s per element a Softmax's inner-axis swap moves blocked (calibration_inner)
# s per weight byte a several-row fp32 SGEMM (MLAS's packed B) reads from memory, in full (calibration_packed)
PACKED_FAR_KEY, _SGEMM = "gemm.fp32.packed_far", frozenset({("gemm", "fp32"), ("matmul", "fp32")})  # ... its paths
PACKB_KEY = "matmul.fp32.packb"  # s per B element MLAS packs each run (calibration_packb, Counts.packed_b)
PACKCALL_KEY = "matmul.fp32.packcall"  # s per SGEMM call that packs a B (Counts.packed_calls)
# s per byte ORT's fp32 element-wise kernels move where a task's bytes exceed the L2 (calibration_beyond), not dram_bw
ELEMENTWISE_BEYOND_KEY = "elementwise.fp32.beyond_l2"
# XNNPACK's F32 IGEMM runs a conv of fewer output channels than its kernels' nr (Unit.f32_igemm_n_block) on its `nr2`
# kernels (Rates.int8_nb2), at a rate of their own where calibrated: `<kind>.<tag>` + this (`conv.fp32nr2`;
# simulator.litert_paths.XNN_CONV). On an AVX-512 Xeon 3x3 convs of 24 outputs (two nr2 blocks of 16) ran 0.70x their
# price at the 32-wide kernel's rate, 32 outputs 1.1x: the 16-wide kernel is not as fast per column there.
NR2_SUFFIX = "nr2"
# XNNPACK's fp32 depthwise tile loads a pixel's channels in vectors of Unit.f32_vector_floats lanes; channels not a whole
# number of them straddle cache lines at some pixels, at a rate of their own where calibrated: `<kind>.<tag>` + this
# (`dwconv.tile25split`; simulator.litert_paths.DW_TILE25). AVX-512 Xeon: 5x5, 24 channels 1.27x the time of 32.
SPLIT_SUFFIX = "split"
_BOOL_RATES = frozenset({"setup_rows", "eliminated", "fp32_equiv", "padded_sgemm", "plain", "lanes"})


def rates(hw: HardwareProfile, p: Path, kind: str, epilogue_pass: bool, op_type: str = "") -> Rates:
    """The figures of path `p` for a task of `kind` (op `op_type`) on its unit of `hw`. `epilogue_pass`: the backend
    runs a fused activation as an element-wise pass over the output (MLAS, simulator.backends.EPILOGUE_PASS_BACKENDS)."""
    u = hw.units[p.unit]
    rate = p.rate_kind or kind  # the kind whose efficiency and setup the path runs at
    fp32_peak = u.peak_ops_per_s.get("fp32", 0.0)
    igemm = p.padded_sgemm and p.igemm_blocks and p.compute == "fp32" and u.f32_igemm_n_block > 0  # Path.igemm_blocks
    kbw = u.kind_bandwidth_bytes_per_s
    return Rates(
        peak=u.peak_ops_per_s.get(p.compute, 0.0) * efficiency(u, rate, p.tag, op_type if rate == kind else ""),
        in_b=p.in_bytes, out_b=p.out_bytes, w_rt=p.w_runtime_bytes,
        rt_keep=1 - p.resolved.sparsity / 100 if p.runtime_sparse else 1.0, rt_mask=1 / 8 if p.runtime_sparse else 0.0,
        aux_b=p.aux_bytes, extra_in=p.extra_in_bytes, extra_out=p.extra_out_bytes,
        # ORT's CPU EP fills a Gemm's output with its bias before the float GEMM accumulates into it (the backends
        # whose activations are passes over the output too); its int8 kernels add the bias in their epilogue.
        bias_b=2 * p.out_bytes if epilogue_pass and p.compute != "int8" else 0.0,
        cached_extra_in=p.cached_extra_in_bytes, dispatches=1 + p.extra_dispatches,
        # Per-kernel launch cost, plus the fixed setup of the kind on this path (`conv.int8dyn`: the six
        # kernels of a dynamically quantized Conv), else of the kind (small NCHWc convs pay ~10 us on the host).
        dispatch_s=u.dispatch_overhead_s,
        setup_s=u.kind_overhead_s.get(f"{rate}.{p.tag}", u.kind_overhead_s.get(rate, 0.0)),
        setup_rows=p.setup_per_channel,
        pixel_s=u.kind_overhead_s.get(f"{rate}.{p.tag}.pixel", 0.0) if p.setup_per_pixel else 0.0,
        im2col_s=u.kind_overhead_s.get(f"{rate}.{p.tag}.im2col", 0.0) if p.im2col else 0.0,
        im2col_row_s=u.kind_overhead_s.get(f"{rate}.{p.tag}.im2col.row", 0.0) if p.im2col else 0.0,
        im2col_strided_s=u.kind_overhead_s.get(f"{rate}.{p.tag}.im2col.strided", 0.0) if p.im2col else 0.0,
        repack_s=u.kind_overhead_s.get(f"{rate}.{p.tag}.weights", 0.0) if p.repack else 0.0,
        spill_s=u.kind_overhead_s.get(f"{rate}.{p.tag}.spill", 0.0) if p.spill and u.l2_share_bytes else 0.0,
        l2=u.l2_share_bytes, row_s=u.kind_overhead_s.get(f"{rate}.{p.tag}.row", 0.0) if p.qgemm else 0.0,
        tap_s=u.kind_overhead_s.get(f"{rate}.{p.tag}.tap", 0.0) if p.qgemm else 0.0,
        span_s=(u.kind_overhead_s.get(p.span_key or f"{rate}.{p.tag}.span", 0.0) / p.span_elements
                if p.span_elements else 0.0),
        call_s=u.kind_overhead_s.get(f"{rate}.{p.tag}.call", 0.0) / p.call_elements if p.call_elements else 0.0,
        out_s=u.kind_overhead_s.get(f"{rate}.{p.tag}.out", 0.0) if p.out_cost else 0.0,
        igemm_s=u.kind_overhead_s.get(f"{rate}.{p.tag}.igemm", 0.0) if p.tap_cost else 0.0,
        run_s=u.kind_overhead_s.get(f"{rate}.{p.tag}.run", 0.0),
        reread_s=u.kind_overhead_s.get(f"{rate}.{p.tag}.reread", 0.0),  # calibration_rnn
        **_inner_transposes(u, p, epilogue_pass),
        far_s=u.kind_overhead_s.get(f"{rate}.{p.tag}.far", 0.0) if u.l2_share_bytes else 0.0,
        farmem_s=u.kind_overhead_s.get(f"{rate}.{p.tag}.farmem", 0.0) if u.llc_keep_bytes else 0.0,
        index_s=u.kind_overhead_s.get(f"{rate}.{p.tag}.index.{op_type}", 0.0) if op_type else 0.0,
        col2im_s=u.kind_overhead_s.get(f"{rate}.{p.tag}.col2im", u.kind_overhead_s.get(f"{rate}.fp32.col2im", 0.0))
        if p.col2im else 0.0, subnormal_s=u.kind_overhead_s.get(f"{rate}.{p.tag}.subnormal", 0.0),
        in_move_s=u.kind_overhead_s.get(NHWC_INPUT_KEY, 0.0) if p.nhwc_input else 0.0,
        packed_far_s=u.kind_overhead_s.get(PACKED_FAR_KEY, 0.0) if epilogue_pass and (rate, p.tag) in _SGEMM else 0.0,
        **({"packb_s": u.kind_overhead_s.get(PACKB_KEY, 0.0), "packcall_s": u.kind_overhead_s.get(PACKCALL_KEY, 0.0)}
           if epilogue_pass and (rate, p.tag) == ("matmul", "fp32") else {}),
        cold_out=1.0 if epilogue_pass and (rate, p.tag) in _SGEMM and u.l2_share_bytes else 0.0,
        alias_s=u.kind_overhead_s.get(ALIAS_KEY, 0.0) if epilogue_pass and (rate, p.tag) in _SGEMM else 0.0,
        beyond_s=u.kind_overhead_s.get(ELEMENTWISE_BEYOND_KEY, 0.0)
        if epilogue_pass and (rate, p.tag) == ("elementwise", "fp32") and u.l2_share_bytes else 0.0,
        extra_ops_s=p.extra_ops_per_out * _extra_op_s(u, p), extra_in_ops_s=p.extra_ops_per_in * _extra_op_s(u, p),
        extra_fp32_ops_s=_extra_fp32_s(u, p),
        # ORT CPU (MLAS): a fused activation is an element-wise pass over the output at the element-wise
        # rate; int8 kernels fold it into the output range; dynamic int8 already runs it as its own kernel.
        epilogue_s=1 / (fp32_peak * efficiency(u, "elementwise", "fp32"))
        if epilogue_pass and p.compute != "int8" and u.peak_ops_per_s.get("fp32") else 0.0,
        decode_s=_decode_s(u, p, p.tag), decode_rows_s=_decode_s(u, p, p.tag + "rows"),
        overlap=u.roofline_overlap, cache_bw=u.cache_bandwidth_bytes_per_s,
        dram_bw=hw.dram_bandwidth_bytes_per_s * u.bandwidth_efficiency,
        kind_bw=kbw.get(rate, kbw.get(PARENT_KIND.get(rate, rate), kbw.get("default", 0.0))),
        own_bw=kbw.get(f"{rate}.{p.tag}", 0.0), onchip=u.onchip_memory_bytes, llc=u.llc_share_bytes,
        llc_all=u.llc_bytes, llc_keep=u.llc_keep_bytes, llc_gone=u.llc_gone_bytes, llc_hold_s=u.llc_hold_s,
        llc_evict_s=u.llc_evict_s, spill_hold=u.llc_spill_hold_bytes, spill_evict=u.llc_spill_evict_bytes,
        evicted_bw=u.evicted_bandwidth_bytes_per_s or hw.dram_bandwidth_bytes_per_s * u.bandwidth_efficiency,
        w_exposed=u.weights_exposed_share, eliminated=p.eliminated, fp32_equiv=p.fp32_equivalent,
        padded_sgemm=p.padded_sgemm, sgemm_block=float(u.sgemm_column_block) if p.padded_sgemm else 0.0,
        # (an fp32 path's: XNNPACK's F32 kernels take one input channel at a time, their output channels in blocks)
        int8_kb=(1.0 if p.compute == "fp32" else float(u.int8_k_block)) if p.padded_sgemm else 0.0,
        int8_nb=float(u.f32_igemm_n_block if igemm else u.f32_n_block if p.compute == "fp32" else u.int8_n_block)
        if p.padded_sgemm else 0.0, int8_nb2=float(u.f32_n_block) if igemm else 0.0,
        dw_tile=float(u.f32_n_block) if p.dw_tiles else 0.0,
        peak_nr2=fp32_peak * u.efficiency.get(f"{rate}.{p.tag}{NR2_SUFFIX}", 0.0) if igemm else 0.0,
        dw_lanes=float(u.f32_vector_floats) if p.dw_tiles else 0.0,
        peak_split=fp32_peak * u.efficiency.get(f"{rate}.{p.tag}{SPLIT_SUFFIX}", 0.0) if p.dw_tiles else 0.0,
        # int8 Convs (ConvInteger, QLinearConv) and fp16's NCHW Conv behind a kept Cast leave NCHWc's padding
        plain=p.compute == "int8" or p.tag == CAST16NCHW,
        lanes=p.lanes, scalar_s=u.kind_overhead_s.get(f"{rate}.{p.tag}.scalar", 0.0) if p.lanes else 0.0)


def _inner_transposes(u: Unit, p: Path, ort_cpu: bool) -> dict[str, float]:
    """Rates of the Transposes inside ORT's fp32 Softmax over an inner axis (transposes.inner_axis_transposes): those
    of a Transpose task that walks (kind `walk`) on the same unit; a blocked move at calibration's own figure for
    these swaps (`layout.fp32.inner`, calibration_inner: the layout rate's compute term, which the layout fit drives
    to its ceiling, priced them at ~0), else at the layout rate. Only ORT's CPU EP (the backends whose activations
    are passes, `ort_cpu`) runs such a kernel (its fp16 paths run the fp32 one's figures plus their own passes);
    other runtimes' converters write such Transposes as ops of their own."""
    peak = u.peak_ops_per_s.get("fp32", 0.0)
    if not ort_cpu or p.tag != "fp32" or not peak:
        return {}
    inner = u.kind_overhead_s.get(INNER_MOVE_KEY)
    return {"inner_walk_s": 1 / (peak * efficiency(u, "walk", "fp32")),
            "inner_move_s": inner if inner is not None else 1 / (peak * efficiency(u, "layout", "fp32")),
            "inner_far_s": u.kind_overhead_s.get("walk.fp32.far", 0.0) if u.l2_share_bytes else 0.0,
            "inner_run_s": u.kind_overhead_s.get("layout.fp32.run", 0.0)}


def _extra_op_s(u: Unit, p: Path) -> float:
    """Seconds per op of the path's extra element-wise kernels: the element-wise rate of their format
    (`extra_ops_format`: dynamic int8's Cast / Mul / Add run fp32 beside an int8 kernel), else of the path's."""
    fmt = p.extra_ops_format or p.compute
    peak = u.peak_ops_per_s.get(fmt, 0.0)
    return 1 / (peak * efficiency(u, "elementwise", p.extra_ops_format or p.tag)) if peak else 0.0


def _extra_fp32_s(u: Unit, p: Path) -> float:
    """Seconds per output element of the path's extra fp32 kernels beside an int8 one: at the fp32 element-wise rate,
    the activation kernel's own FLOPs (Path.extra_act_flops_per_out) at its op's rate where calibrated."""
    peak = u.peak_ops_per_s.get("fp32", 0.0)
    if not p.extra_fp32_ops_per_out or not peak:
        return 0.0
    own = p.extra_act_flops_per_out
    return ((p.extra_fp32_ops_per_out - own) / efficiency(u, "elementwise", "fp32")
            + own / efficiency(u, "elementwise", "fp32", p.extra_act_op)) / peak


def _decode_s(u: Unit, p: Path, tag: str) -> float:
    """Seconds per kernel element to unpack weights on every run. `<tag>rows` is the rate when the task
    has more than one activation row (MatMulNBits: M = 1 is a fused GEMV that unpacks in registers;
    M > 1 dequantizes B to an fp32 buffer, then runs SGEMM), falling back to the one-row rate."""
    if not p.decode_ops:
        return 0.0
    key = f"decode.{tag}"
    if tag.endswith("rows") and key not in u.efficiency:
        key = f"decode.{tag[:-4]}"
    eff = u.efficiency.get(key, efficiency(u, "decode", p.tag))
    return p.decode_ops / (u.peak_ops_per_s.get("fp32", 0.0) or u.peak_ops_per_s["fp16"]) / eff


def stack(each: Sequence[Rates]) -> Rates:
    """Rates of several paths as arrays (float64; bool for the flags), one entry per path."""
    return Rates(**{f.name: np.array([getattr(r, f.name) for r in each],
                                     dtype=bool if f.name in _BOOL_RATES else np.float64)
                    for f in dataclasses.fields(Rates)})


# --- one task ------------------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Counts:
    """What tasks do, as numbers the formulas broadcast: columns [n, 1] against rates over combos [C]."""
    macs: Num
    flops: Num
    epilogue_flops: Num
    in_elements: Num
    out_elements: Num
    kernel_elements: Num
    aux_elements: Num
    other_const_bytes: Num
    kernel_rows: Num
    im2col_elements: Num
    groups: Num  # a Conv's group count; a depthwise kernel without one (TFLite's) counts its rows
    im2col_rows: Num
    row_calls: Num = 0.0
    row_extra_calls: Num = 0.0
    gemm_k: Num = 0.0
    sgemm_columns: Num = 0.0
    sgemm_align: Num = 0.0
    igemm_taps: Num = 0.0
    reread_elements: Num = 0.0
    reread_set: Num = 0.0
    im2col_strided: Num = 0.0
    copy_runs: Num = 0.0
    far_walk: Num = 0.0
    page_walk: Num = 0.0
    indexed: Num = 0.0
    bias_pass: Num = 0.0
    plain_macs: Num = 1.0
    plain_im2col: Num = 1.0
    col2im_elements: Num = 0.0
    dilated_taps: Num = 1.0
    subnormals: Num = 0.0
    inner_walked: Num = 0.0
    inner_moved: Num = 0.0
    inner_far: Num = 0.0
    inner_runs: Num = 0.0
    lane_macs: Num = 1.0
    scalar_taps: Num = 0.0
    packed_b: Num = 0.0
    packed_calls: Num = 0.0
    aliased_macs: Num = 0.0

    @staticmethod
    def of(works: Sequence[Work]) -> Counts:
        col = lambda xs: np.array(xs, dtype=np.float64)[:, None]  # noqa: E731
        own = {"aux_elements": "aux_weight_elements", "kernel_rows": "kernel_out_channels"}  # Work's names, if not ours
        cols = {f.name: col([getattr(w, own.get(f.name, f.name)) for w in works]) for f in dataclasses.fields(Counts)}
        cols["groups"] = col([w.groups if w.groups > 1 else w.kernel_out_channels for w in works])
        return Counts(**cols)


@dataclass(frozen=True, slots=True)
class TaskCost:
    latency_s: Num
    activation_bytes: Num  # activations the kernel reads and writes
    weight_bytes: Num  # kernel bytes streamed per run
    extra_bytes: Num  # the path's extra passes (casts, quantization, unfused activations)
    fits: Num  # bool: the task's traffic stays in the on-chip memory


@dataclass(frozen=True, slots=True)
class Residency:
    """Where a model's weights are when a run reads them: facts of the whole model, the same for every task."""

    resident: bool  # all of them stay in the unit's own cache between runs
    weights_fp32_bytes: float  # the model's weights at fp32 (how much of them the last-level cache holds)
    run_s: float = 0.0  # the run's length (run_estimate_s): how long each weight waits to be read again
    spill_bytes: float = 0.0  # the run's own traffic beyond the core's L2 (spill_estimate_bytes) meanwhile


def residency(works: Sequence[Work], weights_fp32_bytes: float, u: Unit) -> Residency:
    """Where a model's weights are between runs on unit `u` (the sweep's and published.latency's one rule)."""
    peak = u.peak_ops_per_s.get("fp32") or max(u.peak_ops_per_s.values(), default=0.0)
    return Residency(weights_fp32_bytes <= u.onchip_memory_bytes, weights_fp32_bytes,
                     run_estimate_s(works, peak, u.cache_bandwidth_bytes_per_s),
                     spill_estimate_bytes(works, u.l2_share_bytes or u.onchip_memory_bytes))


def run_estimate_s(works: Sequence[Work], peak_ops_per_s: float, cache_bw: float) -> float:
    """A run's length as the reuse interval of its weights: every task's arithmetic at the unit's nominal fp32
    peak and its activations at the cache rate (no fixed costs, no efficiencies: the order of magnitude the
    last-level cache's eviction rule needs, known before any task is costed)."""
    ops = sum(2 * w.macs + w.flops for w in works)
    moved = sum(w.in_elements + w.out_elements for w in works) * 4.0
    return (ops / peak_ops_per_s if peak_ops_per_s else 0.0) + (moved / cache_bw if cache_bw else 0.0)


def spill_estimate_bytes(works: Sequence[Work], l2_bytes: float) -> float:
    """The bytes a run moves beyond the core's L2 between two reads of a weight (one run later): the activations
    (fp32) of every task whose inputs and outputs together outgrow the L2 (0: no L2 known). On a Zen 4 (1 MB L2,
    32 MB L3) they pass through the shared L3 and evict the model's own weights from it: 8 MB of batch-1 MatMul
    weights came back 65% from memory after 8 depthwise convs on 32x112x112 maps (0.72 ms), 4% after 8 on 32x56x56
    ones within the L2 (0.21 ms), 13% after 24 of them (0.57 ms) (/work/notes/h38host-data/probe1.json)."""
    if l2_bytes <= 0:
        return 0.0
    each = [(w.in_elements + w.out_elements) * 4.0 for w in works]
    return float(sum(b for b in each if b > l2_bytes))


def evicted_by_time(run_s: Num, hold_s: Num, evict_s: Num) -> Num:
    """evicted_share's time ramp: none evicted for runs up to `hold_s`, all beyond `evict_s` (0: none ever)."""
    return np.where(evict_s > 0, np.clip((run_s - hold_s) / np.maximum(evict_s - hold_s, 1e-12), 0.0, 1.0), 0.0)


def evicted_share(r: Rates, run_s: float, spill_bytes: float = 0.0) -> Num:
    """Share of a model's weights (those beyond the unit's own cache) evicted from the shared last-level cache
    before the next run reads them. By other cores' and tenants' traffic: none for runs up to `llc_hold_s`, all
    beyond `llc_evict_s`, linear between; by the run's own traffic beyond the L2 (`spill_bytes`), the same way
    between `spill_hold` and `spill_evict` bytes; a weight stays only if neither evicts it (independent chances).
    Calibration fits both ramps on the machine (calibration_eviction.eviction_ramp, spill_ramp).
    Measured on a Zen 3 VM (host-cpu.yaml's own figures): eight 1 MB batch-1 MatMuls
    read again after a run of 0.10-0.40 ms at 0.046-0.050 ns per weight (the cache's rate), 0.75 ms 0.077,
    1.5 ms 0.131, 2.8 ms 0.161, 5.3 ms 0.133 (a compute-only Conv chain beside them sets the run's length;
    its own footprint 150 KB). Real models are such runs: their classifiers and squeeze-excitation convs read
    0.11-0.15 ns per weight (MobileNet, MNASNet, ShuffleNet, EfficientNet), 2.3-2.9x the cache's rate."""
    by_time = evicted_by_time(run_s, r.llc_hold_s, r.llc_evict_s)
    return 1.0 - (1.0 - by_time) * (1.0 - evicted_by_spill(r, spill_bytes))


def evicted_by_spill(r: Rates, spill_bytes: float) -> Num:
    """evicted_share's ramp of the run's own traffic beyond the L2: none up to `spill_hold` bytes, all beyond
    `spill_evict` (0: not modelled)."""
    spill_span = np.maximum(r.spill_evict - r.spill_hold, 1.0)
    return np.where(r.spill_evict > 0, np.clip((spill_bytes - r.spill_hold) / spill_span, 0.0, 1.0), 0.0)


def cold_output_s(w: Counts, r: Rates, res: Residency) -> Num:
    """An SGEMM's output beyond the core's L2 written to lines in no cache: where the model's own traffic (its
    activations beyond the L2, its weights beyond the last-level cache) evicts them between two uses of the buffer,
    each such line comes from memory before it is written, at the rate evicted weights come back at. On a Zen 4
    (session 62) Swin-T's and CoaT-Lite-Tiny's first-stage Gemms of 3.6-6.4 MB outputs ran 1.08-1.22x their time alone
    inside the models, those of <= 1.2 MB outputs 1.01-1.07x; alone after a flush with their inputs read back
    (benchmarks/cold_outputs.py), nine paid 0.25 ms (the flush's own) plus 0.030 ns per output byte beyond the L2.
    Calibration's cases keep their buffers (single ops, little spill): none is priced there."""
    if res.resident:
        return 0.0
    cold = np.maximum(evicted_by_spill(r, res.spill_bytes), outgrown(r, res.weights_fp32_bytes))
    return r.cold_out * cold * np.maximum(w.out_elements * r.out_b - r.l2, 0.0) / np.maximum(r.evicted_bw, 1.0)


def _column_pad(w: Counts, r: Rates) -> Num:
    """Work over work done where MLAS computes whole registers of columns (Work.sgemm_columns, Path.padded_sgemm):
    the columns rounded up to the unit's block over the columns; 1 elsewhere. A Softmax pads its rows so."""
    block, cols = np.maximum(r.sgemm_block, 1.0), np.maximum(w.sgemm_columns, 1.0)
    pays = (r.sgemm_block > 0) & (w.sgemm_columns > 0) & (w.sgemm_align < r.sgemm_block)
    return np.where(pays, np.ceil(cols / block) * block / cols, 1.0)


def _padded_macs(w: Counts, r: Rates) -> Num:
    """The MACs a task computes: its own, or a grouped 1x1 NCHW Conv's with its SGEMM columns padded to the unit's
    block where its channels per group do not fill that block (simulator.conv_work.sgemm_columns), or a TFLite
    conv's or fully connected layer's with XNNPACK's integer GEMM blocks: each tap's input channels rounded up to the
    K block, the output channels to the N block (Work.gemm_k, Counts.kernel_rows); an fp32 conv's with its output
    channels rounded up to XNNPACK's fp32 N block (K block 1; with an F32 IGEMM's, Rates.int8_nb2, a deconvolution's
    too, whose Work has no gemm_k); a depthwise conv's channels (its kernel rows) rounded up to XNNPACK's depthwise
    channel tile (Path.dw_tiles)."""
    padded = w.macs * _column_pad(w, r)
    k, n = np.maximum(w.gemm_k, 1.0), np.maximum(w.kernel_rows, 1.0)
    kb, nb = np.maximum(r.int8_kb, 1.0), np.maximum(r.int8_nb, 1.0)
    nb = np.where((r.int8_nb2 > 0) & (n < nb), np.maximum(r.int8_nb2, 1.0), nb)  # XNNPACK's F32 IGEMM's nr2 kernels
    blocked = w.macs * (np.ceil(k / kb) * kb / k) * (np.ceil(n / nb) * nb / n)
    tile = np.maximum(r.dw_tile, 1.0)
    padded = np.where(r.dw_tile > 0, padded * np.ceil(n / tile) * tile / n, padded)
    return np.where(r.padded_sgemm & ((w.gemm_k > 0) | (r.int8_nb2 > 0)), blocked, padded)


def task_cost(w: Counts, r: Rates, res: Residency) -> TaskCost:
    """One task's latency on one path: a roofline with imperfect overlap, plus the path's fixed costs. Weights beyond
    the unit's own cache (`res`) come from the last-level cache, or from memory once evicted; a unit that fetches
    weights ahead of the task using them (`w_exposed` < 1: the ANE) shows that share of their time only. The traffic
    is the same (dram_bytes); the run's total weight time is not a floor here (each task is costed alone, and the
    totals add them)."""
    peak = np.where(r.peak > 0, r.peak, np.inf)
    peak = np.where((r.peak_nr2 > 0) & (w.kernel_rows < r.int8_nb), r.peak_nr2, peak)  # the IGEMM's nr2 kernels
    split = (r.peak_split > 0) & (np.mod(w.kernel_rows, np.maximum(r.dw_lanes, 1.0)) > 0)
    peak = np.where(split, r.peak_split, peak)  # a depthwise tile's loads across cache lines (SPLIT_SUFFIX)
    # NCHWc's kernels skip a dilated Conv's taps in the padding (Counts.dilated_taps); the model's own Conv runs them all
    macs = _padded_macs(w, r) * np.where(r.lanes, w.lane_macs, np.where(r.plain, w.plain_macs, w.dilated_taps))
    # A batch-1 recurrent step (h x R^T) does one MAC per element of R it reads: those MACs run at the rate R streams
    # (its reads, priced below), not beside them at the GEMM's. Single-op GRUs on a Zen 4 (thread CPU time, 200 steps,
    # hidden 256, 2026-12-04): 2.10 ms one direction, 4.41 two, 7.03 with 512 inputs; priced at both, +14..+33%.
    macs = np.maximum(macs - w.reread_elements, 0.0)
    flops = w.flops * np.where(w.macs > 0, 1.0, _column_pad(w, r))  # a Softmax's rows in whole registers
    t_comp = (2 * macs + flops + w.epilogue_flops * (r.epilogue_s == 0)) / peak
    act = w.in_elements * r.in_b + w.out_elements * r.out_b
    w_rt = w.kernel_elements * (r.w_rt * r.rt_keep + r.rt_mask)
    w_all = w_rt + w.aux_elements * 4 + w.other_const_bytes
    # Reads of a set that stays in the core's cache (an RNN's recurrent weights, step after step) come at its rate.
    hot = np.where((w.reread_elements > 0) & (w.reread_set * r.in_b <= r.onchip), w.reread_elements * r.in_b, 0.0)
    moved = act - hot + w_all
    fits = moved <= r.onchip  # this op's activations stay in cache
    bw = np.where(r.kind_bw > 0, r.kind_bw, np.where(fits, r.cache_bw, r.dram_bw))
    bw = np.where((r.own_bw > 0) & (moved <= r.l2), r.own_bw, bw)  # beyond the L2, the kind's rate or memory's
    bw = np.where((r.beyond_s > 0) & (moved > r.l2), 1 / np.maximum(r.beyond_s, 1e-30), bw)  # ... or the path's own
    evicted = 0.0 if res.resident else np.maximum(evicted_share(r, res.run_s, res.spill_bytes),
                                                  outgrown(r, res.weights_fp32_bytes))
    m_rows = np.where(w.kernel_elements > 0, w.macs / np.maximum(w.kernel_elements, 1.0), 0.0)  # rows (M) of a GEMM
    # MLAS's several-row SGEMM reads weights from memory at its own rate, in full beside its arithmetic (PACKED_FAR_KEY)
    packed = (m_rows > 1.5) & (r.packed_far_s > 0)
    s_per_w_byte = 1 / r.cache_bw if res.resident else r.w_exposed * (
        (1 - evicted) / r.dram_bw + np.where(packed, 0.0, evicted / r.evicted_bw))
    extra = w.in_elements * r.extra_in + w.out_elements * r.extra_out + w.bias_pass * r.bias_b
    t_mem = (act - hot) / bw + hot * np.where(r.reread_s > 0, r.reread_s, 1 / r.cache_bw) + w_all * s_per_w_byte
    decode = w.kernel_elements * np.where(m_rows > 1.5, r.decode_rows_s, r.decode_s)
    overlap = _overlap(r, res.weights_fp32_bytes, evicted)
    lat_s = (np.maximum(t_comp, t_mem) + overlap * np.minimum(t_comp, t_mem) + extra / bw
             + w.in_elements * r.cached_extra_in / np.maximum(r.cache_bw, 1.0)
             + r.dispatches * r.dispatch_s + _setup_s(w, r) + decode + w.epilogue_flops * r.epilogue_s
             + w.out_elements * (r.extra_ops_s + r.extra_fp32_ops_s) + w.in_elements * (r.extra_in_ops_s + r.in_move_s)
             + r.spill_s * np.maximum(w.out_elements * r.out_b - r.l2, 0.0)
             + np.where(packed, r.packed_far_s * w_rt * evicted, 0.0) + cold_output_s(w, r, res))
    return TaskCost(lat_s, act, w_rt, extra, fits)


def _setup_s(w: Counts, r: Rates) -> Num:
    """Fixed costs of the path: per task (or per group), per output pixel, per im2col element, per weight, per GEMM
    row and im2col copy of a per-group GEMM, per call of a broadcasting element-wise or copy kernel
    (Path.call_elements), per output element (Path.out_cost), per output element and tap of an integer indirect GEMM
    (Path.tap_cost), per run a Transpose copies (Counts.copy_runs), per byte beyond the L2 of a walk that misses the
    cache (Counts.far_walk) and beyond the LLC's keep of one whose rows are pages apart (Counts.page_walk), per
    element an index op looks up (Counts.indexed), per column element a ConvTranspose scatters
    (Counts.col2im_elements), per subnormal a Softmax writes or a MatMul multiplies (Counts.subnormals: microcode
    assists on some CPUs), and the Transposes inside a Softmax over an inner axis or an Einsum (Counts.inner_*; a far
    walk's bytes beyond the L2 as a Transpose's; an Einsum's runs at a Transpose's cost per run), per MAC of an SGEMM
    whose A aliases in the L1."""
    share = np.where(r.plain, w.plain_im2col, 1.0)  # the model's own Conv where the path runs it (Rates.plain)
    setup = r.setup_s * np.where(r.setup_rows, w.groups * share, 1.0)
    # (output pixels: on the model's own output channels, of which a padded NCHWc filter has more rows)
    # (a depthwise one's share of the padded filter is its MACs' share alone: its own channels on the lanes path)
    own = w.kernel_rows * w.plain_macs / np.where(r.lanes, 1.0, np.maximum(w.plain_im2col, 1e-9))
    pixels = w.out_elements / np.maximum(own, 1.0)
    setup = setup + r.pixel_s * pixels
    # im2col buffer: one row per output pixel and kernel tap (MACs / output channels); a 1x1 stride-1 Conv reads its
    # input as it is (the buffer would equal the input).
    cols = np.where(w.kernel_rows > 0, w.macs / np.maximum(w.kernel_rows, 1.0), 0.0)
    cols = np.where(w.im2col_elements > 0, w.im2col_elements, cols)
    expanded = cols > 1.01 * w.in_elements
    cols, rows, strided = cols * share, w.im2col_rows * share, w.im2col_strided * share
    return (setup + r.im2col_s * np.where(expanded, cols, 0.0) + r.im2col_row_s * np.where(expanded, rows, 0.0)
            + r.im2col_strided_s * np.where(expanded, strided, 0.0)
            + r.repack_s * w.kernel_elements * np.where(r.plain, w.plain_macs, 1.0) * np.ceil(pixels / QGEMM_STRIDE_N)
            + r.row_s * w.row_calls + r.tap_s * w.row_extra_calls
            + (r.span_s + r.call_s + r.out_s) * w.out_elements + r.igemm_s * w.igemm_taps + r.run_s * w.copy_runs
            + r.far_s * np.maximum(w.far_walk * r.out_b - r.l2, 0.0) + r.index_s * w.indexed
            + r.farmem_s * np.maximum(w.page_walk * r.out_b - r.llc_keep, 0.0)
            + r.col2im_s * w.col2im_elements + r.subnormal_s * w.subnormals + r.inner_walk_s * w.inner_walked
            + r.inner_move_s * w.inner_moved + r.inner_run_s * w.inner_runs
            + r.inner_far_s * w.inner_far * np.maximum(w.out_elements * r.out_b - r.l2, 0.0)
            + r.scalar_s * w.scalar_taps + r.packb_s * w.packed_b + r.packcall_s * w.packed_calls
            + r.alias_s * w.aliased_macs)


def _overlap(r: Rates, weights_fp32_bytes: float, evicted: Num = 0.0) -> Num:
    """Share of the smaller of compute and memory time that shows. Weights beyond the last-level cache come back from
    memory every run, the prefetchers no longer hiding them behind the compute: the smaller time shows in full. Up to
    this core's share of the cache they stay; between the share and the whole cache (which other cores may take) the
    exposed part grows linearly: chains of batch-8 1024x1024 MatMuls here, 16 MB L3 share of 32 MB, per layer 155 us
    up to 16.8 MB of weights, 181 at 21, 200 at 25.2, 231 at 33.6. Footprint: the model's weights as this combo runs
    them (fp32 bytes x run-time bytes per weight). Weights evicted between runs (evicted_share) come the same way."""
    footprint = weights_fp32_bytes * r.w_rt / 4
    ramp = np.maximum(r.llc_all - r.llc, 0.0)
    beyond = np.where(ramp > 0, np.clip((footprint - r.llc) / np.maximum(ramp, 1.0), 0.0, 1.0),
                      (footprint > r.llc).astype(np.float64))
    beyond = np.maximum(np.where(r.llc > 0, beyond, 0.0), evicted)
    return r.overlap + (1.0 - r.overlap) * beyond


def outgrown(r: Rates, weights_fp32_bytes: float) -> Num:
    """Share of a model's weights (as this combo runs them: fp32 bytes x run-time bytes per weight) the last-level
    cache does not keep between runs whatever the run's length: read in the same order every run, more than it holds
    misses it all (least recently used first). Calibrated, a ramp from `llc_keep` to `llc_gone` bytes (calibration_llc:
    a Zen 4 32 MiB L3 keeps 12 MB, none past 42); else a step at the whole cache (AlexNet's 244 MB on a 32 MB L3)."""
    footprint = weights_fp32_bytes * r.w_rt / 4
    ramp = np.clip((footprint - r.llc_keep) / np.maximum(r.llc_gone - r.llc_keep, 1.0), 0.0, 1.0)
    return np.where(r.llc_gone > 0, ramp, np.where((r.llc_all > 0) & (footprint > r.llc_all), 1.0, 0.0))


def weights_from_memory(r: Rates, res: Residency) -> Num:
    """Share of the weights a run reads that comes through DRAM, as `task_cost` times them: none when all of them
    stay in the unit's own cache; where the unit has a last-level cache, those evicted between runs or beyond the
    cache only (the rest are read from it); all of them where no such cache is known (the device profiles)."""
    if res.resident:
        return 0.0
    gone = np.maximum(evicted_share(r, res.run_s, res.spill_bytes), outgrown(r, res.weights_fp32_bytes))
    return np.where((r.llc_all > 0) | (r.llc > 0), gone, 1.0)


def dram_bytes(w: Counts, r: Rates, c: TaskCost, res: Residency) -> Num:
    """Bytes a task moves through DRAM per run: its weights as far as they come from memory
    (`weights_from_memory`), and its activations and extra passes unless they fit on chip. Weights the last-level
    cache keeps between runs are no DRAM traffic: counted as such, BirdNET's metadata model (27 MB of fp32 weights
    in a 32 MB L3, 0.36 ms a run) drew 9.9 W of memory power on the host, 83 GB/s from a memory that gives 52."""
    weights = c.weight_bytes + w.aux_elements * r.aux_b + w.other_const_bytes
    return weights * weights_from_memory(r, res) + np.where(c.fits, 0.0, c.activation_bytes + c.extra_bytes)


def io_bytes(in_elements: Num, out_elements: Num) -> Num:
    """DRAM bytes of the model's own inputs and outputs a task reads or writes: they cross DRAM every inference even
    when all else stays on chip (the input arrives from the camera / app, the output is read back by it; fp32)."""
    return (in_elements + out_elements) * 4.0
