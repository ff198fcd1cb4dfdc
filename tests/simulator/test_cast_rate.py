"""fp16's Casts at the fp32 / fp16 kernel boundaries of an ORT CPU graph (simulator.ort_fp16) are priced by the
conversion on the edge (simulator.conversions); calibration times ORT's Cast on its own (`cast-*` cases,
`quant.fp32.Cast.element`: its time per element), and the edge costs that beside its dispatch, about half the
element-wise rate's figure it had (0.187 ns per element charged, 0.08-0.10 measured on a Zen 4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.calibration_models import R, cast_chain, compile_for_host
from simulator.conversions import CAST_KEY, cast_element, conversion_constants
from simulator.profiles import load_profile
from simulator.roofline import efficiency

BASE = load_profile("host-cpu")
CAL = BASE.with_overrides({"units": {"cpu": {"kind_overhead_s": {f"{CAST_KEY}.element": 1.0e-10}}}})


def test_uncalibrated_profiles_keep_the_element_wise_rate() -> None:
    u = BASE.units[0]
    want = (6 / u.cache_bandwidth_bytes_per_s + 2 / u.peak_ops_per_s["fp32"] / efficiency(u, "elementwise", "fp32"))
    assert conversion_constants(BASE)["ms_per_element"]["fp32>fp16"] == pytest.approx(want * 1e3)


def test_a_calibrated_cast_prices_fp16_conversions_only() -> None:
    pe, old = conversion_constants(CAL)["ms_per_element"], conversion_constants(BASE)["ms_per_element"]
    assert pe["fp32>fp16"] == pe["fp16>fp32"] == pytest.approx(1.0e-7)
    assert pe["fp32>int8"] == old["fp32>int8"] and pe["int8>fp32"] == old["int8>fp32"]


def test_the_fit_reads_the_cast_cases(tmp_path: Path) -> None:
    """The case keeps every Cast through ORT's optimizer, and the figure is its time per Cast element less the
    dispatches (8 Casts + 8 Reshapes of 4,096 elements, 0.1 ms: 16 x dispatch off, over 8 x 4,096)."""
    import onnx

    g = compile_for_host(cast_chain(4096, tmp_path / "c.onnx"), tmp_path / "c.opt.onnx")
    assert sum(nd.op_type == "Cast" for nd in g.nodes) == R
    assert onnx.load(str(tmp_path / "c.onnx")).graph.output[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    cases = [{"case": "cast", "key": CAST_KEY, "measured_ms": 0.1}, {"case": "other", "key": "x", "measured_ms": 9.0}]
    d = BASE.units[0].dispatch_overhead_s
    got = cast_element({"cast": g}, cases, BASE)[f"{CAST_KEY}.element"]
    assert got == pytest.approx((0.1e-3 - len(g.nodes) * d) / (R * 4096))
    assert cast_element({"cast": g}, cases[1:], BASE) == {}


