"""Video models' host rules: 3-D Convs at figures of their own (`conv3d`, the conv's on device targets) and walks that
miss the cache (transposes.far_walk, `walk.fp32.far`), with the calibration cases that fit them."""

from __future__ import annotations

import dataclasses

import pytest

from compiler.graph import Node
from compiler.vocabulary.options import Combo
from compiler.vocabulary.targets import get_target
from simulator import costs
from simulator.backends import plan
from simulator.calibration_bench import CASES
from simulator.costs import kind_of, work_of
from simulator.profiles import load_profile
from simulator.sweep import sweep
from simulator.transposes import far_walk
from tests.simulator.helpers import act, graph, host_fp32_ms, transpose_graph, weight

HOST = get_target("ort-cpu/host")
HW = load_profile("host-cpu")
FP32 = Combo("fp32", "fp32", "fp32", 0)
OWN = {"efficiency": {"conv3d.nchw": 0.5}, "kind_overhead_s": {"conv3d.nchw": 0.0, "conv3d.nchw.im2col": 1e-9}}
DEVICES = ["coreml/apple-a17", "ort-qnn/snapdragon-8g3", "ort-xnnpack/rpi5", "ort-nnapi/pixel-8"]


def _conv3d(c: int = 64, t: int = 4, hw: int = 14, k: int = 3):
    return graph([Node("c", "c", "Conv", inputs=["x", "w"], outputs=["y"],
                       attributes={"kernel_shape": [k] * 3, "pads": [k // 2] * 6})],
                 [act("x", [1, c, t, hw, hw]), weight("w", [c, c, k, k, k]), act("y", [1, c, t, hw, hw])], ["x"], ["y"])


def test_a_3d_conv_runs_its_own_figures_on_the_host_once_calibrated() -> None:
    g = _conv3d()
    assert kind_of(g.nodes[0], g) == "conv3d"
    # Uncalibrated (no conv3d figures): the NCHW dense Conv's path, at the grouped convs' figures, as before.
    assert dataclasses.replace(plan(HOST, HW, "Conv", "conv3d", FP32, True, False), note="") == dataclasses.replace(
        plan(HOST, HW, "Conv", "convnchw", FP32, True, False), note="")
    own = HW.with_overrides({"units": {"cpu": OWN}})
    p = plan(HOST, own, "Conv", "conv3d", FP32, True, False)
    assert (p.tag, p.rate_kind, p.im2col, p.setup_per_channel) == ("nchw", "conv3d", True, False)
    # Its vol2col buffer (MACs / output channels) at 1 ns an element: 64 x 27 x 784 elements = 1.35 ms more.
    more = HW.with_overrides({"units": {"cpu": {**OWN, "kind_overhead_s": {"conv3d.nchw.im2col": 2e-9}}}})
    assert host_fp32_ms(g, more) - host_fp32_ms(g, own) == pytest.approx(64 * 27 * 784 * 1e-9 * 1e3, rel=1e-6)
    # ...and the 2-D convs keep theirs.
    assert plan(HOST, own, "Conv", "convnchw", FP32, True, False).rate_kind == "gconvnchw"


@pytest.mark.parametrize("target", DEVICES)
def test_a_3d_conv_on_a_device_target_costs_as_a_conv(target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    g = _conv3d(32, 4, 28)

    def latency() -> float:
        return float(sweep(g, target, presets_only=("fp32",)).bulk["metrics"]["latency_ms"][0][0])

    own = latency()
    real = costs.kind_of
    monkeypatch.setattr(costs, "kind_of", lambda n, gr: "conv" if real(n, gr) == "conv3d" else real(n, gr))
    assert work_of(g.nodes[0], g).kind == "conv"
    assert own == pytest.approx(latency()) and own > 0


@pytest.mark.parametrize(("shape", "perm", "far"), [
    ([1, 1, 25088, 393], [3, 1, 2, 0], True),  # MViT-v2-S's attention map: 25088 elements between reuses of a line
    ([393, 1, 25088, 1], [2, 1, 3, 0], False),  # the same data the other way round: 393
    ([1, 1, 256, 256], [3, 1, 2, 0], False),  # 256
    ([1, 1, 1024, 1024], [3, 1, 2, 0], True),
    ([1, 4, 56, 56, 96], [0, 4, 1, 3, 2], True),  # 4 x 56 x 56
    ([1, 196, 1, 4, 32], [2, 0, 3, 4, 1], False),  # XCiT's q/k/v split: 196
    ([1, 25088, 1, 1, 96], [0, 3, 2, 1, 4], False),  # not a walk
])
def test_which_walks_miss_the_cache(shape: list[int], perm: list[int], far: bool) -> None:
    g = transpose_graph(shape, perm)
    n = 1
    for d in shape:
        n *= d
    assert far_walk(g.nodes[0], g) == (n if far else 0.0)
    assert work_of(g.nodes[0], g).far_walk == (n if far else 0.0)


def test_a_far_walk_pays_its_bytes_beyond_the_l2() -> None:
    l2 = 1 << 20
    base = HW.with_overrides({"units": {"cpu": {"l2_share_bytes": float(l2), "efficiency": {"walk.fp32": 0.01}}}})
    far = base.with_overrides({"units": {"cpu": {"kind_overhead_s": {"walk.fp32.far": 1e-9}}}})
    big, small = transpose_graph([1, 1, 4096, 393], [3, 1, 2, 0]), transpose_graph([393, 1, 4096, 1], [2, 1, 3, 0])
    assert host_fp32_ms(big, far) - host_fp32_ms(big, base) == pytest.approx((4096 * 393 * 4 - l2) * 1e-9 * 1e3)
    assert host_fp32_ms(small, far) == pytest.approx(host_fp32_ms(small, base))


def test_the_bench_has_video_cases_on_their_kinds() -> None:
    import numpy as np

    from simulator.calibration_video import VIDEO_CASES, conv3d_side_by_side

    names = {c.name: c for c in CASES}
    assert all(n in names and names[n].kind == k for n, k, _, _ in VIDEO_CASES)
    assert sum(k == "conv3d" for _, k, _, _ in VIDEO_CASES) >= 3 and sum(k == "walk" for _, k, _, _ in VIDEO_CASES) >= 2
    nodes, _, outs, inits = conv3d_side_by_side(3, 64, 8, 56, (3, 7, 7), (1, 2, 2), 2)
    assert [n.op_type for n in nodes] == ["Conv", "Relu"] * 2
    assert [d.dim_value for d in outs[0].type.tensor_type.shape.dim] == [1, 64, 8, 28, 28]
    assert tuple(np.array(inits[0].dims)) == (64, 3, 3, 7, 7)
