"""LiteRT's data-movement operators on this machine (simulator.litert_layout): which kernel runs each (XNNPACK's
Resize Bilinear and Copy; TFLite's own nearest resize), and the fitted figures bring the cases to their profiled
times, which the layout rate put 2-30x under (a DBNet-like detector's .tflite -27% of thread CPU time, LR-ASPP's -14%
on a Zen 4)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from compiler.frontends import tflite
from compiler.sandbox import Limits, run
from simulator import litert_layout
from simulator.litert_cases import predicted_ms
from simulator.profiles import load_profile
from tests.simulator.helpers import fastest_of_rounds

KERNELS = {"RESIZE_BILINEAR": "Resize Bilinear (NHWC)",
           "RESIZE_NEAREST_NEIGHBOR": "TFLite RESIZE_NEAREST_NEIGHBOR", "CONCATENATION": "Copy (NC, X32)"}


def test_each_op_runs_the_kernel_its_rule_says(tmp_path: Path) -> None:
    for op, kernel in KERNELS.items():
        case = next(c for c in litert_layout.CASES if c.op == op)
        path = litert_layout.build(case, tmp_path / f"{case.name}.tflite")
        res = run("compiler.backends.litert_profiler:per_op_child",
                  {"model": os.fspath(path), "threads": 1, "warmup": 1, "runs": 3}, Limits(300.0))
        g = tflite.load(path)
        assert {k for n in g.nodes[1:] for k in res["kernels"][n.id]} == {kernel}, op


def test_the_fitted_rates_bring_the_cases_to_their_times(tmp_path: Path) -> None:
    measured = fastest_of_rounds(lambda: litert_layout.measure(tmp_path, runs=10))
    assert set(measured) == {c.name for c in litert_layout.CASES}
    hw = load_profile("host-cpu", "litert-cpu")
    o = litert_layout.fit(measured, hw)
    runs = o["units"]["cpu"]["kind_overhead_s"]
    # a call per run copied: 1-30 ns (profiled 2.4 ns per 1-float run of a concatenation, 10 per resized pixel)
    assert all(1e-9 < runs[k] < 30e-9 for k in litert_layout.RUN_KEYS.values())
    fitted = hw.with_overrides(o)
    for op in litert_layout.KEYS:
        names = [c.name for c in litert_layout.CASES if c.op == op]
        meas = np.array([float(np.median(measured[n][1])) for n in names])
        before = np.array([float(np.median(predicted_ms(measured[n][0], hw, "fp32"))) for n in names])
        after = np.array([float(np.median(predicted_ms(measured[n][0], fitted, "fp32"))) for n in names])
        # the median case within 1.5x, every case within 3x (one rate across 1-64 channels and 50K-2M elements)
        assert abs(float(np.median(np.log(after / meas)))) < np.log(1.5), op
        assert float(np.max(np.abs(np.log(after / meas)))) < np.log(3.0), op
        assert float(np.sum(np.abs(np.log(after / meas)))) < float(np.sum(np.abs(np.log(before / meas)))), op
