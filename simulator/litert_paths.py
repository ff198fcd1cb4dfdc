"""How LiteRT's CPU runs an operator under an option: XNNPACK's paths, not ONNX Runtime's.

Measured with LiteRT 2.3.0's profiler on files ai-edge-quantizer writes (compiler/optimize/litert_export.py):
- fp16: the exporter stores the weights in fp16 behind DEQUANTIZE, activations stay fp32; LiteRT dequantizes
  the weights once when it prepares the model, and XNNPACK runs the fp32 file's operators (an fp16-weight
  MobileNetV2 ran the same F32 GEMMs and DWConvs, in the same time). On the CPU an fp16 option is fp32.
- int8 weights with float activations (dynamic int8): XNNPACK runs CONV_2D and FULLY_CONNECTED as QD8 x QC8W
  GEMMs, each input quantized on the fly (a `Convert (NC, F32, QDU8)` before a conv, QD8 on a CPU without VNNI dot
  products such as an AVX2-only EPYC; inside the FC);
  DEPTHWISE_CONV_2D it does not take, so TFLite's own hybrid kernel runs it, and the delegate partition is cut
  there (MobileNetV2: the depthwise convs went from 1.2 ms to 54 ms, the 1x1 convs from 5.2 to 3.8 ms).
- int8 weights and activations (static int8): XNNPACK's QS8 / QC8 kernels (the generic int8 path).
- static int8 HARD_SWISH: not XNNPACK's either; TFLite's own int8 kernel, ~80x XNNPACK's fp32 HardSwish per element.
- int4 weights (weight-only): CONV_2D and FULLY_CONNECTED read them through a run-time DEQUANTIZE, which XNNPACK
  does not take: TFLite's own fp32 kernels run them (`<kind>.builtin`, host-cpu.yaml, measured with the
  profiler on chains of each: 1x1 convs 0.42-0.54 ms against XNNPACK's 0.11-0.19, FULLY_CONNECTED 64x512
  1.0-2.6 ms against 0.7; ResNet-18 100 ms CPU per run against 17 for fp32).
- A PAD before a convolution (litert-torch writes PyTorch's symmetric padding of a stride-2 conv as PAD + VALID):
  XNNPACK folds it into the conv that reads it, so under fp32 (and static int8) it costs nothing (profiled: no
  time of its own). Where that conv runs otherwise, the PAD runs on its own as XNNPACK's `Constant Pad`: before a
  QD8 conv the `Convert` that quantizes the conv's input sits between them (the fusion needs PAD -> conv), and a
  hybrid depthwise conv or an int4 conv is not XNNPACK's at all. Profiled on chains (LiteRT 2.3.0, 1 thread):
  PAD + 3x3 conv, 112x112x32, 0.16 ms under dynamic int8, 0 under fp32; MobileNetV2 int8-dynamic, its 5 PADs
  1.9 ms; int8-static (QS8 convs), 0. The PAD's time is charged to that conv (`litert_fact_path`), since the PAD's own option never changes.
Efficiencies of these paths (`<kind>.qd8`, `dwconv.hybrid`, `<kind>.int8`, `<kind>.fp32`), their fixed costs and
the hybrid depthwise kernel's cost beyond the core's L2 (`dwconv.hybrid.spill`, with `l2_share_bytes` read from
sysfs) are fitted on this machine by `simulator.litert_calibration`; a profile without them uses its figures for
the kind (and no spill cost).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from compiler.vocabulary.formats import BITS
from compiler.vocabulary.options import Combo
from simulator.kernel_path import Path
from simulator.profiles import CONCAT_INTERLEAVE, HYBRID25, TILE25, XNN_TRANSPOSE_KEY
from simulator.tflite_ops import as_builtin

if TYPE_CHECKING:
    from compiler.graph import Graph, Node, Value
    from compiler.vocabulary.targets import Target
    from simulator.profiles import Unit

# Efficiency tag of an int8 HARD_SWISH (`elementwise.hswish8`, calibrated by simulator.litert_calibration).
HSWISH_INT8 = "hswish8"
# int8 element-wise ops the XNNPACK delegate leaves to TFLite's own kernels whatever their scales, each at its own
# calibrated rate (`elementwise.builtin8.<op>`). Profiled (LiteRT 2.3.0, 1 thread, Zen 4, load 16, 2026-12-04), timm
# convnext_atto's int8-static file, its 17 LayerNorms: `TFLite SQUARED_DIFFERENCE` 3.6 ns per element ([1, 3136, 40]
# against [1, 3136, 1]: 0.46 ms each; XNNPACK's fp32 `Squared Difference (ND)` in its int8-dynamic file 0.005),
# `TFLite RSQRT` 28 ns per element (3136 elements: 0.088 ms). (Its int8 ADDs and SUBs were TFLite's too where an
# input's scale is far from the output's, the layer scale's 1e-6 and the epsilon: XNNPACK's QS8 add takes input to
# output scale ratios in [2^-10, 2^8) only, google/XNNPACK src/operators/binary-elementwise-nd.c xnn_create_add_nd_qs8 at
# d98c1ff25f7872ff91d5179c7f9374c6ee95df08; the option table has no activation scales, so those are not modelled.)
BUILTIN_INT8_TAG = "builtin8"
# GELU too: TFLite's int8 GELU is a 256-entry table lookup (kernels/gelu.cc), far below the 10 FLOPs per element
# an element-wise op was costed at (convnext_atto int8-static, Zen 4, load 5.4: its 12 `TFLite GELU` 0.74 ms, 2.34
# predicted).
BUILTIN_INT8_OPS = frozenset({"SQUARED_DIFFERENCE", "RSQRT", "GELU"})
# A BATCH_MATMUL of two activations (attention's Q x K^T and its weights x V) on int8 data: XNNPACK's QS8 batch matmul
# takes it only where the right-hand side's zero point is 0, which ai-edge-quantizer's asymmetric activation ranges
# give by chance only, so TFLite's own int8 kernel runs it, at `matmul.builtin8` (host-cpu.yaml). Profiled (LiteRT
# 2.3.0, 1 thread, Zen 4, 2026-12-04, session 39 sweep): a Whisper-like encoder's int8-static file (4 heads, 500
# frames, 64 per head), 5 of its 6 attention BATCH_MATMULs `TFLite BATCH_MATMUL` at 10.4-13.6 ms of CPU time each
# (64 M MACs), the one whose right-hand zero point was 0 `Batch Matrix Multiply (NC, QS8) GEMM` 0.16 ms; the fp32
# file's (XNNPACK's F32) 1.1-1.8 ms. Predicted 0.88 ms each at XNNPACK's int8 GEMM rate: the file 29.6 ms against
# 71.3 measured, its fp32 original 34.8. Task fact BUILTIN_BMM: such a BATCH_MATMUL, unless the file stores its
# right-hand side's zero point as 0 (an int8 upload whose ranges gave it).
BUILTIN_INT8_MATMUL = "matmul.builtin8"
BUILTIN_BMM = "builtin_bmm"
# (litert-qnn: ops the QNN delegate does not take run on LiteRT's CPU kernels, as on these.)
LITERT_BACKENDS = frozenset({"litert-cpu", "litert", "litert-qnn"})
_GEMM_OPS = frozenset({"CONV_2D", "FULLY_CONNECTED", "BATCH_MATMUL"})
# Task facts (simulator.backends.task_facts) of a PAD XNNPACK folds into the conv reading it, and of that conv.
PAD_FOLDED, AFTER_PAD = "pad_folded", "after_pad"
_PAD_READERS = frozenset({"CONV_2D", "DEPTHWISE_CONV_2D"})
HYBRID25_TAG = HYBRID25  # DW_TILE25 under dynamic int8: TFLite's hybrid kernel's own figures (README, h63lite)
# Paths on which the conv after a PAD does not fold it: QD8 (a Convert between them), TFLite's own kernels.
_PAD_UNFOLDED_TAGS = frozenset({"qd8", "qd8gemm", "hybrid", HYBRID25_TAG, "builtin"})
# The unfolded PAD reads its input and writes the padded copy (fp32: 8 bytes per element of the conv's padded
# input), a copy call per pixel (profiled: ~12 ns per pixel beside the bytes). Charged as 16 bytes per element at the
# cache rate, which is what the PADs of MobileNetV2's stride-2 depthwise convs (96-576 channels) measured: 0.15-0.33
# ns per element, plus the copy per pixel as `_PAD_PIXEL_BYTES` / channels per element (12 ns at the ~80 GB/s cache
# rate): a 3-channel PAD (the image before a first conv) is all pixels, 4 ns per element. MobileNetV2 int8-dynamic,
# profiled (LiteRT 2.3.0, 1 thread, load ~8, 2026-12-03): its image PAD 226x226x3 0.61 ms (0.03 predicted by the
# bytes alone, 0.64 with the pixels), 114x114x96 0.39 (0.24, 0.40), 58x58x144 0.13 (0.09, 0.13), 30x30x192 0.02
# (0.03, 0.05), 16x16x576 0.02 (0.03, 0.03). Always at the cache rate (Path.cached_extra_in_bytes), not at the rate
# of the conv's own traffic: where the conv's input and output outgrow the L2 (an image stem: 0.6 + 1.6 MB) those
# went at the memory rate, and on a Sapphire Rapids VM measuring 27 GB/s the image PAD was predicted 2.1 ms against
# 0.35-0.38 profiled (MobileNetV4-Conv-Small, MobileOne-S0 int8-dynamic, load 2.9, 2026-12-04; 0.51 at the cache rate).
_PAD_PASS_BYTES = 16.0
_PAD_PIXEL_BYTES = 1000.0
# Task fact of the conv after such a PAD: the padded tensor's channels (`pad_channels=3`).
PAD_CHANNELS = "pad_channels="
# Task fact of a STRIDED_SLICE the XNNPACK delegate leaves to TFLite (`_xnnpack_slice`): TFLite's builtin kernel
# (kernels/strided_slice.cc registers only its reference kernel) writes one element per call of a recursive
# std::function (reference_ops::StridedSlice), ~4 ns per element, against XNNPACK's copy of whole rows. It runs at
# its own calibrated rate, `layout.builtin.STRIDED_SLICE` (simulator.litert_signal). BirdNET fp32's two slices of its
# 144,000 samples, whose `end` a CONCATENATION computes: ~640 us each profiled, ~14 us as XNNPACK's.
BUILTIN_SLICE = "builtin_slice"
SLICE_TAG = "builtin"
# Task fact of a PADV2 (a PAD with a value of its own: litert-torch writes a max pool's padding so, with the type's
# lowest value): the XNNPACK delegate visits PAD but not PADV2 (VisitNode, tflite/delegates/xnnpack/xnnpack_delegate.cc,
# google-ai-edge/LiteRT at f67457790c9c2ab67347d6fe53270e8d3df20868), so TFLite's own pad kernel runs it, at its own
# calibrated rate per output element, one for fp32 data (`layout.builtin.PADV2`) and one for int8 (`layout.builtin8.PADV2`;
# simulator.litert_signal). Profiled (LiteRT 2.3.0, 1 thread, Zen 4, load ~11, 2026-12-04), 112x112x24 padded by 1 (a
# max pool's, ShuffleNetV2's): `TFLite PADV2` 0.068 ms fp32 (0.22 ns per output element), 0.15 ms int8 (0.48 ns;
# 58x58x64: 0.6); ShuffleNetV2's int8-static file on a Sapphire Rapids 0.175 ms, predicted 0.009 as a copy at the cache rate.
BUILTIN_PAD = "builtin_pad"
# Task fact of a PADV2 beside BUILTIN_PAD: its output's channels (`pad_row=C`). TFLite's pad kernel (optimized_ops
# PadImpl: a pad value other than 0) copies the channels of each pixel with one memcpy and fills the border element
# by element, so it pays a cost per output pixel beside its elements: `layout.builtin.call` per call of C elements
# (Path.call_elements; fp32 data, where calibrated: simulator.litert_signal.pad_fit). Five fp32 maps (Zen 4,
# 2026-12-07, 112x112x24 to 28x28x96) read 3.2 ns per output pixel beside 0.086 ns per element, each within 7%.
PAD_ROW = "pad_row="
PAD_CALL_KEYS = {"float32": "layout.builtin.call"}  # the cost per call of TFLite's PADV2, per data type calibrated
# Element types XNNPACK's STRIDED_SLICE takes (CheckTensorFloatOrQUInt8Type: fp32, fp16, per-tensor int8 / uint8).
_XNN_SLICE_DTYPES = frozenset({"float32", "float16", "int8", "uint8"})
_SLICE_MASKS = ("ellipsis_mask", "new_axis_mask", "shrink_axis_mask")
# Task facts of a SiLU (LOGISTIC whose one reader is a MUL by its own input) on int8 data: XNNPACK evaluates such a
# chain, whose one variable input is an 8-bit tensor, once per possible input value and runs it as a single
# 256-entry table lookup (google/XNNPACK ynnpack/subgraph/fusion_lut.cc, rewrite_subgraph_for_unary_lut: a chain
# of element-wise nodes with one int8 / uint8 variable input and a 1-byte output becomes a gather from a LUT).
# Profiled (LiteRT 2.3.0, EfficientNet-B0's int8-static file): 49 `Invalid Unary Op` events, one per SiLU, no
# Multiply for them (its 16 squeeze-excite MULs, which read two tensors, stay `Multiply (ND)`): 0.66 ms for the 49,
# predicted 3.4 + 1.2 ms as a QS8 sigmoid and a QS8 multiply. The LOGISTIC carries the lookup (the profiler charges
# it the event), at its own calibrated rate `elementwise.lut` (simulator.litert_lut); the MUL is gone.
SILU_LUT, SILU_FOLDED = "silu_lut", "silu_folded"
# Task fact of a CONV_2D / FULLY_CONNECTED / BATCH_MATMUL: under static int8 XNNPACK's QS8 GEMM / IGEMM runs it, whose
# epilogue requantizes every output (per-channel fp32 scale, round, clamp, int8 store), a cost per output element
# beside the MACs (`<kind>.int8.out`, Path.out_cost, fitted by LiteRT's calibration). Profiled (LiteRT 2.3.0, 1
# thread, Zen 4, load ~3, 2026-12-03), MobileNetV2's int8-static file: its 1x1 expand convs (few input channels, many
# outputs) ran 1.25-2.4x their prediction, 0.10-0.15 ns per output element beyond it (16 -> 96 channels at 112x112:
# 0.256 ms against 0.106), its project convs (many inputs, few outputs) 0.94-1.0x.
QS8_OUT = "qs8_out"
LUT_TAG = "lut"
# Task fact of a 1x1 stride-1 CONV_2D: XNNPACK runs it as a fully connected GEMM over the input's pixels (`Fully
# Connected (NC, ...)` in its profile), not as the indirect GEMM of other convs. Under dynamic int8 that GEMM
# quantizes and packs each input row inline, at a cost per row of its own: its own figures (`conv.qd8gemm`, with its
# `.pixel`), fitted by LiteRT's calibration on its 1x1 cases apart from the 3x3 and stem ones. Profiled (LiteRT 2.3.0,
# 1 thread, Zen 4, load ~11, 2026-12-03), dynamic int8 chains: 1x1 convs of 8-16 channels over 112x112 took
# 0.36-0.38 ms (about 28 ns per pixel), 3x3 convs of 16 channels over 56x56 0.041 ms (about 2 ns per pixel beside
# their MACs); one QD8 figure for both fitted 12 ns per pixel, the 1x1 cases 26-54% under and the 3x3 ones up to
# 79% over; in-model (MobileNetV3-Small's, LCNet-050's QD8 1x1 convs) 1.6-1.8x their prediction.
GEMM_CONV = "gemm_conv"
QD8_GEMM_TAG = "qd8gemm"
# Task fact of a CONV_2D: under fp32 (and fp16 weights, which run fp32's kernels) XNNPACK runs it as its F32 GEMM
# (a 1x1 stride-1 conv: `Fully Connected (NC, F32)` over the pixels as they are) or F32 IGEMM (any other kernel or
# stride: `Convolution (NHWC, F32) IGEMM`, one row pointer per output pixel and tap from an indirection buffer), both
# with micro-kernels of nr output channels (x86 with AVX: 16, google/XNNPACK src/configs/gemm-config.c
# init_f32_gemm_config: `7x16__avx512f_broadcast`, Zen FMA3's `4x16s4`), so a conv pays its output channels rounded
# up to that block (Path.padded_sgemm, Unit.f32_n_block); and the two kernels run at rates apart: the 1x1 GEMM at its
# own figures (`conv.fp32gemm`, with its fixed cost), fitted by LiteRT's calibration on the fp32 1x1 cases apart from
# the 3x3 ones (`conv.fp32`), used where calibrated. Profiled (LiteRT 2.3.0, 1 thread, Zen 4, load ~2.3, 2026-12-06,
# /work/h54conv/probe1.json): 1x1 convs of 32-320 output channels 110-117 GFLOP/s, 3x3 ones (stride 1 or 2) 99-108;
# 24 output channels 87 (1x1) and 73-80 (3x3), 0.75 of those (24 of 32 computed), 8 channels 51 (8 of 16).
# The IGEMM's own kernels are wider: google/XNNPACK src/operators/convolution-nhwc.c (select_gemm_config) runs an F32
# conv on xnn_init_f32_igemm_config's kernels and switches to its `nr2` config only where that config's nr exceeds the
# output channels; on the Zen 4 (20:13 UTC, /work/h54conv/probe3.json) 3x3 convs of 40, 48, 80 and 112 outputs ran 60,
# 76-80, 89 and 91 GFLOP/s against 105 for 32, 64 and 128 (blocks of 32), 16 outputs 103: `Unit.f32_igemm_n_block`
# (host_machine.f32_igemm_n_block: 32 with AVX-512F, where it was measured), f32_n_block below it. The nr2 kernels run
# at a rate of their own where LiteRT's calibration has cases that narrow (`conv.fp32nr2`, roofline.NR2_SUFFIX): on an
# AVX-512 Xeon (session 56) 3x3 convs 96 -> 24 ran 0.70-0.73x their price, 5.34 ms where 96 -> 32 ran 3.49 (the 7x32
# kernel), while on the Zen 4 above 16 outputs ran at the 32s' rate. On a Zen 3 (FMA3: IGEMM `5x16`, nr2 `10x8` below
# 16 outputs; 2026-12-07, /work/h57lconv/mix2.json) 96 -> 24, 40, 56 at 92 px ran as 32, 48, 64 (5.2, 8.0, 11.6 ms
# against 5.2, 8.1, 11.2): blocks of 16, no case below them (its nr2 block of 8 is not modelled: 8 outputs 1.3-2.3x).
XNN_CONV = "xnn_conv"
F32_GEMM_TAG = "fp32gemm"
# The F32 IGEMM also loads each tap's row pointers (mr of them, each checked against the zero buffer) before its
# reduction over that tap's input channels, one channel at a time: an image stem's 3 channels per tap pay that walk on
# every third MAC, a conv of 64 channels on every 64th. Where LiteRT's calibration has fitted it (`conv.fp32.igemm`,
# with fp32 image-stem cases beside the 3x3 ones), an fp32 IGEMM pays it per output element and tap (Work.igemm_taps),
# as XNNPACK's integer IGEMM does (`conv.<tag>.igemm`).
F32_IGEMM_TAP_KEY = "conv.fp32.igemm"
# The same 1x1 stride-1 conv under static int8 runs XNNPACK's fully connected QS8 GEMM (`Fully Connected (NC, QS8,
# QC8W) GEMM`), which on AMX pays a cost per input row (pixel) the indirect GEMM's figures do not carry: its own figures
# (`conv.int8gemm`, with its `.pixel` and `.out`), fitted on the calibration's 1x1 cases, used where calibrated.
# Profiled (LiteRT 2.3.0, 1 thread, Sapphire Rapids VM with AMX-INT8, load 2.9, 2026-12-04), MobileNetV2's and
# ShuffleNetV2's int8-static files: these convs ran 3.0x / 1.6x their prediction at 112x112 (32 -> 16 channels 0.176 ms
# against 0.059; 16 -> 96 0.297 against 0.182), 1.4-1.8x at 56x56, 1.2-2.1x at 28x28, 0.9-1.0x at 7x7: 5-11 ns per pixel
# beside the MACs, whatever the channels; the 3x3 and stem convs (indirect GEMM) within 1.1x.
QS8_GEMM_TAG = "int8gemm"
# Task fact of a DEPTHWISE_CONV_2D with more taps than XNNPACK's largest depthwise kernel on this CPU: XNNPACK's
# find_dwconv_ukernel (src/operators/convolution-nhwc.c) takes the smallest unipass tile that covers the kernel or a
# multipass one; the x86 fp32 configs have unipass tiles of 3, 4, 9 and 25 taps only, so a 7x7 depthwise conv (49
# taps: ConvNeXt's) becomes a grouped convolution, one IGEMM per channel of 1 input and 1 output channel, padded to
# the GEMM's N block. Profiled (LiteRT 2.3.0, 1 thread, Zen 4, load ~8, 2026-12-04), timm convnext_atto's fp32 file:
# its 12 depthwise convs ran `Convolution (NHWC, F32) IGEMM`, 14.9 ms against 1.1 predicted as depthwise convs
# (56x56x40: 4.0-5.0 ms, 0.23 predicted); its int8-static file (QS8, whose x86 depthwise tiles stop at 25 too) ran
# 33.4 ms CPU per run against 8.1 predicted. Its own figures (`dwconv.grouped`, `dwconv.grouped8` for static int8),
# fitted by LiteRT's calibration on 7x7 cases (fp16 weights run fp32's kernels; the hybrid int8 kernel is TFLite's own).
DW_GROUPED = "dw_grouped"
DW_GROUPED_TAG = "grouped"
XNN_DWCONV_MAX_TAPS = 25
# Task fact of an fp32 DEPTHWISE_CONV_2D of 10 to 25 taps (a 5x5 kernel: BlazeFace's and MobileNetV3's blocks): the
# same find_dwconv_ukernel picks the 25-tap unipass tile, which loads and multiplies all 25 taps per output whatever the
# kernel, at a rate apart from the 9-tap tile's that the 3x3 cases fit. Profiled (LiteRT 2.3.0, 1 thread, Zen 4, load
# 2-7, 2026-12-05): a BlazeFace-like file's 5x5 depthwise convs ran ~1.9x their prediction at the 3x3 figures (the
# file -24%). Its own figure, `dwconv.tile25`, fitted by LiteRT's calibration on 5x5 cases; used where calibrated.
# The tile takes the channels 16 at a time on x86 with AVX (google/XNNPACK src/configs/dwconv-config.c: `25p16c` for
# AVX-512F, FMA3 and AVX; `25p8c` on NEON, 8 on SSE: the F32 GEMM's nr on each, Unit.f32_n_block), each group a chain
# of 25 dependent FMAs per pixel, so a remainder costs a whole tile (Path.dw_tiles), and a cost per output pixel (its
# 25 row pointers: `dwconv.tile25.pixel`). Profiled on a Zen 3 (LiteRT 2.3.0, 1 thread, 2026-12-07; /work/h57lconv/
# mix2.json, mix3.json), 5x5 at 64 x 64: 16, 24, 32, 40, 48, 56, 72 channels 0.159, 0.233, 0.241, 0.330, 0.336, 0.421,
# 0.513 ms (steps of a tile, 0.087 ms, over 0.075 per 4,096 pixels); an AVX-512 Xeon (session 56) 24 channels 0.65-0.70x
# their price at channels as counted. 3x3 depthwise convs (9 taps: their chains short) read their channels as counted.
# The tile loads a pixel's channels in vectors (src/f32-dwconv/unipass-avx512.c.in: 64-byte loads, a masked one for the
# remainder) at a stride of the channels: where they are not whole vectors (Unit.f32_vector_floats: 16 with AVX-512F,
# 8 with AVX) the loads straddle cache lines at some pixels, at a rate of their own (`dwconv.tile25split`,
# roofline.SPLIT_SUFFIX). AVX-512 Xeon (Emerald Rapids, 2026-12-07, /work/h59lite/chains): at 64 x 64, 8-96 channels
# 0.093, 0.079, 0.143, 0.113, 0.194, 0.161, 0.250, 0.203, 0.298, 0.245, 0.289 ms: 8 + 16k channels 1.2-1.3x 16(k + 1).
DW_TILE25 = "dw_tile25"
DW_TILE25_TAG = TILE25
XNN_DWCONV_TILE9_TAPS = 9
# Task fact of a DEPTHWISE_CONV_2D of up to 25 taps (XNNPACK's unipass tiles): the bytes one output pixel reads,
# `dw_pixel_bytes=N` (dw_pixel_bytes). The tile computes a pixel's every channel before the next pixel, so it reads
# its packed weights (taps x C floats) again for every output pixel, beside the taps' inputs (taps x C). Where that
# outgrows the core's L1 data cache (Unit.l1_bytes) the weights come again from the L2 for every pixel: an fp32 conv
# then pays a cost per output element (`dwconv.<tag>.out`, Path.out_cost), fitted by LiteRT's calibration on depthwise
# cases beyond the L1. Chains on a Zen 4 (LiteRT 2.3.0, 1 thread, 32 KiB L1, 2026-12-07, /work/h60lite/chains/c1.json)
# at 14 x 14: 3x3 of 256-448 channels (18-29 KB a pixel) 0.94-1.04x their price, 480 and 512 (35-37 KB) 0.78-0.79x,
# 576-960 (41-69 KB) 0.59-0.62x; 5x5 of 96-160 (19-32 KB) 1.03-1.06x, 240-960 (48-192 KB) 0.66-0.73x: the excess
# 145-250 GB/s of the weights per pixel. An Emerald Rapids (48 KiB L1, session 59) read 5x5 of 480-960 0.61x so.
DW_PIXEL_BYTES = "dw_pixel_bytes="
# Task fact of a DEPTHWISE_CONV_2D that runs after XNNPACK's fully connected QD8 GEMM (a 1x1 stride-1 CONV_2D, GEMM_CONV,
# or a FULLY_CONNECTED) with only depthwise convs between them (MobileNetV2's expand conv -> depthwise conv, ShuffleNetV2's
# and MobileOne's blocks): under dynamic int8, TFLite's hybrid depthwise kernel then ran 2.6-3.9x its time in a chain of
# depthwise convs. Profiled (LiteRT 2.3.0, 1 thread, Zen 4, load 5-13, 2026-12-04; /work/notes/h35litert-data/
# chains*.py), 3x3 stride-1, ReLU6, per operator: 14x14x384 0.39 ms after a QD8 1x1 conv against 0.13 in a chain,
# 28x28x192 0.72 against 0.28, 56x56x144 2.4-3.7 against 0.6-2.2; a second depthwise conv after the first as slow (0.39);
# after an fp32 1x1 conv (XNNPACK's F32 GEMM) 0.14, after a QD8 3x3 conv (XNNPACK's indirect GEMM) 0.08, after the QD8
# 1x1 conv and an fp32 ADD or PAD (XNNPACK's) 0.17-0.19 / 0.07-0.11: what slows it is the last XNNPACK operator having
# been that GEMM, not the partition cut (why it lasts until XNNPACK runs something else is not established here). It
# pays a cost per output element beside the chain's figures (`dwconv.hybrid.out`, Path.out_cost), fitted by LiteRT's
# calibration on 1x1 conv + depthwise conv cases (0 where not calibrated: the chain's time). Applied under dynamic int8
# only (the fact does not see per-operator options: a 1x1 conv kept fp32 before a hybrid depthwise conv counts too).
DW_AFTER_GEMM = "dw_after_gemm"
# Task fact of a TRANSPOSE_CONV: XNNPACK runs it as `Deconvolution (NHWC, F32) Subconv2D`, which pays a cost per
# output pixel (whatever the channels) far above its MACs' time. Profiled (LiteRT 2.3.0, 1 thread, Zen 4, load ~5,
# 2026-12-05; /work/notes/h41newuser-data/tconv41.py), 2x2 stride-2 deconvolutions of 128x128 inputs: 16 -> 1
# channels 1.26 ms (1 M MACs, 0.031 predicted at the conv rate), 16 -> 16 1.69 ms (17 M MACs), 64x64 inputs 24 -> 24
# 0.63 ms: 19 ns per output pixel beside ~0.03 ns per MAC; a 3x3 one 30 ns per output pixel. A selfie-segmentation-
# like decoder's last layer (16 -> 1 channels to 256x256) was 1.1-2.3 ms of its 3.0 ms file, predicted 0.03. Its own
# figures (`conv.deconv`, with `conv.deconv.pixel`), fitted by LiteRT's calibration on deconvolution cases; fp32
# only (fp16 weights run fp32's kernels), and only where calibrated. Its GEMMs are the F32 IGEMM config's kernels
# (deconvolution-nhwc.c, as a conv's: nr2 below nr), so it pays its output channels in the IGEMM's blocks; its MACs run
# far below a conv's rate: on a Zen 3 (2026-12-07) 2x2 stride-2 deconvolutions of 46 px and 92 px, 16 -> 16, 24 -> 24,
# 32 -> 32, 48 -> 48 channels, 23-24, 51-71, 95-112 and 146-162 ns per output pixel (about 32 GFLOP/s beside 7 ns per
# pixel), which the older cases (mostly cost per pixel) fitted as MACs at 6x the peak: cases of 24 and 48 channels.
DECONV = "deconv"
DECONV_TAG = "deconv"
# Task fact of a CONCATENATION on the last (channel) axis of a map of more than one pixel: XNNPACK copies each input's
# channels pixel by pixel, a copy per pixel and input, far above the bytes' time (LiteRT 2.3.0, 1 thread, Zen 4, load
# ~3, 2026-12-06): a DBNet-like detector's two 736x736x1 maps into 736x736x2 2.25 ms profiled, 0.12 predicted at the
# layout rate; four 184x184x24 into 96 channels 2.13 against 0.35. At its own calibrated rate per output element,
# `layout.interleave.CONCATENATION` (simulator.litert_layout), where calibrated; a concatenation on another axis
# copies whole blocks (an SSDlite head's anchors: 0.066 ms, 0.033 predicted) and keeps the layout rate.
CONCAT_CHANNELS = "concat_channels"
INTERLEAVE_TAG = CONCAT_INTERLEAVE.split(".")[1]
# Task fact of every TRANSPOSE: XNNPACK's `Transpose (ND, X32)` on fp32 data copies runs one memcpy each or moves 8 x 8
# tiles (simulator.tflite_ops.transpose_calls: Work.copy_runs its calls, Work.far_walk its far rows), neither priced by
# the layout rate per element: profiled (LiteRT 2.3.0, 1 thread, Zen 4, 2026-12-06) 0.07-0.45 ns per element in cache
# (0.1-0.4x the layout rate), 0.5-1.0 beyond the L2 (LR-ASPP's 22 MB output 4.1 ms, 1.6 predicted). Its own
# figures where LiteRT's calibration fitted them (simulator.litert_layout): `layout.transpose` bandwidth, a cost per
# call `layout.transpose.run`, per far output byte beyond the L2 `layout.transpose.far`.
XNN_TRANSPOSE = "xnn_transpose"
TRANSPOSE_TAG = XNN_TRANSPOSE_KEY.split(".")[1]


def _spatial_pad(v: Value | None) -> bool:
    """Constant NHWC paddings, non-negative, on H and W only: what XNNPACK folds into a conv."""
    ints = v.weight.ints if v is not None and v.weight is not None else None
    return ints is not None and len(ints) == 8 and min(ints) >= 0 and not any(ints[i] for i in (0, 1, 6, 7))


def _xnnpack_slice(nd: Node, g: Graph, computed: set[str]) -> bool:
    """Whether the XNNPACK delegate takes this STRIDED_SLICE: VisitStridedSliceNode (tflite/delegates/xnnpack/
    xnnpack_delegate.cc, google-ai-edge/LiteRT) wants no ellipsis, new-axis or shrink-axis mask; begin, end and
    strides int32 constants of the file (CheckTensorStaticAllocation: kTfLiteMmapRo, so not a tensor an operator
    computes, even one TFLite computes at prepare), one entry per input dim; every stride 1; fp32 / fp16 / int8
    data. Anything else stays with TFLite's builtin kernel. `computed`: the tensors an operator writes (a view may
    hold them as constants where it folded their operator)."""
    if len(nd.inputs) < 4 or any(nd.attributes.get(m) for m in _SLICE_MASKS):
        return False
    x = g.values.get(nd.inputs[0])
    params = [g.values.get(t) for t in nd.inputs[1:4]]
    if x is None or x.dtype not in _XNN_SLICE_DTYPES or x.shape is None:
        return False
    for v in params:
        if v is None or v.weight is None or v.name in computed or v.dtype != "int32" or v.shape != [len(x.shape)]:
            return False
    strides = params[2].weight.ints if params[2] is not None and params[2].weight is not None else None
    return strides is not None and all(s == 1 for s in strides)


def _activation_rhs(nd: Node, g: Graph) -> bool:
    """A BATCH_MATMUL whose right-hand side is computed (no weight), unless the file quantizes it with zero point 0."""
    v = g.values.get(nd.inputs[1]) if len(nd.inputs) > 1 else None
    if v is None or v.weight is not None:
        return False
    zp = v.quant.zero_point if v.quant is not None else []
    return not zp or any(int(z) != 0 for z in zp)


def _pointwise(nd: Node, g: Graph) -> bool:
    """A CONV_2D with a 1x1 kernel and stride 1: a GEMM over the input's pixels as they are (GEMM_CONV)."""
    k = g.values.get(nd.inputs[1]) if len(nd.inputs) > 1 else None
    return (k is not None and k.shape is not None and len(k.shape) == 4 and k.shape[1] == 1 and k.shape[2] == 1
            and int(nd.attributes.get("stride_h", 1) or 1) == 1 and int(nd.attributes.get("stride_w", 1) or 1) == 1)


