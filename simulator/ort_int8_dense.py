"""Static int8 on ONNX Runtime's x86 CPU EP: dense QLinearConvs on MLAS's symmetric kernel that run at figures of
their own by their shape (task facts for simulator/ort_int8.py): a one-pixel output map (`conv.int8px`) and a 1x1
unit-stride unpadded conv (`conv.int8pw`). The rest keep `conv.int8`.
"""

from __future__ import annotations

import dataclasses

from compiler.graph import Graph, Node
from simulator.costs import kernel_value
from simulator.kernel_path import Path

# A dense Conv whose output map is one pixel (a squeeze-excite's 1x1 convs on the pooled [1, C, 1, 1] map) under static
# int8: its QLinearConv's work is a GEMV of C_in x C_out MACs beside the kernel's fixed costs per call (ORT 1.32
# core/providers/cpu/quantization/qlinearconv.cc Compute: per-channel output scales, buffers, MLAS's GEMM set-up, the
# requantization pass), which calibration's conv cases (7-56 px maps) spread over many pixels. Chains of them on a Zen
# 4 (simulator/calibration_se.py, thread CPU time, 2026-12-06): 1.3 us each at 48 -> 8, 2.8 at 440 -> 110, 9.1 at
# 960 -> 240; the narrow ones (fewer than 16 outputs) would take the off-alignment GEMM path's figures otherwise. Own
# figures (`conv.int8px`: a MAC rate, a setup per task, one per output channel `.out`), fitted jointly on those chains.
ORT_INT8_ONE_PIXEL = "ort_int8_one_pixel"
ONE_PIXEL_TAG = "int8px"
# A dense 1x1 Conv of unit stride and no padding on a map of more than one pixel (the expand and project convs of
# inverted residual blocks) on MLAS's symmetric kernel: its QLinearConv reads the NHWC input in place as the GEMM's
# rows, where a 3x3 one walks an indirection buffer of 9 row pointers per output pixel (the kernel's taps). One rate and
# setup for both (`conv.int8`) fitted calibration's three 1x1 cases +4, +9 and +11% in-sample on a Zen 4 (session 63,
# 2026-12-07, CACHE_VERSION 101-103) with its 3x3 cases at 0%, and in the models, against each node's 5th percentile
# less the profiler's cost per event, the 1x1 QLinearConvs ran 1.07-1.10x faster than priced (MobileNetV2, MobileOne-S0,
# MNASNet; README Round 36). Own figures (`conv.int8pw`: a MAC rate and the setups the path pays), fitted jointly on
# 1x1 chains (simulator/calibration_bench.py `convact-*-1x1`); a 3x3 conv keeps `conv.int8`, fitted on the 3x3 ones.
ORT_INT8_POINTWISE = "ort_int8_pointwise"
POINTWISE_TAG = "int8pw"


def one_pixel_conv(nd: Node, g: Graph) -> bool:
    """A dense Conv / FusedConv whose output map is one pixel (ORT_INT8_ONE_PIXEL)."""
    if nd.op_type not in ("Conv", "FusedConv") or not nd.outputs or int(nd.attributes.get("group", 1) or 1) != 1:
        return False
    v = g.values.get(nd.outputs[0])
    if v is None or not v.is_static or not v.shape or len(v.shape) != 4:
        return False
    dims = [int(d) for d in v.shape]  # type: ignore[union-attr]
    return dims[2] * dims[3] == 1 and dims[1] > 1


def pointwise_conv(nd: Node, g: Graph) -> bool:
    """A dense Conv / FusedConv with a 1x1 kernel, unit strides and no padding (ORT_INT8_POINTWISE); the caller
    leaves out the one-pixel ones and those off the symmetric kernel's alignment."""
    if nd.op_type not in ("Conv", "FusedConv") or int(nd.attributes.get("group", 1) or 1) != 1:
        return False
    w = kernel_value(nd, g)
    if w is None or not w.shape or len(w.shape) != 4 or tuple(w.shape[2:]) != (1, 1):
        return False
    strides = list(nd.attributes.get("strides", None) or [1, 1])
    pads = list(nd.attributes.get("pads", None) or [0, 0, 0, 0])
    auto = str(nd.attributes.get("auto_pad", "NOTSET") or "NOTSET")
    return all(int(s) == 1 for s in strides) and not any(int(p) for p in pads) and auto in ("NOTSET", "VALID")


def dense_shape_path(p: Path, facts: frozenset[str]) -> Path:
    """`p` at the one-pixel or the pointwise figures where its task has that fact and runs the static int8 conv kernel
    (tag `int8`); else `p`."""
    if p.tag != "int8":
        return p
    if ORT_INT8_ONE_PIXEL in facts:
        return dataclasses.replace(p, tag=ONE_PIXEL_TAG, rate_kind="conv", out_cost=True, note="; ".join(
            [*([p.note] if p.note else []), "a one-pixel output map: QLinearConv's fixed costs per call"]))
    if ORT_INT8_POINTWISE in facts:
        return dataclasses.replace(p, tag=POINTWISE_TAG, rate_kind="conv", note="; ".join(
            [*([p.note] if p.note else []), "a 1x1 unit-stride conv: its input read in place (own figures)"]))
    return p
