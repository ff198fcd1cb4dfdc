"""LiteRT's calibration fit (simulator.litert_calibration._fit): through the sweep's own prediction, it recovers the
figures that produced the operators' times, including QD8's cost per output pixel."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.frontends import tflite
from simulator.litert_calibration import CASES, _fit, _predicted_ms, build
from simulator.profiles import load_profile


def test_fit_recovers_the_qd8_rate_and_its_cost_per_pixel(tmp_path: Path) -> None:
    hw = load_profile("host-cpu", "litert-cpu")
    truth = hw.with_overrides({"units": {"cpu": {"efficiency": {"conv.qd8": 0.15},
                                                 "kind_overhead_s": {"conv.qd8": 2e-6, "conv.qd8.pixel": 3e-8}}}})
    # Few channels over many pixels and many channels over few: the two costs apart.
    names = ("conv1x1-8-112", "conv1x1-128-14", "conv3x3-32-28")
    cases = []
    for case in (c for c in CASES if c.name in names):
        g = tflite.load(build(case, "dyn8", tmp_path / f"{case.name}.tflite"))
        cases.append((g, "int8-dynamic", _predicted_ms(g, truth, "int8-dynamic")))
    assert len(cases) == len(names)
    eff, setups = _fit(cases, hw, "conv.qd8")
    assert eff == pytest.approx(0.15, rel=0.03)
    assert setups["conv.qd8.pixel"] == pytest.approx(3e-8, rel=0.05)
    assert setups["conv.qd8"] == pytest.approx(2e-6, abs=1e-6)

