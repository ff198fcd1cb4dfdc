"""Calibrate LiteRT's CPU kernels on this machine, for `litert-cpu/host`: XNNPACK's own rates, not ORT's.

Each case is a chain of R identical TFLite operators written in code (`compiler.frontends.tflite_writer`), in
three forms: fp32; int8 weights with float activations (what ai-edge-quantizer's dynamic int8 writes: XNNPACK
runs CONV_2D and FULLY_CONNECTED as QD8 x QC8W GEMMs, quantizing each input on the fly; a DEPTHWISE_CONV_2D it
does not take, so TFLite's own hybrid kernel runs it); and int8 activations and weights (static int8: XNNPACK's
QS8 / QC8 kernels). Every operator is timed by LiteRT's own profiler (`compiler.backends.litert_profiler`,
in a sandboxed child) and, per (kind, path), an efficiency and a fixed cost per operator are fitted so that the
sweep's own prediction of an operator on `litert-cpu/host` equals its measured time (relative least squares
over the case's shapes). The fit goes through the same code as every prediction, as `simulator.calibration`
does for ORT; the result overrides the ORT-calibrated host profile for the `litert-cpu` backend only.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from compiler.graph import Graph
from simulator import speed_history
from simulator.calibration_fit import best_log_efficiency, nonnegative_fit
from simulator.litert_cases import MIN_TIMED_MS, TARGET, predicted_ms, profile_cases
from simulator.litert_paths import (BUILTIN_INT8_OPS, BUILTIN_INT8_TAG, DECONV_TAG, DW_GROUPED_TAG, DW_TILE25_TAG,
                                    F32_GEMM_TAG, HSWISH_INT8, HYBRID25_TAG, QD8_GEMM_TAG, QS8_GEMM_TAG,
                                    XNN_DWCONV_MAX_TAPS, XNN_DWCONV_TILE9_TAPS)
from simulator.profiles import HardwareProfile
from simulator.roofline import NR2_SUFFIX, SPLIT_SUFFIX

# 3: QD8's cost per output pixel (`<kind>.qd8.pixel`); 4: the hybrid depthwise kernel's cost per output byte beyond
# the core's L2 (`dwconv.hybrid.spill`, `l2_share_bytes` from sysfs), with MobileNet-shaped depthwise cases;
# 5: convs with many channels (the GEMM rates), int8 HARD_SWISH (`elementwise.hswish8`); 6: int4 weights (`<kind>.builtin`).
# 7: host-cpu.yaml's peaks are this machine's (the efficiencies are shares of them). 8: RFFT2D's own rate
# (`other.fp32.RFFT2D`, simulator.litert_signal). 9: a TFLite IF's own cost per execution (`control.tflite`,
# simulator.litert_control). 10: TFLite's builtin STRIDED_SLICE (`layout.builtin.STRIDED_SLICE`, simulator.litert_signal).
# 11: an int8 SiLU's table lookup (`elementwise.lut`, simulator.litert_lut). 12: fp32 HARD_SWISH's own rate.
# 13: QS8 GEMMs' cost per output element (`<kind>.int8.out`, simulator.litert_paths.QS8_OUT). 14: the integer
# indirect GEMM's cost per output element and tap (`conv.<tag>.igemm`), with image-stem cases; XNNPACK's integer GEMM
# blocks on this CPU (`int8_k_block`, `int8_n_block`: AMX's 4 x 64), recorded with the figures. 15: a QD8 1x1
# stride-1 conv (XNNPACK's fully connected GEMM) has figures of its own (`conv.qd8gemm`), fitted on the 1x1 cases.
# 16: depthwise convs of more than 25 taps (XNNPACK's grouped IGEMM: `dwconv.grouped`, `.grouped8` for static int8), 7x7 cases.
# 17: a hybrid depthwise conv right after a QD8 conv pays a cost per output element (`dwconv.hybrid.out`), 1x1 conv +
# depthwise conv cases fitted with the chains; int8 SQUARED_DIFFERENCE and RSQRT (`elementwise.builtin8.<op>`).
# 18: a static int8 1x1 stride-1 conv (XNNPACK's fully connected QS8 GEMM) has figures of its own (`conv.int8gemm`,
# with a cost per pixel and per output element), fitted on the 1x1 cases apart from the 3x3 and stem ones, with two
# cases whose output channels differ from their inputs (CONV_PAIR); a chain's last operator (it writes the model's
# output) is left out of the fit as the first is.
# 19: GELU's own rates (`elementwise.fp32.GELU`, XNNPACK's; `elementwise.builtin8.GELU`, TFLite's int8 table), GELU
# cases; TFLite's own PADV2 (`layout.builtin.PADV2` on fp32 data, `layout.builtin8.PADV2` on int8;
# simulator.litert_signal's PADV2 cases).
# 20: fp32 TRANSPOSE_CONV's own figures (`conv.deconv`, with a cost per output pixel: XNNPACK's Subconv2D), deconvolution
# cases.
# 21: fp32 depthwise convs of 10 to 25 taps (XNNPACK's 25-tap tile: `dwconv.tile25`), 5x5 cases.
# 22: operators timed under two ticks of LiteRT's profiler (MIN_TIMED_MS) are left out of the fits.
# 23: LiteRT's RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR and channel CONCATENATION at figures of their own
# (RESIZE_BILINEAR's `layout.fp32.RESIZE_BILINEAR`; a cost per run copied, `layout.interleave.run`, `layout.fp32.run`;
# simulator.litert_layout). 24: those costs per run are kept in the cache (23's calibrations dropped them).
# 25: fp32 convs pay their output channels in XNNPACK's F32 blocks (`f32_n_block`, recorded with the figures), and a
# 1x1 stride-1 one (XNNPACK's F32 GEMM) has figures of its own (`conv.fp32gemm`), fitted on the fp32 1x1 cases apart
# from the 3x3 ones (the F32 IGEMM's `conv.fp32`); two fp32 cases of 24 output channels (a block and a half).
# 26: the F32 IGEMM's own output-channel block (`f32_igemm_n_block`, 32 with AVX-512F), recorded with the figures.
# 27: fp32 TRANSPOSE at XNNPACK's figures (`layout.transpose` bandwidth, `.run` per kernel call, `.far` per far byte;
# simulator.litert_layout's transpose cases), fp32 element-wise ops at a bandwidth of their own (`elementwise.fp32`)
# and LOGISTIC at its own rate (simulator.litert_elementwise); the cache keeps `kind_bandwidth_bytes_per_s`. A
# path's own bandwidth applies only while the task's bytes fit in the L2 (roofline.Rates.own_bw); element-wise cases
# within a 256 KiB and 512 KiB L2 join those beyond it. 28: a channel CONCATENATION's bytes at a rate of its own
# (`layout.interleave.CONCATENATION`), fitted with its cost per run (simulator.litert_layout.interleave_fit).
# 29: fp32 5x5 depthwise convs pay their channels in whole tiles of XNNPACK's depthwise kernel (`f32_n_block`) and a
# cost per output pixel (`dwconv.tile25.pixel`), cases of 16, 32, 72 channels beside 24; fp32 deconvolutions pay their
# output channels in the F32 IGEMM's blocks, cases of 24 and 48 channels (what pins the Subconv2D's MAC rate).
# 30: the last-level cache's ramp of XNNPACK's own fully connected chains (simulator.litert_llc), in place of a step
# at the listed size.
# 31: fp32 PADV2 (TFLite's own pad kernel) pays a cost per output pixel beside its rate (`layout.builtin.call`, a
# memcpy of the channels per pixel; simulator.litert_signal.pad_fit), fp32 PADV2 cases at 56x56 of 48 and 96 channels.
# 32: fp32 5x5 depthwise convs whose channels are not a whole number of the CPU's vectors (`f32_vector_floats`, recorded
# with the figures: 16 lanes with AVX-512F) run at a rate of their own (`dwconv.tile25split`), fitted on those cases
# (24, 72, 88 channels with AVX-512F) on `dwconv.tile25`'s figures; a case of 96 channels beside 16, 32, 48.
# 33: fp32 depthwise convs whose pixel's weights and inputs outgrow the L1 (`l1_bytes`, recorded with the figures) pay
# their weights from the L2 per output element (`dwconv.fp32.out`, `dwconv.tile25.out`; litert_paths.DW_PIXEL_BYTES),
# 3x3 and 5x5 cases of 672 and 960 channels.
# 34: the fp32 element-wise chains' cases timed under two ticks (MIN_TIMED_MS) are left out of their fits (Zen 5: two
# ADD cases read 0 and `elementwise.fp32` fitted at 15.8 MB/s, its grid's floor), cases of 0.75-0.83 MB maps for a
# 1 MiB L2, and a MUL of a tensor by itself is XNNPACK's `Square` (the MUL chains read each operator's successor).
# 35: XNNPACK's fp32 ADD and MUL at their bytes alone (`elementwise.fp32.ADD`, `.MUL` at EFF_MAX;
# simulator.litert_elementwise). Zen 5: ORT's element-wise efficiency priced a 903 KB ADD's arithmetic at 5.0 us; it
# ran in 3.0. 36 (tried, dropped): those beyond the L2 at a bandwidth of their own, fitted on the chains past it (Zen 5:
# 2.4-2.7 MB at ~165 GB/s, their operands hot); in the corpus's `.tflite` files such ADDs ran at 30-60 GB/s (a
# residual's operand was written long before) and HARD_SWISH / MUL read 0.54x / 0.47x their price at it, 1.00x /
# 0.85x without.
# 37: 36's cache read again as 35's (LOGISTIC's efficiency was fitted at that bandwidth).
# 38: the fp32 image stems (the stem cases in fp32 too) fit the F32 IGEMM's cost per output element and tap
# (`conv.fp32.igemm`, litert_paths.F32_IGEMM_TAP_KEY) with `conv.fp32`'s rate and fixed cost.
# 39: dynamic int8 depthwise convs of 10 to 25 taps (TFLite's hybrid kernel at 5x5) at figures of their own
# (`dwconv.hybrid25`, simulator.litert_paths.HYBRID25_TAG), 5x5 dynamic int8 cases alone and after a 1x1 conv.
# 40: a TRANSPOSE's far output bytes beyond what the LLC keeps (`layout.transpose.farmem`, simulator.litert_layout),
# three NHWC -> NCHW cases of 17-44 MB; the cache ladder is timed before the layout cases, whose fit reads it.
CACHE_VERSION = 40
R = 4  # operators per chain (the first is dropped from the fit: it reads the model's input)
# Rounds the chains are timed in (litert_cases.profile_cases: every case once a round, each round a child of its own,
# the runs split between them, each case's fastest round kept). Timed once, a burst of other load became a case's
# figure: on a Zen 4 (2026-12-07, /work/h58lite) three back-to-back timings beside a bursty 1-thread GEMM on the other
# vCPU read cases up to 1.63x apart (p90 1.07) and fitted `elementwise.builtin8.GELU` 1.16x apart; in 3 rounds, 1.10x
# (p90 1.02) and every efficiency within 1.02x. Quiet, both within 1.06-1.09x. 24 s -> 40 s (12 s of it writing files).
ROUNDS = 3
FORMS = ("fp32", "dyn8", "static8", "int4")


@dataclass(frozen=True)
class Case:
    name: str
    # CONV_2D | DEPTHWISE_CONV_2D | FULLY_CONNECTED | CONV_DW (a 1x1 conv, then a depthwise one) | HARD_SWISH |
    # CONV_PAIR (1x1 convs C -> C2 -> C ..., shape (C, H, C2)) |
    # SQUARED_DIFFERENCE (against a [1, H, H, 1] constant, broadcast over the channels, as a LayerNorm's) | RSQRT
    op: str
    # conv: (C, H, k[, stride]) (CONV_DW: the depthwise conv's); a stem: (C_in, H, k, stride, C_out), its R convs all reading the model's input;
    # TRANSPOSE_CONV: (C_in, H, k, stride, C_out), its R deconvolutions all reading the model's input (SAME: H x stride);
    # FULLY_CONNECTED: (M, K); HARD_SWISH: (C, H)
    shape: tuple[int, ...]
    forms: tuple[str, ...] = FORMS  # the forms timed (an element-wise op: static8 only; int4: _INT4_OPS only)


CASES: tuple[Case, ...] = (
    *(Case(f"conv1x1-{c}-{h}", "CONV_2D", (c, h, 1)) for c, h in ((32, 56), (64, 28), (128, 14), (256, 7))),
    *(Case(f"conv3x3-{c}-{h}", "CONV_2D", (c, h, 3)) for c, h in ((16, 56), (32, 28), (64, 14))),
    # Few channels over many pixels: what pins QD8's cost per pixel (a first conv's 112x112 maps, 16-32 channels).
    *(Case(f"conv1x1-{c}-{h}", "CONV_2D", (c, h, 1)) for c, h in ((8, 112), (16, 112))),
    *(Case(f"dw3x3-{c}-{h}", "DEPTHWISE_CONV_2D", (c, h, 3)) for c, h in ((32, 56), (64, 28), (128, 14), (256, 7))),
    Case("dw3x3-32-112", "DEPTHWISE_CONV_2D", (32, 112, 3)), Case("dw3x3s2-96-112", "DEPTHWISE_CONV_2D", (96, 112, 3, 2)),
    # MobileNetV2's stride-1 depthwise maps on both sides of a 512 KiB L2 (fp32 outputs 1.8 MB, 0.6 MB, 0.3 MB):
    # what pins the hybrid kernel's cost beyond the L2 apart from its rate.
    *(Case(f"dw3x3-{c}-{h}", "DEPTHWISE_CONV_2D", (c, h, 3)) for c, h in ((144, 56), (192, 28), (384, 14))),
    *(Case(f"fc-{m}-{k}", "FULLY_CONNECTED", (m, k)) for m, k in ((16, 256), (64, 256), (16, 512), (64, 512))),
    # Many channels (ResNet's 3x3 convs, MobileNet's last 1x1s): the MACs that pin the GEMM rates. Without them the
    # cases above are small enough for QD8's cost per pixel to stand for its MACs: conv.qd8 came out at the 3.0
    # bound, and ResNet-18's int8-dynamic file (LiteRT, CPU time, load ~9, 2026-12-03) was predicted at 0.13x
    # its fp32 file, measured 0.31x.
    *(Case(f"conv3x3-{c}-{h}", "CONV_2D", (c, h, 3)) for c, h in ((128, 28), (256, 14))),
    Case("conv1x1-320-14", "CONV_2D", (320, 14, 1)),
    # 1x1 convs whose output channels differ from their inputs (MobileNetV2's expand and project convs, alternating):
    # with the square cases above, what tells XNNPACK's fully connected QS8 GEMM's cost per pixel from its cost per
    # output element (`conv.int8gemm.pixel`, `.out`), which square cases alone cannot.
    *(Case(f"conv1x1-{c}x{c2}-{h}", "CONV_PAIR", (c, h, c2), ("static8",))
      for c, c2, h in ((16, 96, 112), (24, 144, 56))),
    # fp32 convs of 24 output channels, a 1x1 and a 3x3: XNNPACK's F32 kernels compute 32 (litert_paths.XNN_CONV;
    # profiled 0.75x the rate of 32-320 channels, both kernels), which the fits must see as padding, not as a rate.
    *(Case(f"conv{k}x{k}-24-56", "CONV_2D", (24, 56, k), ("fp32",)) for k in (1, 3)),
    # int8 HARD_SWISH (MobileNetV3's activations under static int8): its own kernel, ~8x the element-wise rate
    # (MobileNetV3-Small int8-static, profiled: 19 HARD_SWISH 2.87 ms, predicted 0.35; the file 2.1x its fp32 one).
    # and fp32 HARD_SWISH, which XNNPACK runs far faster than the element-wise rate ORT's calibration gives (profiled:
    # MobileNetV3-Small's 19, 0.077 ms, predicted 0.34): its own figure, `elementwise.fp32.HARD_SWISH`.
    *(Case(f"hswish-{c}-{h}", "HARD_SWISH", (c, h), ("fp32", "static8")) for c, h in ((16, 112), (72, 28), (576, 7))),
    # Image stems (3 input channels, stride 2, integer forms): what pins XNNPACK's integer GEMM blocks apart from the
    # rate (a tap of 3 channels costs a K block: 8 on AVX2 / AVX-512, 64 with AMX; Unit.int8_k_block) and the indirect
    # GEMM's cost per output element and tap (`<kind>.<tag>.igemm`, Work.igemm_taps). ResNet-18's int8 7x7 stem
    # profiled 3.88 ms against 1.30 predicted on a Zen 4, 4.49 against 0.36 on a Sapphire Rapids (2026-12-03). fp32's
    # IGEMM has no K block (F32 kernels reduce one channel at a time) but walks its taps' row pointers as the integer
    # one does (simulator.litert_paths.F32_IGEMM_TAP_KEY): the stems in fp32 too.
    *(Case(f"stem{k}x{k}s2-{co}", "CONV_2D", (3, 224, k, 2, co), ("fp32", "dyn8", "static8"))
      for k, co in ((7, 64), (3, 32))),
    # 7x7 depthwise convs (ConvNeXt's maps): more taps than XNNPACK's depthwise kernels, so fp32 runs them as a grouped
    # IGEMM (simulator.litert_paths.DW_GROUPED) at a rate of its own; convnext_atto's 12 profiled 14.9 ms, 1.1 predicted.
    *(Case(f"dw7x7-{c}-{h}", "DEPTHWISE_CONV_2D", (c, h, 7), ("fp32", "static8")) for c, h in ((40, 56), (80, 28), (160, 14))),
    # fp32 5x5 depthwise convs (BlazeFace's, MobileNetV3's): XNNPACK's 25-tap tile (simulator.litert_paths.DW_TILE25), a
    # rate of its own; BlazeFace's maps and channels, and 16, 32 and 72 channels beside 24 at one size (one, two, two
    # and five tiles of 16: what tells the cost per pixel from the tiles', which the small maps alone trade for a cost
    # per operator under noise); 96 channels: a fourth case of whole vectors (with AVX-512F 24, 72 and 88 are not).
    *(Case(f"dw5x5-{c}-{h}", "DEPTHWISE_CONV_2D", (c, h, 5), ("fp32",))
      for c, h in ((24, 64), (48, 32), (88, 16), (16, 64), (32, 64), (72, 64), (96, 32))),
    # fp32 depthwise convs whose pixel's weights and inputs outgrow the L1 (MobileNetV3-Large's 672 / 960 channels:
    # 48-192 KB a pixel, beyond a 32 or 48 KiB L1): what pins their weights' cost from the L2 per output element
    # (simulator.litert_paths.DW_PIXEL_BYTES), apart from the tiles' rates the cases above fit.
    *(Case(f"dw{k}x{k}-{c}-{h}", "DEPTHWISE_CONV_2D", (c, h, k), ("fp32",))
      for k in (3, 5) for c, h in ((672, 14), (960, 7))),
    # Dynamic int8 5x5 depthwise convs (MobileNetV3's, LCNet's): TFLite's hybrid kernel at 25 taps costs far less than
    # 25/9 of a 3x3 one per output (simulator.litert_paths.HYBRID25_TAG): their own figures, fitted on these, in chains
    # and each after a QD8 1x1 conv (as in the models; `dwconv.hybrid25.out`, as DW_AFTER_GEMM's cases below).
    *(Case(f"dw5x5h-{c}-{h}", "DEPTHWISE_CONV_2D", (c, h, 5), ("dyn8",)) for c, h in ((128, 14), (240, 14), (576, 7))),
    *(Case(f"pwdw5x5-{c}-{h}", "CONV_DW", (c, h, 5), ("dyn8",)) for c, h in ((128, 14), (240, 14), (576, 7))),
    # Hybrid depthwise convs each right after a QD8 1x1 conv (MobileNetV2's expand -> depthwise, ShuffleNetV2's and
    # MobileOne's blocks): 2.6-3.9x the same conv in a chain of depthwise convs (simulator.litert_paths.DW_AFTER_GEMM):
    # they pin its cost per output element, `dwconv.hybrid.out`; only the depthwise convs are fitted (with the chains'
    # cases, the rate, setup and spill shared). MobileNetV2's stride-1 maps.
    *(Case(f"pwdw3x3-{c}-{h}", "CONV_DW", (c, h, 3), ("dyn8",)) for c, h in ((32, 112), (144, 56), (192, 28), (384, 14))),
    # int8 SQUARED_DIFFERENCE and RSQRT (a LayerNorm under static int8): TFLite's own kernels, rates of their own
    # (simulator.litert_paths.BUILTIN_INT8_OPS; convnext_atto's 17 LayerNorms profiled 4.5 ms, 0.55 predicted with ADDs).
    *(Case(f"sqdiff-{c}-{h}", "SQUARED_DIFFERENCE", (c, h), ("static8",)) for c, h in ((40, 56), (160, 14))),
    *(Case(f"rsqrt-{c}-{h}", "RSQRT", (c, h), ("static8",)) for c, h in ((1, 56), (1, 28))),
    # GELU (ConvNeXt's MLPs, transformers' FFNs): fp32 runs XNNPACK's own GELU, int8 TFLite's own kernel (a table
    # lookup), each far below the element-wise rate its 10 FLOPs per element were costed at; rates of their own,
    # `elementwise.fp32.GELU` and `elementwise.builtin8.GELU`. ConvNeXt's hidden maps (4x the channels).
    *(Case(f"gelu-{c}-{h}", "GELU", (c, h), ("fp32", "static8")) for c, h in ((160, 56), (640, 14))),
    # fp32 deconvolutions (a segmenter's or text detector's upsampling head): XNNPACK's Subconv2D pays a cost per output
    # pixel far above its MACs' time (simulator.litert_paths.DECONV): few and many channels, 2x2 and 3x3 kernels; 24
    # and 48 channels over more pixels, whose MACs (at a third of the conv's rate on a Zen 3) the others do not pin.
    *(Case(f"deconv{k}x{k}-{c}x{co}-{h}", "TRANSPOSE_CONV", (c, h, k, 2, co), ("fp32",))
      for c, h, k, co in ((16, 128, 2, 1), (16, 64, 2, 16), (32, 32, 2, 32), (16, 64, 3, 4), (24, 46, 2, 24),
                          (48, 46, 2, 48))),
)
_ELEMENTWISE = frozenset({"HARD_SWISH", "SQUARED_DIFFERENCE", "RSQRT", "GELU"})
# The preset each form is, and the efficiency tag its path runs at (simulator/litert_paths.py).
PRESET = {"fp32": "fp32", "dyn8": "int8-dynamic", "static8": "int8-static", "int4": "int4-weights"}
# int4 weights: the fp32 chain written by the exporter itself (ai-edge-quantizer's recipe behind a run-time
# DEQUANTIZE), timed for the ops TFLite's own fp32 kernels then run (`<kind>.builtin`).
_INT4_OPS = frozenset({"CONV_2D", "FULLY_CONNECTED"})


def build(case: Case, form: str, path: Path) -> Path:
    """The chain of `case` in `form`, written to `path`."""
    from compiler.frontends.tflite_writer import TfliteWriter

    if form == "int4":
        from compiler.optimize.litert_export import export_tflite

        src = build(case, "fp32", path.with_name(f"{path.stem}-src.tflite"))
        export_tflite(src, path, PRESET[form])
        return path

    rng = np.random.default_rng(0)
    w = TfliteWriter(description="edgescope calibration")
    q8 = form == "static8"
    act = dict(dtype="int8", quant=([0.05], [0], 0)) if q8 else {}
    stride = case.shape[3] if len(case.shape) > 3 else 1
    if case.op == "FULLY_CONNECTED":
        m, k = case.shape
        shape = [m, k]
    elif case.op in _ELEMENTWISE:
        c, h = case.shape
        shape = [1, h, h, c]
        x = first = w.tensor("x", shape, **act)
        for i in range(R):
            y = w.tensor(f"op{i}/out", shape, **act)
            if case.op == "SQUARED_DIFFERENCE":
                m = rng.integers(-20, 20, [1, h, h, 1]).astype(np.int8 if q8 else np.float32)
                w.op(case.op, [x, w.tensor(f"op{i}/m", [1, h, h, 1], **act, data=m)], [y])
            else:
                w.op(case.op, [x], [y])
            x = y
        return w.save(path, [first], [x])
    else:
        c, h = case.shape[:2]
        shape = [1, h, h, c]
    x = first = w.tensor("x", shape, **act)
    stem = len(case.shape) == 5
    outs = []
    pw = Case(case.name, "CONV_2D", (shape[3], shape[1], 1)) if case.op == "CONV_DW" else None
    for i in range(R):
        if pw is not None:  # the 1x1 conv before each depthwise one
            y = w.tensor(f"pw{i}/out", shape, **act)
            weights, bias = _weights(w, pw, i, form, rng, "pw")
            w.op("CONV_2D", [x, weights, bias], [y], w.options("Conv2DOptions", padding=0, strideW=1, strideH=1))
            x = y
        op_case = case
        if case.op == "CONV_PAIR":  # 1x1 convs alternating C -> C2 and C2 -> C
            ci, co = (case.shape[0], case.shape[2]) if i % 2 == 0 else (case.shape[2], case.shape[0])
            shape, op_case = [1, h, h, co], Case(case.name, "CONV_2D", (ci, h, 1, 1, co))
        if stem:  # each conv reads the image and writes its own output (a deconvolution's: H x stride, SAME)
            side = h * stride if case.op == "TRANSPOSE_CONV" else -(-h // stride)
            x, shape = first, [1, side, side, case.shape[4]]
        elif stride > 1:  # each op halves the image (SAME padding): the next reads a smaller input
            shape = [1, -(-shape[1] // stride), -(-shape[2] // stride), shape[3]]
        y = w.tensor(f"op{i}/out", shape, **act)
        outs.append(y)
        weights, bias = _weights(w, op_case, i, form, rng)
        if case.op == "TRANSPOSE_CONV":
            w.op("TRANSPOSE_CONV", [w.const(f"op{i}/shape", np.array(shape, np.int32)), weights, first, bias], [y],
                 w.options("TransposeConvOptions", padding=0, strideW=stride, strideH=stride))
        elif case.op == "FULLY_CONNECTED":
            w.op("FULLY_CONNECTED", [x, weights, bias], [y], w.options("FullyConnectedOptions"))
        elif case.op in ("CONV_2D", "CONV_PAIR"):
            w.op("CONV_2D", [x, weights, bias], [y],
                 w.options("Conv2DOptions", padding=0, strideW=stride, strideH=stride))
        else:  # DEPTHWISE_CONV_2D, CONV_DW
            w.op("DEPTHWISE_CONV_2D", [x, weights, bias], [y],
                 w.options("DepthwiseConv2DOptions", padding=0, strideW=stride, strideH=stride, depthMultiplier=1))
        x = y
    return w.save(path, [first], outs if stem else [x])


def _weights(w: Any, case: Case, i: int, form: str, rng: np.random.Generator, prefix: str = "op") -> tuple[int, int]:
    """(filter, bias) tensor indices: float, or per-channel int8 (with an fp32 bias for the dynamic form, an int32
    one at input scale x weight scale for the static form)."""
    if case.op == "FULLY_CONNECTED":
        _, k = case.shape
        shape, axis = [k, k], 0
    elif case.op in ("CONV_2D", "TRANSPOSE_CONV"):  # OHWI, as TRANSPOSE_CONV's [C_out, kh, kw, C_in]
        c, _, kk = case.shape[:3]
        shape, axis = [case.shape[4] if len(case.shape) == 5 else c, kk, kk, c], 0
    else:
        c, _, kk = case.shape[:3]
        shape, axis = [1, kk, kk, c], 3
    rows = shape[axis]
    wf = (rng.standard_normal(shape) * 0.05).astype(np.float32)
    if form == "fp32":
        return w.const(f"{prefix}{i}/w", wf), w.const(f"{prefix}{i}/b", np.zeros(rows, np.float32))
    scales = [float(s) for s in np.abs(wf).max(axis=tuple(a for a in range(len(shape)) if a != axis)) / 127 + 1e-8]
    s_b = np.array(scales).reshape([-1 if a == axis else 1 for a in range(len(shape))])
    q = np.clip(np.round(wf / s_b), -127, 127).astype(np.int8)
    wt = w.tensor(f"{prefix}{i}/w", shape, "int8", data=q, quant=(scales, [0] * rows, axis))
    if form == "dyn8":
        return wt, w.const(f"{prefix}{i}/b", np.zeros(rows, np.float32))
    bias = w.tensor(f"{prefix}{i}/b", [rows], "int32", data=np.zeros(rows, np.int32),
                    quant=([0.05 * s for s in scales], [0] * rows, 0))
    return wt, bias


def measure(tmp: Path, progress: Callable[[str], None] = lambda s: None, runs: int = 30, rounds: int = ROUNDS
            ) -> dict[tuple[str, str], tuple[Graph, list[float]]]:
    """{(case, form): (the chain's graph, measured ms of each operator but the first)}, each case its fastest of
    `rounds` rounds (ROUNDS; litert_cases.profile_cases)."""
    from compiler.frontends import tflite

    keys = [(case, form) for case in CASES for form in FORMS
            if form in case.forms and (form != "int4" or case.op in _INT4_OPS)]
    timed = profile_cases(keys, lambda k, p: build(*k, p), lambda k: f"{k[0].name}-{k[1]}", tmp, "LiteRT chains",
                          runs, warmup=5, limit_s=1800.0, progress=progress, rounds=rounds)
    out: dict[tuple[str, str], tuple[Graph, list[float]]] = {}
    for (case, form), path, res in timed:
        if form == "int4":
            # Predicted as the option table predicts it, on the fp32 chain under int4-weights; measured on the file
            # the exporter wrote, its operators in order (the DEQUANTIZEs of the weights, 1-3 us, left out).
            g = tflite.load(path.with_name(f"{path.stem}-src.tflite"))
            written = tflite.load(path)
            ops = [n.id for n in written.nodes if n.op_type == case.op]
            out[(case.name, form)] = (g, [res["tasks"][i][0] for i in ops[1:]])
            continue
        g = tflite.load(path)
        # CONV_DW: the depthwise convs only (the 1x1 convs between them are NaN: not fitted)
        out[(case.name, form)] = (g, [res["tasks"][n.id][0] if case.op != "CONV_DW" or n.op_type == "DEPTHWISE_CONV_2D"
                                      else float("nan") for n in g.nodes[1:]])
    return out


# (form, kind) -> the efficiency tag that path runs at (simulator/litert_paths.py; static int8: the generic path).
TAGS: dict[tuple[str, str], str] = {
    ("fp32", "conv"): "fp32", ("fp32", "dwconv"): "fp32", ("fp32", "gemm"): "fp32",
    ("dyn8", "conv"): "qd8", ("dyn8", "gemm"): "qd8", ("dyn8", "dwconv"): "hybrid",
    ("static8", "conv"): "int8", ("static8", "dwconv"): "int8", ("static8", "gemm"): "int8",
    ("static8", "elementwise"): HSWISH_INT8, ("int4", "conv"): "builtin", ("int4", "gemm"): "builtin",
    ("fp32", "elementwise"): "fp32",
}
_KIND = {"CONV_2D": "conv", "TRANSPOSE_CONV": "conv", "DEPTHWISE_CONV_2D": "dwconv", "FULLY_CONNECTED": "gemm", "HARD_SWISH": "elementwise",
         "CONV_DW": "dwconv", "CONV_PAIR": "conv", "SQUARED_DIFFERENCE": "elementwise", "RSQRT": "elementwise",
         "GELU": "elementwise"}
# Paths whose cases fit the op's own efficiency (`elementwise.fp32.HARD_SWISH`), not the kind's: the other fp32
# element-wise ops keep theirs.
_OWN_OP = frozenset({("fp32", "elementwise")})


def _fit(cases: list[tuple[Graph, str, list[float]]], hw: HardwareProfile, key: str) -> tuple[float, dict[str, float]]:
    """(efficiency, {key: fixed seconds per operator, key.pixel: per output pixel, key.spill: per output byte beyond
    the L2, key.out: per output element, key.igemm: per output element and kernel tap, where the path pays them}) for `key` (`conv.qd8`) that bring the predictions
    of every case's operators closest to the measurements, in relative least squares (the setups >= 0: every subset
    of them solved per efficiency, the best kept)."""
    import itertools

    meas = np.array([m for _, _, ms in cases for m in ms])
    # A case's operators of another path (CONV_DW's 1x1 convs) are NaN; and an operator timed under two ticks of
    # LiteRT's profiler (1 us) says nothing in relative terms: on a Zen 5 (2026-12-06) XNNPACK's fp32 HARD_SWISH on
    # 576 x 7 x 7 read 0.000 ms, the relative fit divided by it and priced every HARD_SWISH at 6,300x its time
    # (MobileNetV3-Large's .tflite predicted 230 ms against 3.1 measured).
    fitted = ~np.isnan(meas) & (np.nan_to_num(meas) >= MIN_TIMED_MS)
    meas = meas[fitted]
    subs = [key, key + ".pixel", key + ".spill", key + ".out", key + ".igemm"]

    def pred(h: HardwareProfile) -> np.ndarray:
        return np.array([p for g, preset, _ in cases for p in predicted_ms(g, h, preset)])[fitted]

    def at(log_eff: float, setups: dict[str, float]) -> HardwareProfile:
        return hw.with_overrides({"units": {"cpu": {"efficiency": {key: float(np.exp(log_eff))},
                                                    "kind_overhead_s": setups}}})

    zero = {sub: 0.0 for sub in subs}
    # Operators' setup units (operators, output pixels) as the path pays them: the prediction's slope, ms per ms.
    base = pred(at(0.0, zero))
    n = np.stack([(pred(at(0.0, {**zero, sub: 1e-6})) - base) / 1e-3 for sub in subs], axis=1)
    cols = [j for j in range(len(subs)) if n[:, j].any()]
    uses = [list(c) for k in range(len(cols), 0, -1) for c in itertools.combinations(cols, k)]

    def err(log_eff: float) -> tuple[float, np.ndarray]:
        # (pred + n s) / meas - 1 = a s - b in least squares, s >= 0.
        a, b = n / meas[:, None], 1 - pred(at(log_eff, zero)) / meas
        return nonnegative_fit(a, b, uses)

    x = best_log_efficiency(lambda v: err(v)[0])
    s_ms = err(x)[1]
    # The operator's setup always (0 is a fit too); the per-pixel and spill costs only where the path has them.
    return float(np.exp(x)), {sub: float(v) / 1e3 for j, (sub, v) in enumerate(zip(subs, s_ms)) if j == 0 or j in cols}


def _without_output(case: Case, ms: list[float]) -> list[float]:
    """A chain's measured operators with the last one left out of the fit (NaN), as the first is: it writes the
    model's output, which the prediction charges as memory traffic and LiteRT's profiler does not show (static int8
    1x1 convs 96 -> 16 at 112x112: the last predicted 0.236 ms, the same conv before it 0.202, both measured 0.186).
    A stem's convs all read the input and write an output of the model: they are kept alike."""
    if len(case.shape) == 5 or len(ms) < 2:
        return ms
    return [*ms[:-1], float("nan")]


def _tag(case: Case, form: str, kind: str) -> str:
    """The efficiency tag the case's operators run at: TAGS, but a dynamic (static) int8 1x1 stride-1 conv runs
    XNNPACK's fully connected QD8 (QS8) GEMM (simulator.litert_paths.GEMM_CONV), an fp32 one its F32 GEMM
    (XNN_CONV), an fp32 or static int8 depthwise conv of more than 25 taps a grouped IGEMM (DW_GROUPED), an fp32 one
    of 10 to 25 the 25-tap tile (DW_TILE25), a dynamic int8 one of 10 to 25 the hybrid kernel's own (HYBRID25_TAG)."""
    tag = TAGS[(form, kind)]
    if case.op == "TRANSPOSE_CONV":
        return DECONV_TAG
    stride = case.shape[3] if len(case.shape) > 3 else 1
    pointwise = case.op == "CONV_PAIR" or (case.op == "CONV_2D" and case.shape[2] == 1 and stride == 1)
    if tag in ("qd8", "int8") and pointwise:
        return QD8_GEMM_TAG if tag == "qd8" else QS8_GEMM_TAG
    if tag == "fp32" and pointwise and case.op == "CONV_2D":
        return F32_GEMM_TAG
    if case.op in BUILTIN_INT8_OPS and form == "static8":  # (their fp32 forms: XNNPACK's, at the op's fp32 rate)
        return BUILTIN_INT8_TAG
    if tag in ("fp32", "int8") and case.op == "DEPTHWISE_CONV_2D" and case.shape[2] ** 2 > XNN_DWCONV_MAX_TAPS:
        return DW_GROUPED_TAG + ("8" if tag == "int8" else "")
    if tag == "fp32" and case.op == "DEPTHWISE_CONV_2D" and case.shape[2] ** 2 > XNN_DWCONV_TILE9_TAPS:
        return DW_TILE25_TAG
    if tag == "hybrid" and case.op in ("DEPTHWISE_CONV_2D", "CONV_DW") and case.shape[2] ** 2 > XNN_DWCONV_TILE9_TAPS:
        return HYBRID25_TAG
    return tag


def _out_channels(case: Case) -> int:
    """A conv case's output channels: its stem's C_out, else its channels (0 for other cases)."""
    return case.shape[4] if len(case.shape) == 5 else case.shape[0] if case.op == "CONV_2D" else 0


def fit(measured: dict[tuple[str, str], tuple[Graph, list[float]]], hw: HardwareProfile, l2: int = 0,
        blocks: tuple[int, int] = (8, 0), f32_n_block: int = 0, f32_igemm_n_block: int = 0,
        f32_vector_floats: int = 0, l1: int = 0) -> dict[str, Any]:
    """Profile overrides {"units": {"cpu": {"efficiency": {...}, "kind_overhead_s": {...}, "l2_share_bytes": l2,
    "int8_k_block", "int8_n_block"}}} from `measure`; `l2`: one core's share of its L2 (host_machine.l2_bytes; 0: no
    spill cost fitted); `blocks`: XNNPACK's integer GEMM blocks on this CPU (host_machine.int8_gemm_blocks);
    `f32_n_block`: its fp32 GEMMs' output-channel block (host_machine.f32_gemm_n_block; 0: not modelled), and its
    IGEMM's (host_machine.f32_igemm_n_block); fp32 3x3 cases of fewer outputs than the latter fit the IGEMM's nr2
    kernels' own rate (`conv.fp32nr2`), on `conv.fp32`'s fitted figures; 5x5 depthwise cases whose channels are not
    whole vectors of `f32_vector_floats` lanes (host_machine.f32_vector_floats) theirs (`dwconv.tile25split`), on
    `dwconv.tile25`'s; `l1`: the core's L1 data cache (host_machine.l1_bytes), beyond which a depthwise case's
    weights come from the L2 (its path's `.out`, fitted with the rest of its group)."""
    machine = {"l2_share_bytes": float(l2), "int8_k_block": float(blocks[0]), "int8_n_block": float(blocks[1]),
               "f32_n_block": float(f32_n_block), "f32_igemm_n_block": float(f32_igemm_n_block),
               "f32_vector_floats": float(f32_vector_floats), "l1_bytes": float(l1)}
    hw = hw.with_overrides({"units": {"cpu": machine}})
    groups: dict[str, list[tuple[Graph, str, list[float]]]] = {}
    by_name = {c.name: c for c in CASES}
    for (name, form), (g, ms) in measured.items():
        kind = _KIND[by_name[name].op]
        own = f".{by_name[name].op}" if (form, kind) in _OWN_OP or by_name[name].op in BUILTIN_INT8_OPS else ""  # that op's only
        tag = _tag(by_name[name], form, kind)
        if tag == "fp32" and by_name[name].op == "CONV_2D" and 0 < _out_channels(by_name[name]) < f32_igemm_n_block:
            tag += NR2_SUFFIX  # the F32 IGEMM's nr2 kernels (roofline.NR2_SUFFIX): none where no case is so narrow
        if tag == DW_TILE25_TAG and f32_vector_floats and by_name[name].shape[0] % f32_vector_floats:
            tag += SPLIT_SUFFIX  # loads across cache lines (roofline.SPLIT_SUFFIX)
        groups.setdefault(f"{kind}.{tag}{own}", []).append((g, PRESET[form], _without_output(by_name[name], ms)))
    eff, setup = {}, {}
    for key, cases in sorted(groups.items()):  # (`conv.fp32` before `conv.fp32nr2`, whose fit runs on its figures)
        base = next((key.removesuffix(s) for s in (NR2_SUFFIX, SPLIT_SUFFIX) if key.endswith(s)), "")
        at = hw.with_overrides({"units": {"cpu": {"efficiency": {base: eff[base]}, "kind_overhead_s": setup}}}) \
            if base in eff else hw
        eff[key], setups = _fit(cases, at, key)
        if not base:  # (the nr2 / split kernels pay their base's fixed costs: their own would be read nowhere)
            setup.update(setups)
    return {"units": {"cpu": {"efficiency": eff, "kind_overhead_s": setup, **machine}}}


def _litert_version() -> str:
    from importlib.metadata import version

    return version("ai-edge-litert")


def cache_path(host_calibration: str | os.PathLike[str]) -> Path:
    """The LiteRT cache beside the host (ORT) calibration cache: `litert-cpu.json` beside the default
    `host-cpu.json`, `<name>.litert-cpu.json` beside any other `<name>.json`, so that two calibrations kept in one
    folder (`edgescope calibrate --out a.json`, `--out b.json`) do not overwrite each other's LiteRT half."""
    host = Path(host_calibration)
    return host.with_name("litert-cpu.json" if host.name == "host-cpu.json" else f"{host.stem}.litert-cpu.json")


def _current(p: Path) -> dict[str, Any] | None:
    from simulator.calibration_timing import machine

    try:
        cache = json.loads(p.read_text())
        if (cache.get("version") == CACHE_VERSION and cache.get("litert") == _litert_version()
                and cache.get("machine") == machine()):
            return cache
    except (OSError, ValueError, KeyError):
        pass
    return None


def is_cached(host_calibration: str | os.PathLike[str]) -> bool:
    """True when `with_litert` would return at once (LiteRT's half of this calibration is current)."""
    return _current(cache_path(host_calibration)) is not None


def speed_reference(host_calibration: str | os.PathLike[str] | None) -> float | None:
    """The speed probe figure (GFLOP/s) of the current LiteRT calibration beside `host_calibration`, or None: no
    path, no current LiteRT cache (nothing is timed here), or one made before LiteRT calibrations recorded a probe."""
    from compiler.speed_probe import reference_of

    cache = _current(cache_path(host_calibration)) if host_calibration is not None else None
    return reference_of(cache.get("speed_probe")) if cache else None


def with_litert(hw: HardwareProfile, host_calibration: str | os.PathLike[str],
                progress: Callable[[str], None] = lambda s: None) -> HardwareProfile:
    """`hw` (the ORT-calibrated host profile) with LiteRT's kernels as calibrated on this machine, calibrating and
    caching them first if needed (one calibration at a time per machine, as for ORT)."""
    import fcntl

    from simulator.calibration import save_cache
    from simulator.host_machine import (f32_gemm_n_block, f32_igemm_n_block, f32_vector_floats, int8_gemm_blocks,
                                        l1_bytes, l2_bytes)
    from simulator.calibration_timing import machine

    p = cache_path(host_calibration)
    if (cache := _current(p)) is None:
        p.parent.mkdir(parents=True, exist_ok=True)
        with open(p.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if (cache := _current(p)) is None:
                from compiler.speed_probe import probe
                from simulator import (litert_control, litert_elementwise, litert_layout, litert_llc, litert_lut,
                                       litert_signal)
                from simulator.calibration import speed_record

                from compiler.timing_lock import timing_alone

                with tempfile.TemporaryDirectory(prefix="edgescope-litert-cal-") as tmp, timing_alone():
                    before = probe()
                    measured = measure(Path(tmp), progress)
                    signal = litert_signal.calibrate(Path(tmp), hw, progress)
                    control = litert_control.calibrate(Path(tmp), hw, progress)
                    lut = litert_lut.calibrate(Path(tmp), hw, progress)
                    ladder = litert_llc.calibrate(Path(tmp), hw, progress)  # (the layout fit prices with it)
                    layout = litert_layout.calibrate(Path(tmp), hw.with_overrides(ladder), progress)
                    elementwise = litert_elementwise.calibrate(Path(tmp), hw, progress)
                    after = probe()
                progress(f"speed probe {before:.0f} GFLOP/s before LiteRT's timings, {after:.0f} after")
                overrides = fit(measured, hw, l2_bytes(), int8_gemm_blocks(), f32_gemm_n_block(), f32_igemm_n_block(),
                                f32_vector_floats(), l1_bytes())
                for extra in (signal, lut, layout, elementwise):
                    overrides["units"]["cpu"]["efficiency"].update(extra["units"]["cpu"]["efficiency"])
                for extra in (control, layout, signal):  # costs per execution, per run copied, per PADV2 call
                    overrides["units"]["cpu"]["kind_overhead_s"].update(extra["units"]["cpu"]["kind_overhead_s"])
                overrides["units"]["cpu"].update(  # XNNPACK's own cache ladder
                    {k: v for k, v in ladder["units"]["cpu"].items() if k in litert_llc.KEYS})
                for extra in (layout, elementwise):  # the rates XNNPACK's transposes and element-wise ops move bytes at
                    overrides["units"]["cpu"].setdefault("kind_bandwidth_bytes_per_s", {}).update(
                        extra["units"]["cpu"].get("kind_bandwidth_bytes_per_s", {}))
                # The CPU's speed while LiteRT's rates were timed (compiler.speed_probe), which a LiteRT profile is
                # held against (`speed_reference`): the ORT calibration's may have run at another time and speed.
                cache = {"version": CACHE_VERSION, "litert": _litert_version(), "machine": machine(),
                         "platform": platform.platform(), "overrides": overrides,
                         "speed_probe": speed_record(before, after)}
                save_cache(p, cache)
                speed_history.record(host_calibration, (before, after), "litert calibration")
    return applied(hw, cache)


def applied(hw: HardwareProfile, cache: dict[str, Any]) -> HardwareProfile:
    """`hw` (the ORT-calibrated host profile) with a LiteRT cache's figures (benchmarks/litert_refit.py applies one
    that is not current, to fit anew on top of it)."""
    # ORT's last-level cache ramp (simulator.calibration_llc) was timed with ORT's GEMV chains, their prefetching and
    # memory rate: XNNPACK's are not (simulator.litert_llc). LiteRT takes its own ladder, else a step at the listed size.
    # Its rates stand for the CPU's speed while they were timed, not the ORT half's moment (compiler.speed_probe).
    # LiteRT's own kind bandwidths join the profile's (with_overrides replaces a unit's whole map).
    from compiler.speed_probe import fastest_of
    from simulator.litert_elementwise import with_bandwidths
    from simulator.litert_llc import KEYS

    cpu = cache["overrides"].get("units", {}).get("cpu", {})  # a half with no CPU overrides keeps the profile's
    own = {"kind_bandwidth_bytes_per_s": with_bandwidths(hw, cpu["kind_bandwidth_bytes_per_s"])} if (
        "kind_bandwidth_bytes_per_s" in cpu) else {}
    ladder = {key: cpu.get(key, 0.0) for key in KEYS}
    out = hw.with_overrides({**cache["overrides"], "units": {"cpu": {**cpu, **own, **ladder}}})
    return dataclasses.replace(out, speed_gflops=fastest_of(cache.get("speed_probe")) or hw.speed_gflops)
