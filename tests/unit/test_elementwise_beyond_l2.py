"""ORT's fp32 element-wise ops beyond the L2 (calibration_beyond): where a task's bytes exceed the core's L2 they move
at calibration's own figure for them (`elementwise.fp32.beyond_l2`, s per byte) in place of the weight-streaming rate;
within the L2, on other paths and on other runtimes nothing changes."""

from __future__ import annotations

import pytest

from compiler.graph import Graph, Node
from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.calibration_beyond import KEY, case_elements, fit_beyond
from simulator.profiles import HardwareProfile, load_profile
from simulator.roofline import rates
from tests.simulator.helpers import act, graph, host_fp32_ms

L2 = 2 * 2**20
HW = load_profile("host-cpu").with_overrides({"units": {"cpu": {"l2_share_bytes": float(L2),
                                                                "onchip_memory_bytes": float(L2)}}})


def _binary(op: str, n: int) -> Graph:
    return graph([Node(op, op, op, inputs=["x", "x0"], outputs=["y"])],
                 [act("x", [1, n]), act("x0", [1, n]), act("y", [1, n])], ["x", "x0"], ["y"])


def _with(s: float) -> HardwareProfile:
    return HW.with_overrides({"units": {"cpu": {"kind_overhead_s": {KEY: s}}}})


def test_an_add_beyond_the_l2_moves_its_bytes_at_the_figure() -> None:
    n = 2**21  # 25 MB moved: memory-bound at either figure
    slow, fast = host_fp32_ms(_binary("Add", n), _with(6e-11)), host_fp32_ms(_binary("Add", n), _with(3e-11))
    assert slow - fast == pytest.approx(12 * n * 3e-11 * 1e3, rel=1e-6)
    assert host_fp32_ms(_binary("Mul", n), _with(6e-11)) == pytest.approx(slow)


def test_within_the_l2_and_without_the_figure_nothing_changes() -> None:
    small = _binary("Add", 2**16)  # 786 KB
    assert host_fp32_ms(small, _with(6e-11)) == pytest.approx(host_fp32_ms(small, HW))
    big = _binary("Add", 2**21)
    assert host_fp32_ms(big, _with(0.0)) == pytest.approx(host_fp32_ms(big, HW))


def test_only_ort_cpus_fp32_element_wise_kernels_take_it() -> None:
    hw, host = _with(6e-11), get_target("ort-cpu/host")
    fp32, fp16 = Combo("fp32", "fp32", "-", 0), Combo("fp16", "fp16", "-", 0)
    assert rates(hw, plan(host, hw, "Add", "elementwise", fp32, False, False), "elementwise", True).beyond_s == 6e-11
    # not ORT's CPU EP (no element-wise passes of MLAS: LiteRT, the device runtimes), not another kind
    assert rates(hw, plan(host, hw, "Add", "elementwise", fp32, False, False), "elementwise", False).beyond_s == 0.0
    assert rates(hw, plan(host, hw, "Concat", "layout", fp32, False, False), "layout", True).beyond_s == 0.0
    p16 = plan(host, hw, "Add", "elementwise", fp16, False, False)
    assert rates(hw, p16, "elementwise", True).beyond_s == (6e-11 if p16.tag == "fp32" else 0.0)
    layout = graph([Node("c", "c", "Concat", inputs=["x", "x0"], outputs=["y"], attributes={"axis": 1})],
                   [act("x", [1, 2**21]), act("x0", [1, 2**21]), act("y", [1, 2**22])], ["x", "x0"], ["y"])
    assert host_fp32_ms(layout, hw) == pytest.approx(host_fp32_ms(layout, HW))


def test_cases_are_sized_past_the_l2_with_a_floor() -> None:
    assert case_elements(2 * 2**20) == [698368, 2097152]  # 4x and 12x this Xeon's 2 MiB
    assert case_elements(512 * 2**10) == [666624, 1999872]  # a Zen 3's 512 KiB: at least 8 and 24 MB
    assert case_elements(4 * 2**20) == [1397760, 4194304]


def test_the_fit_recovers_the_figure() -> None:
    truth = 3.4e-11
    graphs = {f"{op.lower()}-beyond-1x{n}": _binary(op, n) for op in ("Add", "Mul") for n in case_elements(L2)}
    measured = {k: host_fp32_ms(g, _with(truth)) for k, g in graphs.items()}
    out: list[dict[str, object]] = []
    got = fit_beyond(tuple(graphs), graphs, measured, HW, host_fp32_ms, out)
    assert got[KEY] == pytest.approx(truth, rel=1e-3)
    assert [c["case"] for c in out] == list(graphs)
    assert fit_beyond((), graphs, measured, HW, host_fp32_ms, []) == {}
