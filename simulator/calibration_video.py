"""Calibration's video cases: 3-D Convs (`conv3d`, costs.kind_of) and Transposes ORT walks element by element beyond
the core's cache (`walk`, transposes.far_walk), as video models have them (torchvision's R3D / MC3 / R(2+1)D, MViT-v2).

Each builder returns an ONNX graph's parts (nodes, inputs, outputs, initializers); calibration_bench saves them and
times them with its other cases. Short on purpose (a few ms a run): they add ~5 s to a calibration.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

Parts = tuple[list[Any], list[Any], list[Any], list[Any]]


def conv3d_side_by_side(ci: int, co: int, t: int, hw: int, k: tuple[int, int, int], stride: tuple[int, int, int],
                        r: int) -> Parts:
    """`r` 3-D Convs (ci -> co channels, kernel k, `stride`, padded to keep the size at stride 1) + bias + Relu side by
    side on one [1, ci, t, hw, hw] input: ORT fuses each into a FusedConv it leaves in NCHW (MLAS's vol2col + SGEMM).
    Side by side, not chained, so stems (3 channels) and strided convs are cases too."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    out = [(d + 2 * (x // 2) - x) // s + 1 for d, x, s in zip((t, hw, hw), k, stride)]
    nodes, inits, outs = [], [], []
    for i in range(r):
        w = rng.standard_normal((co, ci, *k)) / np.sqrt(ci * np.prod(k))
        inits += [numpy_helper.from_array(w.astype(np.float32), f"w{i}"),
                  numpy_helper.from_array((0.1 * rng.standard_normal(co)).astype(np.float32), f"b{i}")]
        nodes += [helper.make_node("Conv", ["v0", f"w{i}", f"b{i}"], [f"c{i}"], name=f"conv{i}",
                                   pads=[x // 2 for x in k] * 2, strides=list(stride)),
                  helper.make_node("Relu", [f"c{i}"], [f"y{i}"], name=f"act{i}")]
        outs.append(helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [1, co, *out]))
    return nodes, [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [1, ci, t, hw, hw])], outs, inits


def transposes_side_by_side(shape: list[int], perm: list[int], r: int) -> Parts:
    """`r` Transposes of one input by `perm` (ORT's transpose optimizer would cancel a chain of them)."""
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Transpose", ["v0"], [f"y{i}"], name=f"tr{i}", perm=perm) for i in range(r)]
    outs = [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [shape[p] for p in perm]) for i in range(r)]
    return nodes, [helper.make_tensor_value_info("v0", TensorProto.FLOAT, shape)], outs, []


_NCHW = (("fp32", "nchw"),)
_WALK = (("fp32", "walk.fp32"),)
# (name, kind, builder, variants) as calibration_bench.Case takes them.
VIDEO_CASES: tuple[tuple[str, str, Callable[[], Parts], tuple[tuple[str, str], ...]], ...] = (
    # 3x3x3 convs at R3D-18's channel counts on smaller clips, a stem (3 channels, 3x7x7 at stride (1, 2, 2)), a
    # stride-2 one and a 1x1x1 stride-2 shortcut: MACs, vol2col elements and the fixed cost per task apart
    # (`conv3d.nchw`, its `.im2col` and setup fitted jointly). Fitted on 2-D grouped convs (`gconvnchw.nchw`, the
    # figures 3-D convs took before), single-op 3-D convs were predicted at 0.76-1.0x their time on a Zen 4 (thread
    # CPU time, load ~7, 2026-12-04), the stems and strided ones lowest.
    *((f"conv3d-{ci}x{co}-{t}x{hw}-{'x'.join(map(str, k))}-s{s[-1]}", "conv3d",
       (lambda a=(ci, co, t, hw, k, s, r): conv3d_side_by_side(*a)), _NCHW)
      for ci, co, t, hw, k, s, r in (
          (64, 64, 8, 28, (3, 3, 3), (1, 1, 1), 1), (128, 128, 4, 14, (3, 3, 3), (1, 1, 1), 1),
          (256, 256, 2, 14, (3, 3, 3), (1, 1, 1), 1), (512, 512, 2, 7, (3, 3, 3), (1, 1, 1), 1),
          (3, 64, 8, 56, (3, 7, 7), (1, 2, 2), 1), (64, 128, 8, 28, (3, 3, 3), (2, 2, 2), 1),
          (64, 128, 8, 28, (1, 1, 1), (2, 2, 2), 4))),
    # Walks (transposes.walks) within the cache and beyond it (transposes.far_walk): MViT-v2-S's attention-map
    # transposes ([1, heads, queries, keys] by [3, 1, 2, 0], 9.9M elements at 25088 x 393: 74 ms each measured, 33
    # predicted at the in-cache rate) and a 5-D one; `walk.fp32` with its setup and `.far` fitted jointly.
    ("walk-256x256", "walk", lambda: transposes_side_by_side([1, 1, 256, 256], [3, 1, 2, 0], 4), _WALK),
    ("walk-far-4096x393", "walk", lambda: transposes_side_by_side([1, 1, 4096, 393], [3, 1, 2, 0], 1), _WALK),
    ("walk-far-4x56x56x96", "walk", lambda: transposes_side_by_side([1, 4, 56, 56, 96], [0, 4, 1, 3, 2], 1), _WALK),
)
