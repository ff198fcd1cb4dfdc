"""Static int8 depthwise convs on MLAS's generic u8 kernel, priced in blocks of 16 lanes and scalar channel-taps
(simulator.conv_work.generic_depthwise_lanes, Path.lanes, `dwconv.int8gen.scalar`), and the calibration cases that
fit those figures (simulator/calibration_bench.py's dwconvact-gen-*)."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.graph import Node, Value
from simulator.conv_work import generic_depthwise_lanes
from simulator.profiles import load_profile


def _dw(channels: int, rows: int, k: int = 3) -> tuple[Node, Value]:
    node = Node(id="dw", name="dw", op_type="Conv", inputs=["x", "w"], outputs=["y"], attributes={"group": rows})
    return node, Value(name="w", shape=[rows, 1, k, k], dtype="float32")


@pytest.mark.parametrize("channels, rows, lanes, scalar", [
    (18, 18, 16, 2),  # a block of 16, then 2 one at a time
    (12, 16, 16, 4),  # NCHWc filter padded to 16: a block of 8 (as wide as one of 16), 4 scalar
    (24, 32, 32, 0),  # 16 + 8: no scalar channel
    (7, 7, 0, 7),  # scalar only
    (46, 46, 48, 6),  # 2 x 16 + 8, then 6
])
def test_lanes_and_scalar_taps_follow_mlas_blocks(channels: int, rows: int, lanes: int, scalar: int) -> None:
    node, w = _dw(channels, rows)
    pixels = 28 * 28
    got = generic_depthwise_lanes(node, w, out_elements=channels * pixels, plain_share=channels / rows)
    assert got["lane_macs"] * rows == pytest.approx(lanes)
    assert got["scalar_taps"] == pytest.approx(pixels * 9 * scalar)


def test_a_dense_conv_has_no_lanes() -> None:
    node = Node(id="c", name="c", op_type="Conv", inputs=["x", "w"], outputs=["y"], attributes={})
    assert generic_depthwise_lanes(node, Value(name="w", shape=[32, 16, 3, 3], dtype="float32"), 32 * 49, 1.0) == {}


def test_the_generic_cases_fit_rate_pixel_and_scalar_cost_apart(tmp_path: Path) -> None:
    """Synthetic timings from known figures: the joint fit over the dwconvact-gen-* cases finds them again. With the
    scalar channels priced as MACs (no `.scalar` figure) the 7- and 14-channel cases cost what 8 and 16 would."""
    from simulator.calibration_bench import CASES, compile_for_host
    from simulator.calibration_fit import _fit_eff_setup, _predict_ms
    from simulator.ort_int8 import ORT_INT8_DW_GENERIC, ort_task_facts

    names = ("dwconvact-gen-18x56", "dwconvact-gen-122x14", "dwconvact-gen-7x56", "dwconvact-gen-46x28",
             "dwconvact-gen-24x112", "dwconvact-gen-72x28-5x5")
    cases = [c for c in CASES if c.name in names]
    assert len(cases) == len(names)
    graphs = []
    for case in cases:
        # channels a multiple of 4 are priced without ORT's NCHWc layout, where the compiled filter is their own
        assert case.nchwc == (int(case.name.split("-")[2].split("x")[0]) % 4 != 0)
        g = compile_for_host(case.build(tmp_path / f"{case.name}.onnx"), tmp_path / f"{case.name}.opt.onnx",
                             case.nchwc)
        assert any(ORT_INT8_DW_GENERIC in f for f in ort_task_facts(g)), case.name
        graphs.append(g)
    base = load_profile("host-cpu")
    figures = {"dwconv.int8gen": 1.5e-6, "dwconv.int8gen.pixel": 4e-9, "dwconv.int8gen.scalar": 5.5e-10}
    truth = base.with_overrides({"units": {"cpu": {"efficiency": {"dwconv.int8gen": 0.06},
                                                   "kind_overhead_s": figures}}})
    measured = [_predict_ms(g, truth, "int8-static") for g in graphs]
    eff, s = _fit_eff_setup([(g, "int8-static", m) for g, m in zip(graphs, measured)], base, "dwconv.int8gen")
    assert eff == pytest.approx(0.06, rel=0.1)
    assert s["dwconv.int8gen.scalar"] == pytest.approx(5.5e-10, rel=0.15)
    assert s["dwconv.int8gen.pixel"] == pytest.approx(4e-9, rel=0.3)
    no_scalar = truth.with_overrides({"units": {"cpu": {"kind_overhead_s": {"dwconv.int8gen.scalar": 0.0}}}})
    seven = graphs[[c.name for c in cases].index("dwconvact-gen-7x56")]
    assert _predict_ms(seven, truth, "int8-static") > 2 * _predict_ms(seven, no_scalar, "int8-static")
