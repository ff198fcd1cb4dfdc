"""Work counts particular to convolutions as ORT's CPU kernels run them: the im2col buffer of a grouped Conv left in
NCHW, the rows ORT's im2col copies, the columns of a grouped 1x1 Conv's SGEMMs (MLAS pads them to its block), and the
per-group GEMM rows and NHWC im2col copies of QLinearConv's grouped path. simulator.costs.work_of fills Work's conv
fields from these."""

from __future__ import annotations

import math

from compiler.graph import Node, Value


def qgemm_counts(node: Node, kernel: Value | None, out_elements: float, k_rows: int) -> dict[str, float]:
    """Work.row_calls (the per-group GEMMs' rows) and row_extra_calls (the NHWC im2col's copies) of a Conv (empty for
    other ops: the caller passes Convs only): pixels = output elements / output channels."""
    if kernel is None or not kernel.shape or len(kernel.shape) < 3 or k_rows <= 0:
        return {}
    group = int(node.attributes.get("group", 1) or 1)
    dims = [d if isinstance(d, int) else 1 for d in kernel.shape[2:]]
    rows = out_elements / k_rows * group
    in_place = (math.prod(dims) == 1 and all(int(x) == 1 for x in node.attributes.get("strides") or [1])
                and not any(int(x) for x in node.attributes.get("pads") or [0]))
    # ORT's Im2col<uint8_t, NHWC> copies a kernel row's taps in one memcpy when the group holds every input channel
    # (they are adjacent in NHWC), else tap by tap (onnxruntime core/util/math_cpu.cc).
    dilated = any(int(x) != 1 for x in node.attributes.get("dilations") or [1])
    copies = math.prod(dims) if group > 1 or dilated else math.prod(dims[:-1])
    return {"row_calls": rows, "row_extra_calls": 0.0 if in_place else rows * copies}


def grouped_im2col(node: Node, kind: str, macs: float, k_rows: int) -> float:
    """im2col elements of a grouped Conv that runs group by group in NCHW (MLAS's plain Conv; ConvInteger): each
    group expands its own input channels, so the buffer over all groups is every input channel's kh x kw taps per
    output pixel, MACs x groups / output channels, where the default rule (MACs / output channels) counts one
    group's. 0 for a dense conv (the default rule holds).
    - Depthwise (`dwconvnchw`, and `dwconv`, whose NCHWc form only the paths that leave it in NCHW read: fp16
      behind a shared Cast, simulator.backends._ort_fp16): = its MACs, read along W with the conv's stride (a
      stride-2 expansion gathers every other element: on this host about twice the time per element of a
      stride-1 one, single-op models in thread CPU time). A depthwise conv with a channel multiplier
      (`multiplied_depthwise`) is read as a unit-stride one whatever its stride.
    - Other grouped convs (RegNet's group width 8, ResNeXt's 32 groups): read by the im2col paths, dynamic int8's
      ConvInteger and fp16's NCHW Conv (RegNetX-002's 14 grouped convs under int8-dynamic measured 2.9x their
      fp32 time, predicted 1.2x with one group's buffer: benchmarks/export_ops.py), and by fp32's own where ORT
      left the conv in NCHW (`gconvnchw`), read with the conv's stride as the depthwise expansion is (23 grouped
      3x3 and 1x1 convs on this host fit within a median 12% with the stride, 17% without)."""
    group = int(node.attributes.get("group", 1) or 1)
    stride = max(int((node.attributes.get("strides") or [1])[-1]), 1)
    if kind in ("dwconv", "dwconvnchw"):
        return macs * (1 if multiplied_depthwise(node, kind, k_rows) else stride)
    if kind == "gconvnchw" and k_rows > 0:
        return macs * group / k_rows * stride
    if kind in ("conv", "convsmall") and group > 1 and k_rows > 0:
        return macs * group / k_rows
    return 0.0


_IM2COL_KINDS = frozenset({"conv", "convsmall", "convnchw", "conv3d", "dwconv", "dwconvnchw", "gconvnchw"})


