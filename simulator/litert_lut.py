"""Calibrate XNNPACK's table lookup for a SiLU on int8 data, for `litert-cpu/host`: `elementwise.lut`.

Under static int8 a SiLU (LOGISTIC, then MUL by the LOGISTIC's own input) has one variable input, an int8 tensor:
XNNPACK evaluates the chain once per possible input value and runs it as one 256-entry lookup
(simulator.litert_paths.SILU_LUT). Its cost per element is a byte read, a lookup and a byte written, far below a
QS8 sigmoid and a QS8 multiply (EfficientNet-B0's 49 SiLUs: 0.66 ms profiled, 4.6 ms predicted as the two ops).

Each case is a chain of R SiLUs on an int8 NHWC tensor, timed per operator by LiteRT's profiler in a sandboxed
child (the lookup's event goes to the LOGISTIC, the MUL reads 0), the first and last SiLUs dropped from the fit
(they read the model's input cold, write its output). The rate is the efficiency whose predictions are closest to each case's median SiLU, in
absolute log ratio (a median fit, as for simulator.litert_signal: single operators read far apart on a loaded host).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compiler.graph import Graph
from simulator.litert_cases import median_fit, profile_cases
from simulator.profiles import HardwareProfile

R = 4  # SiLUs per case (the first dropped)
KEY = "elementwise.lut"  # simulator.litert_paths.LUT_TAG on the element-wise kind
PRESET = "int8-static"


@dataclass(frozen=True)
class Case:
    name: str
    c: int
    h: int


# EfficientNet-B0's SiLU maps: many pixels and few channels down to few pixels and many channels.
CASES: tuple[Case, ...] = tuple(Case(f"silu-{c}-{h}", c, h) for c, h in ((32, 112), (96, 56), (240, 28), (672, 14)))


def build(case: Case, path: Path) -> Path:
    """R SiLUs in a chain on int8 [1, h, h, c] tensors, written to `path` (TFLite's int8 LOGISTIC output: scale
    1/256, zero point -128)."""
    from compiler.frontends.tflite_writer import TfliteWriter

    w = TfliteWriter(description="edgescope calibration")
    shape = [1, case.h, case.h, case.c]
    act = dict(dtype="int8", quant=([0.05], [0], 0))
    x = first = w.tensor("x", shape, **act)
    for i in range(R):
        s = w.tensor(f"silu{i}/sigmoid", shape, "int8", quant=([1 / 256], [-128], 0))
        w.op("LOGISTIC", [x], [s])
        y = w.tensor(f"silu{i}/out", shape, **act)
        w.op("MUL", [x, s], [y], w.options("MulOptions"))
        x = y
    return w.save(path, [first], [x])


def _pairs(per_op: list[float]) -> list[float]:
    """Per SiLU but the first and the last (it writes the model's output, whose conversion the prediction charges
    to it): the LOGISTIC's and the MUL's time, from a list over operators 1.. (operator 0 is the first LOGISTIC), as
    simulator.litert_cases.predicted_ms and the measurement below give them."""
    return [per_op[2 * k - 1] + per_op[2 * k] for k in range(1, R - 1)]


def measure(tmp: Path, progress: Callable[[str], None] = lambda s: None, runs: int = 20
            ) -> dict[str, tuple[Graph, list[float]]]:
    """{case: (its graph, measured ms of each SiLU but the first and the last)}."""
    from compiler.frontends import tflite

    timed = profile_cases(CASES, build, lambda c: c.name, tmp, "LiteRT int8 SiLU cases", runs, progress=progress)
    out: dict[str, tuple[Graph, list[float]]] = {}
    for case, path, res in timed:
        g = tflite.load(path)
        out[case.name] = (g, _pairs([res["tasks"].get(n.id, [0.0])[0] for n in g.nodes[1:]]))
    return out


def fit(measured: dict[str, tuple[Graph, list[float]]], hw: HardwareProfile) -> dict[str, Any]:
    """Profile overrides {"units": {"cpu": {"efficiency": {KEY: e}}}}: the efficiency whose predicted SiLUs are
    closest to each case's median measured one, in absolute log ratio."""
    return {"units": {"cpu": {"efficiency": {KEY: median_fit(list(measured.values()), hw, KEY, PRESET, _pairs)}}}}


def calibrate(tmp: Path, hw: HardwareProfile, progress: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    return fit(measure(tmp, progress), hw)
