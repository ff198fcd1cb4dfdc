"""LayerNormalization's fixed cost per row (costs.LAYERNORM_ROW_FLOPS): many narrow rows cost more per element."""

from __future__ import annotations

import pytest

from compiler.graph import Node
from simulator.calibration_bench import CASES
from simulator.costs import LAYERNORM_ROW_FLOPS, work_of
from tests.simulator.helpers import act, graph, weight


def _ln(shape: list[int], axis: int | None = None):  # type: ignore[no-untyped-def]
    c = shape[-1] if axis in (None, -1, len(shape) - 1) else shape[axis]
    attrs = {} if axis is None else {"axis": axis}
    return graph([Node("ln", "ln", "LayerNormalization", inputs=["x", "g", "b"], outputs=["y"], attributes=attrs)],
                 [act("x", shape), weight("g", [c]), weight("b", [c]), act("y", shape)], ["x"], ["y"])


def test_narrow_rows_cost_more_per_element() -> None:
    narrow, wide = _ln([1, 4096, 32]), _ln([1, 128, 768])
    wn, ww = work_of(narrow.nodes[0], narrow), work_of(wide.nodes[0], wide)
    assert wn.flops == pytest.approx(8 * 4096 * 32 + LAYERNORM_ROW_FLOPS * 4096)
    # Measured on this host: 0.81 ns per element at 32 wide against 0.35 at 768 (CPU time, single-op models).
    assert (wn.flops / wn.in_elements) / (ww.flops / ww.in_elements) == pytest.approx(0.81 / 0.35, rel=0.15)


def test_rows_are_the_dims_before_the_axis() -> None:
    g = _ln([2, 8, 16, 32], axis=2)
    assert work_of(g.nodes[0], g).flops == pytest.approx(8 * 2 * 8 * 16 * 32 + LAYERNORM_ROW_FLOPS * 2 * 8)


def test_calibration_fits_the_rate_on_wide_and_narrow_rows() -> None:
    shapes = {c.name for c in CASES if c.kind == "norm" and c.variants == (("fp32", "fp32"),)}
    assert {"layernorm-128x768", "layernorm-4096x32"} <= shapes