def multiplied_depthwise(node: Node, kind: str, k_rows: int) -> bool:
    """A depthwise Conv with a channel multiplier (one input channel per group, 2+ output channels each: FastViT's
    7x7 stride-2 downsamplers, 48 -> 96 channels in 48 groups). ORT leaves it in NCHW (its NCHWc depthwise kernel
    takes one output per channel), and its stride costs it nothing: single-op files on a Zen 5 (ORT 1.32, 1 thread,
    thread CPU time, 2026-12-07, benchmarks/depthwise_multiplier.py) at stride 2, 7x7, 46 channels x 2 at 64 px took
    0.61x the time of 46 x 1 (0.50 against 0.83 ms) and x 4 1.2x: 5.2-7.3 ns per output element at 16-64 px against
    17.5-20.8 for x 1, where at stride 1 x 2 costs 1.4-1.9x x 1 (3x3 at 56 px, 5x5 at 28). So it pays the
    unit-stride expansion (its MACs as im2col elements, as a stride-1 depthwise conv does) and no strided gather: at
    stride 2 the cases went from 1.6-2.4x their time to 0.92-1.77x (the two at 16 and 32 px highest, where the
    multiplier-1 convs are over too: 1.10-1.39x), at stride 1 0.65-1.04x either way."""
    group = int(node.attributes.get("group", 1) or 1)
    return kind in ("dwconv", "dwconvnchw") and group > 1 and k_rows > group


def strided_im2col(node: Node, kind: str, macs: float, k_rows: int) -> float:
    """Elements of a conv's NCHW im2col buffer (every group's: MACs x groups / output channels) when it strides along
    W (0 otherwise): MLAS's float im2col copies a stride-1 row as a block but gathers a strided one element by element.
    Seen in fp16 files, whose depthwise convs ORT leaves in NCHW (simulator.backends._ort_fp16): single-op files on a
    Zen 4 (thread CPU time, load ~10, 2026-12-04) of 3x3 depthwise convs at 96x112 stride 2 took 3.0x the time of
    96x56 stride 1 (the same buffer), 5x5 at 144x56 stride 2 2.3x 144x28 stride 1; the ConvIntegers of the same
    convs (ORT's own Im2col<uint8_t>) 1.6x and 1.2x. Priced where calibration fits `<kind>.<tag>.im2col.strided`."""
    stride = max(int((node.attributes.get("strides") or [1])[-1]), 1)
    if kind not in _IM2COL_KINDS or stride == 1 or k_rows <= 0 or multiplied_depthwise(node, kind, k_rows):
        return 0.0
    return macs * int(node.attributes.get("group", 1) or 1) / k_rows


def im2col_rows(node: Node, kind: str, macs: float, k_rows: int, out: Value | None) -> float:
    """Rows of a conv's NCHW im2col buffer: (input channels per group x kernel taps x output rows) per group, over
    every group = MACs x groups / (output channels x output width). ORT's Im2col copies the buffer row by row
    (math::Im2col<uint8_t, NCHW>, ConvInteger), so each row costs a fixed time besides its elements: 24 single-op
    depthwise ConvIntegers (3x3 and 5x5, stride 1 and 2, 4 to 112 output pixels wide) fit within 13% with a cost
    per channel, per row and per element, 54% without the row term (h14-exports note, 2026-12-02)."""
    shape = out.shape if out is not None else None
    if kind not in _IM2COL_KINDS or not shape or len(shape) < 3 or k_rows <= 0:
        return 0.0
    width = shape[-2] if channels_last(shape, k_rows) else shape[-1]
    if not isinstance(width, int) or width <= 0:
        return 0.0
    group = int(node.attributes.get("group", 1) or 1)
    return macs * group / (k_rows * width)


