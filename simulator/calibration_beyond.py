"""Calibration's element-wise cases beyond the L2: what a byte costs ORT's fp32 element-wise kernels where a task's
bytes exceed the core's L2 (`elementwise.fp32.beyond_l2`, roofline.ELEMENTWISE_BEYOND_KEY, s per byte), in place of
the weight-streaming rate (a batch-1 MatMul reading its weights from the last-level cache: `dram_bandwidth_bytes_per_s`)
that priced them before.

Why: an element-wise chain streams its activations through the cache hierarchy at a rate of its own. On an Intel Xeon
(KVM, AVX-512, 2 MiB L2, 2026-12-07 01:40 UTC, load 5-6, `benchmarks/ort_elementwise_l2.py`, two passes) Add and Mul
chains ran 0.10-0.14 ns per element with their op's bytes within the L2, 0.23-0.35 at 2.4-3.1 MB and a flat
0.39-0.42 from 4.7 to 25 MB (~29-30 GB/s), priced 0.47 at the streaming rate (27.5 GB/s, with the arithmetic's
overlap): 0.84-0.90x.
On a Zen 3 (512 KiB L2, session 55) Adds of 3 MB ran 0.18-0.19 ns and of 19 MB 0.32-0.51, priced 0.33 at its rate.

The cases are Add and Mul chains (memory-bound: their time is their bytes) at two sizes past the L2, 4x and 12x the
machine's L2 in one op's bytes, at least 8 and 24 MB (the sizes real models' large maps move: CoaT-Lite-Tiny's stage-1
residual Adds move 19 MB); the figure is the one that makes their predicted times' geometric mean equal the measured.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from compiler.graph import Graph
from simulator.calibration_models import compile_for_host, geomean_fit, op_chain
from simulator.profiles import HardwareProfile
from simulator.roofline import ELEMENTWISE_BEYOND_KEY

KEY = ELEMENTWISE_BEYOND_KEY
OPS = ("Add", "Mul")
SPANS = ((4, 8e6), (12, 24e6))  # one op's bytes: (times the L2, at least this many)
BYTES_PER_ELEMENT = 12  # x and the chain's first input read, the output written (fp32)


def case_elements(l2_bytes: float) -> list[int]:
    """Elements of the chains' tensors for a core whose L2 holds `l2_bytes`, in whole KiB-elements."""
    return [int(max(times * l2_bytes, least) / BYTES_PER_ELEMENT) // 1024 * 1024 for times, least in SPANS]


def build_beyond_cases(tmp: Path, timings: dict[str, tuple[Path, str, int]], graphs: dict[str, Graph],
                       l2_bytes: float) -> tuple[str, ...]:
    """Save and compile the chains into `tmp`, adding them to calibration's `timings` and `graphs`; their names
    (none without a known L2)."""
    if l2_bytes <= 0:
        return ()
    names = []
    for op in OPS:
        for n in case_elements(l2_bytes):
            names.append(name := f"{op.lower()}-beyond-1x{n}")
            src = op_chain(op, [1, n], tmp / f"{name}.onnx", binary_self=True)  # x_{i+1} = x_i op x_0
            graphs[name] = compile_for_host(src, tmp / f"{name}.opt.onnx")
            timings[name] = (src, "all", 6)
    return tuple(names)


def fit_beyond(names: Sequence[str], graphs: dict[str, Graph], measured_ms: dict[str, float], hw: HardwareProfile,
               predict_ms: Callable[[Graph, HardwareProfile], float], cases_out: list[dict[str, Any]]
               ) -> dict[str, float]:
    """{KEY: s per byte} that makes the cases' predicted times (the rest of the profile as fitted) match their measured
    ones (`measured_ms`, without the per-run cost) in geometric mean: a bisection in log space between 1 TB/s and
    1 GB/s, the prediction rising with the figure; {} without the cases."""
    return geomean_fit(names, graphs, measured_ms, hw, predict_ms, cases_out, KEY, (1e-12, 1e-9))
