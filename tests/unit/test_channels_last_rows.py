"""A Conv whose output maps onto a channels-last value (ORT fuses ConvNeXt's permute into the compiled Conv): its
im2col rows are counted on the output's width, not on its last axis (simulator.conv_work.channels_last)."""

from __future__ import annotations

import dataclasses

from compiler.graph import Graph, Node
from simulator.conv_work import channels_last
from simulator.costs import work_of
from simulator.shapes import fill_shapes
from tests.simulator.helpers import act, graph, weight


def _depthwise(c: int, hw: int, k: int) -> tuple[Node, Graph]:
    node = Node("n", "n", "Conv", inputs=["x", "w"], outputs=["y"],
                attributes={"group": c, "kernel_shape": [k, k], "pads": [k // 2] * 4})
    return node, fill_shapes(graph([node], [act("x", [1, c, hw, hw]), weight("w", [c, 1, k, k])], ["x"], ["y"]))


def test_channels_last_reads_the_axis_that_holds_the_filter_rows() -> None:
    assert not channels_last([1, 320, 7, 7], 320)
    assert channels_last([1, 7, 7, 320], 320)
    assert channels_last([1, 56, 56, 40], 48)  # 40 channels, the NCHWc filter padded to 48 rows
    assert not channels_last([1, 16, 16, 16], 16)  # as many channels as pixels: axis 1 decides, NCHW
    assert not channels_last([1, 49, 320], 320)  # not an image
    assert not channels_last([1, 7, 7, 100], 320)  # neither axis holds the rows: as before, the last axis


def test_rows_of_a_channels_last_output_equal_those_of_its_nchw_twin() -> None:
    # ConvNeXt-V2-atto's last stage: 320 channels, 7x7 depthwise at 7x7 px; ConvInteger's Im2col copies 49 rows of
    # W pixels per output row and channel: 320 x 49 x 7 = 109,760.
    node, g = _depthwise(320, 7, 7)
    assert g.values["y"].shape == [1, 320, 7, 7]
    nchw = work_of(node, g)
    assert nchw.im2col_rows == 320 * 49 * 7
    g.values["y"] = dataclasses.replace(g.values["y"], shape=[1, 7, 7, 320])  # the compiled Conv's mapped output
    nhwc = work_of(node, g)
    assert nhwc.macs == nchw.macs
    assert nhwc.im2col_rows == nchw.im2col_rows  # read on the last axis: 320 x 49 x 7 x 7 / 320 = 2,401


def test_a_wide_map_is_not_taken_for_channels() -> None:
    # 40 channels at 56 px: the last axis (56) is no channel count within a block of 40, so the width is 56
    node, g = _depthwise(40, 56, 7)
    assert work_of(node, g).im2col_rows == 40 * 49 * 56
