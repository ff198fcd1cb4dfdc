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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from compiler.graph import Graph
from simulator.calibration_models import R, Parts, add_case
from simulator.ort_int8 import NHWC_REDUCE_KEY
from simulator.profiles import HardwareProfile

KEY = NHWC_REDUCE_KEY
# (channels, map side): HardCoreNAS-A's first squeeze-excite (many short rows), a late one (few long rows).
SHAPES: tuple[tuple[int, int], ...] = ((72, 56), (672, 14))


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
    return tuple(names)


def case_elements(name: str) -> int:
    """Elements the case's R reductions read."""
    c, hw = (int(v) for v in name.rsplit("-", 1)[1].split("x"))
    return R * c * hw * hw


def fit_nhwc(names: Sequence[str], graphs: dict[str, Graph], measured_ms: dict[str, float], hw: HardwareProfile,
             predict_ms: Callable[[Graph, HardwareProfile], float], cases_out: list[dict[str, Any]]
             ) -> dict[str, float]:
    """{KEY: seconds per element read} from the cases' time over their references' (`measured_ms`, without the
    per-run cost), least squares over the cases, >= 0; {} without the cases. The signature of the other pair fits
    (calibration_inner.fit_inner); `graphs`, `hw` and `predict_ms` are not needed: the reference is the price."""
    pairs = [n for n in names if n in measured_ms and f"{n}-ref" in measured_ms]
    if not pairs:
        return {}
    e = [float(case_elements(n)) for n in pairs]
    d = [(measured_ms[n] - measured_ms[f"{n}-ref"]) * 1e-3 for n in pairs]
    s = max(sum(a * b for a, b in zip(e, d)) / sum(a * a for a in e), 0.0)
    cases_out.extend({"case": n, "preset": "fp32", "key": "nhwc-reduce", "measured_ms": measured_ms[n],
                      "reference_ms": measured_ms[f"{n}-ref"], "nhwc_s": s} for n in pairs)
    return {KEY: s}
