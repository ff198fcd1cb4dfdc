"""Calibration's models, built in code: chains of R identical ops (so the per-inference fixed cost and the layout
changes at the ends are amortised), blocks that move data, the weight-reuse runs, and how a model is compiled as
`ort-cpu/host` runs it. calibration_bench.py says which of them are timed and what each fits.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from compiler.graph import Graph
from simulator.profiles import HardwareProfile

R = 8  # ops per chain


def save_model(nodes: list[Any], inputs: list[Any], outputs: list[Any], inits: list[Any], path: Path) -> Path:
    import onnx
    from onnx import helper

    g = helper.make_graph(nodes, path.stem, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 9
    onnx.save(m, os.fspath(path))
    return path


def op_chain(op: str, shape: list[int], path: Path, r: int = R, attrs: dict[str, Any] | None = None,
           weight: Callable[[int], Any] | None = None, binary_self: bool = False, shared_weights: int = 0) -> Path:
    """`r` ops in a chain; `weight(i)`: each op's second input, or with `shared_weights` that many initializers
    read in turn (op i reads weight i % shared_weights)."""
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits = [], []
    for i in range(r):
        ins = [f"v{i}"]
        if weight is not None:
            name = f"w{i % shared_weights}" if shared_weights else f"w{i}"
            if not shared_weights or i < shared_weights:
                inits.append(numpy_helper.from_array(weight(i), name))
            ins.append(name)
        elif binary_self:
            # x_{i+1} = x_i (op) x_0: a fixed second operand keeps values bounded for the quantizer.
            ins.append("v0")
        nodes.append(helper.make_node(op, ins, [f"v{i + 1}"], name=f"{op}_{i}", **(attrs or {})))
    return save_model(nodes, [helper.make_tensor_value_info("v0", TensorProto.FLOAT, shape)],
                 [helper.make_tensor_value_info(f"v{r}", TensorProto.FLOAT, shape)], inits, path)


def cast_chain(elements: int, path: Path, r: int = R) -> Path:
    """Casts fp32 -> fp16 -> fp32 ... (r of them, r even): the conversions an fp16 export keeps at run time between
    ORT's fp32 kernels and its fp16 ones (simulator.ort_fp16), timed as such (roofline.conversion_constants). A
    Reshape (a view) between two Casts: ORT removes a Cast round trip (8 Casts in a row compiled to 2)."""
    from onnx import TensorProto, helper, numpy_helper

    shapes = [np.array([1, elements], np.int64), np.array([elements // 64, 64], np.int64)]
    nodes = []
    for i in range(r):
        nodes.append(helper.make_node("Cast", [f"v{i}"], [f"c{i}"], name=f"Cast_{i}",
                                      to=TensorProto.FLOAT16 if i % 2 == 0 else TensorProto.FLOAT))
        nodes.append(helper.make_node("Reshape", [f"c{i}", f"s{(i + 1) % 2}"], [f"v{i + 1}"], name=f"Reshape_{i}"))
    return save_model(nodes, [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [1, elements])],
                      [helper.make_tensor_value_info(f"v{r}", TensorProto.FLOAT, [1, elements])],
                      [numpy_helper.from_array(s, f"s{k}") for k, s in enumerate(shapes)], path)


def rng_weights(shape: list[int]) -> Callable[[int], Any]:
    rng = np.random.default_rng(0)
    return lambda i: (rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32)


def layernorm_chain(shape: list[int], path: Path) -> Path:
    from onnx import TensorProto, helper, numpy_helper

    c = shape[-1]
    inits = [numpy_helper.from_array(np.ones(c, np.float32), "g"), numpy_helper.from_array(np.zeros(c, np.float32), "b")]
    nodes = [helper.make_node("LayerNormalization", [f"v{i}", "g", "b"], [f"v{i + 1}"], axis=-1, name=f"LN_{i}")
             for i in range(R)]
    return save_model(nodes, [helper.make_tensor_value_info("v0", TensorProto.FLOAT, shape)],
                 [helper.make_tensor_value_info(f"v{R}", TensorProto.FLOAT, shape)], inits, path)


def mixed_blocks(c: int, size: int, path: Path, blocks: int = 12) -> Path:
    """Conv -> Sigmoid -> Mul -> Transpose -> Add blocks: ORT turns them into NCHWc convs with fused
    activations, reorders and transposes, the data-movement tasks real CNN and transformer graphs have."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes, inits, x = [], [], "v0"
    for i in range(blocks):
        inits += [numpy_helper.from_array((rng.standard_normal((c, c, 1, 1)) / np.sqrt(c)).astype(np.float32), f"w{i}"),
                  numpy_helper.from_array(rng.standard_normal((1, c, 1, 1)).astype(np.float32), f"b{i}")]
        nodes += [helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"], name=f"conv{i}"),
                  helper.make_node("Sigmoid", [f"c{i}"], [f"s{i}"], name=f"sig{i}"),
                  helper.make_node("Mul", [f"s{i}", f"b{i}"], [f"m{i}"], name=f"mul{i}"),
                  helper.make_node("Transpose", [f"m{i}"], [f"t{i}"], perm=[0, 1, 3, 2], name=f"tr{i}"),
                  helper.make_node("Add", [f"t{i}", x], [f"a{i}"], name=f"add{i}")]
        x = f"a{i}"
    return save_model(nodes, [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [1, c, size, size])],
                 [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, c, size, size])], inits, path)


