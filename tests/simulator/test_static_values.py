"""simulator.static_values reads a one-element integer constant exactly, even one a float cannot hold (INT64_MAX,
a Slice's "to the end"), and never through a float cast that numpy warns about."""

from __future__ import annotations

import warnings

import numpy as np

from compiler.graph import Graph, Node, Value, WeightStats
from simulator.static_values import StaticValues

BIG = np.iinfo(np.int64).max


def _graph(stats: WeightStats) -> Graph:
    values = {"end": Value("end", [1], "int64", weight=stats), "one": Value("one", [], "int64",
              weight=WeightStats(1, 8, 1.0, 1.0, 0.0, ints=(1,))), "y": Value("y", [1], "int64")}
    nodes = [Node(id="add", name="add", op_type="Add", inputs=["end", "one"], outputs=["y"])]
    return Graph(name="g", format="onnx", nodes=nodes, values=values, inputs=[], outputs=["y"])


def test_int64_max_read_exactly_from_kept_ints() -> None:
    sv = StaticValues(_graph(WeightStats(1, 8, float(BIG), float(BIG), 0.0, ints=(BIG,))))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        v = sv.value("end")
    assert v is not None and int(v) == BIG and v.dtype == np.int64


def test_int64_beyond_float_range_clamped_without_warning() -> None:
    # a frontend that keeps only min/max (no ints): float(INT64_MAX) is 2**63, out of int64's range
    sv = StaticValues(_graph(WeightStats(1, 8, float(BIG), float(BIG), 0.0)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        v = sv.value("end")
    assert v is not None and int(v) == BIG


def test_non_finite_integer_constant_is_unknown() -> None:
    sv = StaticValues(_graph(WeightStats(1, 8, float("inf"), float("inf"), 0.0)))
    assert sv.value("end") is None
    assert sv.value("y") is None


def test_small_integer_arithmetic_still_evaluated() -> None:
    sv = StaticValues(_graph(WeightStats(1, 8, 5.0, 5.0, 0.0, ints=(5,))))
    assert sv.scalar("y") == 6.0
