"""Calibration's recurrent cases: single GRU and LSTM ops at batch 1, whose time is their recurrent weights R read
again at every step (costs._rnn_recurrent_reads) from the core's cache.

Those reads were priced at the cache rate of the Add chains (`cache_bandwidth_bytes_per_s`): an SGEMV streaming
R from the L2 is not an element-wise pass, and the two rates differ by machine in both directions. The bidirectional
GRU (torch/gru-bi, hidden 256, 200 steps) was predicted -14% of its CPU time on a Sapphire Rapids, -12.5% on a
Zen 4, +20.4% on an Emerald Rapids (2026-12-05, its GRUs 1.17x their profile). `fit_rnn` fits one figure per
machine, seconds per byte read again (`matmul.fp32.reread`, roofline.Rates.reread_s), on these cases, every other
figure in place. Each case's R stays within a 1 MiB L2 (R of one direction: 768 KB for the GRU, 1 MB for the
LSTM of 256), so the figure is the cache's; R beyond the L2 keeps the weight-streaming rate. ~5 ms a round.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from compiler.graph import Graph
from simulator.calibration_models import Parts, add_case
from simulator.profiles import HardwareProfile

KEY = "matmul.fp32.reread"
GATES = {"GRU": 3, "LSTM": 4}


def rnn_case(op: str, hidden: int, steps: int, inputs: int) -> Parts:
    """One forward `op` (GRU / LSTM) of `hidden` units over `steps` steps of `inputs` features, batch 1, all its
    outputs read (Y, Y_h; an LSTM's Y_c too)."""
    from onnx import TensorProto, helper, numpy_helper

    g = GATES[op]
    rng = np.random.default_rng(0)

    def w(*shape: int) -> Any:
        return (rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32)

    outs = ["y", "y_h"] + (["y_c"] if op == "LSTM" else [])
    shapes = {"y": [steps, 1, 1, hidden], "y_h": [1, 1, hidden], "y_c": [1, 1, hidden]}
    f = TensorProto.FLOAT
    return ([helper.make_node(op, ["x", "W", "R", "B"], outs, name=op.lower(), hidden_size=hidden)],
            [helper.make_tensor_value_info("x", f, [steps, 1, inputs])],
            [helper.make_tensor_value_info(o, f, shapes[o]) for o in outs],
            [numpy_helper.from_array(w(1, g * hidden, inputs), "W"), numpy_helper.from_array(w(1, g * hidden, hidden), "R"),
             numpy_helper.from_array(np.zeros((1, 2 * g * hidden), np.float32), "B")])


# (name, builder): the sequence models' shapes (torch/gru-bi's layers, a keyword spotter's LSTM) and a wider LSTM.
RNN_CASES: tuple[tuple[str, Callable[[], Parts]], ...] = (
    ("gru-h256-s200-x80", lambda: rnn_case("GRU", 256, 200, 80)),
    ("lstm-h128-s100-x40", lambda: rnn_case("LSTM", 128, 100, 40)),
    ("lstm-h256-s100-x256", lambda: rnn_case("LSTM", 256, 100, 256)),
)


def build_rnn_cases(tmp: Path, timings: dict[str, tuple[Path, str, int]], graphs: dict[str, Graph]
                    ) -> tuple[str, ...]:
    """Save and compile every recurrent case into `tmp`, adding it to calibration's `timings` and `graphs`; its
    names."""
    for name, build in RNN_CASES:
        add_case(tmp, timings, graphs, name, build())
    return tuple(name for name, _ in RNN_CASES)


def fit_rnn(names: Sequence[str], graphs: dict[str, Graph], measured_ms: dict[str, float], hw: HardwareProfile,
            predict_ms: Callable[[Graph, HardwareProfile], float], cases_out: list[dict[str, Any]]
            ) -> dict[str, float]:
    """{`matmul.fp32.reread`: seconds per byte read again} from the timed recurrent cases (`names`, measured without
    the per-run cost), every other figure in place: relative least squares, > 0; {} without the cases. The reads
    set the task's memory time, linear in the figure where that time is the larger; a few secant steps from the
    cache rate reach it where the compute time of the input projection bends the line at fast rates."""
    mine = [n for n in names if n in measured_ms]
    if not mine:
        return {}
    meas = np.array([measured_ms[n] for n in mine])

    def predict(s: float) -> np.ndarray:
        h = hw.with_overrides({"units": {"cpu": {"kind_overhead_s": {KEY: s}}}})
        return np.array([predict_ms(graphs[n], h) for n in mine])

    s = 1 / hw.units[0].cache_bandwidth_bytes_per_s
    for _ in range(4):
        p1, p2 = predict(s), predict(1.05 * s)
        a = (p2 - p1) / (0.05 * s) / meas  # relative change per second of the figure
        b = 1 - p1 / meas
        step = float(a @ b / (a @ a)) if float(a @ a) > 0 else 0.0
        s = max(s + step, 0.1 * s)
        if abs(step) < 1e-3 * s:
            break
    cases_out.extend({"case": n, "preset": "fp32", "key": KEY, "measured_ms": float(m), "reread_s": s}
                     for n, m in zip(mine, meas))
    return {KEY: s}
