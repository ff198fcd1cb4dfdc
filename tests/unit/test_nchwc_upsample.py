"""ORT runs a linear Resize on an NCHWc Conv's output as its blocked Upsample (com.microsoft.nchwc), ~4x faster per
output element than its NCHW Resize: the calibration cases `upsample-nchwc-*` fit its own rate
(`resize.fp32.Upsample`), which an NCHW Resize does not read (a selfie segmenter's 2x upsamplings were 0.39 ms
predicted at the Resize rate against 0.10 profiled)."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.calibration_bench import CASES, compile_for_host
from simulator.calibration_fit import _fit_eff, _predict_ms
from simulator.calibration_models import R
from simulator.profiles import load_profile

KEY = "resize.fp32.Upsample"


def _graph(name: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    case = next(c for c in CASES if c.name == name)
    return case, compile_for_host(case.build(tmp_path / f"{name}.onnx"), tmp_path / f"{name}.opt.onnx")


def test_the_cases_run_nchwc_upsamples_and_fit_their_own_rate(tmp_path: Path) -> None:
    hw = load_profile("host-cpu")
    for name in ("upsample-nchwc-16x64", "upsample-nchwc-64x32"):
        case, g = _graph(name, tmp_path)
        assert case.variants == (("fp32", KEY),)
        ups = [n for n in g.nodes if n.op_type == "Upsample"]
        assert len(ups) == R and all(n.domain == "com.microsoft.nchwc" for n in ups)  # none merged, none NCHW
        pred = _predict_ms(g, hw, "fp32")
        eff = _fit_eff(g, hw, "fp32", KEY, 2 * pred)
        assert _predict_ms(g, hw.with_overrides({"units": {"cpu": {"efficiency": {KEY: eff}}}}), "fp32") == \
            pytest.approx(2 * pred, rel=0.02)


def test_an_nchw_resize_keeps_the_resize_rate(tmp_path: Path) -> None:
    _, g = _graph("resize-linear-1024x7", tmp_path)
    assert {n.op_type for n in g.nodes} == {"Resize"}
    hw = load_profile("host-cpu")
    faster = hw.with_overrides({"units": {"cpu": {"efficiency": {KEY: 100 * hw.units[0].efficiency.get(
        "resize.fp32", 0.1)}}}})
    assert _predict_ms(g, faster, "fp32") == pytest.approx(_predict_ms(g, hw, "fp32"))
