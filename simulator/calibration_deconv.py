"""Calibration's ConvTranspose cases: ORT's CPU ConvTranspose as decoder heads and upsampling stages have it, for its
own figures (simulator.backends._ort_deconv: `deconv.fp32`, the SGEMM's rate; `.col2im` per column element; `.out` per
output element; `.spill` per output byte beyond the core's L2; a setup per task), fitted jointly
(calibration_fit.JOINT_FP32).

Shapes: 2x2 stride 2 (DBNet's heads, UNet's up-convolutions; column elements = output elements), 4x4 stride 2 pad 1
(FCN / DCGAN-style: 4 column elements per output) and 3x3 stride 2 pad 1 with output padding 1 (2.25 per output), a
1-output-channel head (a GEMM of 4 rows), and channel counts from 16 to 128 so the GEMM's MACs per column element (its
input channels) vary apart from the columns and the outputs; maps within the L2 and beyond it (DBNet's head at 736 x
736 writes 13 MB of columns and 13 MB of output: single ops at load ~9 took 1.4x the time per column element of the
same head at a quarter of the map). A few ms a run each.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

Parts = tuple[list[Any], list[Any], list[Any], list[Any]]


def deconv_side_by_side(ci: int, co: int, hw: int, k: int, pad: int, out_pad: int, r: int) -> Parts:
    """`r` ConvTransposes (ci -> co channels, k x k, stride 2, `pad`, `out_pad`, with a bias, as exporters write them)
    side by side on one [1, ci, hw, hw] input (a chain would double the map each time)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    o = (hw - 1) * 2 - 2 * pad + k + out_pad
    nodes, inits, outs = [], [], []
    for i in range(r):
        w = rng.standard_normal((ci, co, k, k)) / np.sqrt(ci * k * k)
        inits += [numpy_helper.from_array(w.astype(np.float32), f"w{i}"),
                  numpy_helper.from_array((0.1 * rng.standard_normal(co)).astype(np.float32), f"b{i}")]
        nodes.append(helper.make_node("ConvTranspose", ["v0", f"w{i}", f"b{i}"], [f"y{i}"], name=f"deconv{i}",
                                      kernel_shape=[k, k], strides=[2, 2], pads=[pad] * 4,
                                      **({"output_padding": [out_pad, out_pad]} if out_pad else {})))
        outs.append(helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [1, co, o, o]))
    return nodes, [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [1, ci, hw, hw])], outs, inits


_DECONV = (("fp32", "deconv.fp32"),)
# (name, kind, builder, variants) as calibration_bench.Case takes them: (ci, co, input size, kernel, pad, output
# padding, side by side).
DECONV_CASES: tuple[tuple[str, str, Callable[[], Parts], tuple[tuple[str, str], ...]], ...] = tuple(
    (f"deconv-{ci}x{co}-{hw}-{k}x{k}" + (f"-p{p}" if p else "") + (f"-op{op}" if op else ""), "conv",
     (lambda a=(ci, co, hw, k, p, op, r): deconv_side_by_side(*a)), _DECONV)
    for ci, co, hw, k, p, op, r in (
        (24, 24, 184, 2, 0, 0, 2),  # DBNet's head at 736 x 736 (its columns 13 MB, beyond the L2)
        (24, 24, 92, 2, 0, 0, 4),  # ... at a quarter of that
        (24, 1, 184, 2, 0, 0, 8),  # ... its last, to one channel, at its size
        (64, 32, 56, 2, 0, 0, 4),  # UNet-like up-convolutions
        (64, 32, 112, 2, 0, 0, 2),
        (128, 64, 28, 2, 0, 0, 4),
        (32, 16, 48, 4, 1, 0, 4),  # 4x4 stride 2 pad 1
        (32, 16, 128, 4, 1, 0, 2),
        (16, 1, 128, 4, 1, 0, 8),
        (64, 32, 32, 3, 1, 1, 4),  # 3x3 stride 2 pad 1, output padding 1
    ))