def _channel_concat(nd: Node, g: Graph) -> bool:
    """A CONCATENATION on its output's last axis with more than one row before it (CONCAT_CHANNELS)."""
    v = g.values.get(nd.outputs[0]) if nd.outputs else None
    shape = v.shape if v is not None else None
    if not shape or not all(isinstance(d, int) for d in shape):
        return False
    axis = int(nd.attributes.get("axis", 0) or 0)
    return axis % len(shape) == len(shape) - 1 and math.prod(shape[:-1]) > 1  # type: ignore[arg-type]


def dw_taps(nd: Node, g: Graph) -> int:
    """Kernel taps (kh x kw) of a DEPTHWISE_CONV_2D (its filter is [1, kh, kw, C]); 0 where unknown."""
    k = g.values.get(nd.inputs[1]) if len(nd.inputs) > 1 else None
    shape = k.shape if k is not None and k.shape is not None and len(k.shape) == 4 else None
    return shape[1] * shape[2] if shape is not None and all(isinstance(d, int) for d in shape[1:3]) else 0


def dw_pixel_bytes(taps: int, channels: int) -> int:
    """Bytes an fp32 depthwise tile reads per output pixel (DW_PIXEL_BYTES): taps x C weights and taps x C inputs."""
    return 2 * taps * channels * 4


