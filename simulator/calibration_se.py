"""Calibration's one-pixel cases: static int8 1x1 Convs on a [1, C, 1, 1] map, as squeeze-excite blocks and timm's
pooled classifier heads have them (simulator/ort_int8.py ORT_INT8_ONE_PIXEL: `conv.int8px`), timed inside squeeze-excite
blocks: the same convs cost more there than chained. Four blocks (pool, 1x1 conv + Relu, 1x1 conv, Sigmoid, gating Mul)
at RegNetY-400MF's / GhostNet's / MixNet-S's widths on an Emerald Rapids VM (benchmarks/int8_convs.py --only se,
2026-12-06 10:58 UTC, thread CPU time, load 1.1 per CPU): 0.110 ms at 208 -> 52 on 14 px and 0.129 ms at 440 -> 110
on 7 px against 0.071 and 0.082 priced with the chains' figures, ~10-12 us per block more; ORT's node medians put the
one-pixel convs at 4.5-15 us each there (1.3-2.7 priced) and the pools at 8-13 us (0.8-1.4). Fitted on the blocks, the
convs' figures carry what a block adds around its pool and gate (their own rules unchanged): what squeeze-excite blocks
cost in a model, where these convs occur.

Each builder returns an ONNX graph's parts (nodes, inputs, outputs, initializers); calibration_bench saves them and
times them with its other cases. Short on purpose (~0.1-0.3 ms a run).
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


def se_blocks(c: int, m: int, hw: int, r: int = 4) -> Parts:
    """`r` squeeze-excite blocks on [1, c, hw, hw]: GlobalAveragePool, 1x1 Conv c -> m + bias + Relu, 1x1 Conv m -> c +
    bias, Sigmoid, Mul by the block's input (torchvision's SqueezeExcitation), each block reading the one before."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes, inits, x = [], [], "v0"
    for i in range(r):
        for name, co, ci in ((f"r{i}", m, c), (f"e{i}", c, m)):
            inits += [numpy_helper.from_array((rng.standard_normal((co, ci, 1, 1)) / np.sqrt(ci)).astype(np.float32),
                                              f"{name}_w"),
                      numpy_helper.from_array((0.1 * rng.standard_normal(co)).astype(np.float32), f"{name}_b")]
        nodes += [helper.make_node("GlobalAveragePool", [x], [f"g{i}"], name=f"pool{i}"),
                  helper.make_node("Conv", [f"g{i}", f"r{i}_w", f"r{i}_b"], [f"c{i}"], name=f"reduce{i}"),
                  helper.make_node("Relu", [f"c{i}"], [f"a{i}"], name=f"relu{i}"),
                  helper.make_node("Conv", [f"a{i}", f"e{i}_w", f"e{i}_b"], [f"d{i}"], name=f"expand{i}"),
                  helper.make_node("Sigmoid", [f"d{i}"], [f"s{i}"], name=f"gate{i}"),
                  helper.make_node("Mul", [x, f"s{i}"], [f"v{i + 1}"], name=f"scale{i}")]
        x = f"v{i + 1}"
    return (nodes, [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [1, c, hw, hw])],
            [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, c, hw, hw])], inits)


# (name, kind, builder, variants) as calibration_bench.Case takes them.
SE_CASES: tuple[tuple[str, str, Callable[[], Parts], tuple[tuple[str, str], ...]], ...] = (
    # Squeeze-excite blocks of RegNetY-400MF (48 -> 12 on 56 px, 440 -> 110 on 7), EfficientNet-B0 / GhostNet (208 ->
    # 52 on 14), GhostNet (960 -> 240 on 7) and MixNet-S (1536 -> 80 on 7): `conv.int8px`'s MAC rate, setup per task
    # and cost per output channel (`.out`) fitted jointly. The narrow reduce convs (12 outputs) are off MLAS's
    # symmetric kernel's alignment (ort_int8.ORT_INT8_QGEMM_DENSE) and take these figures all the same: on one pixel
    # both paths are their fixed costs.
    *((f"se-{c}x{m}-{hw}", "conv", (lambda a=(c, m, hw): se_blocks(*a)), (("int8-static", "conv.int8px"),))
      for c, m, hw in ((48, 12, 56), (208, 52, 14), (440, 110, 7), (960, 240, 7), (1536, 80, 7))),
)
