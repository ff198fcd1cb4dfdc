"""An int8 SiLU on LiteRT's CPU (simulator.litert_lut): XNNPACK runs LOGISTIC + MUL as one table lookup, which the
profiler charges to the LOGISTIC, and the fitted `elementwise.lut` brings the calibration's SiLUs to their measured
time. Costed as a QS8 sigmoid and a QS8 multiply before, EfficientNet-B0's 49 SiLUs were predicted 4.6 ms for 0.66
profiled."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from compiler.frontends import tflite
from compiler.sandbox import Limits, run
from simulator.litert_cases import predicted_ms
from simulator.litert_lut import CASES, KEY, PRESET, R, _pairs, build, fit, measure
from simulator.profiles import load_profile
from tests.simulator.helpers import fastest_of_rounds


def test_the_profiler_charges_the_lookup_to_the_logistic(tmp_path: Path) -> None:
    path = build(CASES[-1], tmp_path / "silu.tflite")
    res = run("compiler.backends.litert_profiler:per_op_child",
              {"model": os.fspath(path), "threads": 1, "warmup": 2, "runs": 5}, Limits(300.0))
    g = tflite.load(path)
    for n in g.nodes[2:]:
        t = res["tasks"][n.id][0]
        if n.op_type == "LOGISTIC":
            assert t > 0 and res["kernels"][n.id] == ["Invalid Unary Op"]
        else:  # no Multiply ran for the SiLU's MUL
            assert n.op_type == "MUL" and t == 0.0


def test_silu_cases_fit_their_lookup_rate(tmp_path: Path) -> None:
    measured = fastest_of_rounds(lambda: measure(tmp_path, runs=10))
    assert set(measured) == {c.name for c in CASES}
    for _, ms in measured.values():
        assert len(ms) == R - 2 and min(ms) > 0
    hw = load_profile("host-cpu", "litert-cpu")
    o = fit(measured, hw)
    eff = o["units"]["cpu"]["efficiency"][KEY]
    assert 0.0 < eff <= 3.0
    meas = np.array([float(np.median(ms)) for _, ms in measured.values()])
    after = np.array([float(np.median(_pairs(predicted_ms(g, hw.with_overrides(o), PRESET))))
                      for g, _ in measured.values()])
    # one rate from 112x112x32 to 14x14x672 (profiled 0.13-0.17 ns per element at load 12): each case within 1.5x
    assert float(np.max(np.abs(np.log(after / meas)))) < np.log(1.5)