def litert_task_facts(compiled: Graph) -> list[frozenset[str]]:
    """Per task: PAD_FOLDED for a zero PAD whose only reader is a CONV_2D / DEPTHWISE_CONV_2D (its input), AFTER_PAD
    for that conv, with the padded tensor's channels (`pad_channels=C`, where known); BUILTIN_SLICE for a
    STRIDED_SLICE XNNPACK does not take; SILU_LUT / SILU_FOLDED for the LOGISTIC and MUL of a SiLU (applied on int8
    data only); QS8_OUT for every CONV_2D, FULLY_CONNECTED and BATCH_MATMUL (applied under static int8 only); GEMM_CONV
    for a 1x1 stride-1 CONV_2D (applied under dynamic int8, static int8 and fp32); XNN_CONV for every CONV_2D (fp32
    only); DW_GROUPED for a DEPTHWISE_CONV_2D of more than 25 taps (fp32 and static int8), DW_TILE25 for one of 10 to
    25 (fp32; dynamic int8's hybrid kernel where calibrated); DW_AFTER_GEMM for a DEPTHWISE_CONV_2D run after a 1x1 stride-1 CONV_2D or a FULLY_CONNECTED with only depthwise convs between (dynamic int8 only); BUILTIN_PAD for every PADV2, with its output's channels (`pad_row=C`);
    BUILTIN_BMM for a BATCH_MATMUL of two activations (applied under static int8 only); DECONV for every
    TRANSPOSE_CONV (fp32 only); CONCAT_CHANNELS for a CONCATENATION on the channels (fp32 only); XNN_TRANSPOSE for every
    TRANSPOSE (fp32 only); DW_PIXEL_BYTES for a DEPTHWISE_CONV_2D of up to 25 taps (fp32, beyond the L1 only)."""
    readers: dict[str, list[str]] = {}
    for nd in compiled.nodes:
        for v in dict.fromkeys(nd.inputs):
            readers.setdefault(v, []).append(nd.id)
    by_id = {nd.id: nd for nd in compiled.nodes}
    facts: dict[str, set[str]] = {}
    for nd in compiled.nodes:
        if nd.op_type != "PAD" or len(nd.inputs) < 2 or len(nd.outputs) != 1 or nd.outputs[0] in compiled.outputs:
            continue
        rs = readers.get(nd.outputs[0], [])
        r = by_id[rs[0]] if len(rs) == 1 else None
        if r is not None and r.op_type in _PAD_READERS and r.inputs[0] == nd.outputs[0] \
                and _spatial_pad(compiled.values.get(nd.inputs[1])):
            facts[nd.id], facts[r.id] = {PAD_FOLDED}, {AFTER_PAD}
            v = compiled.values.get(nd.outputs[0]) or compiled.values.get(nd.inputs[0])
            shape = v.shape if v is not None else None
            if shape and isinstance(shape[-1], int) and shape[-1] > 0:
                facts[r.id].add(f"{PAD_CHANNELS}{shape[-1]}")
    for nd in compiled.nodes:
        rs = readers.get(nd.outputs[0], []) if nd.op_type == "LOGISTIC" and nd.outputs else []
        r = by_id[rs[0]] if len(rs) == 1 else None
        if r is not None and r.op_type == "MUL" and nd.outputs[0] not in compiled.outputs \
                and sorted(r.inputs) == sorted([nd.inputs[0], nd.outputs[0]]):
            facts.setdefault(nd.id, set()).add(SILU_LUT)
            facts.setdefault(r.id, set()).add(SILU_FOLDED)
    for nd in compiled.nodes:
        if nd.op_type in _GEMM_OPS:
            facts.setdefault(nd.id, set()).add(QS8_OUT)
        if nd.op_type == "CONV_2D":
            facts.setdefault(nd.id, set()).add(XNN_CONV)
        if nd.op_type == "CONV_2D" and _pointwise(nd, compiled):
            facts.setdefault(nd.id, set()).add(GEMM_CONV)
        if nd.op_type == "DEPTHWISE_CONV_2D" and dw_taps(nd, compiled) > XNN_DWCONV_MAX_TAPS:
            facts.setdefault(nd.id, set()).add(DW_GROUPED)
        elif nd.op_type == "DEPTHWISE_CONV_2D" and dw_taps(nd, compiled) > XNN_DWCONV_TILE9_TAPS:
            facts.setdefault(nd.id, set()).add(DW_TILE25)
        out = compiled.values.get(nd.outputs[0]) if nd.op_type == "DEPTHWISE_CONV_2D" and nd.outputs else None
        taps = dw_taps(nd, compiled) if out is not None else 0
        if out is not None and out.shape and isinstance(out.shape[-1], int) and 0 < taps <= XNN_DWCONV_MAX_TAPS:
            facts.setdefault(nd.id, set()).add(f"{DW_PIXEL_BYTES}{dw_pixel_bytes(taps, out.shape[-1])}")
        if as_builtin(nd).op_type == "TRANSPOSE_CONV":  # MediaPipe's Convolution2DTransposeBias too
            facts.setdefault(nd.id, set()).add(DECONV)
    after_gemm = False  # the last operator XNNPACK ran (in execution order) was its fully connected QD8 GEMM
    for nd in compiled.nodes:
        if all(v in compiled.values and compiled.values[v].weight is not None for v in nd.inputs):
            continue  # run once at prepare (a DEQUANTIZE of fp16 weights), not between the two
        if nd.op_type == "DEPTHWISE_CONV_2D":
            if after_gemm:
                facts.setdefault(nd.id, set()).add(DW_AFTER_GEMM)
        else:
            after_gemm = nd.op_type == "FULLY_CONNECTED" or GEMM_CONV in facts.get(nd.id, ())
    computed = {o for nd in compiled.nodes for o in nd.outputs}
    for nd in compiled.nodes:
        if nd.op_type == "STRIDED_SLICE" and not _xnnpack_slice(nd, compiled, computed):
            facts.setdefault(nd.id, set()).add(BUILTIN_SLICE)
        if nd.op_type == "PADV2":
            facts.setdefault(nd.id, set()).add(BUILTIN_PAD)
            out = compiled.values.get(nd.outputs[0]) if nd.outputs else None
            if out is not None and out.shape and isinstance(out.shape[-1], int) and out.shape[-1] > 0:
                facts[nd.id].add(f"{PAD_ROW}{out.shape[-1]}")
        if nd.op_type == "BATCH_MATMUL" and _activation_rhs(nd, compiled):
            facts.setdefault(nd.id, set()).add(BUILTIN_BMM)
        if nd.op_type == "CONCATENATION" and _channel_concat(nd, compiled):
            facts.setdefault(nd.id, set()).add(CONCAT_CHANNELS)
        if nd.op_type == "TRANSPOSE":
            facts.setdefault(nd.id, set()).add(XNN_TRANSPOSE)
    return [frozenset(facts.get(nd.id, ())) for nd in compiled.nodes]


