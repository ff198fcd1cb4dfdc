"""Blocked Transposes that move the innermost axis and NCHWc reorders read or write across lines: beyond the core's L2
they pay `layout.fp32.far` per output byte (transposes.strided_move), fitted by calibration on PVT-shaped MLP blocks
(simulator/calibration_layout.py). Inside PVT-v2-B0 on a Zen 4 such 3.2 MB moves profiled 0.38-0.57 ms each against
0.085 priced at the cache's rate."""

from __future__ import annotations

import pytest

from compiler.graph import Graph, Node
from simulator.calibration_layout import LAYOUT_CASES
from simulator.calibration_models import compile_for_host, save_model
from simulator.costs import work_of
from simulator.profiles import load_profile
from tests.simulator.helpers import act, graph, host_fp32_ms

HW = load_profile("host-cpu")


def _transpose(shape: list[int], perm: list[int]) -> Graph:
    values = [act("x", shape), act("y", [shape[p] for p in perm])]
    return graph([Node("t", "t", "Transpose", inputs=["x"], outputs=["y"], attributes={"perm": perm})], values, ["x"],
                 ["y"])


@pytest.mark.parametrize(("shape", "perm", "strided"), [
    ([1, 3136, 256], [0, 2, 1], True),  # PVT's tokens to a map: the innermost axis moves, one blocked transpose
    ([1, 197, 3, 64], [0, 2, 1, 3], False),  # a head transpose copies runs of 64 (transposes.copy_runs)
    ([1, 1, 3136, 256], [1, 0, 2, 3], False),  # only a size-1 axis moves: a plain copy
])
def test_which_transposes_are_strided(shape: list[int], perm: list[int], strided: bool) -> None:
    g = _transpose(shape, perm)
    w = work_of(g.nodes[0], g)
    assert w.kind == "layout" and w.far_walk == (w.out_elements if strided else 0.0)


def test_a_reorder_is_strided_and_pays_per_byte_beyond_the_l2() -> None:
    values = [act("x", [1, 256, 56, 56]), act("y", [1, 256, 56, 56])]
    g = graph([Node("r", "r", "ReorderInput", inputs=["x"], outputs=["y"], domain="com.microsoft.nchwc")], values,
              ["x"], ["y"])
    assert work_of(g.nodes[0], g).far_walk == 256 * 56 * 56
    l2 = HW.with_overrides({"units": {"cpu": {"l2_share_bytes": 2**20}}})  # calibration reads the machine's L2
    far = l2.with_overrides({"units": {"cpu": {"kind_overhead_s": {"layout.fp32.far": 1e-10}}}})
    beyond = 256 * 56 * 56 * 4 - 2**20
    assert host_fp32_ms(g, far) - host_fp32_ms(g, l2) == pytest.approx(1e-10 * beyond * 1e3, rel=1e-6)


def test_the_calibration_mlp_compiles_to_pvts_strided_moves(tmp_path) -> None:  # type: ignore[no-untyped-def]
    name, build = LAYOUT_CASES[0]
    g = compile_for_host(save_model(*build(), tmp_path / f"{name}.onnx"), tmp_path / f"{name}.opt.onnx")
    moves = sorted(n.op_type for n in g.nodes if work_of(n, g).far_walk == 256 * 56 * 56)
    assert moves == ["ReorderInput", "ReorderInput", "Transpose", "Transpose"]
    assert all(work_of(n, g).far_walk == 0 for n in g.nodes if n.op_type == "ReorderOutput")
