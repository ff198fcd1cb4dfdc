"""A non-constant B that MLAS's fp32 SGEMM packs on every run (simulator.einsum.packed_b, roofline.PACKB_KEY,
simulator/calibration_packb.py)."""

from __future__ import annotations

import pytest

from compiler.graph import Graph, Node
from simulator.calibration_packb import fit_packb
from simulator.costs import work_of
from simulator.einsum import PACK_STRIP, packed_b
from simulator.profiles import HardwareProfile, load_profile
from simulator.roofline import PACKB_KEY, PACKCALL_KEY
from tests.simulator.helpers import act, graph, weight

HW = load_profile("host-cpu")


def _at(s: float, call: float = 0.0) -> HardwareProfile:
    return HW.with_overrides({"units": {"cpu": {"kind_overhead_s": {PACKB_KEY: s, PACKCALL_KEY: call}}}})


def _matmul(a: list[int], b: list[int], y: list[int], const_b: bool = False, op: str = "MatMul",
            count: int = 1) -> Graph:
    nodes = [Node(f"mm{i}", f"mm{i}", op, inputs=["a", f"b{i}"], outputs=[f"y{i}"],
                  domain="com.microsoft" if op == "FusedMatMul" else "") for i in range(count)]
    values = [act("a", a), *((weight if const_b else act)(f"b{i}", b) for i in range(count)),
              *(act(f"y{i}", y) for i in range(count))]
    return graph(nodes, values, ["a", *([] if const_b else [f"b{i}" for i in range(count)])],
                 [f"y{i}" for i in range(count)])


def test_attention_products_pack_each_batchs_b_in_whole_strips() -> None:
    g = _matmul([8, 8, 3136], [8, 3136, 8], [8, 8, 8])  # CoaT's K-by-V: 8 heads, N = 8 padded to a strip of 16
    assert packed_b(g.nodes[0], g, "matmul") == (8 * 3136 * PACK_STRIP, 8)
    g = _matmul([192, 49, 32], [192, 32, 49], [192, 49, 49])  # Swin's q.k^T: 49 columns in 4 strips
    assert packed_b(g.nodes[0], g, "matmul") == (192 * 32 * 64, 192)
    assert (work_of(g.nodes[0], g).packed_b, work_of(g.nodes[0], g).packed_calls) == (192 * 32 * 64, 192)


def test_prepacked_gemv_and_two_d_b_cases() -> None:
    assert packed_b((g := _matmul([8, 64, 32], [32, 48], [8, 64, 48], const_b=True)).nodes[0], g, "matmul") == (0, 0)
    assert packed_b((g := _matmul([8, 1, 32], [8, 32, 48], [8, 1, 48])).nodes[0], g, "matmul") == (0, 0)  # GEMV
    # a 2-D B: ORT's one SGEMM takes A's batches as rows, so B is packed once
    assert packed_b((g := _matmul([8, 64, 32], [32, 48], [8, 64, 48])).nodes[0], g, "matmul") == (32 * 48, 1)
    assert packed_b((g := _matmul([8, 64, 32], [8, 32, 48], [8, 64, 48])).nodes[0], g, "gemm") == (0, 0)


def _ms(g: Graph, hw: HardwareProfile) -> float:
    from simulator.sweep import sweep

    r = sweep(g, "ort-cpu/host", hardware=hw, presets_only=("fp32",))
    j = [p["name"] for p in r.bulk["presets"]].index("fp32")
    return float(sum(row[j] for row in r.bulk["metrics"]["latency_ms"]))


def test_the_figure_prices_each_packed_element_beside_the_product() -> None:
    g = _matmul([8, 8, 3136], [8, 3136, 8], [8, 8, 8])
    d = _ms(g, _at(3e-10)) - _ms(g, _at(1e-10))
    assert d == pytest.approx(2e-10 * 8 * 3136 * 16 * 1e3, rel=1e-6)
    assert _ms(g, _at(1e-10, 7e-7)) - _ms(g, _at(1e-10)) == pytest.approx(7e-7 * 8 * 1e3, rel=1e-6)  # per call
    k = _matmul([8, 64, 32], [32, 48], [8, 64, 48], const_b=True)  # a prepacked weight pays nothing
    assert _ms(k, _at(3e-10)) == _ms(k, _at(0.0))


def test_calibration_recovers_the_figure_from_a_case_against_its_reference() -> None:
    truth = 2.5e-10
    graphs = {"case": _matmul([8, 8, 3136], [8, 3136, 8], [8, 8, 8], count=4),
              "case-ref": _matmul([1, 64, 3136], [3136, 8], [1, 64, 8], count=4)}
    measured = {k: _ms(g, _at(truth)) for k, g in graphs.items()}
    out: list[dict[str, object]] = []
    assert fit_packb(("case",), graphs, measured, HW, _ms, out)[PACKB_KEY] == pytest.approx(truth, rel=1e-6)
    assert [o["case"] for o in out] == ["case"]
    # a case no slower than its reference leaves the rule off; no timings, no figure
    assert fit_packb(("case",), graphs, {"case": 1.0, "case-ref": 1.0}, HW, _ms, []) == {}
    assert fit_packb(("case",), graphs, {}, HW, _ms, []) == {}


def test_two_cases_recover_both_figures() -> None:
    truth = {PACKB_KEY: 1.4e-10, PACKCALL_KEY: 6.4e-7}
    graphs = {"coat": _matmul([8, 8, 3136], [8, 3136, 8], [8, 8, 8], count=4),
              "coat-ref": _matmul([1, 64, 3136], [3136, 8], [1, 64, 8], count=4),
              "swin": _matmul([192, 49, 32], [192, 32, 49], [192, 49, 49], count=4),
              "swin-ref": _matmul([1, 9408, 32], [32, 49], [1, 9408, 49], count=4)}
    measured = {k: _ms(g, _at(*truth.values())) for k, g in graphs.items()}
    fit = fit_packb(("coat", "swin"), graphs, measured, HW, _ms, [])
    assert fit[PACKB_KEY] == pytest.approx(truth[PACKB_KEY], rel=1e-4)
    assert fit[PACKCALL_KEY] == pytest.approx(truth[PACKCALL_KEY], rel=1e-4)
