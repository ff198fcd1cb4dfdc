"""Interpolating Resizes (kind `resize`, their own calibrated rate) against nearest ones (layout moves)."""

from __future__ import annotations

import pytest

from compiler.graph import Node
from simulator.costs import kind_of
from simulator.profiles import load_profile
from tests.simulator.helpers import act, graph, host_fp32_ms


def _resize(mode: str):  # type: ignore[no-untyped-def]
    return graph([Node("r", "r", "Resize", inputs=["x", "", "s"], outputs=["y"], attributes={"mode": mode})],
                 [act("x", [1, 256, 28, 28]), act("y", [1, 256, 56, 56])], ["x"], ["y"])


def test_linear_resize_takes_its_own_rate_and_nearest_the_layout_rate() -> None:
    linear, nearest = _resize("linear"), _resize("nearest")
    assert kind_of(linear.nodes[0], linear) == "resize" and kind_of(nearest.nodes[0], nearest) == "layout"
    base = load_profile("host-cpu")
    lay = base.with_overrides({"units": {"cpu": {"efficiency": {"layout.fp32": 0.2}}}})
    own = base.with_overrides({"units": {"cpu": {"efficiency": {"layout.fp32": 0.2, "resize.fp32": 0.01}}}})
    # uncalibrated: a layout move, as before
    assert host_fp32_ms(linear, lay) == pytest.approx(host_fp32_ms(nearest, lay))
    assert host_fp32_ms(nearest, own) == pytest.approx(host_fp32_ms(nearest, lay))
    assert host_fp32_ms(linear, own) > 3 * host_fp32_ms(linear, lay)