def mixed_split_blocks(c: int, mid: int, groups: int, size: int, path: Path, blocks: int = 4) -> Path:
    """MixNet-shaped blocks: a 1x1 Conv widens `c` channels to `mid`, a channel Split feeds `groups` depthwise 3x3
    Convs, a Concat joins them and a 1x1 Conv narrows back. ORT keeps the Split and Concat in NCHW with a reorder
    around each group's NCHWc conv: layout tasks whose tensors outgrow the core's L2 at 56 px (1.8 MB each)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = lambda shape: (rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32)  # noqa: E731
    g = mid // groups
    inits = [numpy_helper.from_array(np.array([g] * groups, np.int64), "split")]
    nodes, x = [], "v0"
    for i in range(blocks):
        inits += [numpy_helper.from_array(w([mid, c, 1, 1]), f"wa{i}"), numpy_helper.from_array(w([c, mid, 1, 1]), f"wb{i}")]
        parts = [f"s{i}_{j}" for j in range(groups)]
        nodes += [helper.make_node("Conv", [x, f"wa{i}"], [f"a{i}"], name=f"expand{i}"),
                  helper.make_node("Relu", [f"a{i}"], [f"r{i}"], name=f"relu{i}"),
                  helper.make_node("Split", [f"r{i}", "split"], parts, axis=1, name=f"split{i}")]
        for j, part in enumerate(parts):
            inits.append(numpy_helper.from_array(w([g, 1, 3, 3]), f"wd{i}_{j}"))
            nodes.append(helper.make_node("Conv", [part, f"wd{i}_{j}"], [f"d{i}_{j}"], name=f"dw{i}_{j}", group=g,
                                          pads=[1, 1, 1, 1]))
        nodes += [helper.make_node("Concat", [f"d{i}_{j}" for j in range(groups)], [f"m{i}"], axis=1, name=f"cat{i}"),
                  helper.make_node("Conv", [f"m{i}", f"wb{i}"], [f"v{i + 1}"], name=f"project{i}")]
        x = f"v{i + 1}"
    return save_model(nodes, [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [1, c, size, size])],
                 [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, c, size, size])], inits, path)


def skip_layernorm_chain(shape: list[int], path: Path) -> Path:
    """x_{i+1} = LayerNorm(x_i + x_0): ORT fuses each Add + LayerNormalization into SkipLayerNormalization,
    as it does for every post-norm transformer's residual."""
    from onnx import TensorProto, helper, numpy_helper

    c = shape[-1]
    inits = [numpy_helper.from_array(np.ones(c, np.float32), "g"), numpy_helper.from_array(np.zeros(c, np.float32), "b")]
    nodes = []
    for i in range(R):
        nodes += [helper.make_node("Add", [f"v{i}", "v0"], [f"a{i}"], name=f"add_{i}"),
                  helper.make_node("LayerNormalization", [f"a{i}", "g", "b"], [f"v{i + 1}"], axis=-1, name=f"LN_{i}")]
    return save_model(nodes, [helper.make_tensor_value_info("v0", TensorProto.FLOAT, shape)],
                 [helper.make_tensor_value_info(f"v{R}", TensorProto.FLOAT, shape)], inits, path)


