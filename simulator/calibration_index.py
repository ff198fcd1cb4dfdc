"""Calibration's index cases: ops whose time is a cost per lookup beside the data they move (simulator/index_ops.py):
Expand per memcpy call, ScatterND and GatherND per index tuple, GatherElements / ScatterElements per element looked up.

Each builder returns an ONNX graph's parts (nodes, inputs, outputs, initializers), with constant random indices so
every lookup is valid; calibration_bench saves and times them with its other cases, and `fit_index` fits one figure
per op (`layout.fp32.index.<op>`) once the layout rate is known. Short on purpose: ~1.5 ms a round for all of them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from compiler.graph import Graph
from simulator.calibration_models import Parts, add_case
from simulator.profiles import HardwareProfile

def expand_case(shape: list[int], to: list[int]) -> Parts:
    """One Expand of a [shape] input to [to] (a constant shape)."""
    from onnx import TensorProto, helper, numpy_helper

    return ([helper.make_node("Expand", ["x", "to"], ["y"], name="expand")],
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, to)],
            [numpy_helper.from_array(np.array(to, np.int64), "to")])


def scatter_nd_case(data: list[int], tuples: int, k: int) -> Parts:
    """A ScatterND of `tuples` distinct index tuples over the first `k` axes of `data` (slices of the rest)."""
    from onnx import TensorProto, helper, numpy_helper

    flat = np.random.default_rng(0).choice(int(np.prod(data[:k])), size=tuples, replace=False)
    idx = np.stack(np.unravel_index(flat, data[:k]), -1).astype(np.int64)
    return ([helper.make_node("ScatterND", ["x", "idx", "u"], ["y"], name="scatter")],
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, data),
             helper.make_tensor_value_info("u", TensorProto.FLOAT, [tuples, *data[k:]])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, data)], [numpy_helper.from_array(idx, "idx")])


def gather_nd_case(data: list[int], tuples: int, k: int) -> Parts:
    """A GatherND of `tuples` random index tuples (repeats allowed, as a graph's edge list has) over the first `k` axes
    of `data`."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    idx = np.stack([rng.integers(0, d, size=tuples) for d in data[:k]], -1).astype(np.int64)
    return ([helper.make_node("GatherND", ["x", "idx"], ["y"], name="gather")],
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, data)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [tuples, *data[k:]])],
            [numpy_helper.from_array(idx, "idx")])


def elements_case(op: str, cells: int, n: int, c: int) -> Parts:
    """GatherElements / ScatterElements along axis 1: [1, n, c] random indices into [1, cells, c] data."""
    from onnx import TensorProto, helper, numpy_helper

    idx = np.random.default_rng(0).integers(0, cells, size=(1, n, c)).astype(np.int64)
    f = TensorProto.FLOAT
    if op == "GatherElements":
        return ([helper.make_node(op, ["x", "idx"], ["y"], name="gather", axis=1)],
                [helper.make_tensor_value_info("x", f, [1, cells, c])],
                [helper.make_tensor_value_info("y", f, [1, n, c])], [numpy_helper.from_array(idx, "idx")])
    return ([helper.make_node(op, ["x", "idx", "u"], ["y"], name="scatter", axis=1)],
            [helper.make_tensor_value_info("x", f, [1, cells, c]), helper.make_tensor_value_info("u", f, [1, n, c])],
            [helper.make_tensor_value_info("y", f, [1, cells, c])], [numpy_helper.from_array(idx, "idx")])


# (name, op, builder). Expand: many short runs (a [N, 1] column broadcast: one call per element and per doubling), and
# ScatterND by single elements over 2 and 3 axes and by rows: on a Zen 4 (thread CPU time, 2026-12-04, load ~8) these
# took 1.2-8.5x (ScatterND) and 8-58x (Expand) what their bytes alone priced.
INDEX_CASES: tuple[tuple[str, str, Callable[[], Parts]], ...] = (
    ("expand-16384x1-16", "Expand", lambda: expand_case([16384, 1], [16384, 16])),
    ("expand-4096x1-64", "Expand", lambda: expand_case([4096, 1], [4096, 64])),
    ("expand-3136x1x2-4", "Expand", lambda: expand_case([1, 3136, 1, 2], [1, 3136, 4, 2])),
    ("scatternd-256x256-k2", "ScatterND", lambda: scatter_nd_case([256, 256], 16384, 2)),
    ("scatternd-64x64x64-k3", "ScatterND", lambda: scatter_nd_case([64, 64, 64], 32768, 3)),
    ("scatternd-4096x32-rows", "ScatterND", lambda: scatter_nd_case([4096, 32], 2048, 1)),
    # GatherND: a graph network's node features picked per edge ([500, 64] by 4,000 edges: 0.09 ms profiled inside
    # torch/gnn on a Zen 4, 2026-12-07, priced 0.016 by its bytes) and single elements over 2 axes.
    ("gathernd-500x64-4000", "GatherND", lambda: gather_nd_case([500, 64], 4000, 1)),
    ("gathernd-256x256-k2", "GatherND", lambda: gather_nd_case([256, 256], 16384, 2)),
    ("gatherelements-1024x64", "GatherElements", lambda: elements_case("GatherElements", 1024, 2048, 64)),
    ("scatterelements-1024x64", "ScatterElements", lambda: elements_case("ScatterElements", 1024, 2048, 64)),
)


def build_index_cases(tmp: Path, timings: dict[str, tuple[Path, str, int]], graphs: dict[str, Graph]
                      ) -> tuple[str, ...]:
    """Save and compile every index case into `tmp`, adding it to calibration's `timings` and `graphs`; its names."""
    for name, _, build in INDEX_CASES:
        add_case(tmp, timings, graphs, name, build())
    return tuple(name for name, _, _ in INDEX_CASES)


def fit_index(names: Sequence[str], graphs: dict[str, Graph], measured_ms: dict[str, float], hw: HardwareProfile,
              predict_ms: Callable[[Graph, HardwareProfile], float], cases_out: list[dict[str, Any]]
              ) -> dict[str, float]:
    """{`layout.fp32.index.<op>`: seconds per lookup} from the timed index cases (`names`, measured without the
    per-run cost), every other figure in place: per op, relative least squares over its cases, >= 0."""
    ops = {n: op for n, op, _ in INDEX_CASES}
    out: dict[str, float] = {}
    for op in sorted({ops[n] for n in names if n in measured_ms}):
        mine = [n for n in names if ops.get(n) == op and n in measured_ms]
        key = f"layout.fp32.index.{op}"
        h0, h1 = (hw.with_overrides({"units": {"cpu": {"kind_overhead_s": {key: v}}}}) for v in (0.0, 1e-9))
        meas = np.array([measured_ms[n] for n in mine])
        pred0 = np.array([predict_ms(graphs[n], h0) for n in mine])
        a = (np.array([predict_ms(graphs[n], h1) for n in mine]) - pred0) / 1e-9 / meas  # per second of the figure
        b = 1 - pred0 / meas
        s = max(float(a @ b / (a @ a)), 0.0) if float(a @ a) > 0 else 0.0
        out[key] = s
        cases_out.extend({"case": n, "preset": "fp32", "key": key, "measured_ms": float(m), "index_s": s}
                         for n, m in zip(mine, meas))
    return out
