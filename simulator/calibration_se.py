"""Calibration's one-pixel cases: chains of static int8 1x1 Convs on a [1, C, 1, 1] map, as squeeze-excite blocks and
timm's pooled classifier heads have them (simulator/ort_int8.py ORT_INT8_ONE_PIXEL: `conv.int8px`).

Each builder returns an ONNX graph's parts (nodes, inputs, outputs, initializers); calibration_bench saves them and
times them with its other cases. Short on purpose (~0.1 ms a run).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

Parts = tuple[list[Any], list[Any], list[Any], list[Any]]


def pixel_chain(c: int, m: int, r: int = 8) -> Parts:
    """`r` (even) 1x1 Convs + bias on a [1, c, 1, 1] map, c -> m + Relu and m -> c + Sigmoid in turn: a squeeze-excite
    block's reduce and expand convs with their activations (the Relu folds into QLinearConv's output range, the
    Sigmoid runs as a QLinearSigmoid beside it), without the pool and the gating Mul around them."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes, inits, x = [], [], "v0"
    for i in range(r):
        ci, co = (c, m) if i % 2 == 0 else (m, c)
        inits += [numpy_helper.from_array((rng.standard_normal((co, ci, 1, 1)) / np.sqrt(ci)).astype(np.float32),
                                          f"w{i}"),
                  numpy_helper.from_array((0.1 * rng.standard_normal(co)).astype(np.float32), f"b{i}")]
        nodes += [helper.make_node("Conv", [x, f"w{i}", f"b{i}"], [f"c{i}"], name=f"conv{i}"),
                  helper.make_node("Relu" if i % 2 == 0 else "Sigmoid", [f"c{i}"], [f"v{i + 1}"], name=f"act{i}")]
        x = f"v{i + 1}"
    return (nodes, [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [1, c, 1, 1])],
            [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, c, 1, 1])], inits)


# (name, kind, builder, variants) as calibration_bench.Case takes them.
SE_CASES: tuple[tuple[str, str, Callable[[], Parts], tuple[tuple[str, str], ...]], ...] = (
    # Squeeze-excite widths of RegNetY-400MF (48 -> 8, 440 -> 110), GhostNet (120 -> 32, 960 -> 240) and MixNet-S
    # (1536 -> 64): `conv.int8px`'s MAC rate, setup per task and cost per output channel (`.out`) fitted jointly. The
    # narrow reduce convs (8 outputs) are off MLAS's symmetric kernel's alignment (ort_int8.ORT_INT8_QGEMM_DENSE) and
    # take these figures all the same: on one pixel both paths are their fixed costs.
    *((f"pixel-{c}x{m}", "conv", (lambda a=(c, m): pixel_chain(*a)), (("int8-static", "conv.int8px"),))
      for c, m in ((48, 8), (120, 32), (440, 110), (960, 240), (1536, 64))),
)
