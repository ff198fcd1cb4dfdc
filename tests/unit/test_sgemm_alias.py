"""An fp32 SGEMM whose rows of A share one L1 set (simulator.sgemm_alias, roofline's `gemm.fp32.alias`,
simulator/calibration_alias.py)."""

from __future__ import annotations

import pytest

from compiler.graph import Graph, Node
from simulator.calibration_alias import REF_PAD, SHAPES, fit_alias
from simulator.costs import work_of
from simulator.profiles import HardwareProfile, load_profile
from simulator.sgemm_alias import ALIAS_KEY, aliased
from tests.simulator.helpers import act, graph, weight

HW = load_profile("host-cpu")


def _at(s: float) -> HardwareProfile:
    return HW.with_overrides({"units": {"cpu": {"kind_overhead_s": {ALIAS_KEY: s}}}})


def _linear(m: int, k: int, n: int, op: str = "MatMul", count: int = 1, const_b: bool = True,
            batch: int = 0, **attrs: object) -> Graph:
    """`count` products of x [batch,] m x k by their own B (constant [k, n], else an input [batch, k, n])."""
    lead = [batch] if batch else []
    nodes = [Node(f"mm{i}", f"mm{i}", op, inputs=["x", f"w{i}"], outputs=[f"y{i}"], attributes=dict(attrs))
             for i in range(count)]
    a = [k, m] if attrs.get("transA") else [m, k]
    values = [act("x", lead + a), *((weight(f"w{i}", [k, n]) if const_b else act(f"w{i}", lead + [k, n]))
                                    for i in range(count)), *(act(f"y{i}", lead + [m, n]) for i in range(count))]
    inputs = ["x", *([] if const_b else [f"w{i}" for i in range(count)])]
    return graph(nodes, values, inputs, [f"y{i}" for i in range(count)])


def _ms(g: Graph, hw: HardwareProfile) -> float:
    from simulator.sweep import sweep

    r = sweep(g, "ort-cpu/host", hardware=hw, presets_only=("fp32",))
    j = [p["name"] for p in r.bulk["presets"]].index("fp32")
    return float(sum(row[j] for row in r.bulk["metrics"]["latency_ms"]))


def _aliased(g: Graph) -> float:
    return work_of(g.nodes[0], g).aliased_macs


def test_rows_a_multiple_of_the_l1_way_apart_alias() -> None:
    assert [k for k in (512, 768, 1008, 1024, 1040, 1536, 2048, 2560, 3072, 3088, 4096) if aliased(k)] == [
        1024, 2048, 3072, 4096]  # 1536: rows 6 KiB apart alternate between two sets


def test_the_products_that_count() -> None:
    assert _aliased(_linear(197, 1024, 256)) == 197 * 1024 * 256
    assert _aliased(_linear(49, 3072, 768, op="Gemm")) == 49 * 3072 * 768
    assert _aliased(_linear(197, 3072, 384, batch=1)) == 197 * 3072 * 384  # [1, tokens, K]: a dynamo ViT's MatMul
    assert _aliased(_linear(197, 1040, 256)) == 0 and _aliased(_linear(197, 1536, 384)) == 0
    assert _aliased(_linear(197, 1024, 256, op="Gemm", transA=1)) == 0  # a transposed A is packed first
    assert _aliased(_linear(8, 1024, 256)) == 0  # fewer rows than one block of the kernel's
    assert _aliased(_linear(1, 1024, 1024)) == 0  # a GEMV
    # attention's a.v over 1024 tokens: one SGEMM per head of 8 rows against 64 per head
    assert _aliased(_linear(8, 1024, 64, const_b=False, batch=12)) == 0
    assert _aliased(_linear(64, 1024, 64, const_b=False, batch=12)) == 12 * 64 * 1024 * 64


def test_the_figure_prices_each_aliased_mac_on_the_fp32_path() -> None:
    g = _linear(197, 1024, 256, count=2)
    assert _ms(g, _at(3e-12)) - _ms(g, _at(1e-12)) == pytest.approx(2e-12 * 2 * 197 * 1024 * 256 * 1e3, rel=1e-6)
    ref = _linear(197, 1040, 256, count=2)  # one line longer: nothing
    assert _ms(ref, _at(3e-12)) == _ms(ref, _at(0.0))


def test_calibration_recovers_the_figure_from_cases_against_their_twins() -> None:
    truth = 2.2e-12
    graphs = {}
    for m, k, n in SHAPES:
        assert aliased(k) and not aliased(k + REF_PAD)
        graphs.update({f"c{m}x{k}": _linear(m, k, n, count=4), f"c{m}x{k}-ref": _linear(m, k + REF_PAD, n, count=4)})
    names = tuple(n for n in graphs if not n.endswith("-ref"))
    measured = {n: _ms(g, _at(truth)) for n, g in graphs.items()}
    out: list[dict[str, object]] = []
    assert fit_alias(names, graphs, measured, HW, _ms, out)[ALIAS_KEY] == pytest.approx(truth, rel=1e-6)
    assert [o["case"] for o in out] == list(names)
    # cases no slower than their twins leave the figure at 0; no timings, no figure
    assert fit_alias(names, graphs, {n: _ms(g, HW) for n, g in graphs.items()}, HW, _ms, [])[ALIAS_KEY] == 0.0
    assert fit_alias(names, graphs, {}, HW, _ms, []) == {}
