"""Calibration's NHWC reduction cases: what a ReduceMean over H and W of NHWC data costs on this CPU beyond the same
reduction of NCHW data, the price of `reduce.int8.nhwc` (s per element read; simulator/ort_int8.py
ORT_INT8_NHWC_REDUCE).

A static int8 file's squeeze-excite ReduceMean (timm's `x.mean((2, 3), keepdim=True)`) runs in fp32 between
DequantizeLinear and QuantizeLinear on the NHWC data its QLinearConvs write: axes [1, 2] of [1, H, W, C]. It was priced
as the fp32 rule's strided case (reductions.STRIDED_REDUCE_FLOPS per element at the reduce rate), a figure from a Zen 4;
on an Emerald Rapids VM (HardCoreNAS-A's and GhostNet's int8-static files, ORT's node medians, 2026-12-06 10:39 UTC,
load 2.8 per CPU) the 15 such ReduceMeans took 0.57-0.82 ns per element (72 x 56 x 56 0.174 ms, 672 x 14 x 14 0.087,
960 x 7 x 7 0.028), 0.5-0.65x that price. Each case is R of them side by side on one NHWC input, timed with its `-ref`
twin (the same reduction of the NCHW tensor, axes [2, 3]: the contiguous rows the rest of the profile prices): the
difference over the elements read is the figure, whatever the contiguous reduction is priced at.

Static int8's QLinearConcat of NHWC maps (`layout.int8.lookup`, s per element looked up; simulator/ort_int8.py
ORT_INT8_CONCAT) the same way: R QLinearConcats of two uint8 inputs along the channels, one requantized through ORT's
table (its scale and zero point not the output's) and one copied (the output's, as in the int8 files), timed with a
`-ref` twin whose inputs both have the output's quantization (both copied). And its cost per call (`layout.int8.call`,
s per row copied; simulator/ort_int8_rows.py): R QLinearConcats of two uint8 inputs along the channels, both copied (a
memcpy per pixel and input), timed with a `-ref` twin joining the same inputs along H (a memcpy per input): the same
bytes, the difference over the calls is the figure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from compiler.graph import Graph
from simulator.calibration_models import R, Parts, add_case, compile_for_host
from simulator.ort_int8 import CONCAT_LOOKUP_KEY, NHWC_REDUCE_KEY
from simulator.ort_int8_rows import CALL_KEY
from simulator.profiles import HardwareProfile

KEY = NHWC_REDUCE_KEY
# (channels, map side): HardCoreNAS-A's first squeeze-excite (many short rows), a late one (few long rows).
SHAPES: tuple[tuple[int, int], ...] = ((72, 56), (672, 14))
# (output channels, map side) of the QLinearConcat cases: SqueezeNet 1.1's fire concats (2 x 64 at 55 px, 2 x 256 at
# 13), GhostNet's ghost modules (2 x 12 at 56 px, 2 x 120 at 14): many short copies to few long ones.
CONCAT_SHAPES: tuple[tuple[int, int], ...] = ((128, 55), (512, 13), (24, 56), (240, 14))
# (output channels, map side) of the per-call cases: GhostNet's first ghost modules (8 + 8 channels at 112 px, 12 + 12
# at 56), SqueezeNet's first fire concat (64 + 64 at 55): many calls of 8-64 bytes.
CALL_SHAPES: tuple[tuple[int, int], ...] = ((16, 112), (24, 56), (128, 55))


def case_name(c: int, hw: int) -> str:
    return f"reduce-nhwc-{c}x{hw}"


def mean_side_by_side(shape: list[int], axes: list[int]) -> Parts:
    """R ReduceMeans of one input over `axes`, keepdims, side by side (each a graph output: none is merged)."""
    from onnx import TensorProto, helper

    out = [1 if a in axes else d for a, d in enumerate(shape)]
    f = TensorProto.FLOAT
    nodes = [helper.make_node("ReduceMean", ["v0"], [f"y{i}"], name=f"mean{i}", axes=axes, keepdims=1)
             for i in range(R)]
    return (nodes, [helper.make_tensor_value_info("v0", f, shape)],
            [helper.make_tensor_value_info(f"y{i}", f, out) for i in range(R)], [])


def concat_case_name(c: int, hw: int) -> str:
    return f"qconcat-{c}x{hw}"


def call_case_name(c: int, hw: int) -> str:
    return f"qcall-{c}x{hw}"


def qlinear_concats(c: int, hw: int, looked_up: bool, axis: int = 3) -> Parts:
    """R QLinearConcats side by side of two uint8 inputs [1, hw, hw, c / 2] along the channels (each a graph output):
    the first requantized (`looked_up`) or at the output's scale and zero point, the second always at the output's;
    along H where `axis` is 1."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    q = [("ys", 0.05, 128), ("as", 0.02 if looked_up else 0.05, 120 if looked_up else 128)]
    inits = [t for n, sc, zp in q for t in (numpy_helper.from_array(np.array(sc, np.float32), n),
                                            numpy_helper.from_array(np.array(zp, np.uint8), n + "z"))]
    nodes = [helper.make_node("QLinearConcat", ["ys", "ysz", "a", "as", "asz", "b", "ys", "ysz"], [f"y{i}"],
                              name=f"cat{i}", domain="com.microsoft", axis=axis) for i in range(R)]
    u8 = TensorProto.UINT8
    out = [1, hw, hw, c] if axis == 3 else [1, 2 * hw, hw, c // 2]
    return (nodes, [helper.make_tensor_value_info(n, u8, [1, hw, hw, c // 2]) for n in "ab"],
            [helper.make_tensor_value_info(f"y{i}", u8, out) for i in range(R)], inits)


def _save_contrib(parts: Parts, path: Path) -> Path:
    """Save `parts` with the com.microsoft domain imported (QLinearConcat is one of ORT's contrib ops)."""
    import onnx
    from onnx import helper

    m = helper.make_model(helper.make_graph(parts[0], path.stem, parts[1], parts[2], parts[3]), opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 9
    onnx.save(m, str(path))
    return path


def build_nhwc_cases(tmp: Path, timings: dict[str, tuple[Path, str, int]], graphs: dict[str, Graph]
                     ) -> tuple[str, ...]:
    """Save and compile each case ([1, H, W, C] over axes 1, 2) and its reference ([1, C, H, W] over axes 2, 3) into
    `tmp`, adding them to calibration's `timings` and `graphs`; the cases' names."""
    names = []
    for c, hw in SHAPES:
        name = case_name(c, hw)
        add_case(tmp, timings, graphs, name, mean_side_by_side([1, hw, hw, c], [1, 2]))
        add_case(tmp, timings, graphs, f"{name}-ref", mean_side_by_side([1, c, hw, hw], [2, 3]))
        names.append(name)
    pairs = [(concat_case_name(c, hw), ((True, 3), (False, 3)), c, hw) for c, hw in CONCAT_SHAPES]
    pairs += [(call_case_name(c, hw), ((False, 3), (False, 1)), c, hw) for c, hw in CALL_SHAPES]
    for name, how, c, hw in pairs:
        for n, (looked_up, axis) in zip((name, f"{name}-ref"), how):
            timings[n] = (_save_contrib(qlinear_concats(c, hw, looked_up, axis), tmp / f"{n}.onnx"), "all", 6)
            graphs[n] = compile_for_host(timings[n][0], tmp / f"{n}.opt.onnx")  # a residual row, as the reductions'
        names.append(name)
    return tuple(names)


def case_elements(name: str) -> int:
    """Elements the case's R reductions read; of a QLinearConcat case, the elements its R concats look up (half); of
    a per-call case, the calls its R concats make beyond its reference's (two per pixel against two)."""
    c, hw = (int(v) for v in name.rsplit("-", 1)[1].split("x"))
    if name.startswith("qcall-"):
        return R * (2 * hw * hw - 2)
    return R * c * hw * hw // (2 if name.startswith("qconcat-") else 1)


def _pair_fit(pairs: list[str], measured_ms: dict[str, float]) -> float:
    """Seconds per element of the cases' time over their references', least squares through 0, >= 0."""
    e = [float(case_elements(n)) for n in pairs]
    d = [(measured_ms[n] - measured_ms[f"{n}-ref"]) * 1e-3 for n in pairs]
    return max(sum(a * b for a, b in zip(e, d)) / sum(a * a for a in e), 0.0)


def fit_nhwc(names: Sequence[str], graphs: dict[str, Graph], measured_ms: dict[str, float], hw: HardwareProfile,
             predict_ms: Callable[[Graph, HardwareProfile], float], cases_out: list[dict[str, Any]]
             ) -> dict[str, float]:
    """{KEY: seconds per element read, CONCAT_LOOKUP_KEY: per element looked up, CALL_KEY: per call} from the cases'
    time over their references' (`measured_ms`, without the per-run cost), least squares over each family's cases, >= 0;
    a family without its cases gives no key. The signature of the other pair fits (calibration_inner.fit_inner);
    `graphs`, `hw` and `predict_ms` are not needed: the reference is the price."""
    out: dict[str, float] = {}
    for key, label, prefix in ((KEY, "nhwc-reduce", "reduce-"), (CONCAT_LOOKUP_KEY, "qconcat-lookup", "qconcat-"),
                               (CALL_KEY, "qconcat-call", "qcall-")):
        pairs = [n for n in names if n.startswith(prefix) and n in measured_ms and f"{n}-ref" in measured_ms]
        if not pairs:
            continue
        out[key] = s = _pair_fit(pairs, measured_ms)
        cases_out.extend({"case": n, "preset": "fp32", "key": label,
                          "measured_ms": measured_ms[n], "reference_ms": measured_ms[f"{n}-ref"], "nhwc_s": s}
                         for n in pairs)
    return out