def _builtin_pad_path(p: Path, facts: frozenset[str], unit: Unit) -> Path:
    """`p` as TFLite's own pad kernel runs a PADV2 (BUILTIN_PAD): its rate per element, and where its data type's cost
    per call is calibrated (PAD_CALL_KEYS) a memcpy of the channels per output pixel (PAD_ROW)."""
    int8 = p.resolved.input == "int8"
    call_key = PAD_CALL_KEYS.get("int8" if int8 else "float32")
    rows = [int(f[len(PAD_ROW):]) for f in facts if f.startswith(PAD_ROW)]
    per_pixel = bool(rows) and call_key in unit.kind_overhead_s
    note = "XNNPACK does not take PADV2: TFLite's own pad kernel runs it" + (
        ", a memcpy of the channels per output pixel" if per_pixel else "")
    return dataclasses.replace(p, compute="fp32", tag=BUILTIN_INT8_TAG if int8 else SLICE_TAG,
                               call_elements=float(rows[0]) if per_pixel else 0.0,
                               note="; ".join([*([p.note] if p.note else []), note]))


def litert_fact_path(p: Path, facts: frozenset[str], unit: Unit) -> Path:
    """`p` with the task facts of LiteRT's CPU applied (`litert_task_facts`; XNNPACK's unit only)."""
    if unit.name != "cpu":
        return p
    if p.resolved.input == "int8" and p.compute == "int8":
        if SILU_FOLDED in facts:
            return dataclasses.replace(p, eliminated=True, note="XNNPACK folds this MUL of the SiLU into one table "
                                       "lookup with the LOGISTIC before it (int8 data)")
        if SILU_LUT in facts:
            return dataclasses.replace(p, tag=LUT_TAG, note="SiLU on int8 data: XNNPACK runs LOGISTIC and the MUL "
                                       "after it as one 256-entry table lookup")
    if BUILTIN_BMM in facts and p.tag == "int8" and p.compute == "int8" and BUILTIN_INT8_MATMUL in unit.efficiency:
        return dataclasses.replace(p, tag=BUILTIN_INT8_TAG, rate_kind="matmul", note="; ".join([*([p.note] if p.note
                                   else []), "int8 BATCH_MATMUL of two activations: XNNPACK takes it only with a "
                                   "right-hand zero point of 0, so TFLite's own int8 kernel runs it"]))
    if QS8_OUT in facts and p.tag == "int8" and p.compute == "int8":
        # XNNPACK's QS8 GEMM: its epilogue per output element, its cost per output element and tap where it is an
        # indirect GEMM (Work.igemm_taps), and its blocks (Unit.int8_k_block / int8_n_block): each tap's input channels
        # rounded up to K (8 on AVX2 / AVX-512, 4 with AMX: a 3-channel stem does 8/3 or 4/3 of its MACs), the output
        # channels to N (8, 16, 64). Profiled on a Zen 3 (LiteRT 2.3.0, 1 thread, load 12): MobileNetV2's int8 stem
        # 1.12 ms against 0.25 predicted without K's, MobileNetV3-Small's 0.60 against 0.14; their fp32 stems (F32
        # IGEMM, no such block) 0.36-0.41 against 0.31 and 0.24 against 0.17.
        p = dataclasses.replace(p, out_cost=True, tap_cost=True, padded_sgemm=True)
        if GEMM_CONV in facts and f"conv.{QS8_GEMM_TAG}" in unit.efficiency:
            note = "a 1x1 stride-1 conv: XNNPACK's fully connected QS8 GEMM, with a cost per input row"
            p = dataclasses.replace(p, tag=QS8_GEMM_TAG, setup_per_pixel=True,
                                    note="; ".join([*([p.note] if p.note else []), note]))
    if XNN_CONV in facts and (p.tag, p.compute) == ("fp32", "fp32"):
        # output channels in XNNPACK's F32 blocks (Unit.f32_n_block; its IGEMM's, Unit.f32_igemm_n_block)
        p = dataclasses.replace(p, padded_sgemm=True, igemm_blocks=GEMM_CONV not in facts,
                                tap_cost=GEMM_CONV not in facts and F32_IGEMM_TAP_KEY in unit.kind_overhead_s)
        if GEMM_CONV in facts and f"conv.{F32_GEMM_TAG}" in unit.efficiency:
            p = dataclasses.replace(p, tag=F32_GEMM_TAG, note="; ".join([*([p.note] if p.note else []), (
                "a 1x1 stride-1 conv: XNNPACK's F32 GEMM over the pixels (other convs: its indirect GEMM)")]))
    if BUILTIN_SLICE in facts:
        return dataclasses.replace(p, compute="fp32", tag=SLICE_TAG, note="; ".join([*([p.note] if p.note else []), (
            "XNNPACK does not take this STRIDED_SLICE (begin / end / strides not file constants, a stride other "
            "than 1, a mask or a non-float type): TFLite's reference kernel copies it element by element")]))
    if BUILTIN_PAD in facts:
        return _builtin_pad_path(p, facts, unit)
    if DW_GROUPED in facts and (p.tag, p.compute) in (("fp32", "fp32"), ("int8", "int8")):
        p = dataclasses.replace(p, tag=DW_GROUPED_TAG + ("8" if p.compute == "int8" else ""), note="; ".join([*([p.note] if p.note else []), (
            "more taps than XNNPACK's depthwise kernels: a grouped convolution, one IGEMM per channel")]))
    if DW_TILE25 in facts and (p.tag, p.compute) == ("fp32", "fp32") and f"dwconv.{DW_TILE25_TAG}" in unit.efficiency:
        p = dataclasses.replace(p, tag=DW_TILE25_TAG, dw_tiles=True, setup_per_pixel=True, note="; ".join(
            [*([p.note] if p.note else []), "10 to 25 taps: XNNPACK's 25-tap depthwise tile, its channels in whole "
             "tiles, a cost per output pixel"]))
    if DW_TILE25 in facts and p.tag == "hybrid" and f"dwconv.{HYBRID25_TAG}" in unit.efficiency:  # (HYBRID25_TAG)
        p = dataclasses.replace(p, tag=HYBRID25_TAG)
    pixel_bytes = [int(f[len(DW_PIXEL_BYTES):]) for f in facts if f.startswith(DW_PIXEL_BYTES)]
    if (pixel_bytes and unit.l1_bytes and pixel_bytes[0] > unit.l1_bytes and p.compute == "fp32"
            and p.tag in ("fp32", DW_TILE25_TAG) and f"dwconv.{p.tag}.out" in unit.kind_overhead_s):
        p = dataclasses.replace(p, out_cost=True, note="; ".join([*([p.note] if p.note else []), (
            "a pixel's weights and inputs outgrow the L1: the weights come again from the L2 for every output pixel")]))
    if DECONV in facts and (p.tag, p.compute) == ("fp32", "fp32") and f"conv.{DECONV_TAG}" in unit.efficiency:
        p = dataclasses.replace(p, tag=DECONV_TAG, rate_kind="conv", setup_per_pixel=True, padded_sgemm=True,
                                igemm_blocks=True, note="; ".join([*([p.note] if p.note else []), (
                                    "XNNPACK's Subconv2D deconvolution: its F32 IGEMM's output-channel blocks, a "
                                    "cost per output pixel")]))
    if CONCAT_CHANNELS in facts and (p.tag, p.compute) == ("fp32", "fp32") and CONCAT_INTERLEAVE in unit.efficiency:
        p = dataclasses.replace(p, tag=INTERLEAVE_TAG, note="; ".join([*([p.note] if p.note else []), (
            "a concatenation on the channels: XNNPACK copies each input's channels pixel by pixel")]))
    if XNN_TRANSPOSE in facts and (p.tag, p.compute) == ("fp32", "fp32") and XNN_TRANSPOSE_KEY in unit.efficiency:
        p = dataclasses.replace(p, tag=TRANSPOSE_TAG, note="; ".join([*([p.note] if p.note else []), (
            "XNNPACK's transpose: a memcpy per run kept in place, else 8 x 8 tiles")]))
    if DW_AFTER_GEMM in facts and p.tag in ("hybrid", HYBRID25_TAG):
        p = dataclasses.replace(p, out_cost=True, note="; ".join([*([p.note] if p.note else []), (
            "after XNNPACK's fully connected QD8 GEMM, TFLite's hybrid depthwise kernel pays a cost per output element")]))
    if GEMM_CONV in facts and p.tag == "qd8":
        p = dataclasses.replace(p, tag=QD8_GEMM_TAG, note="; ".join([*([p.note] if p.note else []), (
            "a 1x1 stride-1 conv: XNNPACK's fully connected QD8 GEMM, each input row quantized inline")]))
    if PAD_FOLDED in facts:
        return dataclasses.replace(p, eliminated=True, note="XNNPACK folds this PAD into the conv that reads it "
                                   "(where that conv is not XNNPACK's fp32 or int8 kernel, the conv carries its time)")
    if AFTER_PAD in facts and p.tag in _PAD_UNFOLDED_TAGS:
        note = "the PAD before it runs on its own (XNNPACK's Constant Pad): folded only into XNNPACK's fp32/int8 convs"
        per_pixel = next((_PAD_PIXEL_BYTES / int(f[len(PAD_CHANNELS):]) for f in facts if f.startswith(PAD_CHANNELS)), 0.0)
        return dataclasses.replace(p, cached_extra_in_bytes=p.cached_extra_in_bytes + _PAD_PASS_BYTES + per_pixel,
                                   extra_dispatches=p.extra_dispatches + 1, note="; ".join([*([p.note] if p.note else []), note]))
    return p


