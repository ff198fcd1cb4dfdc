"""Calibration fits ORT's cost per short kept block of a Reduce* on the machine's own ReduceSums (calibration_spans):
the profile's figure was a Xeon's, and a Zen 4 pays about twice as much per call."""

from __future__ import annotations

import pytest

from compiler.graph import Graph, Node, Value, WeightStats
from simulator.calibration_spans import KEY, SHAPES, fit_spans
from simulator.profiles import HardwareProfile, load_profile
from tests.simulator.helpers import act, graph, host_fp32_ms

HW = load_profile("host-cpu")


def _rsum(n: int, r: int, k: int) -> Graph:
    ax = Value("ax", [1], "int64", weight=WeightStats(1, 8, 2, 2, 0.0, ints=(2,)))
    return graph([Node("r", "r", "ReduceSum", inputs=["x", "ax"], outputs=["y"], attributes={"keepdims": 0})],
                 [act("x", [1, n, r, k]), ax, act("y", [1, n, k])], ["x"], ["y"])


def _with(s: float) -> HardwareProfile:
    return HW.with_overrides({"units": {"cpu": {"kind_overhead_s": {KEY: s}}}})


def test_a_call_costs_the_figure_once_per_outer_index() -> None:
    g = _rsum(36864, 3, 2)  # affine_grid's sum
    slow, fast = host_fp32_ms(g, _with(1.5e-7)), host_fp32_ms(g, _with(6e-8))
    assert slow - fast == pytest.approx(36864 * 9e-8 * 1e3, rel=1e-6)


def test_the_fit_recovers_the_figure() -> None:
    truth = 1.45e-7  # the Zen 4's
    graphs = {f"reducesum-span-{n}x{r}x{k}": _rsum(n, r, k) for n, r, k in SHAPES}
    measured = {name: host_fp32_ms(g, _with(truth)) for name, g in graphs.items()}
    out: list[dict[str, object]] = []
    got = fit_spans(tuple(graphs), graphs, measured, HW, host_fp32_ms, out)
    assert got[KEY] == pytest.approx(truth, rel=1e-3)
    assert got[KEY] != pytest.approx(HW.units[0].kind_overhead_s[KEY], rel=0.2)  # not the profile's figure
    assert [c["case"] for c in out] == list(graphs)
    assert fit_spans((), graphs, measured, HW, host_fp32_ms, []) == {}


def test_the_bench_builds_and_compiles_the_cases(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from simulator.calibration_spans import build_span_cases

    timings: dict[str, tuple[object, str, int]] = {}
    graphs: dict[str, Graph] = {}
    names = build_span_cases(tmp_path, timings, graphs)  # type: ignore[arg-type]
    assert set(names) == set(timings) == set(graphs) and len(names) == len(SHAPES)
    g = graphs[names[0]]
    assert [nd.op_type for nd in g.nodes].count("ReduceSum") >= 1
    assert host_fp32_ms(g, _with(2e-7)) > host_fp32_ms(g, _with(1e-7))  # priced per call: the figure moves it


def test_a_kept_axis_of_one_after_the_reduced_axis_is_a_block_of_one() -> None:
    from simulator.ort_broadcast import short_reduce_block

    def rsum(shape: list[int], axes: list[int]) -> Graph:
        out = [d for i, d in enumerate(shape) if i not in axes]
        ax = Value("ax", [len(axes)], "int64",
                   weight=WeightStats(len(axes), 8, min(axes), max(axes), 0.0, ints=tuple(axes)))
        return graph([Node("r", "r", "ReduceSum", inputs=["x", "ax"], outputs=["y"], attributes={"keepdims": 0})],
                     [act("x", shape), ax, act("y", out)], ["x"], ["y"])

    # a Zen 4, single-op: [1, 73728, 3, 1] over axis 2 12.6 ms (a call per outer index), over axes 2, 3 0.32 ms
    trailing, innermost = rsum([1, 73728, 3, 1], [2]), rsum([1, 73728, 3, 1], [2, 3])
    assert short_reduce_block(trailing.nodes[0], trailing) == 1
    assert short_reduce_block(innermost.nodes[0], innermost) is None
    per_call = 1.5e-7
    assert host_fp32_ms(trailing, _with(per_call)) >= 73728 * per_call * 1e3
    assert host_fp32_ms(innermost, _with(per_call)) < 0.1 * host_fp32_ms(trailing, _with(per_call))