def channels_last(shape: list[int | str], k_rows: int) -> bool:
    """Whether a Conv's inferred output `shape` is NHWC: its last axis, not axis 1, holds the filter's rows (within
    one NCHWc block of padding). ORT fuses the permute after ConvNeXt's depthwise convs (`x.permute(0, 2, 3, 1)`) into
    the compiled Conv, whose output then maps onto that channels-last source value; the kernels still run NCHW (or
    NCHWc), so a row of the expansion is an output row of W pixels, not of C. Read on the last axis, ConvNeXt-V2-atto's
    7x7 depthwise convs counted 49 x H x W rows in all where ConvInteger's Im2col copies 49 x H x C (320 channels at
    7 x 7 px: 46x too few), and their dynamic int8 ConvIntegers were priced 0.08-0.17 ms against 1.0 ms each in ORT's
    profile (Emerald Rapids, 2026-12-05, benchmarks/export_ops.py)."""
    def near(c: int | str) -> bool:
        return isinstance(c, int) and k_rows - NCHWC_MAX_BLOCK < c <= k_rows

    return len(shape) >= 4 and not near(shape[1]) and near(shape[-1])


# MLAS's fp32 SGEMM kernel runs C's columns a vector register pair at a time and the last partial block in one
# register (masked stores), so it computes the columns padded to one register's floats: 16 in the AVX-512F kernel
# (ZMM), 8 in the AVX / FMA3 kernels (YMM; onnxruntime mlas/lib/x86_64/FgemmKernelFma3Common.h and
# FgemmKernelAvxCommon.h, ProcessCountM: 16-column loop while CountN > 8, then one 8-wide YMM block). That width is
# the machine's fact (profiles.Unit.sgemm_column_block, from the ISA host_machine reads); the work counts only what
# does not depend on it: the GEMM's columns and how wide a block the group's channels fill. A 1x1 unit-stride Conv
# left in NCHW runs as one SGEMM per group with N = output pixels (MlasConvAlgorithmGemmDirect,
# mlas/lib/convolve.cpp). Single-op chains on a Zen 4 (AVX-512, thread CPU time, 1 thread, groups 2-4,
# /work/notes/h29pad.md): 49 pixels take 1.18-1.26x the time per MAC of 48 and 65 take 1.17-1.24x of 64 (padding
# to 16: 1.31 and 1.23) where a group's input or output channels are not a multiple of 16 (58, 68, 116, 136),
# 0.98-1.04x where both are (48-320 channels); a dense Conv (one group) 1.01-1.14x. So only the former pays. On a
# Zen 3 (AVX2, 58 channels per group, four runs at load ~10, /work/notes/h30host.md): 56 pixels 0.76-1.15x the time
# per MAC of 48, median 0.98 (padding to 8: 1.0; to 16: 1.14), 49 1.16-1.37x (1.14), 65 1.16-1.28x of 64 (1.13).
_ALIGN_CAP = 64  # channel alignments beyond any kernel's block count as this