# TFLite's EMBEDDING_LOOKUP with a table ai-edge-quantizer quantized (Work.lookup_table), as the exported files run it
# (LiteRT 2.3.0's profiler, 1 thread, Zen 4, 2026-12-05): dynamic int8 stores the table int8 with a scale per row and
# TFLite's hybrid kernel (kernels/embedding_lookup.cc, EvalHybrid) dequantizes each row it copies, element by element
# (`layout.hybrid.out` s per output element; a Llama-style LM's 64 x 256 lookup 0.030 ms, 0.006 as fp32); fp16 and
# int4 store it behind a DEQUANTIZE of a constant, run once at prepare, so the lookup copies fp32 rows; static int8
# leaves the op float (the quantizer's static recipe does not list it: the table stays fp32, a QUANTIZE follows).
LOOKUP_HYBRID_TAG = "hybrid"


def lookup_path(ui: int, c: Combo, generic: Callable[..., Path | None]) -> Path | None:
    """The path of an EMBEDDING_LOOKUP whose table an option's kernel format applies to (see LOOKUP_HYBRID_TAG);
    `generic(combo, has_kernel)`: the generic path (the float lookup's is a weightless copy's)."""
    f32 = Combo("fp32", "fp32", "fp32", 0)
    p = generic(Combo("fp32", "fp32", "-", 0), False)
    if "int8" in (c.input, c.output):
        return p and dataclasses.replace(p, resolved=f32, supported=False, note=(
            "ai-edge-quantizer's static int8 leaves EMBEDDING_LOOKUP float: its table stays fp32"))
    if p is None or c.kernel != "int8":
        return p and dataclasses.replace(p, resolved=c, note="" if c.kernel == "fp32" else (
            f"{c.kernel} table behind a DEQUANTIZE run once at prepare: the lookup copies fp32 rows"))
    return Path(ui, c, True, "fp32", LOOKUP_HYBRID_TAG, 4.0, 4.0, 0.0, False, 1.0, 0.0, 0.0, 0, 0.0, False, False,
                "int8 table with a scale per row: TFLite's hybrid EMBEDDING_LOOKUP dequantizes each element it copies",
                out_cost=True, rate_kind="layout")


