"""A joint fit's setup of 0 is written where its cases pay it (simulator.calibration_fit._fit_joint): left out, the
profile's own estimate stood in for it. On an Emerald Rapids (2026-12-07) the static int8 stems' cost per im2col copy
fitted 0, host-cpu.yaml's 2.5 ns stood, and the four stem cases read +15..+40% in-sample."""

from __future__ import annotations

import pytest

from compiler.graph import Graph
from simulator import calibration_fit
from simulator.profiles import HardwareProfile, load_profile

KEY = "stemgemm.int8"
# per case: (MACs, GEMM rows, im2col copies); the stems' shapes' proportions, not their figures
CASES = {"stem-a": (2.0e7, 1.0e5, 2.7e5), "stem-b": (1.2e8, 1.0e5, 4.9e5), "stem-c": (7.0e6, 7.4e4, 2.0e5),
         "stem-d": (1.5e7, 1.0e5, 2.7e5)}
TRUE = {"eff": 0.5, "row": 1.0e-8, "tap": -2.0e-10}  # the machine: less per copy than the rows account for


def _predict(g: Graph, hw: HardwareProfile, preset: str) -> float:
    """ms of a stand-in stem chain: MACs at the key's efficiency of 1 TOPS, a cost per task, row and copy."""
    macs, rows, taps = CASES[g.name]
    u = hw.units[0]
    s = u.kind_overhead_s
    return 1e3 * (macs / (1e12 * u.efficiency.get(KEY, 1.0)) + s.get(KEY, 0.0) + rows * s.get(f"{KEY}.row", 0.0)
                  + taps * s.get(f"{KEY}.tap", 0.0))


def _measured(name: str) -> float:
    macs, rows, taps = CASES[name]
    return 1e3 * (macs / (1e12 * TRUE["eff"]) + rows * TRUE["row"] + taps * TRUE["tap"])


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(calibration_fit, "_predict_ms", _predict)


def test_a_setup_fitted_at_zero_replaces_the_profiles_estimate(stand_in: None) -> None:
    hw = load_profile("host-cpu", "ort-cpu")
    assert hw.units[0].kind_overhead_s.get(f"{KEY}.tap", 0.0) > 0  # the estimate that stood in
    graphs = {n: Graph(name=n, format="onnx", nodes=[], values={}, inputs=[], outputs=[]) for n in CASES}
    cases = [{"case": n, "preset": "int8-static", "key": KEY, "joint": True, "measured_ms": _measured(n)}
             for n in CASES]
    effs: dict[str, float] = {}
    setups = calibration_fit._fit_joint(graphs, cases, hw, effs)
    assert setups[f"{KEY}.tap"] == 0.0
    assert setups[f"{KEY}.row"] == pytest.approx(TRUE["row"], rel=0.05)
    assert f"{KEY}.pixel" not in setups  # the cases do not pay it: not the fit's to write
    fitted = hw.with_overrides({"units": {"cpu": {"efficiency": effs, "kind_overhead_s": setups}}})
    for n in CASES:  # in-sample as the fit saw it
        assert _predict(graphs[n], fitted, "int8-static") == pytest.approx(_measured(n), rel=0.02)
