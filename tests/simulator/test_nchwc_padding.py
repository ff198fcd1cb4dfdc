"""ORT's NCHWc transformer pads a Conv's filter to whole 16-channel blocks (GhostNet's 8-channel depthwise convs:
[16, 1, 3, 3], 16 groups), and the compiled graph's MACs (its every padded row: conv_work.nchwc_output_padding),
groups and im2col are counted on it. The fp32 NCHWc kernel
computes the padding; paths that run the model's own Conv outside NCHWc (dynamic and static int8, fp16's NCHW Conv
behind a kept Cast) pay the model's channels only (simulator.conv_work.nchwc_padding, roofline.Rates.plain)."""

from __future__ import annotations

import dataclasses

import pytest

from compiler.graph import Graph, Node, Value, WeightStats
from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator.backends import plan
from simulator.conv_work import nchwc_output_padding, nchwc_padding
from simulator.costs import work_of
from simulator.profiles import load_profile
from simulator.roofline import Counts, Residency, rates, stack, task_cost

HOST = get_target("ort-cpu/host")
HW = load_profile("host-cpu").with_overrides({"units": {"cpu": {
    "efficiency": {"dwconvnchw.cast16nchw": 0.5}, "kind_overhead_s": {"dwconvnchw.cast16nchw.im2col": 1e-10}}}})


def _weight(shape: list[int]) -> Value:
    n = 1
    for d in shape:
        n *= d
    return Value("w", shape, "float32", WeightStats(n, 4 * n, -1.0, 1.0, 0.0))


def _conv(c_real: int, c_padded: int, group: bool, domain: str = "com.microsoft.nchwc") -> Graph:
    """A 3x3 Conv at 56 px whose filter holds `c_padded` output channels (depthwise: groups too) for `c_real` ones."""
    w = _weight([c_padded, 1 if group else 32, 3, 3])
    vals = {"x": Value("x", [1, c_real if group else 32, 56, 56], "float32"), "w": w,
            "y": Value("y", [1, c_real, 56, 56], "float32")}
    attrs = {"group": c_padded, "pads": [1, 1, 1, 1]} if group else {"pads": [1, 1, 1, 1]}
    nd = Node("conv", "conv", "Conv", inputs=["x", "w"], outputs=["y"], attributes=attrs, domain=domain)
    return Graph("g", "onnx", [nd], vals, ["x"], ["y"])


def test_the_shares_are_the_model_channels_over_the_padded_filter() -> None:
    g = _conv(8, 16, group=True)
    nd = g.nodes[0]
    assert nchwc_padding(nd, g.values["w"], g.values["x"], g.values["y"]) == (0.5, 0.5)
    d = _conv(24, 32, group=False)
    assert nchwc_padding(d.nodes[0], d.values["w"], d.values["x"], d.values["y"]) == (0.75, 1.0)
    # A filter that is not padded, or a Conv outside NCHWc (its own channels already), pays all of it.
    full = _conv(16, 16, group=True)
    assert nchwc_padding(full.nodes[0], full.values["w"], full.values["x"], full.values["y"]) == (1.0, 1.0)
    plain = _conv(8, 16, group=True, domain="")
    assert nchwc_padding(plain.nodes[0], plain.values["w"], plain.values["x"], plain.values["y"]) == (1.0, 1.0)
    w = work_of(nd, g)
    assert (w.plain_macs, w.plain_im2col) == (0.5, 0.5)


def test_the_macs_count_the_padded_rows_on_the_models_own_output_shape() -> None:
    """The output keeps the model's channels (shape inference; the profiler's blocked shapes no longer replace it:
    compiler.concrete.fill_observed), so the MACs scale by the padded rows over them. They had counted them only
    through the profiled shapes: without them GhostNet's 8-channel depthwise convs were priced at half their work
    (host fp32 -3.1% -> -12.0% on a Sapphire Rapids, session 45)."""
    g = _conv(8, 16, group=True)
    assert nchwc_output_padding(g.nodes[0], g.values["w"], g.values["y"]) == 2.0
    assert work_of(g.nodes[0], g).macs == 16 * 56 * 56 * 9
    d = _conv(24, 32, group=False)
    assert work_of(d.nodes[0], d).macs == 32 * 56 * 56 * 32 * 9
    # an output mapped onto a channels-last source value (ConvNeXt's permute): the channel axis is the last
    nhwc = dataclasses.replace(d.values["y"], shape=[1, 56, 56, 24])
    assert nchwc_output_padding(d.nodes[0], d.values["w"], nhwc) == pytest.approx(32 / 24)
    # a filter not padded, or a Conv outside NCHWc: its own rows (W = 4 is not a channel axis of 8 rows)
    full = _conv(16, 16, group=True)
    assert nchwc_output_padding(full.nodes[0], full.values["w"], full.values["y"]) == 1.0
    small = dataclasses.replace(full.values["y"], shape=[1, 16, 4, 4])
    assert nchwc_output_padding(full.nodes[0], full.values["w"], small) == 1.0
    plain = _conv(8, 16, group=True, domain="")
    assert nchwc_output_padding(plain.nodes[0], plain.values["w"], plain.values["y"]) == 1.0
    assert work_of(plain.nodes[0], plain).macs == 8 * 56 * 56 * 9


@pytest.mark.parametrize("combo,kind,shared,plain", [
    (Combo("fp32", "fp32", "fp32", 0), "dwconv", False, False),  # the NCHWc kernel computes the padding
    (Combo("fp16", "fp16", "fp16", 0), "dwconv", False, False),  # fp32's NCHWc kernel between Casts
    (Combo("fp16", "fp16", "fp16", 0), "dwconv", True, True),  # MLAS's NCHW Conv of the fp16 model's own filter
    (Combo("fp32", "fp32", "int8", 0), "dwconv", False, True),  # ConvInteger
    (Combo("int8", "int8", "int8", 0), "dwconv", False, True),  # QLinearConv (NHWC)
])
def test_paths_outside_nchwc_pay_the_model_channels(combo: Combo, kind: str, shared: bool, plain: bool) -> None:
    g = _conv(8, 16, group=True)
    w = work_of(g.nodes[0], g)
    p = plan(HOST, HW, "Conv", kind, combo, True, False, shared_cast=shared)
    r = stack([rates(HW, p, kind, True)])
    assert bool(r.plain[0]) is plain
    res = Residency(True, 0.0)
    padded_work = dataclasses.replace(w, plain_macs=1.0, plain_im2col=1.0)
    padded = float(task_cost(Counts.of([padded_work]), r, res).latency_s.ravel()[0])
    own = float(task_cost(Counts.of([w]), r, res).latency_s.ravel()[0])
    assert (own < 0.9 * padded) if plain else own == padded
