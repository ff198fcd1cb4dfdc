"""Calibration's layout cases beyond the core's L2: transformer MLP blocks as PVT-v2 has them (a Linear, its tokens
transposed to a map, a depthwise 3x3 Conv between NCHWc reorders, transposed back, GELU, a Linear), whose blocked
Transposes and reorders of 1.6-3.2 MB maps read or write across lines (transposes.strided_move) and pay
`layout.fp32.far` per output byte beyond the L2, fitted with the layout rate on the mixed graphs
(calibration_fit._fit_layout). The other mixed graphs' Splits and Concats stream, and kept that cost at 0.

A builder returns an ONNX graph's parts (nodes, inputs, outputs, initializers), as calibration_video's do.
"""

from __future__ import annotations

from typing import Any

import numpy as np

Parts = tuple[list[Any], list[Any], list[Any], list[Any]]


def mlp_blocks(c: int, size: int, hidden: int, blocks: int) -> Parts:
    """`blocks` residual MLP blocks on [1, size * size, c] tokens: Linear c -> hidden, Transpose to [1, hidden, size,
    size], depthwise 3x3 Conv, back to tokens, GELU (erf form), Linear hidden -> c, + the block's input."""
    from onnx import TensorProto, helper, numpy_helper

    rng, n = np.random.default_rng(0), size * size
    inits = [numpy_helper.from_array(np.array([1, hidden, size, size], np.int64), "map"),
             numpy_helper.from_array(np.array([1, hidden, n], np.int64), "tokens"),
             *(numpy_helper.from_array(np.array(v, np.float32), k) for k, v in (("sqrt2", np.sqrt(2)), ("one", 1.0),
                                                                                ("half", 0.5)))]
    nodes: list[Any] = []
    x = "x"
    for b in range(blocks):
        w1 = (rng.standard_normal((c, hidden)) / np.sqrt(c)).astype(np.float32)
        inits += [numpy_helper.from_array(w1, f"w1_{b}"),
                  numpy_helper.from_array(np.zeros(hidden, np.float32), f"b1_{b}"),
                  numpy_helper.from_array((rng.standard_normal((hidden, 1, 3, 3)) / 3).astype(np.float32), f"wd_{b}"),
                  numpy_helper.from_array((rng.standard_normal((hidden, c)) / np.sqrt(hidden)).astype(np.float32),
                                          f"w2_{b}")]
        nodes += [helper.make_node("MatMul", [x, f"w1_{b}"], [f"h_{b}"]),
                  helper.make_node("Add", [f"h_{b}", f"b1_{b}"], [f"hb_{b}"]),
                  helper.make_node("Transpose", [f"hb_{b}"], [f"t_{b}"], perm=[0, 2, 1]),
                  helper.make_node("Reshape", [f"t_{b}", "map"], [f"m_{b}"]),
                  helper.make_node("Conv", [f"m_{b}", f"wd_{b}"], [f"d_{b}"], group=hidden, pads=[1] * 4),
                  helper.make_node("Reshape", [f"d_{b}", "tokens"], [f"r_{b}"]),
                  helper.make_node("Transpose", [f"r_{b}"], [f"u_{b}"], perm=[0, 2, 1]),
                  # GELU as exporters write it (ORT fuses the five into one Gelu)
                  helper.make_node("Div", [f"u_{b}", "sqrt2"], [f"e0_{b}"]),
                  helper.make_node("Erf", [f"e0_{b}"], [f"e1_{b}"]),
                  helper.make_node("Add", [f"e1_{b}", "one"], [f"e2_{b}"]),
                  helper.make_node("Mul", [f"u_{b}", f"e2_{b}"], [f"e3_{b}"]),
                  helper.make_node("Mul", [f"e3_{b}", "half"], [f"g_{b}"]),
                  helper.make_node("MatMul", [f"g_{b}", f"w2_{b}"], [f"o_{b}"]),
                  helper.make_node("Add", [f"o_{b}", x], [f"y_{b}"])]
        x = f"y_{b}"
    return (nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n, c])],
            [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, n, c])], inits)


# (name, builder): PVT-v2-B0's stage-1 MLP (32 -> 256 channels at 56 px: 3.2 MB maps) and stage-2 one (64 -> 512 at
# 28 px: 1.6 MB), two blocks each, as a stage runs them.
LAYOUT_CASES = (
    ("mixed-mlp-32x56-h256", lambda: mlp_blocks(32, 56, 256, 2)),
    ("mixed-mlp-64x28-h512", lambda: mlp_blocks(64, 28, 512, 2)),
)
