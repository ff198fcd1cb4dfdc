"""Calibration's short-block reductions: what ORT's CPU Reduce* pays per call where the kept block after the reduced
axis is short (`reduce.fp32.span`, ort_int8.REDUCE_SPAN_KEY, s per call; simulator/ort_broadcast.py short_reduce_block).

Why timed here: the figure is the machine's, and far apart between machines. The profile's 60-70 ns per outer index was
measured on an Intel Xeon (host-cpu.yaml); on a Zen 4 (AMD EPYC family 25 model 17, KVM, 2 vCPUs, ORT 1.32, 1 thread,
thread CPU time, 2026-12-07 22:2x UTC, load ~5, /work/lead/red/reduce_sweep.py) the same ReduceSums over axis 2 of
[1, N, R, K] ran 125-200 ns per outer index whatever R and K (K = 2: [1, 36864, 3, 2] 5.90 ms, [1, 13824, 8, 2] 2.14;
K = 4: [1, 18432, 3, 4] 3.03; K = 8: [1, 9216, 3, 8] 1.15). A spatial transformer's affine_grid (dynamo writes it as a
Mul and that ReduceSum over [1, 36864, 3, 2]) profiled 5.58 ms there against 2.48 priced: the model -36% in sessions
60 and 62.

The cases are ReduceSums over axis 2 of [1, N, R, K] with K = 2 and 4 (the kept blocks affine_grid and 2-D point sets
make), R = 3 and 9; the figure is the one that makes their predicted times' geometric mean equal the measured (the rest
of the profile as fitted: the element-wise part of a reduction is small beside the calls here).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from compiler.graph import Graph
from simulator.calibration_models import add_case, geomean_fit, side_by_side
from simulator.ort_int8 import REDUCE_SPAN_KEY
from simulator.profiles import HardwareProfile

KEY = REDUCE_SPAN_KEY
SHAPES = ((36864, 3, 2), (16384, 3, 4), (8192, 9, 2))  # [1, N, R, K], reduced over R


def build_span_cases(tmp: Path, timings: dict[str, tuple[Path, str, int]], graphs: dict[str, Graph]) -> tuple[str, ...]:
    """Save and compile the ReduceSums into `tmp`, adding them to calibration's `timings` and `graphs`; their names."""
    names = []
    for n, r, k in SHAPES:
        names.append(name := f"reducesum-span-{n}x{r}x{k}")
        add_case(tmp, timings, graphs, name, side_by_side("ReduceSum", [1, n, r, k], [1, n, k], tmp / f"{name}.onnx",
                                                          consts=(np.array([2], dtype=np.int64),), keepdims=0))
    return tuple(names)


def fit_spans(names: Sequence[str], graphs: dict[str, Graph], measured_ms: dict[str, float], hw: HardwareProfile,
              predict_ms: Callable[[Graph, HardwareProfile], float], cases_out: list[dict[str, Any]]
              ) -> dict[str, float]:
    """{KEY: s per call} that makes the cases' predicted times (the rest of the profile as fitted) match their measured
    ones (`measured_ms`, without the per-run cost) in geometric mean: a bisection in log space between 1 ns and 10 us
    per call, the prediction rising with the figure; {} without the cases."""
    return geomean_fit(names, graphs, measured_ms, hw, predict_ms, cases_out, KEY, (1e-9, 1e-5))
