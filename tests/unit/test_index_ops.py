"""Index ops ORT runs lookup by lookup (GatherElements, ScatterElements per element, ScatterND per index tuple, Expand
per memcpy call): a cost per lookup beside the data they move (`layout.fp32.index.<op>` in host-cpu.yaml, fitted by
calibration_index). Before it, a ScatterElements of 131,072 updates was priced at 0.021 ms where ORT takes 0.55-0.57
ms (the sweep of session 38: a model with scatter / gather_elements, -65%), a [65536, 1] -> [65536, 4] Expand at 0.023
ms where it takes 1.28-1.35, a ScatterND of 16,384 single elements at 0.016 where it takes 0.11 (session 39)."""

from __future__ import annotations

import pytest

from compiler.graph import Graph, Node
from simulator.calibration_index import fit_index
from simulator.costs import work_of
from simulator.index_ops import expand_calls
from simulator.profiles import load_profile
from tests.simulator.helpers import act, graph, host_fp32_ms

HW = load_profile("host-cpu")


def _index_graph(op: str, n: int = 2048, cells: int = 1024, c: int = 64) -> Graph:
    if op == "ScatterElements":
        values = [act("data", [1, cells, c]), act("idx", [1, n, c], "int64"), act("upd", [1, n, c]),
                  act("y", [1, cells, c])]
        node = Node("s", "s", op, inputs=["data", "idx", "upd"], outputs=["y"], attributes={"axis": 1})
        return graph([node], values, ["data", "idx", "upd"], ["y"])
    values = [act("data", [1, cells, c]), act("idx", [1, n, c], "int64"), act("y", [1, n, c])]
    node = Node("g", "g", op, inputs=["data", "idx"], outputs=["y"], attributes={"axis": 1})
    return graph([node], values, ["data", "idx"], ["y"])


@pytest.mark.parametrize("op", ["GatherElements", "ScatterElements"])
def test_every_index_looked_up_is_counted(op: str) -> None:
    g = _index_graph(op)
    assert work_of(g.nodes[0], g).indexed == 2048 * 64


@pytest.mark.parametrize(("op", "measured_ms"), [("GatherElements", 0.142), ("ScatterElements", 0.57)])
def test_index_ops_pay_their_cost_per_element(op: str, measured_ms: float) -> None:
    g = _index_graph(op)
    key = f"layout.fp32.index.{op}"
    without = HW.with_overrides({"units": {"cpu": {"kind_overhead_s": {key: 0.0}}}})
    with_it, moved_only = host_fp32_ms(g, HW), host_fp32_ms(g, without)
    assert with_it - moved_only == pytest.approx(HW.units[0].kind_overhead_s[key] * 2048 * 64 * 1e3, rel=1e-6)
    # the single-op model on a Zen 4 (the figure's source): within 15%, where the data moved alone is 4-27x under
    assert with_it == pytest.approx(measured_ms, rel=0.15) and moved_only < 0.3 * measured_ms


def test_a_plain_gather_pays_none() -> None:
    values = [act("table", [1000, 64]), act("ids", [1, 128], "int64"), act("y", [1, 128, 64])]
    g = graph([Node("g", "g", "Gather", inputs=["table", "ids"], outputs=["y"])], values, ["table", "ids"], ["y"])
    assert work_of(g.nodes[0], g).indexed == 0


@pytest.mark.parametrize(("shape", "to", "calls"), [
    ([65536, 1], [65536, 4], 65536 + 65536 * 2),  # one call per element, then 2 doublings (1 -> 2 -> 4) each
    ([1, 64, 1, 1], [1, 64, 56, 56], 64 + 64 * 7 + 64 * 7),  # per channel: a row of 56 (7 calls), then 56 rows (7)
    ([1, 1, 192], [1, 3136, 192], 1 + 13),  # one run, then 3136 copies: 11 doublings to 2048, + 1024, + 64
    ([2, 3], [2, 3], 1),  # nothing broadcast: one copy
])
def test_expand_counts_orts_memcpy_calls(shape: list[int], to: list[int], calls: int) -> None:
    assert expand_calls(shape, to) == calls


