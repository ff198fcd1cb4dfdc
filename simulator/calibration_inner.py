"""Calibration's inner-axis Softmax case: what the blocked Transposes inside ORT's Softmax over an axis that is not
the last one cost on this CPU (transposes.inner_axis_transposes), the price of `layout.fp32.inner` (s per element
those two swaps move blocked).

Those moves were priced at the layout rate's compute term, which the joint layout fit (calibration_fit._fit_layout)
drives to its ceiling because a layout task's time sits in its bytes at the cache's rate, its runs and its spill:
~0.003 ns per element here (Emerald Rapids, session 49's calibration), so CaiT's talking-heads Softmax (ORT's
transpose pass leaves Softmax(axis=2) of [1, 196, 196, 4]: a swap [0, 1, 3, 2] of 4-wide rows, blocked) was priced as
its row kernel alone. Timed as single ops (thread CPU time, round-robin, 2026-12-06 04:54 UTC, probe 185 -> 183
GFLOP/s), eight of them take 0.95 ms against 0.45 for the same rows over the last axis ([1, 4, 196, 196]): ~0.16 ns
per element moved, twice. The case is that chain, timed with its `-ref` twin (the same rows over the last axis of the
swapped shape): the difference is the swaps' cost alone, whatever the row kernel is priced at. The walks such a
Softmax runs (CoaT's [1, 3137, 8, 8] over axis 1: 1.15x its prediction in the same timing) keep the walk's figures.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from compiler.graph import Graph
from simulator.calibration_models import R, Parts, add_case, pair_slope_fit
from simulator.profiles import HardwareProfile
from simulator.roofline import INNER_MOVE_KEY

KEY = INNER_MOVE_KEY
SHAPE, AXIS = [1, 196, 196, 4], 2  # CaiT-XXS-24's talking-heads Softmax as ORT runs it
CASE = "softmax-inner-196x196x4"


def softmax_chain(shape: list[int], axis: int) -> Parts:
    """R Softmaxes over `axis` in a chain (each reads the one before: values in (0, 1), normal floats)."""
    from onnx import TensorProto, helper

    f = TensorProto.FLOAT
    nodes = [helper.make_node("Softmax", [f"v{i}"], [f"v{i + 1}"], name=f"softmax{i}", axis=axis) for i in range(R)]
    return (nodes, [helper.make_tensor_value_info("v0", f, shape)],
            [helper.make_tensor_value_info(f"v{R}", f, shape)], [])


def reference_shape(shape: list[int], axis: int) -> list[int]:
    """`shape` with `axis` swapped with the last: the tensor the Softmax's row kernel runs over."""
    out = list(shape)
    out[axis], out[-1] = out[-1], out[axis]
    return out


def build_inner_cases(tmp: Path, timings: dict[str, tuple[Path, str, int]], graphs: dict[str, Graph]
                      ) -> tuple[str, ...]:
    """Save and compile the case and its reference into `tmp`, adding them to calibration's `timings` and `graphs`;
    the case's name."""
    add_case(tmp, timings, graphs, CASE, softmax_chain(SHAPE, AXIS))
    add_case(tmp, timings, graphs, f"{CASE}-ref", softmax_chain(reference_shape(SHAPE, AXIS), -1))
    return (CASE,)


def fit_inner(names: Sequence[str], graphs: dict[str, Graph], measured_ms: dict[str, float], hw: HardwareProfile,
              predict_ms: Callable[[Graph, HardwareProfile], float], cases_out: list[dict[str, Any]]
              ) -> dict[str, float]:
    """{KEY: seconds per element moved} from the cases' time over their references' (`measured_ms`, without the
    per-run cost) less what the rest of the profile prices that difference at, over the elements the swaps move
    (least squares over the cases, >= 0); {} without the cases."""
    s, pairs = pair_slope_fit(names, graphs, measured_ms, hw, predict_ms, KEY, 1e-9)
    if not pairs:
        return {}
    cases_out.extend({"case": n, "preset": "fp32", "key": "inner", "measured_ms": measured_ms[n],
                      "reference_ms": measured_ms[f"{n}-ref"], "inner_s": s} for n in pairs)
    return {KEY: s}
