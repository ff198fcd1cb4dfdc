"""A dilated Conv ORT blocked (NCHWc) runs only the taps that land inside its input (MLAS skips the others), so its
multiply-adds are priced at that share of an undilated Conv's (simulator.conv_work.dilated_tap_share); the paths
that run the model's own Conv through im2col (int8) still pay every tap."""

from __future__ import annotations

import pytest

from compiler.graph import Graph, Node
from simulator.conv_work import DILATED_SKIP_COST, dilated_tap_share
from simulator.costs import work_of
from simulator.profiles import load_profile
from simulator.sweep import sweep
from tests.simulator.helpers import act, graph, weight

NCHWC = "com.microsoft.nchwc"


def _conv(c: int, hw: int, dilation: int, group: int = 1, domain: str = NCHWC, kernel_shape: bool = True) -> Graph:
    attrs = {"dilations": [dilation] * 2, "pads": [dilation] * 4, "strides": [1, 1], "group": group}
    if kernel_shape:
        attrs["kernel_shape"] = [3, 3]
    return graph([Node("c", "c", "Conv", inputs=["x", "w"], outputs=["y"], attributes=attrs, domain=domain)],
                 [act("x", [1, c, hw, hw]), weight("w", [c, c // group, 3, 3]), act("y", [1, c, hw, hw])], ["x"], ["y"])


def test_the_share_counts_the_taps_inside_the_input_against_an_undilated_conv() -> None:
    # 14 px, 3 taps at dilation 12, pad 12: per axis 18 of 42 taps inside (o - 12 for o >= 12, o, o + 12 for o < 2),
    # against 40 of 42 undilated with pad 1; the skipped column taps cost DILATED_SKIP_COST of a computed one.
    b = DILATED_SKIP_COST
    want = (18 * (18 + b * 24)) / (40 * (40 + b * 2))
    g = _conv(256, 14, 12)
    assert dilated_tap_share(g.nodes[0], g.values["w"], g.values["x"], g.values["y"]) == pytest.approx(want)
    assert work_of(g.nodes[0], g).dilated_taps == pytest.approx(want)
    # kernel_shape is optional: the weight's spatial dims stand for it
    g2 = _conv(256, 14, 12, kernel_shape=False)
    assert work_of(g2.nodes[0], g2).dilated_taps == pytest.approx(want)


@pytest.mark.parametrize("g", [_conv(256, 14, 1), _conv(256, 14, 12, group=256), _conv(256, 14, 12, domain="")],
                         ids=["undilated", "depthwise", "not-blocked"])
def test_undilated_depthwise_and_unblocked_convs_pay_every_tap(g: Graph) -> None:
    assert work_of(g.nodes[0], g).dilated_taps == 1.0


def _ms(g: Graph, preset: str) -> float:
    hw = load_profile("host-cpu")
    r = sweep(g, "ort-cpu/host", hardware=hw, presets_only=(preset,))
    j = [p["name"] for p in r.bulk["presets"]].index(preset)
    return float(r.bulk["metrics"]["latency_ms"][0][j])


def test_fp32_prices_the_share_and_int8_every_tap() -> None:
    """ASPP-like: 256 channels on 33 px at dilations 1 and 24. fp32's MACs fall with the share (the task is
    compute-bound); int8's QLinearConv copies every tap through im2col and is priced as before."""
    dense, dilated = _conv(256, 33, 1), _conv(256, 33, 24)
    share = work_of(dilated.nodes[0], dilated).dilated_taps
    assert share < 0.5
    assert _ms(dilated, "fp32") < 0.6 * _ms(dense, "fp32")
    assert _ms(dilated, "int8-static") == pytest.approx(_ms(dense, "int8-static"), rel=1e-6)
