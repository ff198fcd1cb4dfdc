"""Calibration's dynamic int8 Conv cases: image stems (3 input channels, stride 2) and the dense 3x3 convs of ResNet's
stages, as ORT runs them from `quantize_dynamic`'s file (DynamicQuantizeLinear + ConvInteger + Cast / Mul / Add +
activation). Each builder returns an ONNX graph's parts (nodes, inputs, outputs, initializers); calibration_bench
saves them and times them with its other cases.

Why these shapes. ConvInteger runs an im2col and MLAS's QGEMM with the weights as A and the im2col buffer as B
(onnxruntime core/providers/cpu/quantization/conv_integer.cc @009855cf); single-op files on a Zen 4 (thread CPU time,
medians, load 2.5 per CPU, 2026-12-04) spend 85-95% of a ConvInteger in the GEMM, whose rate is about the same from a
3x3 stem (27 MACs per output) to ResNet's 512x7 (4608): 45-82 MACs per ns. The calibration's former cases (chains on
8-32 px maps, 16-256 channels) are mostly fixed cost and fitted a rate that priced ResNet-18's 3x3 convs at 0.72-0.86x
their time and its 7x7 stem at 0.5x.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

Parts = tuple[list[Any], list[Any], list[Any], list[Any]]


def convs_own(ci: int, co: int, hw: int, k: int, stride: int, r: int) -> Parts:
    """`r` k x k Convs (ci -> co channels, `stride`) + bias + Relu side by side, each on an input of its own
    (ci x hw x hw), so each ConvInteger has its own DynamicQuantizeLinear as in a model."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    o = (hw + 2 * (k // 2) - k) // stride + 1
    nodes, ins, outs, inits = [], [], [], []
    for i in range(r):
        w = rng.standard_normal((co, ci, k, k)) / np.sqrt(ci * k * k)
        inits += [numpy_helper.from_array(w.astype(np.float32), f"w{i}"),
                  numpy_helper.from_array((0.1 * rng.standard_normal(co)).astype(np.float32), f"b{i}")]
        nodes += [helper.make_node("Conv", [f"x{i}", f"w{i}", f"b{i}"], [f"c{i}"], name=f"conv{i}",
                                   pads=[k // 2] * 4, strides=[stride, stride]),
                  helper.make_node("Relu", [f"c{i}"], [f"y{i}"], name=f"act{i}")]
        ins.append(helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, [1, ci, hw, hw]))
        outs.append(helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [1, co, o, o]))
    return nodes, ins, outs, inits


def wide_gemms(m: int, k: int, n: int, count: int) -> Parts:
    """`count` batch-1 MatMuls [1, m, k] x [k, n] side by side on one input, each with its own weight (a shared one
    lets ORT merge the quantized twins into one task)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32), f"w{i}")
             for i in range(count)]
    nodes = [helper.make_node("MatMul", ["x", f"w{i}"], [f"y{i}"], name=f"mm{i}") for i in range(count)]
    outs = [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [1, m, n]) for i in range(count)]
    return nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, m, k])], outs, inits


# The stems' own figures (simulator/ort_int8.py ORT_INT8DYN_STEM): rate, setup and im2col fitted jointly.
STEM_DYN = (("int8-dynamic", "stemgemm.int8dyn"),)
_DENSE_DYN = (("int8-dynamic", "int8dyn"),)
# (name, kind, builder, variants) as calibration_bench.Case takes them.
INT8DYN_CASES: tuple[tuple[str, str, Callable[[], Parts], tuple[tuple[str, str], ...]], ...] = (
    # Stems at 224 px as CNNs have them: MobileNetV3 / GhostNet / MixNet 3x16, MobileNetV2 / EfficientNet / MNASNet /
    # RegNet 3x32 3x3, ResNet 3x64 7x7. Four each, not one input shared by eight (the bench's fp32 stems): the file
    # then quantizes the image once, where the sweep charges each Conv its own quantization. Not ShuffleNet v2's 3x24:
    # the compiled graph holds its NCHWc kernel padded to 32 outputs, the MACs the sweep reads (fitted with it, the
    # stems came out at +32% for it, -26% for the 7x7 one).
    *((f"dynstem-3x{co}-224-{k}x{k}", "convsmall", (lambda a=(3, co, 224, k, 2, 4): convs_own(*a)), STEM_DYN)
      for co, k in ((16, 3), (32, 3), (64, 7))),
    # ResNet-18 / 34's stride-1 3x3 convs, one stage each (115.6M MACs per conv): the GEMM's own rate, and the weight
    # packing (once per 256 output pixels, roofline.QGEMM_STRIDE_N) from 9 packs of 37k weights (56 px) to 1 of 2.4M
    # (7 px).
    *((f"dynconv-{c}x{s}-3x3", "conv", (lambda a=(c, c, s, 3, 1, 2): convs_own(*a)), _DENSE_DYN)
      for c, s in ((64, 56), (128, 28), (256, 14), (512, 7))),
    # A wide classifier (a CRNN's 48 time steps into 8,192 classes, as ddddocr's recognizer has it: [48, 1024] x
    # [1024, 8210]) beside the bench's square chains of 128-512 (gemm.int8dyn fitted jointly): on a Zen 4 ORT ran
    # this shape at ~1.8x the rate those chains fitted (ddddocr's classifier 5.12 ms predicted, 2.80 profiled).
    ("dyngemm-48x512-n8192", "gemm", (lambda: wide_gemms(48, 512, 8192, 2)), _DENSE_DYN),
)
