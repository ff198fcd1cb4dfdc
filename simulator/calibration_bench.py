"""Calibration's bench: the models it times, built in code, and how they are compiled as `ort-cpu/host` runs them.

Each case is a chain of R identical ops (so the per-inference fixed cost and the layout changes at the ends are
amortised), compiled by ORT at its default level; its variants (int8, fp16, int4) are written by
compiler/optimize/onnx_export.py, so each path is fitted against ORT running the real exported model.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from compiler.graph import Graph
from simulator.calibration_models import (
    R, REUSE_CONVS, SPILL_CONVS, activation_chain, cast_chain, compile_for_host, conv_act, conv_chain, dw_strided,
    layernorm_chain, matmul_chain, mixed_blocks, mixed_split_blocks, nchwc_upsample, op_chain, reuse_model,
    save_model, shared_matmul_chain, side_by_side, skip_layernorm_chain, stem_act, strided_own,
)
from simulator.calibration_alias import build_alias_cases
from simulator.calibration_beyond import build_beyond_cases
from simulator.calibration_deconv import DECONV_CASES
from simulator.calibration_int8dyn import INT8DYN_CASES
from simulator.calibration_index import build_index_cases
from simulator.calibration_rnn import build_rnn_cases
from simulator.calibration_se import SE_CASES
from simulator.calibration_layout import LAYOUT_CASES
from simulator.calibration_inner import build_inner_cases
from simulator.calibration_packb import build_packb_cases
from simulator.calibration_packed import build_packed_cases
from simulator.calibration_nhwc import build_nhwc_cases
from simulator.calibration_llc import build_llc_cases, memory_k, stream_k
from simulator.calibration_spans import build_span_cases
from simulator.calibration_subnormal import build_subnormal_cases
from simulator.calibration_video import VIDEO_CASES
from simulator.host_machine import l2_bytes, llc_bytes
from simulator.ort_fp16 import SHARED_WEIGHTS_KEY
from simulator.profiles import load_profile


@dataclass(frozen=True)
class Case:
    name: str
    kind: str  # the kind whose efficiency this case fits
    build: Callable[[Path], Path]
    variants: tuple[tuple[str, str], ...]  # (preset, efficiency tag) pairs fitted on this model
    # False: priced on the graph ORT optimizes without its NCHWc layout (the static int8 file has none), where the
    # chain's own sweep reads a depthwise Conv's channels on its filter, not on one padded to whole blocks
    nchwc: bool = True


Q = (("int8-static", "int8"), ("int8-dynamic", "int8dyn"))
QF = (*Q, ("fp16", "cast16"))  # paths fitted jointly (efficiency + fixed setup per task) over several shapes
MANY_ROWS = ((197, 384), (401, 192), (256, 512))  # (rows, K = N) of the many-row fp32 gemm cases
# Static int8 Convs off MLAS's symmetric kernels (simulator/ort_int8.py): grouped ones and stems, each its own figures.
QGEMM = ("int8-static", "convgemm.int8")
QSTEM = ("int8-static", "stemgemm.int8")
QPW = ("int8-static", "conv.int8pw")  # static int8 1x1 unit-stride convs on the symmetric kernel (ort_int8_dense)
CASES: tuple[Case, ...] = (
    Case("conv-64x28-3x3", "conv", conv_chain(64, 28, 3), (("fp32", "fp32"),)),
    Case("conv-256x14-1x1", "conv", conv_chain(256, 14, 1), (("fp32", "fp32"),)),
    Case("conv-32x56-1x1", "conv", conv_chain(32, 56, 1), (("fp32", "fp32"),)),
    # Few input channels (< one 16-wide NCHWc block): ORT's NCHWc conv reads plain NCHW input, a slower kernel.
    Case("convsmall-8x48-1x1", "convsmall", conv_chain(8, 48, 1), (("fp32", "fp32"),)),
    Case("convsmall-8x48-3x3", "convsmall", conv_chain(8, 48, 3), (("fp32", "fp32"),)),
    Case("dwconv-64x56", "dwconv", conv_chain(64, 56, 3, group=64), (("fp32", "fp32"),)),
    Case("dwconv-256x14", "dwconv", conv_chain(256, 14, 3, group=256), (("fp32", "fp32"),)),
    # 5x5 depthwise at MobileNetV3's shapes (EfficientNet, MixNet have them too), fitted into the same key: single-op
    # chains on a Zen 3 (AVX2, thread CPU time, load 2.6, 2026-12-03) take the same time per MAC at 3x3 and 5x5 on one
    # map (0.045-0.062 ns at 14-56 px, 0.078 / 0.092 at 7 px), rising as the map shrinks; fitted on the 56 and 14 px
    # 3x3 cases alone, MobileNetV3-Small's 5x5 ones (14 and 7 px) profiled at 1.25-1.44x their prediction.
    *(Case(f"dwconv-{c}x{s}-5x5", "dwconv", conv_chain(c, s, 5, group=c), (("fp32", "fp32"),))
      for c, s in ((120, 28), (240, 14), (576, 7))),
    # Quantized and fp16 convs: Conv + bias + activation blocks from large to small feature maps. Static int8 1x1 ones
    # fit figures of their own (`conv.int8pw`, simulator/ort_int8_dense.py), two more shapes at the maps MobileNetV2's
    # expand / project convs have (16 channels at 112 px, 320 at 7) beside the three the 3x3 ones shared.
    *(Case(f"convact-{c}x{s}-{k}x{k}", "conv", conv_act(c, s, k), QF if k > 1 else (QPW, *QF[1:]))
      for c, s, k in ((16, 32, 3), (64, 28, 3), (128, 8, 3), (32, 56, 1), (256, 14, 1), (96, 12, 1))),
    *(Case(f"convact-{c}x{s}-1x1", "conv", conv_act(c, s, 1), (QPW,)) for c, s in ((16, 112), (320, 7))),
    # ... and the 3x3 ones' `conv.int8` two more at ResNet-18's shapes: on its three 3x3 cases alone the fit's setup
    # rose 0.95 -> 8.4 us per conv (pinned by the 16-channel one) and ResNet-18's int8-static file came out -6.6%
    # against +0.5% with the 1x1 cases in (a Zen 4, 2026-12-08 01:23 UTC, 9.77 ms fast CPU time).
    *(Case(f"convact-{c}x{s}-3x3", "conv", conv_act(c, s, 3), (Q[0],)) for c, s in ((64, 56), (256, 14))),
    # Many weights on a small map: ConvInteger's per-run weight packing against its per-row im2col, which the cases
    # above cannot tell apart (fitted without it, the packing went to 0 and a 512x7 3x3 ConvInteger came out -31%).
    Case("convact-256x7-3x3", "conv", conv_act(256, 7, 3), (("int8-dynamic", "int8dyn"),)),
    # fp16 Convs sharing one bias stay NCHW (im2col + SGEMM): their own path, `cast16nchw`.
    *(Case(f"convact-shared-{c}x{s}-{k}x{k}", "conv", conv_act(c, s, k, shared_bias=True), (("fp16", "cast16nchw"),))
      for c, s, k in ((16, 32, 3), (64, 28, 3), (128, 8, 3), (256, 14, 1))),
    # Depthwise Convs sharing one bias: under fp16 ORT runs them as its NCHW grouped Conv between Casts (simulator.
    # backends._ort_fp16), 3x3 and 5x5 as MobileNetV3 and EfficientNet have them: `dwconvnchw.cast16nchw`, with a
    # cost per im2col row (MLAS copies the expansion row by row; fitted for this key only, _ROW_FITTED).
    *(Case(f"dwconvact-shared-{c}x{s}-{k}x{k}", "dwconvnchw", conv_act(c, s, k, group=c, shared_bias=True),
           (("fp16", "cast16nchw"),))
      for c, s, k in ((32, 56, 3), (96, 28, 3), (144, 14, 3), (72, 28, 5), (240, 14, 5), (576, 7, 5))),
    # The same at stride 2 on the large maps that open a stage: fitted on stride 1 alone, EfficientNet-B0's 96x112 3x3
    # and 144x56 5x5 ones were predicted at 0.49x and 0.6x their time in single-op files (Zen 4, CPU time, load ~10,
    # 2026-12-04), 96x56 3x3 at stride 1 0.88x: ORT's NCHW im2col gathers a strided row element by element.
    *(Case(f"dwconvact-shared-{c}x{s}-{k}x{k}-s2", "dwconvnchw", dw_strided(c, s, k), (("fp16", "cast16nchw"),))
      for c, s, k in ((96, 112, 3), (144, 56, 5), (32, 112, 3))),
    *(Case(f"convsmallact-8x{s}-{k}x{k}", "convsmall", conv_act(8, s, k), QF) for s, k in ((48, 1), (48, 3), (24, 3))),
    # Stems (3 channels, stride 2): the few-channel convs real CNNs have, with their MACs (above: stem_act). Their
    # static int8 path has five figures (rate, setup, per GEMM row, per im2col copy, per output element): four shapes,
    # as CNNs have them (MobileNetV2 / EfficientNet 3x32 3x3, ResNet 3x64 7x7, MobileNetV3 / GhostNet 3x16, ShuffleNet
    # v2 3x24), and a 5x5 below.
    # fp32 too: the 8-channel cases alone priced real stems at 1.5-2.3x their ORT profile on a Sapphire Rapids (ResNet-18
    # 7x7 1.39 ms, 3.13 predicted; MobileNetV4 / MNASNet / EfficientNet-Lite0 / SqueezeNet 3x3 1.4-1.9x, 2026-12-04);
    # fitted jointly with them (calibration_fit.JOINT_FP32). int8-dynamic stems: calibration_int8dyn.
    *(Case(f"stemact-3x{co}-{hw}-{k}x{k}", "convsmall", stem_act(co, hw, k), (("fp32", "fp32"), QF[2], QSTEM))
      for co, hw, k in ((32, 224, 3), (64, 224, 7), (16, 192, 3))),
    Case("stemact-3x24-224-3x3", "convsmall", stem_act(24, 224, 3), (QSTEM,)),
    # A fifth static int8 stem, at a second image size: since the cost per output element (`stemgemm.int8.out`,
    # ort_int8) the path has five figures, and four cases left them a line of exact fits (a Zen 5, 2026-12-07: a setup
    # of 111 us per stem beside a row cost 0.3x the truth, in tests/simulator/test_ort_int8_qgemm.py too).
    Case("stemact-3x24-160-5x5", "convsmall", stem_act(24, 160, 5), (QSTEM,)),
    # The same stems reading one bias: under fp16 ORT keeps its Cast and runs them as its plain NCHW Conv (im2col +
    # SGEMM), `convsmall.cast16nchw`. Priced at the dense convs' `conv.cast16nchw` figures, the 16 TorchScript fp16
    # stems of Round 31's files (their zero biases shared) were 0.66-1.55x their fp32 time against 1.8-2.4x profiled
    # (an Emerald Rapids, 2026-12-07: MobileNetV2's 382 us against 207 in fp32). A second image size tells the setup
    # per stem from the cost per im2col element (the 3x3 stems at 224 px expand alike).
    *(Case(f"stemact-shared-3x{co}-{hw}-{k}x{k}", "convsmall", stem_act(co, hw, k, shared_bias=True),
           (("fp16", "cast16nchw"),))
      for co, hw, k in ((32, 224, 3), (16, 224, 3), (8, 224, 3), (48, 224, 3), (64, 224, 7), (32, 160, 3))),
    *(Case(f"dwconvact-{c}x{s}", "dwconv", conv_act(c, s, 3, group=c), QF)
      for c, s in ((64, 56), (256, 14), (32, 24), (144, 12), (16, 48))),
    # 5x5 depthwise ConvIntegers (EfficientNet's, MobileNetV3's): im2col copies 25 taps per output pixel, which the
    # 3x3 cases above cannot tell from the per-channel and per-pixel costs. Fitted on 3x3 only, EfficientNet-B0's 5x5
    # ones (144x56 .. 1152x7) profiled 1.1-1.3x their prediction on this Zen 4 (int8-dynamic file, wall, load 10,
    # 2026-12-03), its 3x3 ones 0.7-1.0x.
    *(Case(f"dwconvact-{c}x{s}-5x5", "dwconv", conv_act(c, s, 5, group=c), (Q[1],)) for c, s in ((240, 28), (672, 7))),
    # Stride 2 under int8-dynamic, the convs that open a stage: ConvInteger's Im2col<uint8_t> (onnxruntime core/util/
    # math_cpu.cc, NCHW) copies a stride-1 row in one block but a strided one element by element, so their buffer costs
    # more per element (`<kind>.int8dyn.im2col.strided`, calibration_fit._STRIDED_FITTED). Depthwise at MobileNetV2's
    # and EfficientNet-B0's shapes, dense at ResNet-18's.
    *(Case(f"dwconvact-{c}x{s}-{k}x{k}-s2", "dwconv", strided_own(c, c, s, k, group=c), (Q[1],))
      for c, s, k in ((96, 112, 3), (144, 56, 5), (192, 28, 3))),
    *(Case(f"convact-{c}x{s}-3x3-s2", "conv", strided_own(c, 2 * c, s, 3), (Q[1],)) for c, s in ((64, 56), (128, 28))),
    # Depthwise channels not a multiple of 16: static int8 runs MLAS's generic depthwise kernel, not the symmetric one
    # (simulator/ort_int8.py), its own path. Counts not a multiple of 4 either, so ORT leaves the fp32 Convs in NCHW
    # with their own kernel shape, where the sweep of the compiled graph alone reads the channels.
    # The kernel runs blocks of 16 and 8 lanes, then one channel at a time (conv_work.generic_depthwise_lanes): counts
    # with 5-7 scalar channels (7, 14, 46; a 5x5 at 22), one (25 at 112 px, a 5x5 at 73) and none (24 and a 5x5 at 72,
    # multiples of 4: priced without ORT's NCHWc layout, Case.nchwc) beside those with 2 tell its cost per scalar
    # channel-tap (dwconv.int8gen.scalar) from its rate and its cost per pixel: with no case of 0 scalar channels the
    # fit priced such convs (MobileNetV3's 72 and 120, GhostNet's 8 and 24) 12-24% under their chains on a Zen 5.
    *(Case(f"dwconvact-gen-{c}x{s}" + (f"-{k}x{k}" if k != 3 else ""), "dwconv", conv_act(c, s, k, group=c),
           (("int8-static", "int8gen"),), nchwc=c % 4 != 0)
      for c, s, k in ((18, 56, 3), (58, 28, 3), (122, 14, 3), (234, 7, 3), (7, 56, 3), (14, 56, 3), (46, 28, 3),
                      (22, 28, 5), (25, 112, 3), (73, 28, 5), (24, 112, 3), (72, 28, 5))),
    # 7x7 static int8 depthwise convs (ConvNeXt's) on the symmetric kernel: 49 taps per output pixel, which the 3x3
    # cases cannot tell from their cost per pixel. Fitted on 3x3 alone, ConvNeXt-V2-atto's int8-static ones profiled
    # 2.5-3x their prediction on this Emerald Rapids (ORT's profiler, load 0.6 per CPU, 2026-12-05: 80x28 0.213 ms
    # against 0.083, 320x7 0.063 against 0.022), their time per MAC the 3x3 cases' (0.06-0.07 ns).
    *(Case(f"dwconvact-{c}x{s}-7x7", "dwconv", conv_act(c, s, 7, group=c), (Q[0],)) for c, s in ((80, 28), (320, 7))),
    # Grouped Convs ORT leaves in NCHW (costs.kind_of): group width 8 (< one 16-wide NCHWc block) as RegNetX / RegNetY
    # have them, and depthwise ones with channels not a multiple of 4 as ShuffleNet v2 has; MLAS runs them group by
    # group (im2col + SGEMM), so efficiency, a cost per group and one per im2col element are fitted jointly.
    # Width 24 (RegNetY-1.6GF) and a 1x1 (no im2col buffer) tell the MACs, the im2col and the per-group costs apart.
    *(Case(f"gconvact-{c}x{s}-{k}x{k}-g{w}", "gconvnchw", conv_act(c, s, k, group=c // w), (("fp32", "nchw"), QGEMM))
      for c, s, k, w in ((48, 56, 3, 8), (104, 28, 3, 8), (208, 14, 3, 8), (440, 7, 3, 8), (96, 28, 3, 24),
                         (128, 28, 1, 8))),
    # Dense 1x1 convs off the symmetric kernel's alignment (channels not a multiple of 4: ShuffleNet v2's 58 -> 58,
    # ReXNet's), the same path with one group: fitted on the grouped cases alone, ShuffleNet v2's 58-wide ones were
    # priced at 0.58x their node medians on a Zen 5 (README Round 34) and low on a Zen 4 (Round 35).
    *(Case(f"qdense-{c}x{s}-1x1", "conv", conv_act(c, s, 1), (QGEMM,)) for c, s in ((58, 28), (30, 56), (122, 14))),
    # Widths 8 and 24 fill whole 8-wide NCHWc blocks, so with AVX2 ORT runs those NCHWc and they leave the NCHW path
    # (calibration_fit.off_path): width 12 (and 132 below) stays NCHW with AVX2 and AVX-512 alike.
    *(Case(f"gconvact-{c}x{s}-3x3-g12", "gconvnchw", conv_act(c, s, 3, group=c // 12), (("fp32", "nchw"),))
      for c, s in ((96, 28), (192, 14))),
    # Wide groups, 1x1: 4 groups of 34-136 channels on 28-7 px maps, as ShuffleNet v1 has them. MLAS runs a 1x1
    # unit-stride Conv as one SGEMM per group straight on its input (MlasConvAlgorithmGemmDirect, onnxruntime/core/
    # mlas/lib/convolve.cpp: no im2col), so their time is the GEMMs' MACs: the cases above are mostly im2col and
    # per-group cost and left the MAC rate unpinned (fitted 1.67 on this Zen 4; these measured 1.23-1.45x their
    # prediction at it; with them 1.13-1.18 in three calibrations, every case within 15%).
    *(Case(f"gconvact-{c}x{s}-1x1-g{c // 4}", "gconvnchw", conv_act(c, s, 1, group=4), (("fp32", "nchw"),))
      for c, s in ((136, 28), (272, 14), (544, 7), (528, 7))),
    *(Case(f"dwconvact-nchw-{c}x{s}", "dwconvnchw", conv_act(c, s, 3, group=c), (("fp32", "nchw"),))
      for c, s in ((18, 56), (58, 28), (122, 14), (234, 7))),
    # 5x5-9x9 ones at MixNet-S's shape (4 groups of 90 channels at 14 px; 90 is not a multiple of 4, so NCHW) and a 7x7
    # on a 7 px map: im2col copies kernel-width rows of a few pixels each, so the path fits a cost per copied row too
    # (calibration_fit._ROW_FITTED), as fp16's NCHW depthwise path does. Fitted on the 3x3 cases alone (a Sapphire
    # Rapids, thread CPU time, 2026-12-03), these chains were predicted at 0.38-0.64x their time; with them 0.85-1.08x
    # (the 3x3 ones 0.84-1.16x).
    *(Case(f"dwconvact-nchw-{c}x{s}-{k}x{k}", "dwconvnchw", conv_act(c, s, k, group=c), (("fp32", "nchw"),))
      for c, s, k in ((90, 14, 5), (90, 14, 7), (90, 14, 9), (234, 7, 7))),
    # The same 3x3 ones at stride 2 (ShuffleNet v2 x1.0 opens its 58-channel stage so): MLAS's im2col gathers a strided
    # row element by element (conv_work.strided_im2col), which the stride-1 cases cannot price; a cost per element of
    # the buffer (`dwconvnchw.nchw.im2col.strided`, calibration_fit._STRIDED_FITTED) as fp16's NCHW depthwise path has.
    *(Case(f"dwconvact-nchw-{c}x{s}-s2", "dwconvnchw", dw_strided(c, s, 3), (("fp32", "nchw"),))
      for c, s in ((58, 56), (122, 28), (234, 14))),
    # Batch-1 MatMulNBits time is the per-run unpacking of its weights: it fits the decode rate.
    # Its fp32 / int8 variants are bound by weight streaming, so they would only fit noise into efficiencies.
    Case("gemm-1x768", "gemm", matmul_chain(1, 768), (("int4-weights", "decode.int4w"),)),
    # With several rows MatMulNBits dequantizes B to fp32 and runs SGEMM: the dequantization costs about the same per
    # weight whatever M is (measured M = 4..128 at K = N = 1024: +0.13..0.21 ns per weight over fp32), so it is fitted
    # where it is a large share of the time (K >= 768), the compute taking the fp32 GEMM efficiency these cases fit.
    Case("gemm-32x512", "gemm", matmul_chain(32, 512), (("fp32", "fp32"), *Q)),
    Case("gemm-128x256", "gemm", matmul_chain(128, 256), (("fp32", "fp32"), *Q)),
    Case("gemm-16x768", "gemm", matmul_chain(16, 768), (("fp32", "fp32"), ("int4-weights", "decode.int4wrows"))),
    Case("gemm-64x896", "gemm", matmul_chain(64, 896), (("fp32", "fp32"), ("int4-weights", "decode.int4wrows"))),
    Case("gemm-16x128", "gemm", matmul_chain(16, 128), Q),  # few tokens: pins the int8 paths' fixed cost
    # A ViT's tokens (197-401 rows) on weights the cache keeps: all arithmetic, the SGEMM's own rate per MAC. The
    # few-row cases above are part weight streaming from the L3, priced beside their MACs, and fitted 3-5% faster per
    # MAC than many rows run: alone on a Zen 4 (session 64, thread CPU time, MatMul + Add at K = N = 384) -0.1% of
    # that price at 16 rows, -2.0% at 64, -2.4..-2.8% at 128-401; 28 Gemms at Swin-T's, CoaT-Lite's and CrossViT's
    # own shapes -1.3..-4.8%. A's [rows, 256] and C's [rows, 128] (one MLAS step over B's packed panel) stay within
    # half the L2 here; where they outgrow it a further shortfall grows (785 rows -3.6%, 1568 -7.1%, 3136 -14.8%).
    # With these three, the median of the fp32 gemm cases' fits (calibration_fit) is a many-row one.
    *(Case(f"gemm-{m}x{k}", "gemm", matmul_chain(m, k), (("fp32", "fp32"),)) for m, k in MANY_ROWS),
    # fp16 MatMuls reading 4 (2) shared weights in turn, each read again after the others evicted it: their Casts are
    # kept at run time, so every run casts them and the SGEMM packs them (backends._ort_fp16: `gemm.cast16.weights`, s
    # per weight, calibration_fit.fit_weights). One weight read 8 times in a row stays in the L2 and costs less: 0.07-
    # 0.19 ns per weight against 0.26-0.28 here (an Intel Xeon with AMX, CPU time, load 1.3 per CPU, 2026-12-05).
    *(Case(f"gemm-shared-{m}x{k}", "gemm", shared_matmul_chain(m, k, w), (("fp16", SHARED_WEIGHTS_KEY),))
      for m, k, w in ((128, 256, 4), (128, 512, 2))),
    # One row (a CNN classifier at batch 1) under static int8: its own rate (simulator/ort_int8.py ORT_INT8_ONE_ROW).
    Case("gemm-1x1024", "gemm", matmul_chain(1, 1024), (("int8-static", "gemm.int8gemv"),)),
    Case("matmul-4x32x32", "matmul", lambda p: op_chain("MatMul", [4, 32, 32], p, binary_self=True),
         (("int8-static", "int8"),)),
    Case("matmul-8x64x64", "matmul", lambda p: op_chain("MatMul", [8, 64, 64], p, binary_self=True),
         (("fp32", "fp32"), ("int8-static", "int8"))),
    Case("matmul-4x128x128", "matmul", lambda p: op_chain("MatMul", [4, 128, 128], p, binary_self=True),
         (("fp32", "fp32"), ("int8-static", "int8"))),
    Case("maxpool-64x56", "pool", lambda p: op_chain("MaxPool", [1, 64, 56, 56], p,
                                                   attrs={"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
         (("fp32", "fp32"), ("int8-static", "int8"))),
    *(Case(f"layernorm-{r}x{c}", "norm", lambda p, s=[r, c]: layernorm_chain(s, p), (("fp32", "fp32"),))
      for r, c in ((128, 768), (4096, 32))),  # wide rows and many narrow ones (costs.LAYERNORM_ROW_FLOPS)
    Case("skipnorm-32x128", "skipnorm", lambda p: skip_layernorm_chain([1, 32, 128], p), (("fp32", "fp32"),)),
    Case("skipnorm-64x256", "skipnorm", lambda p: skip_layernorm_chain([1, 64, 256], p), (("fp32", "fp32"),)),
    Case("softmax-12x128x128", "softmax", lambda p: op_chain("Softmax", [12, 128, 128], p, attrs={"axis": -1}),
         (("fp32", "fp32"), ("int8-static", "int8"))),
    # Rows of 49 (Swin's and MaxViT's windows), 196 and 16: with the rows of 128 above they fit the rate, a setup, a
    # cost per row and one per row off a cache line of ORT's row kernel jointly (simulator.softmax_rows; JOINT_FP32).
    *(Case(f"softmax-{r}x{d}", "softmax", lambda p, s=[r, d]: op_chain("Softmax", s, p, attrs={"axis": -1}),
           (("fp32", "fp32"),)) for r, d in ((3136, 49), (784, 196), (2048, 16))),
    Case("softmax-2x48x48", "softmax", lambda p: op_chain("Softmax", [2, 48, 48], p, attrs={"axis": -1}),
         (("int8-static", "int8"),)),
    # Small shapes: what they cost beyond the roofline is the kind's fixed setup per task.
    Case("small-conv-16x24-1x1", "conv", conv_chain(16, 24, 1), (("fp32", "setup"),)),
    Case("small-conv-32x12-3x3", "conv", conv_chain(32, 12, 3), (("fp32", "setup"),)),
    Case("small-dwconv-32x24", "dwconv", conv_chain(32, 24, 3, group=32), (("fp32", "setup"),)),
    Case("small-gemm-1x128", "gemm", matmul_chain(1, 128), (("fp32", "setup"),)),
    Case("small-layernorm-32x128", "norm", lambda p: layernorm_chain([32, 128], p), (("fp32", "setup"),)),
    Case("small-softmax-4x32x32", "softmax", lambda p: op_chain("Softmax", [4, 32, 32], p, attrs={"axis": -1}),
         (("fp32", "setup"),)),
    Case("sigmoid-1x262144", "elementwise", lambda p: op_chain("Sigmoid", [1, 262144], p), (("fp32", "fp32"),)),
    # Activations ORT runs with kernels of their own, whose time per element the rate fitted on Sigmoid does not give
    # (this Zen 5, [1, 262144] chains, CPU time, 2026-12-03: Sigmoid 0.23 ns per element, the fused x * Sigmoid(x)
    # 0.14, predicted 0.35 at Sigmoid's rate): each fits its own, `elementwise.fp32.<op>` (roofline.efficiency).
    *(Case(f"{op.lower()}-1x262144", "elementwise", build, (("fp32", f"elementwise.fp32.{op}"),)) for op, build in (
        ("Gelu", lambda p: activation_chain("gelu", 262144, p)),
        ("HardSigmoid", lambda p: op_chain("HardSigmoid", [1, 262144], p)),
        ("Tanh", lambda p: op_chain("Tanh", [1, 262144], p)))),
    # Softplus (a Mamba-like scan's dt): ORT's kernel computes log1p(exp(x)) element by element, 0.18 ms for 16,384
    # elements inside such a scan (Zen 4, wall, load ~7, 2026-12-05) where the kind's rate priced 0.007
    Case("softplus-1x65536", "elementwise", lambda p: op_chain("Softplus", [1, 65536], p),
         (("fp32", "elementwise.fp32.Softplus"),)),
    # Under static int8 the same SiLU runs QLinearSigmoid + QLinearMul on uint8 (simulator.backends._INT8_ELEMENTWISE):
    # their own rate, `elementwise.int8.QuickGelu`.
    Case("quickgelu-1x262144", "elementwise", lambda p: activation_chain("swish", 262144, p),
         (("fp32", "elementwise.fp32.QuickGelu"), ("int8-static", "elementwise.int8.QuickGelu"))),
    # A Gelu under static int8 (simulator.backends._INT8_OWN_RATE): the quantizer's split of it, Div and Erf in fp32
    # between Q/DQ, QLinearAdd and two QLinearMuls, timed as one (`elementwise.int8.Gelu`).
    Case("gelu-int8-1x262144", "elementwise", lambda p: activation_chain("gelu", 262144, p),
         (("int8-static", "elementwise.int8.Gelu"),)),
    # Local response normalization (AlexNet, GoogLeNet-era CNNs): ORT computes a power per element, ~100x LayerNorm's
    # time per element (AlexNet's two LRNs profiled 17 ms of a 20 ms run, predicted 0.16 at the norm rate).
    Case("lrn-64x28", "norm", lambda p: op_chain("LRN", [1, 64, 28, 28], p, attrs={
        "size": 5, "alpha": 1e-4, "beta": 0.75, "bias": 1.0}), (("fp32", "norm.fp32.LRN"),)),
    # ReduceL2 (ConvNeXt-V2's global response norm): 1.9 ns per element over a 56x56 map, 7x the reduce rate's figure.
    Case("reducel2-40x56", "reduce", lambda p: side_by_side("ReduceL2", [1, 40, 56, 56], [1, 40, 1, 1], p, axes=[2, 3],
                                                              keepdims=1), (("fp32", "reduce.fp32.ReduceL2"),)),
    # ONNX STFT (an audio model's spectrogram in the graph): a radix-2 frame and a Bluestein one (n = 400, M = 1024,
    # simulator/other_ops.py); at the default rate a Zen 4's radix-2 STFTs took 1.15-1.23x their price.
    *(Case(f"stft-{n}h{hop}-{length}", "other", lambda p, n=n, hop=hop, length=length: side_by_side(
        "STFT", [1, length, 1], [1, (length - n) // hop + 1, n // 2 + 1, 2], p,
        (np.array(hop, np.int64), np.hanning(n).astype(np.float32)), onesided=1), (("fp32", "other.fp32.STFT"),))
      for n, hop, length in ((512, 128, 8192), (400, 160, 4000))),
    # ORT's Cast between fp32 and fp16 (an fp16 export's Casts at its fp32 / fp16 kernel boundaries, priced by
    # simulator.conversions at this rate): at the element-wise rate they were charged ~2x their time (h41onnxexp).
    *(Case(f"cast-1x{n}", "quant", lambda p, n=n: cast_chain(n, p), (("fp32", "quant.fp32.Cast"),))
      for n in (50176, 200704, 802816)),
    Case("add-1x262144", "elementwise", lambda p: op_chain("Add", [1, 262144], p, binary_self=True),
         (("int8-static", "int8"),)),
    # A Mul by a per-channel operand along the innermost axis (a squeeze-excite gate over NHWC data): ORT calls its
    # QLinearMul once per C elements (simulator/ort_int8.py ORT_INT8_SPAN). Several C at several sizes tell the cost
    # per call from the per-element one (fitted jointly with the Add chain above: elementwise.int8.span).
    *(Case(f"mul-span-{c}x{hw}", "elementwise", lambda p, s=[1, hw, hw, c]: op_chain(
        "Mul", s, p, weight=lambda i, w=[1, 1, 1, s[-1]]: (0.5 + np.random.default_rng(i).random(w)).astype(np.float32)),
        (("int8-static", "int8"),)) for c, hw in ((16, 56), (96, 28), (32, 112))),
    # A GlobalAveragePool ORT leaves in NCHW (100 channels fill no NCHWc block, 8 or 16 wide): its own kernel, ~3.5x
    # the NCHWc one's time per element (costs.kind_of: `poolnchw`), squeeze-excite pools after NCHW-path Convs.
    Case("gap-nchw-100x28", "poolnchw", lambda p: side_by_side("GlobalAveragePool", [1, 100, 28, 28], [1, 100, 1, 1], p),
         (("fp32", "poolnchw.fp32.GlobalAveragePool"),)),
    # Windowed pools ORT leaves in NCHW (ShuffleNet v1's and v2's 3x3 stride-2 MaxPool after the stem on 24 channels,
    # v1's AveragePool shortcuts on 24 and 136: no 16-wide NCHWc block with AVX-512): MLAS's NCHW pooling kernels
    # (core/mlas/lib/pooling.cpp, MlasPool2DKernel / MlasPool2DVectorKernel) reduce one output at a time or 4 columns
    # in 128-bit registers, where the NCHWc kernel (`pool.fp32`, maxpool-64x56) runs 16 channels per AVX-512
    # register. At its rate ShuffleNet v1's profiled 4-6x their prediction (Emerald Rapids, 2026-12-06: MaxPool 24x112
    # 0.103 ms against 0.026, AveragePool 136x28 0.058 against 0.009). 20 and 132 channels fill no 8-wide block
    # either, so the cases stay NCHW with AVX2 too.
    *(Case(f"{op.lower()}-nchw-{c}x{hw}", "poolnchw", lambda p, op=op, c=c, hw=hw: side_by_side(
        op, [1, c, hw, hw], [1, c, hw // 2, hw // 2], p, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        (("fp32", f"poolnchw.fp32.{op}"),)) for op, c, hw in (("MaxPool", 20, 112), ("MaxPool", 132, 28),
                                                               ("AveragePool", 20, 56), ("AveragePool", 132, 28))),
    # A Transpose ORT walks element by element (transposes.walks), XCiT's q/k/v split: 2.25 ns per element, blocked 0.15.
    Case("transpose-walk-196x128", "walk", lambda p: side_by_side("Transpose", [1, 196, 1, 4, 32], [1, 1, 4, 32, 196],
                                                                   p, perm=[2, 0, 3, 4, 1]), (("fp32", "walk.fp32"),)),
    # A linear Resize (EfficientFormerV2's upsampling): 1.15-1.3 ns per output element here, 25x the layout rate's.
    Case("resize-linear-1024x7", "resize", lambda p: side_by_side(
        "Resize", [1, 1024, 7, 7], [1, 1024, 14, 14], p, (None, np.array([1, 1, 2, 2], np.float32)), mode="linear"),
         (("fp32", "resize.fp32"),)),
    # The same Resize after an NCHWc Conv: ORT's NCHWc transformer runs it as its blocked Upsample (MLAS's bilinear
    # kernel over 16-channel blocks), 0.54-0.58 ns per output element against 2.0-2.2 for the NCHW Resize at the same
    # shapes (an Emerald Rapids Xeon, ORT's profiler, load ~10, 2026-12-05): priced at resize.fp32, a selfie
    # segmenter's three 2x upsamplings were 0.39 ms against 0.10 profiled.
    Case("upsample-nchwc-16x64", "resize", lambda p: nchwc_upsample(16, 64, p), (("fp32", "resize.fp32.Upsample"),)),
    Case("upsample-nchwc-64x32", "resize", lambda p: nchwc_upsample(64, 32, p), (("fp32", "resize.fp32.Upsample"),)),
    # Bicubic Resizes (kind cubic, resizes.cubic_misses): a 2x upscale, CrossViT's 15/14 downscale, a halving and a
    # 14/15 upscale, 0.5-2 misses of ORT's interpolation cache per output element, fit its rate per miss and a cost per
    # output element jointly (calibration_fit.JOINT_FP32).
    *(Case(f"cubic-2x{a}-to{b}", "cubic", lambda p, a=a, b=b: side_by_side(
        "Resize", [1, 2, a, a], [1, 2, b, b], p, (None, None, np.array([1, 2, b, b], np.int64)), mode="cubic",
        coordinate_transformation_mode="pytorch_half_pixel", cubic_coeff_a=-0.75), (("fp32", "cubic.fp32"),))
      for a, b in ((28, 56), (60, 56), (112, 56), (56, 60))),
    # A nearest Resize by 3 (resizes.nearest_2x: not the 2x copy): ORT's generic kernel, 0.37x the linear one's time.
    Case("nearest-32x40-by3", "nearest", lambda p: side_by_side(
        "Resize", [1, 32, 40, 40], [1, 32, 120, 120], p, (None, np.array([1, 1, 3, 3], np.float32)), mode="nearest",
        coordinate_transformation_mode="asymmetric", nearest_mode="floor"), (("fp32", "nearest.fp32"),)),
    *(Case(n, k, lambda p, b=b: save_model(*b(), p), v) for n, k, b, v in VIDEO_CASES),  # 3-D convs, far walks
    *(Case(n, k, lambda p, b=b: save_model(*b(), p), v) for n, k, b, v in DECONV_CASES),  # ORT's ConvTranspose
    # Dynamic int8 stems and ResNet-shaped 3x3 convs (their int8-dynamic figures, calibration_int8dyn).
    *(Case(n, k, lambda p, b=b: save_model(*b(), p), v) for n, k, b, v in INT8DYN_CASES),
    *(Case(n, k, lambda p, b=b: save_model(*b(), p), v) for n, k, b, v in SE_CASES),  # static int8 one-pixel convs
)


# Transposes that copy short runs (transposes.copy_runs): head transposes ([1, tokens, heads, dim] by [0, 2, 1, 3]) of
# ViT / DeiT (64-element runs), PVT (32) and LeViT (16) shapes, side by side. They pay a cost per run beside their
# bytes, which the layout rate (fitted on reorders and channel splits that stream) does not hold: fitted after it,
# a cost per run alone (`layout.fp32.run`, calibration_fit._fit_runs).
TRANSPOSE_RUNS = ((197, 3, 64), (3136, 2, 32), (196, 4, 16))


@dataclass
class Bench:
    """Calibration's models, built and compiled, waiting to be timed (`timings`: {key: (file, optimization
    level, min runs)}, as time_interleaved takes them), and what the fit needs to read the timings back."""

    tmp: Path
    t_start: float
    timings: dict[str, tuple[Path, str, int]]
    graphs: dict[str, Graph]
    variants: list[tuple[Case, str, str, str]]  # (case, preset, tag, timing key)
    mixed: list[str]
    n_mid: int
    k_stream: int
    llc: float
    llc_all: float
    k_memory: int = 0  # k of the chain whose weights are 4x the whole last-level cache (0: not timed)
    reuse: tuple[int, ...] = ()  # conv counts of the weight-reuse cases timed (keys reuse-<n>, reuse-<n>-base)
    transposes: tuple[str, ...] = ()  # keys of the head-transpose cases (TRANSPOSE_RUNS)
    index: tuple[str, ...] = ()  # keys of the index cases (calibration_index: Expand, ScatterND, ...)
    rnn: tuple[str, ...] = ()  # keys of the recurrent cases (calibration_rnn: GRU, LSTM)
    subnormal: tuple[str, ...] = ()  # keys of the masked attention cases, each timed with its `-ref` (calibration_subnormal)
    inner: tuple[str, ...] = ()  # keys of the inner-axis Softmax cases, each timed with its `-ref` (calibration_inner)
    llc_ladder: tuple[int, ...] = ()  # k of the last-level cache ladder's chains (calibration_llc)
    nhwc: tuple[str, ...] = ()  # keys of the NHWC ReduceMean cases, each timed with its `-ref` (calibration_nhwc)
    packed: tuple[str, ...] = ()  # keys of the packed-SGEMM memory cases, each with its `-ref` (calibration_packed)
    packb: tuple[str, ...] = ()  # keys of the per-run B packing cases, each with its `-ref` (calibration_packb)
    beyond: tuple[str, ...] = ()  # keys of the element-wise chains beyond the L2 (calibration_beyond)
    alias: tuple[str, ...] = ()  # keys of the aliased-SGEMM cases, each with its `-ref` (calibration_alias)
    spans: tuple[str, ...] = ()  # keys of the short-block reductions (calibration_spans)


def build_bench(tmp: Path, progress: Callable[[str], None] = lambda s: None) -> Bench:
    """Build and compile every calibration model into `tmp` (which must outlive the fit)."""
    from compiler.optimize.onnx_export import export_onnx

    logging.getLogger().setLevel(logging.ERROR)  # the quantizer's pre-processing advice is noise here
    t_start = time.perf_counter()
    base = load_profile("host-cpu")
    # 1. Fixed cost per inference, per-kernel dispatch, bandwidths (elementwise chains, fp32).
    one = op_chain("Relu", [1, 8], tmp / "one.onnx", r=1)
    many = op_chain("Relu", [1, 8], tmp / "many.onnx", r=64)
    n_mid = 131072  # 3 x 512 KiB per Add: 1.5 MiB, beyond a Zen 4's 1 MiB L2 (its L3 serves part of it there)
    mid = op_chain("Add", [1, n_mid], tmp / "mid.onnx", r=16, binary_self=True)
    # Weights that do not stay in L2 between inferences: a batch-1 MatMul chain streams 8 k x k weights
    # per run from the last-level cache (k = 768: 19 MB). The chain must fit in half this core's share
    # of that cache: 19 MB on a 32 MB L3 shared by 2 vCPUs measured anywhere from 28 to 41 GB/s.
    llc, llc_all = llc_bytes()
    if not llc:
        llc, llc_all = int(base.units[0].llc_share_bytes), int(base.units[0].llc_bytes)
    k = stream_k(llc)
    stream = matmul_chain(1, k)(tmp / "stream.onnx")
    # Weights no cache holds: 8 k x k at 4x the whole last-level cache (this VM: 134 MB), read from memory on every
    # run, the rate of weights other tenants evicted between runs (roofline.evicted_share) and of models beyond the L3.
    k_mem = memory_k(llc_all)
    memory = matmul_chain(1, k_mem)(tmp / "memory.onnx")
    timings: dict[str, tuple[Path, str, int]] = {"one": (one, "disable", 100), "many": (many, "disable", 100),
                                                 "mid": (mid, "disable", 20), "stream": (stream, "all", 20),
                                                 "memory": (memory, "all", 6)}
    # Weights read again after a run of some length: the stream chain's weights (half this core's share of the
    # last-level cache) before a chain of convs that sets the run's length, against the convs alone; the fit reads
    # how much of them other tenants or the run's own traffic evicted (roofline.evicted_share) from the difference.
    graphs: dict[str, Graph] = {}
    for name, n in [(f"reuse-{n}", n) for n in REUSE_CONVS] + [(f"reuse-spill-{n}", n) for n in SPILL_CONVS]:
        src, base = (reuse_model(kk, n, tmp / f"{name}{tail}.onnx", "spill" in name) for kk, tail in ((k, ""), (0, "-base")))
        graphs[name] = compile_for_host(src, tmp / f"{name}.opt.onnx")
        timings.update({name: (src, "all", 6), f"{name}-base": (base, "all", 6)})
    # 2. Efficiency per kind and path: every case and variant.
    variants: list[tuple[Case, str, str, str]] = []
    for case in CASES:
        src = case.build(tmp / f"{case.name}.onnx")
        graphs[case.name] = compile_for_host(src, tmp / f"{case.name}.opt.onnx", case.nchwc)
        for preset, tag in case.variants:
            model = src
            if preset != "fp32":
                model = export_onnx(src, tmp / f"{case.name}.{preset}.onnx", preset).path
            timings[f"{case.name}/{preset}"] = (model, "all", 6)
            variants.append((case, preset, tag, f"{case.name}/{preset}"))
    mixed: list[str] = []
    # Data movement is fitted on whole graphs (ORT cancels chains of transposes and reorders): Conv / Transpose
    # blocks on small maps, and MixNet-shaped channel-group blocks on 28 and 56 px maps, whose Split, Concat and
    # reorders move tensors beyond the core's L2 (calibration_fit._fit_layout: an efficiency, a setup per task and a
    # cost per output byte beyond the L2, jointly).
    builds = {f"mixed-{c}x{size}": (lambda p, c=c, size=size: mixed_blocks(c, size, p)) for c, size in ((32, 16), (64, 28))}
    builds.update({f"mixed-split-{mid}x{size}-g{groups}": (lambda p, a=(c, mid, groups, size): mixed_split_blocks(*a, p))
                   for c, mid, groups, size in ((40, 240, 3, 28), (24, 144, 2, 56))})
    builds.update({n: (lambda p, b=b: save_model(*b(), p)) for n, b in LAYOUT_CASES})  # PVT's MLPs: strided moves
    for name, build in builds.items():
        src = build(tmp / f"{name}.onnx")
        graphs[name] = compile_for_host(src, tmp / f"{name}.opt.onnx")
        timings[name] = (src, "all", 6)
        mixed.append(name)
    transposes: list[str] = []
    for t, h, d in TRANSPOSE_RUNS:
        name = f"transpose-runs-{t}x{h}x{d}"
        src = side_by_side("Transpose", [1, t, h, d], [1, h, t, d], tmp / f"{name}.onnx", perm=[0, 2, 1, 3])
        graphs[name] = compile_for_host(src, tmp / f"{name}.opt.onnx")
        timings[name] = (src, "all", 6)
        transposes.append(name)
    l2 = l2_bytes() or base.units[0].onchip_memory_bytes
    rules = _rule_cases(tmp, timings, graphs, float(llc_all), float(l2))
    progress(f"{len(timings)} models built in {time.perf_counter() - t_start:.1f} s")
    return Bench(tmp, t_start, timings, graphs, variants, mixed, n_mid, k, float(llc), float(llc_all), k_mem,
                 REUSE_CONVS, tuple(transposes), **rules)


def _rule_cases(tmp: Path, timings: dict[str, tuple[Path, str, int]], graphs: dict[str, Graph], llc_all: float,
                l2: float) -> dict[str, Any]:
    """Build the cases of the rules fitted one at a time after the efficiencies (calibration_fit.fit_bench), by the
    Bench field that names them."""
    return {
        "index": build_index_cases(tmp, timings, graphs),  # a cost per lookup each (calibration_index.fit_index)
        "rnn": build_rnn_cases(tmp, timings, graphs),  # a rate for recurrent reads (calibration_rnn.fit_rnn)
        "subnormal": build_subnormal_cases(tmp, timings, graphs),  # subnormals' cost (calibration_subnormal)
        "inner": build_inner_cases(tmp, timings, graphs),  # a Softmax's inner-axis swaps (calibration_inner.fit_inner)
        "llc_ladder": build_llc_cases(tmp, timings, llc_all),  # the bytes it keeps between runs (calibration_llc)
        "nhwc": build_nhwc_cases(tmp, timings, graphs),  # a ReduceMean over H, W of NHWC data (calibration_nhwc)
        "packed": build_packed_cases(tmp, timings, graphs, llc_all),  # calibration_packed.fit_packed
        "packb": build_packb_cases(tmp, timings, graphs),  # a non-constant B packed each run (calibration_packb)
        "alias": build_alias_cases(tmp, timings, graphs),  # SGEMM rows of A in one L1 set (calibration_alias)
        "beyond": build_beyond_cases(tmp, timings, graphs, l2),  # element-wise bytes beyond the L2 (calibration_beyond)
        "spans": build_span_cases(tmp, timings, graphs),  # a Reduce*'s cost per short kept block (calibration_spans)
    }
