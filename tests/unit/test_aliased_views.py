"""ORT's CPU views (Reshape, Flatten, Squeeze, Unsqueeze, Identity) alias their input's buffer: on `ort-cpu/host` they
move no bytes (costs.ALIASED_VIEWS). Priced as copies before, PVT-v2-B0's 3.2 MB Reshapes took 0.084 ms each against
0.004-0.009 profiled on a Zen 4."""

from __future__ import annotations

import pytest

from compiler.graph import Node
from simulator.profiles import load_profile
from tests.simulator.helpers import act, graph, host_fp32_ms

HW = load_profile("host-cpu")


@pytest.mark.parametrize("op", ["Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"])
def test_a_view_of_a_big_map_costs_its_dispatch_only(op: str) -> None:
    values = [act("x", [1, 256, 3136]), act("s", [3], "int64"), act("y", [1, 256, 3136])]
    g = graph([Node("v", "v", op, inputs=["x", "s"] if op == "Reshape" else ["x"], outputs=["y"])], values, ["x"], ["y"])
    u = HW.units[0]
    assert host_fp32_ms(g, HW) == pytest.approx((u.dispatch_overhead_s + u.kind_overhead_s.get("view", 0.0)) * 1e3)


def test_a_copy_of_the_same_map_still_moves_its_bytes() -> None:
    values = [act("x", [1, 256, 3136]), act("y", [1, 256, 3136])]
    g = graph([Node("t", "t", "Transpose", inputs=["x"], outputs=["y"], attributes={"perm": [0, 1, 2]})], values,
              ["x"], ["y"])
    assert host_fp32_ms(g, HW) > 2 * 256 * 3136 * 4 / HW.units[0].cache_bandwidth_bytes_per_s * 1e3