def litert_cpu_path(target: Target, ui: int, unit: Unit, op_type: str, kind: str, c: Combo, has_kernel: bool,
                    fused: bool, generic: Callable[[Combo], Path | None]) -> Path | None:
    """The path of an operator on LiteRT's CPU where it differs from the generic one, else None. `generic`: the
    generic path of the same operator on the same unit under another combo (simulator.backends)."""
    if op_type == "EMBEDDING_LOOKUP" and has_kernel and c.kernel != "-":
        return lookup_path(ui, c, generic)
    if "fp16" in (c.input, c.output):
        f32 = Combo(*("fp32" if f == "fp16" else f for f in (c.input, c.output)), c.kernel, c.sparsity)
        p = generic(f32)
        if p is None:
            return None
        return dataclasses.replace(p, resolved=c, note="; ".join(
            ["LiteRT's CPU computes fp32: fp16 is the weights' storage (dequantized at load)", *([p.note] if p.note else [])]))
    if (op_type == "HARD_SWISH" and c.input == c.output == "int8"
            and f"elementwise.{HSWISH_INT8}" in unit.efficiency):
        # XNNPACK does not take an int8 HARD_SWISH: TFLite's own kernel runs it (profiled `TFLite HARD_SWISH`, 4 ns
        # per element; XNNPACK's fp32 HardSwish 0.05), about 8x the int8 element-wise ops around it: MobileNetV3-Small's
        # 19 (0.8M elements) profiled 2.87 ms, 0.35 predicted at the element-wise rate, and its int8-static file ran
        # 2.1x its fp32 one (LiteRT 2.3.0, 1 thread, 2026-12-03). Only where calibrated (else the generic path).
        return Path(ui, c, True, "int8", HSWISH_INT8, 1.0, 1.0, 0.0, False, 0.0, 0.0, 0.0, 0, 0.0, False, False,
                    "int8 HARD_SWISH: XNNPACK does not take it, TFLite's own kernel runs it", rate_kind="elementwise")
    if (op_type in BUILTIN_INT8_OPS and c.input == c.output == "int8"
            and f"elementwise.{BUILTIN_INT8_TAG}.{op_type}" in unit.efficiency):
        return Path(ui, c, True, "int8", BUILTIN_INT8_TAG, 1.0, 1.0, 0.0, False, 0.0, 0.0, 0.0, 0, 0.0, False, False,
                    f"int8 {op_type}: XNNPACK does not take it, TFLite's own kernel runs it", rate_kind="elementwise")
    if (has_kernel and c.kernel == "int4" and "int8" not in (c.input, c.output) and op_type in _GEMM_OPS
            and kind in ("conv", "convsmall", "gemm")):
        # ai-edge-quantizer's int4 weights reach the operator through a DEQUANTIZE that XNNPACK does not fold, so
        # the operator is not delegated: TFLite's own fp32 kernel runs it on the dequantized weights (profiled:
        # `TFLite CONV_2D` / `TFLite FULLY_CONNECTED`, 1.5-4x XNNPACK's time; the DEQUANTIZE itself 1-3 us).
        # A depthwise conv's kernel stays fp32 under int4 (storage_bytes_per_kernel), so XNNPACK keeps it.
        note = ("int4 weights behind DEQUANTIZE: XNNPACK does not take the operator; TFLite's own fp32 kernel "
                "runs it on the weights dequantized per run")
        return Path(ui, c, True, "fp32", "builtin", 4.0, 4.0, 4.0, False, 4.0, 0.0, 0.0, 1, 0.0, False, False, note,
                    rate_kind="gemm" if kind == "gemm" else "conv")
    if not has_kernel or c.kernel != "int8" or "int8" in (c.input, c.output):
        return None
    fcompute = "fp32"
    in_b = out_b = BITS[fcompute] / 8
    if kind == "dwconv":
        note = ("XNNPACK does not take a depthwise conv with int8 weights and float activations: TFLite's own "
                "hybrid kernel runs it, and the delegate partition is cut around it")
        # Its time per output element steps up once the fp32 output outgrows the core's L2 (`dwconv.hybrid.spill`
        # per byte beyond it). Profiled, 3x3 stride-1 chains, 1 thread, load 12-16: 2.3-3.1 ns per element at
        # 14x14x384-960, 7x7x960, 28x28x192 (47K-150K elements); 5.7 at 112x112x32, 6.4 at 56x56x144 (400K-450K).
        # A stride-2 conv over 56x56x96 (75K outputs from 301K inputs) did not step: the output, not the input.
        # Three timings of the calibration's depthwise cases (median per operator): the fit's relative RMS error
        # 0.23 without it, 0.18 with it (0.53 ns per byte beyond 512 KiB). Noisy: one operator 1.2-3.1 ms.
        return Path(ui, c, True, "int8", "hybrid", in_b, out_b, 1.0, False, 4.0, in_b + 1, 0.0, 1, 0.0, False,
                    False, note, spill=True)
    if op_type in _GEMM_OPS and kind in ("conv", "convsmall", "gemm"):
        note = "XNNPACK dynamic int8: the input quantized per run, then an int8 GEMM (QD8 x QC8W) with float output"
        # QD8 quantizes each row (a pixel's channels) with its own scale and zero point, and the GEMM reads them per
        # row: a cost per output pixel (`conv.qd8.pixel`), whatever the channels. Profiled: a 1x1 conv at 224x224x3
        # 3.1 ms against fp32's 0.14, at 112x112x32 0.50 against 0.20 (MobileNetV2 with only its convs dynamic
        # int8: 1.27-1.38x the fp32 file's CPU time, predicted 1.0x without it).
        return Path(ui, c, True, "int8", "qd8", in_b, out_b, 1.0, False, 4.0, in_b + 1, 0.0, 1, 0.0, False, False,
                    note + ("; activation clamped in the kernel" if fused else ""), setup_per_pixel=True, tap_cost=True,
                    padded_sgemm=True)
    return None