def sgemm_columns(node: Node, kind: str, kernel: Value | None, out: Value | None) -> tuple[float, float]:
    """(Work.sgemm_columns, Work.sgemm_align) of a Conv whose per-group SGEMMs pay their columns padded to the
    machine's block (see above): `gconvnchw`, kernel 1x1, stride 1, no pads, 2+ groups. The columns are the output
    pixels; the alignment is the largest power of two (up to 64) that divides both a group's input and output
    channels: such a conv pays the padding on a machine whose block is wider than that. (0, 0) elsewhere."""
    if kind != "gconvnchw" or node.op_type not in ("Conv", "FusedConv") or kernel is None or not kernel.shape:
        return 0.0, 0.0
    shape = out.shape if out is not None else None
    if (len(kernel.shape) < 3 or any(d != 1 for d in kernel.shape[2:]) or not shape or len(shape) < 3
            or any(int(x) != 1 for x in node.attributes.get("strides") or [1])
            or any(int(x) for x in node.attributes.get("pads") or [0])):
        return 0.0, 0.0
    group = int(node.attributes.get("group", 1) or 1)
    dims = [kernel.shape[0], kernel.shape[1], *shape[2:]]
    if group < 2 or not all(isinstance(d, int) and d > 0 for d in dims):
        return 0.0, 0.0
    both = math.gcd(int(kernel.shape[0]) // group, int(kernel.shape[1]))
    align = min(both & -both, _ALIGN_CAP) if both else 1
    return float(math.prod(int(d) for d in shape[2:])), float(align)



# ORT's NCHWc transformer (x86, 1.32) pads a Conv's filter to whole NCHWc blocks (16 channels with AVX-512): its
# output channels, its groups where depthwise, its input channels where the input is a blocked tensor of fewer. The
# compiled graph holds the padded filter (GhostNet's 8-channel cheap operations: [16, 1, 3, 3], 16 groups; ShuffleNet
# v2's 3 -> 24 stem: 32 outputs), so MACs, groups and im2col are counted on it; the tensors keep their own channels.
# The fp32 NCHWc kernel computes the padding, but a path that runs the model's own Conv outside NCHWc does not:
# ConvInteger (dynamic int8), QLinearConv (static int8, NHWC), and MLAS's NCHW Conv of an fp16 model whose constant a
# run-time Cast keeps (roofline.Rates.plain). GhostNet's fp16 file on a Zen 4 (ORT's profiler, load 3 per CPU,
# 2026-12-05): its 8-channel depthwise convs at 112 px 0.15-0.19 ms against 0.28 predicted on the padded 16 groups,
# 12 -> 16 and 24 -> 32 ones 1.2-1.6x their prediction, the unpadded 480-channel ones 1.1x.
NCHWC_MAX_BLOCK = 16  # MLAS's NCHWc block: 16 floats with AVX-512, 8 with AVX2 (MlasNchwcGetBlockSize)


def nchwc_output_padding(node: Node, kernel: Value | None, out: Value | None) -> float:
    """Output channels an NCHWc Conv computes per channel of the model's own output: its padded filter's rows over
    the output's channels (1 where nothing is padded or a shape is unknown). The output's shape is the model's own
    (shape inference; the profiler's blocked shapes do not replace it: compiler.concrete.fill_observed), in NCHW
    or, where the compiled output maps onto a channels-last source value (ConvNeXt's permute), NHWC: the channel
    axis is the one within a block of the filter's rows."""
    if node.domain != "com.microsoft.nchwc" or kernel is None or not kernel.shape or out is None or not out.shape:
        return 1.0
    rows = kernel.shape[0]
    if not isinstance(rows, int) or len(out.shape) < 3:
        return 1.0
    for c in (out.shape[1], out.shape[-1]):
        if isinstance(c, int) and rows - NCHWC_MAX_BLOCK < c <= rows:
            return rows / c
    return 1.0


def nchwc_padding(node: Node, kernel: Value | None, inp: Value | None, out: Value | None) -> tuple[float, float]:
    """(Work.plain_macs, Work.plain_im2col): the shares of the compiled Conv's MACs and of its im2col work (elements,
    rows, groups) that the model's own Conv has. (1, 1) where nothing is padded or a shape is unknown."""
    if node.domain != "com.microsoft.nchwc" or kernel is None or not kernel.shape or len(kernel.shape) < 3:
        return 1.0, 1.0
    k_out, k_in = kernel.shape[0], kernel.shape[1]
    c_in = inp.shape[1] if inp is not None and inp.shape and len(inp.shape) > 1 else None
    if not all(isinstance(x, int) and x > 0 for x in (k_out, k_in)):
        return 1.0, 1.0
    out_share = 1.0 / nchwc_output_padding(node, kernel, out)
    group = int(node.attributes.get("group", 1) or 1)
    if group > 1:  # depthwise (NCHWc blocks no other grouped Conv): groups, MACs and im2col all go with the channels
        return out_share, out_share
    in_share = min(1.0, c_in / (k_in * group)) if isinstance(c_in, int) and c_in > 0 else 1.0
    return out_share * in_share, in_share


# ORT's CPU ConvTranspose (microsoft/onnxruntime, onnxruntime/core/providers/cpu/nn/conv_transpose.cc, the float
# DoConvTranspose) runs, per image and group, one MLAS SGEMM of the filter (C_out / group x taps rows, prepacked
# transposed) by the input (C_in / group x input pixels) into a column buffer of C_out / group x taps x input pixels,
# then math::Col2imPar (Col2imNdPar for 1-D and 3-D) scatter-adds every column element into the output it lands on
# after zeroing that output, then a bias pass over the output when there is a bias. Nothing skips the col2im: a
# 1x1 stride-1 ConvTranspose pays it too (core/util/math_cpu.cc: Col2im's fast path without padding or dilation
# adds a whole row at stride 1, element by element at other strides; with padding, element by element with bounds).
def col2im_elements(node: Node, macs: float, k_rows: int) -> float:
    """Elements of the column buffer ORT's CPU ConvTranspose scatters back into its output (see above): every group's
    C_out / group x kernel taps x input pixels = MACs x groups / input channels (the kernel's first dimension, `k_rows`,
    of a ConvTranspose's [C_in, C_out / group, k...] weight). 0 for other ops."""
    if node.op_type != "ConvTranspose" or k_rows <= 0:
        return 0.0
    return macs * int(node.attributes.get("group", 1) or 1) / k_rows


# MLAS's NCHWc float convolutions (onnxruntime core/mlas/lib/snchwc.cpp, MlasConvNchwcThreaded and its NCHW-input and
# depthwise twins) compute only the taps that land inside the input: an output row whose kernel rows fall in the
# padding runs with a shorter EffectiveKernelHeight, and the kernels' left / right padding columns test each tap
# against the row's bounds and skip its multiply-adds, still paying the test. A Conv with "same" padding and no
# dilation skips few taps (on 14 px maps 9% of a 3x3's), which calibration's cases hold within its rates; a dilated
# one (DeepLabV3's ASPP: rates 12 / 24 / 36 on a 33 px map at 520 px) skips most, and priced by all its taps came out
# several times its time. A column tap that is tested and skipped costs DILATED_SKIP_COST of a computed one: single-op
# 3x3 Convs of 128-512 channels on 7-33 px maps at dilations 2-24 (1 thread, thread CPU time, a Zen 4 at load 5-6,
# 2026-12-05, two sets) ran at 0.17-0.96x the undilated Conv's time, within a median 6-8% of this count at 0.4
# (11-21% at 0.25, 0 and 0.7 worse). Depthwise Convs run in the same time at any dilation: left out.
DILATED_SKIP_COST = 0.4


def _taps_inside(size: int, out: int, k: int, stride: int, dilation: int, pad: int) -> tuple[int, int]:
    """(taps inside the input, taps in the padding) over `out` positions of one spatial dimension."""
    inside = sum(1 for o in range(out) for t in range(k) if 0 <= o * stride - pad + t * dilation < size)
    return inside, out * k - inside


def dilated_tap_share(node: Node, kernel: Value | None, inp: Value | None, out: Value | None) -> float:
    """Work.dilated_taps: the share of a dilated NCHWc Conv's multiply-adds its kernel really runs, against the same
    Conv undilated with "same" padding whose taps calibration's rates are fitted on (see above): 1.0 for any other
    Conv, an unknown shape, or a Conv ORT did not block (its im2col copies every tap)."""
    dil = [int(x) for x in node.attributes.get("dilations") or []]
    grouped = int(node.attributes.get("group", 1) or 1) > 1  # depthwise: the same time at any dilation (memory-bound)
    if node.domain != "com.microsoft.nchwc" or node.op_type not in ("Conv", "FusedConv") or grouped or \
            not any(d > 1 for d in dil):
        return 1.0
    ks = [int(x) for x in node.attributes.get("kernel_shape") or []]
    if not ks and kernel is not None and kernel.shape and all(isinstance(x, int) for x in kernel.shape[2:]):
        ks = [int(x) for x in kernel.shape[2:]]  # kernel_shape is optional: the weight's spatial dims
    if inp is None or out is None or not inp.shape or not out.shape or len(ks) != len(dil):
        return 1.0
    sizes, outs = list(inp.shape[2:]), list(out.shape[2:])
    if len(sizes) != len(ks) or len(outs) != len(ks) or not all(isinstance(x, int) and x > 0 for x in sizes + outs):
        return 1.0
    strides = [int(x) for x in node.attributes.get("strides") or [1] * len(ks)]
    pads = [int(x) for x in node.attributes.get("pads") or [0] * len(ks)]
    run = ref = 1.0
    for axis, (size, o, k, s, d) in enumerate(zip(sizes, outs, ks, strides, dil)):
        inside, skipped = _taps_inside(size, o, k, s, d, pads[axis])
        same_in, same_skipped = _taps_inside(size, o, k, s, 1, (k - 1) // 2)
        last = axis == len(ks) - 1  # the innermost (width) axis tests its skipped taps; outer ones skip them whole
        run *= inside + (DILATED_SKIP_COST * skipped if last else 0.0)
        ref *= same_in + (DILATED_SKIP_COST * same_skipped if last else 0.0)
    return min(1.0, run / ref) if ref > 0 else 1.0


# MLAS's generic u8 depthwise kernel (MlasConvDepthwiseKernelAvx2, onnxruntime core/mlas/lib/intrinsics/avx2/
# qdwconv_avx2.cpp; static int8's path for channel counts off the symmetric kernel's 16: simulator/ort_int8.py
# ORT_INT8_DW_GENERIC) walks each output pixel's channels 16 at a time in 256-bit registers, then one block of 8 in
# 128-bit ones (the same instructions per tap as a block of 16), then the rest one channel at a time, tap by tap, in
# scalar code. So its time goes with those blocks, not with the channels: static int8 chains of 3x3 and 5x5 depthwise
# convs on a Zen 5 (thread CPU time, calibration's timing, 2026-12-06 13:22-13:24 UTC) took 96 us at 12 x 56 px (an
# 8-block and 4 scalar channels) against 73 at 18 (a 16-block and 2), 138 at 7 and at 14 (7 and 6 scalar); priced per
# channel and tap (one rate, a setup per conv and per pixel) the 24 shapes came out -36..+117%, counted in blocks of 16
# lanes and scalar channel-taps within -8..+11%.
DW_GENERIC_LANES = 16


def generic_depthwise_lanes(node: Node, kernel: Value | None, out_elements: float, plain_share: float
                            ) -> dict[str, float]:
    """Work.lane_macs and Work.scalar_taps of a depthwise Conv (one input channel per group) as MLAS's generic u8
    depthwise kernel runs it (above): the share of the compiled Conv's MACs that its vector blocks cover (whole blocks
    of 16 lanes, the block of 8 counted as one) and the scalar channels' taps per run (output pixels x taps x the
    channels past the last block of 8). The channels are the model's own: the compiled filter's rows x
    `plain_share` (an NCHWc filter is padded to whole blocks). Empty for other Convs."""
    if kernel is None or not kernel.shape or len(kernel.shape) < 3 or kernel.shape[1] != 1:
        return {}
    rows = kernel.shape[0]
    group = int(node.attributes.get("group", 1) or 1)
    if not isinstance(rows, int) or rows <= 1 or group <= 1:
        return {}
    channels = max(int(round(rows * plain_share)), 1)
    blocks, rest = divmod(channels, DW_GENERIC_LANES)
    half, scalar = divmod(rest, DW_GENERIC_LANES // 2)
    taps = math.prod(d if isinstance(d, int) else 1 for d in kernel.shape[2:])
    pixels = out_elements / channels  # the output's shape is the model's own (nchwc_output_padding)
    return {"lane_macs": (blocks + half) * DW_GENERIC_LANES / rows, "scalar_taps": pixels * taps * scalar}
