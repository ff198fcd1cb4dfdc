"""3-D (video) convs, pools and norms: work counts over every spatial dim, and the NCHW path ORT runs 3-D convs on."""

from __future__ import annotations

from compiler.graph import Graph, Node, Value
from simulator.costs import kind_of, work_of
from simulator.shapes import fill_shapes
from tests.simulator.helpers import act, graph, weight


def _one(op: str, x: list[int], w: list[int] | None, attrs: dict[str, object],
         extra: list[Value] | None = None) -> tuple[Node, Graph]:
    values = [act("x", x), *([weight("w", w)] if w else []), *(extra or [])]
    ins = ["x", *(["w"] if w else []), *(v.name for v in extra or [])]
    node = Node("n", "n", op, inputs=ins, outputs=["y"], attributes=attrs)
    g = fill_shapes(graph([node], values, ["x"], ["y"]))
    return node, g


def test_conv3d_counts_every_output_voxel_times_its_taps() -> None:
    # x [2, 3, 8, 32, 40], 16 filters of 3x5x5, stride (1, 2, 2), pads (1, 2, 2): y [2, 16, 8, 16, 20]
    node, g = _one("Conv", [2, 3, 8, 32, 40], [16, 3, 3, 5, 5],
                   {"kernel_shape": [3, 5, 5], "strides": [1, 2, 2], "pads": [1, 2, 2, 1, 2, 2]})
    assert g.values["y"].shape == [2, 16, 8, 16, 20]
    w = work_of(node, g)
    assert w.macs == 2 * 16 * (8 * 16 * 20) * 3 * (3 * 5 * 5)
    assert (w.in_elements, w.out_elements, w.kernel_elements) == (2 * 3 * 8 * 32 * 40, 2 * 16 * 8 * 16 * 20, 16 * 225)
    assert w.im2col_rows == 3 * 75 * 2 * 8 * 16  # per input channel and tap, one row per output (N, D, H)


def test_grouped_conv3d_and_conv_transpose3d() -> None:
    node, g = _one("Conv", [2, 16, 8, 8, 10], [32, 8, 3, 3, 3],
                   {"group": 2, "kernel_shape": [3, 3, 3], "strides": [2, 2, 2], "pads": [1] * 6})
    assert g.values["y"].shape == [2, 32, 4, 4, 5]
    assert work_of(node, g).macs == 2 * 32 * (4 * 4 * 5) * (16 // 2) * 27
    # ConvTranspose weights [C_in, C_out / group, kd, kh, kw]: each input voxel scatters into C_out / g x taps outputs
    node, g = _one("ConvTranspose", [2, 32, 4, 4, 5], [32, 8, 2, 2, 2],
                   {"group": 2, "kernel_shape": [2, 2, 2], "strides": [2, 2, 2]})
    g.values["y"] = act("y", [2, 16, 8, 8, 10])
    assert work_of(node, g).macs == 2 * 32 * (4 * 4 * 5) * 8 * 8


def test_pools_and_batchnorm_over_5d() -> None:
    node, g = _one("MaxPool", [2, 16, 8, 16, 20], None,
                   {"kernel_shape": [1, 3, 3], "strides": [1, 2, 2], "pads": [0, 1, 1, 0, 1, 1]})
    assert g.values["y"].shape == [2, 16, 8, 8, 10]
    w = work_of(node, g)
    assert (w.flops, w.in_elements, w.out_elements) == (2 * 16 * 8 * 8 * 10 * 9, 2 * 16 * 8 * 16 * 20, 2 * 16 * 640)
    node, g = _one("AveragePool", [2, 16, 8, 8, 10], None, {"kernel_shape": [2, 3, 3], "strides": [2, 1, 1]})
    assert g.values["y"].shape == [2, 16, 4, 6, 8]
    assert work_of(node, g).flops == 2 * 16 * 4 * 6 * 8 * 18
    stats = [weight(n, [16]) for n in ("s", "b", "m", "v")]
    node, g = _one("BatchNormalization", [2, 16, 8, 16, 20], None, {}, stats)
    w = work_of(node, g)
    assert (w.kind, w.flops, w.aux_weight_elements) == ("norm", 8.0 * 2 * 16 * 8 * 16 * 20, 64)


def test_a_3d_conv_takes_its_own_nchw_kind_whatever_its_channels() -> None:
    # ORT blocks 2-D convs only: a 3-channel 2-D stem is the NCHWc small-channel kernel, a 3-D one MLAS's NCHW Conv.
    node, g = _one("Conv", [1, 3, 16, 112, 112], [64, 3, 3, 7, 7],
                   {"kernel_shape": [3, 7, 7], "strides": [1, 2, 2], "pads": [1, 3, 3, 1, 3, 3]})
    assert kind_of(node, g) == "conv3d"
    node, g = _one("Conv", [1, 64, 8, 28, 28], [64, 64, 3, 3, 3], {"kernel_shape": [3, 3, 3], "pads": [1] * 6})
    assert kind_of(node, g) == "conv3d"
    node, g = _one("Conv", [1, 3, 112, 112], [64, 3, 7, 7], {"kernel_shape": [7, 7], "pads": [3] * 4})
    assert kind_of(node, g) == "convsmall"
