"""Interpolating Resizes (kind `resize`, their own calibrated rate), nearest ones on ORT's generic kernel (kind
`nearest`, their own rate) and ORT's 2x nearest copy (a layout move)."""

from __future__ import annotations

import pytest

from compiler.graph import Node
from simulator.costs import kind_of
from simulator.profiles import load_profile
from tests.simulator.helpers import act, graph, host_fp32_ms


def _resize(mode: str, out: int = 56, op: str = "Resize", domain: str = "", **attrs: str):  # type: ignore[no-untyped-def]
    return graph([Node("r", "r", op, inputs=["x", "", "s"], outputs=["y"], attributes={"mode": mode, **attrs},
                       domain=domain)], [act("x", [1, 256, 28, 28]), act("y", [1, 256, out, out])], ["x"], ["y"])


_TORCH = {"coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}  # torch's exporters write these


def test_linear_resize_takes_its_own_rate_and_the_2x_nearest_copy_the_layout_rate() -> None:
    linear, nearest = _resize("linear"), _resize("nearest", **_TORCH)
    assert kind_of(linear.nodes[0], linear) == "resize" and kind_of(nearest.nodes[0], nearest) == "layout"
    base = load_profile("host-cpu")
    lay = base.with_overrides({"units": {"cpu": {"efficiency": {"layout.fp32": 0.2}}}})
    own = base.with_overrides({"units": {"cpu": {"efficiency": {"layout.fp32": 0.2, "resize.fp32": 0.01}}}})
    # uncalibrated: a layout move, as before
    assert host_fp32_ms(linear, lay) == pytest.approx(host_fp32_ms(nearest, lay))
    assert host_fp32_ms(nearest, own) == pytest.approx(host_fp32_ms(nearest, lay))
    assert host_fp32_ms(linear, own) > 3 * host_fp32_ms(linear, lay)


@pytest.mark.parametrize("resize", [
    _resize("nearest", out=84, **_TORCH),  # by 3
    _resize("nearest", out=50, **_TORCH),  # interpolate(size=)
    _resize("nearest"),  # half-pixel coordinates, round_prefer_floor: ONNX's defaults
])
def test_nearest_resizes_off_the_2x_copy_take_the_generic_kernels_rate(resize) -> None:  # type: ignore[no-untyped-def]
    assert kind_of(resize.nodes[0], resize) == "nearest"
    base = load_profile("host-cpu").with_overrides({"units": {"cpu": {"efficiency": {"layout.fp32": 0.2}}}})
    own = base.with_overrides({"units": {"cpu": {"efficiency": {"nearest.fp32": 0.05}}}})
    assert host_fp32_ms(resize, base) == pytest.approx(host_fp32_ms(resize, base.with_overrides(
        {"units": {"cpu": {"efficiency": {"nearest.fp32": 0.2}}}})))  # uncalibrated: the layout rate, as before
    assert host_fp32_ms(resize, own) > 2 * host_fp32_ms(resize, base)


def test_opset9_upsample_and_ort_nchwc_upsample_are_the_2x_copy() -> None:
    upsample = _resize("nearest", op="Upsample")
    nchwc = _resize("nearest", out=84, op="Upsample", domain="com.microsoft.nchwc")  # MLAS's NCHWc kernel
    assert kind_of(upsample.nodes[0], upsample) == "layout" and kind_of(nchwc.nodes[0], nchwc) == "layout"


def test_an_uncalibrated_cubic_resize_costs_its_measured_multiple_of_a_linear_one() -> None:
    from simulator.resizes import CUBIC_RESIZE_OPS

    cubic, linear = _resize("cubic"), _resize("linear")
    assert kind_of(cubic.nodes[0], cubic) == "cubic"
    own = load_profile("host-cpu").with_overrides({"units": {"cpu": {"efficiency": {"resize.fp32": 0.01}}}})
    # a 2x upscale misses ORT's interpolation cache 0.52-0.57 times per output element: about 48 linear moves each
    assert host_fp32_ms(cubic, own) / host_fp32_ms(linear, own) == pytest.approx(CUBIC_RESIZE_OPS, rel=0.15)


def _cubic(c: int, a: int, b: int):  # type: ignore[no-untyped-def]
    return graph([Node("r", "r", "Resize", inputs=["x", "", "", "s"], outputs=["y"], attributes={
        "mode": "cubic", "coordinate_transformation_mode": "pytorch_half_pixel"})],
        [act("x", [1, c, a, a]), act("y", [1, c, b, b])], ["x"], ["y"])


@pytest.mark.parametrize("a, b, per_out, maps", [(112, 224, 0.52, 2), (240, 224, 1.08, 49), (448, 224, 2.01, 1),
                                                 (224, 240, 0.95, 56)])
def test_cubic_misses_follow_orts_interpolation_cache(a: int, b: int, per_out: float, maps: int) -> None:
    """Misses per output element, each weighted by the x-fraction maps ORT's kernel spreads them over (ORT's float
    fractions: 2 for a 2x upscale, 1 for a halving, 49 for CrossViT's 240 -> 224), up to twice from 32 maps."""
    from simulator.resizes import CUBIC_MAPS_FULL, cubic_misses

    g = _cubic(3, a, b)
    weight = 1 + min(maps, CUBIC_MAPS_FULL) / CUBIC_MAPS_FULL
    assert cubic_misses(g.nodes[0], g) / (3 * b * b) == pytest.approx(per_out * weight, abs=0.02)


def test_a_calibrated_cubic_resize_costs_its_misses_and_its_outputs() -> None:
    from simulator.resizes import CUBIC_MISS_OPS, cubic_misses

    base = load_profile("host-cpu")
    peak = base.units[0].peak_ops_per_s["fp32"]
    eff, per_out = 0.5, 50e-9
    hw = base.with_overrides({"units": {"cpu": {"efficiency": {"cubic.fp32": eff},
                                                 "kind_overhead_s": {"cubic.fp32.out": per_out}}}})
    up, down = _cubic(3, 112, 224), _cubic(3, 240, 224)
    diff = host_fp32_ms(down, hw) - host_fp32_ms(up, hw)  # the same outputs: only the misses differ
    extra = cubic_misses(down.nodes[0], down) - cubic_misses(up.nodes[0], up)
    assert diff == pytest.approx(extra * CUBIC_MISS_OPS / (peak * eff) * 1e3, rel=0.05)
    no_out = base.with_overrides({"units": {"cpu": {"efficiency": {"cubic.fp32": eff}}}})
    assert host_fp32_ms(up, hw) - host_fp32_ms(up, no_out) == pytest.approx(3 * 224 * 224 * per_out * 1e3, rel=0.01)


def test_depth_to_space_walks_and_space_to_depth_does_not() -> None:
    def move(op: str, blocksize: int, shape: list[int], out: list[int]):  # type: ignore[no-untyped-def]
        return graph([Node("m", "m", op, inputs=["x"], outputs=["y"], attributes={"blocksize": blocksize})],
                     [act("x", shape), act("y", out)], ["x"], ["y"])

    d2s = move("DepthToSpace", 3, [1, 27, 56, 56], [1, 3, 168, 168])
    s2d = move("SpaceToDepth", 2, [1, 16, 56, 56], [1, 64, 28, 28])
    assert kind_of(d2s.nodes[0], d2s) == "walk" and kind_of(s2d.nodes[0], s2d) == "layout"


@pytest.mark.parametrize("mode", ["linear", "cubic", "nearest"])
def test_a_resize_to_its_own_shape_is_a_copy(mode: str) -> None:
    """ORT's Upsample<T>::BaseCompute copies its input with one memcpy when the output's dims are the input's, in any
    mode (torchvision's detectors resize 320 x 320 inputs to 320 x 320): a layout move, not the mode's kernel."""
    same, scaled = _resize(mode, out=28), _resize(mode, out=56)
    assert kind_of(same.nodes[0], same) == "layout" and kind_of(scaled.nodes[0], scaled) != "layout"
    hw = load_profile("host-cpu").with_overrides({"units": {"cpu": {"efficiency": {
        "layout.fp32": 0.2, "resize.fp32": 0.01, "cubic.fp32": 0.01, "nearest.fp32": 0.01}}}})
    move = graph([Node("m", "m", "Pad", inputs=["x"], outputs=["y"])],  # a Pad of nothing: a plain copy
                 [act("x", [1, 256, 28, 28]), act("y", [1, 256, 28, 28])], ["x"], ["y"])
    assert kind_of(move.nodes[0], move) == "layout"
    assert host_fp32_ms(same, hw) == pytest.approx(host_fp32_ms(move, hw), rel=0.05)
    # the same map resized to 28 x 28 from 27 x 27 (one pixel more a side) interpolates at the mode's rate
    near = graph([Node("r", "r", "Resize", inputs=["x", "", "s"], outputs=["y"], attributes={"mode": mode})],
                 [act("x", [1, 256, 27, 27]), act("y", [1, 256, 28, 28])], ["x"], ["y"])
    assert host_fp32_ms(near, hw) > 3 * host_fp32_ms(same, hw)