def _expand_graph(shape: list[int], to: list[int]) -> Graph:
    values = [act("x", shape), act("to", [len(to)], "int64"), act("y", to)]
    return graph([Node("e", "e", "Expand", inputs=["x", "to"], outputs=["y"])], values, ["x", "to"], ["y"])


def _scatter_nd_graph(data: list[int], tuples: int, k: int) -> Graph:
    values = [act("x", data), act("idx", [tuples, k], "int64"), act("u", [tuples, *data[k:]]), act("y", data)]
    return graph([Node("s", "s", "ScatterND", inputs=["x", "idx", "u"], outputs=["y"])], values, ["x", "idx", "u"],
                 ["y"])


@pytest.mark.parametrize(("g", "units", "measured_ms"), [
    (_expand_graph([16384, 1], [16384, 16]), 16384 * 5, 0.476),  # 1 + 4 doublings per element
    (_scatter_nd_graph([256, 256], 16384, 2), 16384, 0.111),  # one lookup per index tuple
])
def test_expand_and_scatter_nd_pay_per_lookup(g: Graph, units: int, measured_ms: float) -> None:
    op = g.nodes[0].op_type
    assert work_of(g.nodes[0], g).indexed == units
    without = HW.with_overrides({"units": {"cpu": {"kind_overhead_s": {f"layout.fp32.index.{op}": 0.0}}}})
    # single-op models on a Zen 4 (the profile's source): within 15%, where the data moved alone is 7-20x under
    assert host_fp32_ms(g, HW) == pytest.approx(measured_ms, rel=0.15) and host_fp32_ms(g, without) < 0.15 * measured_ms


def test_calibration_fits_the_cost_per_lookup() -> None:
    graphs = {"a": _expand_graph([4096, 1], [4096, 64]), "b": _scatter_nd_graph([64, 64, 64], 8192, 3)}
    truth = HW.with_overrides({"units": {"cpu": {"kind_overhead_s": {"layout.fp32.index.Expand": 9e-9,
                                                                     "layout.fp32.index.ScatterND": 2e-9}}}})
    meas = {"expand-4096x1-64": host_fp32_ms(graphs["a"], truth), "scatternd-64x64x64-k3": host_fp32_ms(graphs["b"], truth)}
    named = {"expand-4096x1-64": graphs["a"], "scatternd-64x64x64-k3": graphs["b"]}
    out: list[dict[str, object]] = []
    fitted = fit_index(tuple(meas), named, meas, HW, host_fp32_ms, out)
    assert fitted["layout.fp32.index.Expand"] == pytest.approx(9e-9, rel=1e-3)
    assert fitted["layout.fp32.index.ScatterND"] == pytest.approx(2e-9, rel=1e-3)
    assert {o["case"] for o in out} == set(meas)


def test_a_gather_nd_pays_its_cost_per_index_tuple() -> None:
    # torch/gnn's node features picked per edge: [500, 64] by [4000, 1] indices, profiled 0.09 ms on a Zen 4
    # (2026-12-07), priced 0.016 by its bytes alone before GatherND was an index op
    values = [act("data", [500, 64]), act("idx", [4000, 1], "int64"), act("y", [4000, 64])]
    g = graph([Node("g", "g", "GatherND", inputs=["data", "idx"], outputs=["y"])], values, ["data", "idx"], ["y"])
    assert work_of(g.nodes[0], g).indexed == 4000
    key = "layout.fp32.index.GatherND"
    with_it = HW.with_overrides({"units": {"cpu": {"kind_overhead_s": {key: 9e-9}}}})
    without = HW.with_overrides({"units": {"cpu": {"kind_overhead_s": {key: 0.0}}}})
    assert host_fp32_ms(g, with_it) - host_fp32_ms(g, without) == pytest.approx(4000 * 9e-9 * 1e3, rel=1e-6)
