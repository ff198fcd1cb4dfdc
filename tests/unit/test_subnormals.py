"""Subnormals an attention mask of -100 makes (simulator/subnormals.py): counted on the Softmax that writes them and the
MatMul that reads them, priced at calibration's figures (`<kind>.fp32.subnormal`), fitted from masked cases over
their references (calibration_subnormal)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from compiler.graph import Graph, Node, Value, WeightStats
from simulator.calibration_subnormal import KEYS, fit_subnormal, shifted_window_mask
from simulator.costs import work_of
from simulator.profiles import load_profile
from tests.simulator.helpers import act, graph

HW = load_profile("host-cpu")
B, H, N, D = 16, 6, 49, 32


def _mask(low: float, masked: float) -> Value:
    shape = [B, 1, N, N]
    n = math.prod(shape)
    return Value("mask", shape, "float32", weight=WeightStats(n, 4 * n, low, 0.0, 1.0 - masked))


def _attention(low: float = -100.0, masked: float = 0.23, views: bool = True) -> Graph:
    """x + mask -> (Reshape) -> Softmax -> (Reshape) -> MatMul by v, as Swin's shifted-window blocks run it."""
    s, t = [B, H, N, N], [B * H, N, N]
    nodes = [Node("add", "add", "Add", inputs=["x", "mask"], outputs=["a"])]
    nodes += [Node("r1", "r1", "Reshape", inputs=["a", "shape"], outputs=["ar"])] if views else []
    nodes += [Node("sm", "sm", "Softmax", inputs=["ar" if views else "a"], outputs=["p"], attributes={"axis": -1}),
              Node("mm", "mm", "MatMul", inputs=["p", "v"], outputs=["y"])]
    values = [act("x", s), _mask(low, masked), act("a", s), act("ar", t), act("p", t if views else s),
              act("v", [B * H, N, D] if views else [B, H, N, D]), act("y", [B * H, N, D] if views else [B, H, N, D]),
              Value("shape", [3], "int64", weight=WeightStats(3, 24, 49.0, 96.0, 0.0))]
    return graph(nodes, values, ["x", "v"], ["y"])


def _by_op(g: Graph) -> dict[str, float]:
    return {nd.op_type: work_of(nd, g).subnormals for nd in g.nodes}


@pytest.mark.parametrize("views", [True, False])
def test_a_masked_softmax_writes_its_masked_share_and_its_matmul_reads_them(views: bool) -> None:
    n = _by_op(_attention(views=views))
    out, macs = B * H * N * N, B * H * N * N * D
    assert n["Softmax"] == pytest.approx(0.23 * out)
    assert n["MatMul"] == pytest.approx(0.23 * macs)
    assert n["Add"] == 0.0 and n.get("Reshape", 0.0) == 0.0


@pytest.mark.parametrize("low", [-float("inf"), -3.4e38, -10000.0, -50.0, -1.0])
def test_masks_whose_exp_is_zero_or_normal_make_none(low: float) -> None:
    n = _by_op(_attention(low=low))
    assert n["Softmax"] == 0.0 and n["MatMul"] == 0.0


def test_each_subnormal_costs_its_figure_and_nothing_without_it() -> None:
    from simulator.sweep import sweep

    g = _attention()
    own = HW.with_overrides({"units": {"cpu": {"kind_overhead_s": {KEYS[0]: 2e-8, KEYS[1]: 3e-9}}}})

    def per_task(hw: object) -> list[float]:
        r = sweep(g, "ort-cpu/host", hardware=hw, presets_only=("fp32",))
        j = [p["name"] for p in r.bulk["presets"]].index("fp32")
        return [float(r.bulk["metrics"]["latency_ms"][i][j]) for i in range(len(g.nodes))]

    before, after = per_task(HW), per_task(own)
    n = _by_op(g)
    assert after[2] - before[2] == pytest.approx(n["Softmax"] * 2e-8 * 1e3, rel=1e-6)
    assert after[3] - before[3] == pytest.approx(n["MatMul"] * 3e-9 * 1e3, rel=1e-6)
    assert after[0] == pytest.approx(before[0])  # the mask's Add is unchanged


def test_swins_mask_masks_the_pairs_of_other_regions() -> None:
    m = shifted_window_mask(28)
    assert m.shape == (16, 1, 49, 49)
    assert not m[0].any()  # a window inside the map sees one region
    assert m.mean() == pytest.approx(8832 / 38416)  # Swin-T's second stage: 23% of pairs masked
    assert np.array_equal(m, m.transpose(0, 1, 3, 2))


def test_the_fit_recovers_both_figures_from_masked_cases_over_references() -> None:
    g_sm = _attention(views=False)
    g_sm = graph(g_sm.nodes[:2], list(g_sm.values.values()), ["x"], ["p"])
    graphs = {"subnormal-softmax": g_sm, "subnormal-softmax-ref": g_sm,
              "subnormal-attention": _attention(views=False), "subnormal-attention-ref": _attention(views=False)}
    truth = {KEYS[0]: 2.3e-8, KEYS[1]: 3.1e-9}

    def predict(g: Graph, hw: object) -> float:  # ms: the base time plus each figure times its count
        figures = hw.units[0].kind_overhead_s  # type: ignore[attr-defined]
        return 1.0 + sum(figures.get(k, 0.0) * sum(work_of(nd, g).subnormals for nd in g.nodes
                                                   if nd.op_type == ("Softmax" if k == KEYS[0] else "MatMul"))
                         for k in KEYS) * 1e3

    measured = {n: 1.0 + (0.0 if n.endswith("-ref") else sum(
        truth[k] * sum(work_of(nd, g).subnormals for nd in g.nodes
                       if nd.op_type == ("Softmax" if k == KEYS[0] else "MatMul")) for k in KEYS) * 1e3)
                for n, g in graphs.items()}
    out: list[dict[str, object]] = []
    fitted = fit_subnormal(("subnormal-softmax", "subnormal-attention"), graphs, measured, HW, predict, out)
    assert fitted[KEYS[0]] == pytest.approx(truth[KEYS[0]], rel=1e-6)
    assert fitted[KEYS[1]] == pytest.approx(truth[KEYS[1]], rel=1e-6)
    assert {o["case"] for o in out} == {"subnormal-softmax", "subnormal-attention"}
    assert fit_subnormal(("subnormal-softmax",), graphs, {}, HW, predict, []) == {}