def conv_chain(c: int, hw: int, k: int, group: int = 1) -> Callable[[Path], Path]:
    return lambda p: op_chain("Conv", [1, c, hw, hw], p, attrs={"pads": [k // 2] * 4, "group": group},
                            weight=rng_weights([c, c // group, k, k]))


def stem_act(co: int, hw: int, k: int, stride: int = 2, shared_bias: bool = False) -> Callable[[Path], Path]:
    """A CNN's first conv, R times side by side on one image: 3 input channels, `co` outputs, a k x k kernel at
    stride 2 over an hw x hw image, + bias + Relu. The few-channel cases below (8 channels on 24-48 px maps) are all
    fixed cost, so the convsmall paths' rates were fitted on nothing (convsmall.int8dyn came out at the 3.0 bound);
    a stem has the MACs (ResNet's 7x7: 118M). Measured before these cases (CPU time, 4 stems per file, load ~10,
    2026-12-03): 3x32 3x3 at 224 under int8-dynamic 0.43 ms per stem, predicted 0.30; 3x64 7x7 2.49 ms, predicted
    0.81. Under int8-static each stem here ends in its own DequantizeLinear (a graph output; the totals rule charges
    it); QLinearConv's stem time (0.37-0.87 ms at 3x3 for 16-64 outputs, 1.6 ms at 7x7) was not fitted by a rate,
    setup and im2col per element within 30%: it runs the per-group GEMM path of grouped convs (3 input channels),
    costed per GEMM row and im2col copy (simulator/ort_int8.py), and is fitted with them. `shared_bias`: every stem
    reads one bias (conv_act's), as a CNN's BatchNorm-folded zero bias is shared, which fp16 keeps behind a Cast."""
    def build(path: Path) -> Path:
        from onnx import TensorProto, helper, numpy_helper

        rng = np.random.default_rng(0)
        w = rng_weights([co, 3, k, k])
        o = (hw + 2 * (k // 2) - k) // stride + 1
        inits, nodes, outs = [], [], []
        for i in range(R):
            inits.append(numpy_helper.from_array(w(i), f"w{i}"))
            if not shared_bias or i == 0:
                inits.append(numpy_helper.from_array((0.1 * rng.standard_normal(co)).astype(np.float32), f"b{i}"))
            nodes += [helper.make_node("Conv", ["v0", f"w{i}", "b0" if shared_bias else f"b{i}"], [f"c{i}"],
                                       name=f"conv{i}", pads=[k // 2] * 4, strides=[stride, stride]),
                      helper.make_node("Relu", [f"c{i}"], [f"y{i}"], name=f"act{i}")]
            outs.append(helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [1, co, o, o]))
        return save_model(nodes, [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [1, 3, hw, hw])], outs, inits,
                     path)
    return build


def dw_strided(c: int, hw: int, k: int) -> Callable[[Path], Path]:
    """R depthwise k x k Convs at stride 2 side by side on one c x hw x hw input (a chain would halve the map each
    time), each reading one shared bias (so fp16 keeps them NCHW, as conv_act's shared cases) + Relu: the stride-2
    depthwise convs that open MobileNet / EfficientNet / MNASNet stages."""
    def build(path: Path) -> Path:
        from onnx import TensorProto, helper, numpy_helper

        w = rng_weights([c, 1, k, k])
        o = (hw + 2 * (k // 2) - k) // 2 + 1
        inits = [numpy_helper.from_array((0.1 * np.random.default_rng(0).standard_normal(c)).astype(np.float32), "b")]
        nodes, outs = [], []
        for i in range(R):
            inits.append(numpy_helper.from_array(w(i), f"w{i}"))
            nodes += [helper.make_node("Conv", ["v0", f"w{i}", "b"], [f"c{i}"], name=f"conv{i}", pads=[k // 2] * 4,
                                       group=c, strides=[2, 2]),
                      helper.make_node("Relu", [f"c{i}"], [f"y{i}"], name=f"act{i}")]
            outs.append(helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [1, c, o, o]))
        return save_model(nodes, [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [1, c, hw, hw])], outs, inits,
                     path)
    return build


def strided_own(ci: int, co: int, hw: int, k: int, group: int = 1, r: int = 4) -> Callable[[Path], Path]:
    """`r` k x k Convs at stride 2 (ci -> co channels, `group` groups) + bias + Relu, each on an input of its own
    (ci x hw x hw): quantize_dynamic quantizes each input once, so every ConvInteger has its own DynamicQuantizeLinear,
    as in a model (side by side on one input, as dw_strided, they would share one). Four, not R: eight 96x112x112
    fp32 inputs would outgrow the last-level cache, where a model's stage-opening conv reads a map just written."""
    def build(path: Path) -> Path:
        from onnx import TensorProto, helper, numpy_helper

        rng = np.random.default_rng(0)
        w = rng_weights([co, ci // group, k, k])
        o = (hw + 2 * (k // 2) - k) // 2 + 1
        inits, nodes, ins, outs = [], [], [], []
        for i in range(r):
            inits += [numpy_helper.from_array(w(i), f"w{i}"),
                      numpy_helper.from_array((0.1 * rng.standard_normal(co)).astype(np.float32), f"b{i}")]
            nodes += [helper.make_node("Conv", [f"x{i}", f"w{i}", f"b{i}"], [f"c{i}"], name=f"conv{i}",
                                       pads=[k // 2] * 4, group=group, strides=[2, 2]),
                      helper.make_node("Relu", [f"c{i}"], [f"y{i}"], name=f"act{i}")]
            ins.append(helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, [1, ci, hw, hw]))
            outs.append(helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [1, co, o, o]))
        return save_model(nodes, ins, outs, inits, path)
    return build


def conv_act(c: int, hw: int, k: int, group: int = 1, shared_bias: bool = False) -> Callable[[Path], Path]:
    """Conv + bias + activation blocks as CNNs have them (Relu and Clip 0..6 alternating): what the quantizers and the
    fp16 converter rewrite, so the fitted paths include the kernels they add (Casts, DynamicQuantizeLinear, scale Mul /
    bias Add) and the fusions they lose. `shared_bias`: every Conv reads one bias tensor (as deduplicated BatchNorm-
    folded biases are), which fp16 keeps behind a run-time Cast, so ORT leaves the Convs in NCHW (fp16_shared_casts)."""
    def build(path: Path) -> Path:
        from onnx import TensorProto, helper, numpy_helper

        rng = np.random.default_rng(0)
        w = rng_weights([c, c // group, k, k])
        inits = [numpy_helper.from_array(np.array(0.0, np.float32), "lo"),
                 numpy_helper.from_array(np.array(6.0, np.float32), "hi")]
        nodes = []
        for i in range(R):
            inits.append(numpy_helper.from_array(w(i), f"w{i}"))
            if not shared_bias or i == 0:
                inits.append(numpy_helper.from_array((0.1 * rng.standard_normal(c)).astype(np.float32), f"b{i}"))
            b = "b0" if shared_bias else f"b{i}"
            nodes.append(helper.make_node("Conv", [f"v{i}", f"w{i}", b], [f"c{i}"], name=f"conv{i}",
                                          pads=[k // 2] * 4, group=group))
            nodes.append(helper.make_node("Relu", [f"c{i}"], [f"v{i + 1}"], name=f"act{i}") if i % 2 == 0 else
                         helper.make_node("Clip", [f"c{i}", "lo", "hi"], [f"v{i + 1}"], name=f"act{i}"))
        return save_model(nodes, [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [1, c, hw, hw])],
                     [helper.make_tensor_value_info(f"v{R}", TensorProto.FLOAT, [1, c, hw, hw])], inits, path)
    return build


def matmul_chain(m: int, k: int) -> Callable[[Path], Path]:
    return lambda p: op_chain("MatMul", [m, k], p, weight=rng_weights([k, k]))


def shared_matmul_chain(m: int, k: int, weights: int = 2) -> Callable[[Path], Path]:
    """R MatMuls reading `weights` [k, k] weights in turn, as TorchScript writes layers cloned from one (equal
    initializers deduplicated; each weight read again after the others evicted it): under fp16 ORT keeps each
    weight's Cast at run time (simulator.ort_fp16.fp16_shared_casts)."""
    return lambda p: op_chain("MatMul", [m, k], p, weight=rng_weights([k, k]), shared_weights=weights)


def activation_chain(form: str, n: int, path: Path) -> Path:
    """R activations on [1, n] written as exporters write them, which ORT fuses into one kernel each: `swish`
    (x * Sigmoid(x): QuickGelu, EfficientNet's SiLU), `gelu` (x * 0.5 * (1 + Erf(x / sqrt 2)): Gelu, a ViT's)."""
    from onnx import TensorProto, helper, numpy_helper

    consts = {"sqrt2": 2 ** 0.5, "one": 1.0, "half": 0.5}
    inits = [numpy_helper.from_array(np.array(v, np.float32), k) for k, v in consts.items()] if form == "gelu" else []
    nodes = []
    for i in range(R):
        x, y = f"v{i}", f"v{i + 1}"
        if form == "swish":
            nodes += [helper.make_node("Sigmoid", [x], [f"s{i}"]), helper.make_node("Mul", [x, f"s{i}"], [y])]
        else:
            nodes += [helper.make_node("Div", [x, "sqrt2"], [f"d{i}"]), helper.make_node("Erf", [f"d{i}"], [f"e{i}"]),
                      helper.make_node("Add", [f"e{i}", "one"], [f"a{i}"]),
                      helper.make_node("Mul", [x, f"a{i}"], [f"m{i}"]), helper.make_node("Mul", [f"m{i}", "half"], [y])]
    return save_model(nodes, [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [1, n])],
                 [helper.make_tensor_value_info(f"v{R}", TensorProto.FLOAT, [1, n])], inits, path)


def side_by_side(op: str, shape: list[int], out: list[int], path: Path, consts: tuple[Any, ...] = (), **attrs: Any
                  ) -> Path:
    """R `op`s of one input side by side (ORT cancels a chain of transposes); `consts`: other inputs (None: empty)."""
    from onnx import TensorProto, helper, numpy_helper

    names = ["v0"] + [f"c{j}" if c is not None else "" for j, c in enumerate(consts)]
    nodes = [helper.make_node(op, names, [f"y{i}"], name=f"{op}_{i}", **attrs) for i in range(R)]
    return save_model(nodes, [helper.make_tensor_value_info("v0", TensorProto.FLOAT, shape)],
                 [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, out) for i in range(R)],
                 [numpy_helper.from_array(c, f"c{j}") for j, c in enumerate(consts) if c is not None], path)


# Run lengths of the reuse cases: ~0.1 ms of arithmetic per conv at a nominal peak. Spaced by 3x (2, 8, 24, 72) they left
# the ramp unpinned between 3 and 8 ms, where mobile CNNs' runs fall: a Sapphire Rapids-class Xeon (2026-12-05, 16:41
# UTC, load 3, /work/wt/h45host-data/reuse_probe.py) read 0.04 / 0.15 / 0.24 / 0.36 / 1.00 / 1.00 evicted after
# 1.0 / 2.8 / 4.2 / 5.6 / 8.3 / 12.5 ms; fitted on the four cases alone the ramp ran from 2.4 to 5.8 ms (0.94 at
# 5.6 ms) and priced MobileNetV2, MNASNet and EfficientNet-B0 14-19% over their CPU time; with 36 and 48 convs
# (4.2, 5.6 ms) among them, about 2.2 to 7-8 ms (two refits of b1's timings: 2.2 -> 7.0 and 2.2 -> 7.7 ms).
REUSE_CONVS = (2, 8, 24, 36, 48, 72)
SPILL_CONVS = (1, 2, 4, 8)  # ... of those whose own traffic goes beyond the L2 (3.2 MB or more per conv, ~0.1 ms)


def reuse_model(k: int, convs: int, path: Path, spill: bool = False) -> Path:
    """R batch-1 k x k MatMuls (their weights read once per run), then `convs` 3x3 Convs of 64 channels on a 16x16
    map sharing one weight (a 150 KB footprint that stays in L2): the convs set how long the run is before the
    MatMuls read their weights again; k = 0 leaves the MatMuls out (the run without them). `spill`: depthwise 3x3
    Convs on 32x112x112 maps instead, as short a run whose own traffic beyond the L2 evicts weights from the L3."""
    from onnx import TensorProto, helper, numpy_helper

    w, (c, size, group) = rng_weights([k, k]), ((32, 112, 32) if spill else (64, 16, 1))
    inits = [numpy_helper.from_array(rng_weights([c, c // group, 3, 3])(0), "cw")]
    nodes, ins, outs = [], [helper.make_tensor_value_info("c0", TensorProto.FLOAT, [1, c, size, size])], []
    if k:
        ins.append(helper.make_tensor_value_info("v0", TensorProto.FLOAT, [1, k]))
        outs.append(helper.make_tensor_value_info(f"v{R}", TensorProto.FLOAT, [1, k]))
        for i in range(R):
            inits.append(numpy_helper.from_array(w(i), f"w{i}"))
            nodes.append(helper.make_node("MatMul", [f"v{i}", f"w{i}"], [f"v{i + 1}"], name=f"mm{i}"))
    for i in range(convs):
        nodes.append(helper.make_node("Conv", [f"c{i}", "cw"], [f"c{i + 1}"], name=f"c{i}", pads=[1] * 4, group=group))
    outs.append(helper.make_tensor_value_info(f"c{convs}", TensorProto.FLOAT, [1, c, size, size]))
    return save_model(nodes, ins, outs, inits, path)


# An ONNX graph's parts as a case builder returns them: nodes, inputs, outputs, initializers (save_model's arguments).
Parts = tuple[list[Any], list[Any], list[Any], list[Any]]


def pair_slope_fit(names: Sequence[str], graphs: dict[str, Graph], measured_ms: dict[str, float], hw: HardwareProfile,
                   predict_ms: Callable[[Graph, HardwareProfile], float], key: str, unit: float
                   ) -> tuple[float, list[str]]:
    """One figure `key` (a `kind_overhead_s` entry, >= 0) from cases timed with their `-ref` twins (add_case): each
    case's time less its twin's (`measured_ms`, without the per-run cost) less what the profile prices that difference
    at with the figure at 0, over what the figure adds to the case per unit of it (read over a step of `unit`): least
    squares through 0 over the cases. Returns the figure and the cases that had both timings."""
    pairs = [n for n in names if n in measured_ms and f"{n}-ref" in measured_ms]
    zero = hw.with_overrides({"units": {"cpu": {"kind_overhead_s": {key: 0.0}}}})
    step = zero.with_overrides({"units": {"cpu": {"kind_overhead_s": {key: unit}}}})
    slope, excess = [], []
    for n in pairs:
        base = predict_ms(graphs[n], zero) - predict_ms(graphs[f"{n}-ref"], zero)
        slope.append((predict_ms(graphs[n], step) - predict_ms(graphs[n], zero)) * 1e-3 / unit)
        excess.append((measured_ms[n] - measured_ms[f"{n}-ref"] - base) * 1e-3)
    den = sum(a * a for a in slope)
    return (max(sum(a * b for a, b in zip(slope, excess)) / den, 0.0) if den > 0 else 0.0), pairs


def geomean_fit(names: Sequence[str], graphs: dict[str, Graph], measured_ms: dict[str, float], hw: HardwareProfile,
                predict_ms: Callable[[Graph, HardwareProfile], float], cases_out: list[dict[str, Any]], key: str,
                bounds: tuple[float, float]) -> dict[str, float]:
    """{key: the figure (a `kind_overhead_s` entry)} that makes the timed cases' predicted times match their measured
    ones (`measured_ms`, without the per-run cost) in geometric mean, the rest of the profile as fitted: a bisection
    in log space within `bounds`, the prediction rising with the figure; the cases go to `cases_out`; {} without
    them (calibration_beyond, calibration_spans)."""
    cases = [n for n in names if n in measured_ms]
    if not cases:
        return {}

    def log_ratio(s: float) -> float:
        h = hw.with_overrides({"units": {"cpu": {"kind_overhead_s": {key: s}}}})
        return float(np.mean([np.log(predict_ms(graphs[n], h) / measured_ms[n]) for n in cases]))

    lo, hi = np.log(bounds[0]), np.log(bounds[1])
    for _ in range(30):
        mid = (lo + hi) / 2
        if log_ratio(float(np.exp(mid))) > 0:
            hi = mid  # priced over: the figure is smaller
        else:
            lo = mid
    s = float(np.exp((lo + hi) / 2))
    cases_out.extend({"case": n, "preset": "fp32", "key": key, "measured_ms": measured_ms[n], "fitted_s": s}
                     for n in cases)
    return {key: s}


def add_case(tmp: Path, timings: dict[str, tuple[Path, str, int]], graphs: dict[str, Graph], name: str,
             parts: Parts | Path) -> None:
    """Save `parts` as `<tmp>/<name>.onnx` (or take the file a builder saved), compile it for the host into
    `graphs[name]` and queue its timing in `timings` (6 runs a round at least), as calibration times its cases."""
    src = parts if isinstance(parts, Path) else save_model(*parts, tmp / f"{name}.onnx")
    graphs[name] = compile_for_host(src, tmp / f"{name}.opt.onnx")
    timings[name] = (src, "all", 6)


def compile_for_host(path: Path, out: Path, nchwc: bool = True) -> Graph:
    """ORT-optimized graph as `ort-cpu/host` runs it, with shapes filled from the source. `nchwc` False: without
    ORT's layout level (its NCHWc transformer), where a case is priced on the model's own Conv (calibration_bench)."""
    import onnxruntime as ort

    from compiler.frontends import onnx as onnx_frontend
    from simulator.shapes import fill_shapes

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    if not nchwc:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    so.optimized_model_filepath = os.fspath(out)
    ort.InferenceSession(os.fspath(path), so, providers=["CPUExecutionProvider"])
    return fill_shapes(onnx_frontend.load(out), onnx_frontend.load(path))


def nchwc_upsample(c: int, hw: int, path: Path) -> Path:
    """A 1x1 Conv (ORT's NCHWc transformer takes it) read by R linear Resizes by 2 side by side, each reduced by a
    GlobalAveragePool: ORT runs the Resizes as NCHWc Upsamples (MLAS's blocked bilinear kernel, `resize.fp32.Upsample`)
    on the Conv's blocked output, and the pools keep them so (the graph's outputs are 1 x 1 maps, no reorders)."""
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(rng_weights([c, c, 1, 1])(0), "w"),
             numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")]
    nodes = [helper.make_node("Conv", ["v0", "w"], ["c"], name="conv")]
    outs = []
    for i in range(R):
        # cubic_coeff_a, unread by a linear Resize, keeps ORT's common-subexpression pass from merging the R
        nodes += [helper.make_node("Resize", ["c", "", "scales"], [f"u{i}"], name=f"resize{i}", mode="linear",
                                   cubic_coeff_a=-0.75 + 0.01 * i),
                  helper.make_node("GlobalAveragePool", [f"u{i}"], [f"y{i}"], name=f"gap{i}")]
        outs.append(helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [1, c, 1, 1]))
    return save_model(nodes, [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [1, c, hw, hw])], outs, inits,
                      path)
