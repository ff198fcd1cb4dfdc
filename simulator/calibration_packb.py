"""Calibration's per-run B packing cases: what MLAS's fp32 SGEMM costs per element of a non-constant B it packs and
per call that packs one (roofline.PACKB_KEY, PACKCALL_KEY; simulator.einsum.packed_b counts both).

ORT prepacks a MatMul's constant B at load; attention's products (q.k^T, a.v, CoaT's K-by-V) multiply two activations,
so MLAS copies each batch's B into 16-float column strips on every call before its kernel runs A's rows over them.
With few rows per batch the copy is a large share: CoaT-Lite's K-by-V ([8, 8, 3137] by [8, 3137, 8]: 8 rows of A
against 3137 x 16 packed floats per head) read 2.3-3.1x its price in the models and 2.27x alone (sessions 51-52).
Each case is a product of many batches of few rows timed with its `-ref` twin of the same MACs as one batch ([1,
b x M, K] by [K, N]: one B packed): the difference is the extra calls and packs alone, whatever the arithmetic is
priced at. Per element alone the two cases disagree 3x (a Zen 4, 2026-12-06 17:23 UTC: CoaT's 0.15 ns, Swin's 0.45
over 3.1 M elements in 1528 calls); a cost per call beside it fits both (0.13 ns per element, 0.63 us per call: a
window of 49 rows also leaves a one-row remainder past MLAS's row blocks). Fitted before the efficiencies
(calibration_fit.fit_bench), so the MatMul cases' rate is the kernel's without them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from compiler.graph import Graph
from simulator.calibration_models import Parts, add_case
from simulator.profiles import HardwareProfile
from simulator.roofline import PACKB_KEY, PACKCALL_KEY

KEY, CALL_KEY = PACKB_KEY, PACKCALL_KEY
# (batches, M, K, N): CoaT-Lite's K-by-V (8 heads of 8 rows over 3136 tokens) and Swin's window q.k^T (49 x 32 x 49)
SHAPES = ((8, 8, 3136, 8), (192, 49, 32, 49))
SIDE = 8  # products side by side in a case, each with its own B (an input, never a constant)
PREFIX = "matmul-packb-"
UNIT, CALL_UNIT = 1e-10, 1e-7  # s per element, per call: the steps the fit's slopes are read over (linear above 0)


def products(b: int, m: int, k: int, n: int, one: bool) -> Parts:
    """SIDE MatMuls of x [b, m, k] by their own B [b, k, n] (`one`: x [1, b x m, k] by [k, n], the same MACs)."""
    from onnx import TensorProto, helper

    f = TensorProto.FLOAT
    x, y, out = ([1, b * m, k], [k, n], [1, b * m, n]) if one else ([b, m, k], [b, k, n], [b, m, n])
    nodes = [helper.make_node("MatMul", ["x", f"y{i}"], [f"o{i}"], name=f"mm{i}") for i in range(SIDE)]
    ins = [helper.make_tensor_value_info("x", f, x), *(helper.make_tensor_value_info(f"y{i}", f, y)
                                                       for i in range(SIDE))]
    return nodes, ins, [helper.make_tensor_value_info(f"o{i}", f, out) for i in range(SIDE)], []


def build_packb_cases(tmp: Path, timings: dict[str, tuple[Path, str, int]], graphs: dict[str, Graph]
                      ) -> tuple[str, ...]:
    """Save and compile the cases and their references into `tmp`, adding them to calibration's `timings` and
    `graphs`; the cases' names."""
    names = []
    for b, m, k, n in SHAPES:
        name = f"{PREFIX}{b}x{m}x{k}x{n}"
        add_case(tmp, timings, graphs, name, products(b, m, k, n, False))
        add_case(tmp, timings, graphs, f"{name}-ref", products(b, m, k, n, True))
        names.append(name)
    return tuple(names)


def fit_packb(names: Sequence[str], graphs: dict[str, Graph], measured_ms: dict[str, float], hw: HardwareProfile,
              predict_ms: Callable[[Graph, HardwareProfile], float], cases_out: list[dict[str, Any]]
              ) -> dict[str, float]:
    """{KEY: s per packed element, CALL_KEY: s per packing call} from each case's time less its reference's
    (`measured_ms`, without the per-run cost) less what the rest of the profile prices that difference at: least
    squares over the cases, both figures where both come out positive, else the element's alone; {} without the
    cases or where that is not positive either (the rule is then off)."""
    pairs = [n for n in names if n in measured_ms and f"{n}-ref" in measured_ms]
    if not pairs:
        return {}

    def diff(n: str, e: float, c: float) -> float:  # the case over its reference as predicted, ms
        h = hw.with_overrides({"units": {"cpu": {"kind_overhead_s": {KEY: e, CALL_KEY: c}}}})
        return predict_ms(graphs[n], h) - predict_ms(graphs[f"{n}-ref"], h)

    rows, excess = [], []
    for n in pairs:
        base = diff(n, 0.0, 0.0)
        rows.append([(diff(n, UNIT, 0.0) - base) * 1e-3 / UNIT, (diff(n, 0.0, CALL_UNIT) - base) * 1e-3 / CALL_UNIT])
        excess.append((measured_ms[n] - measured_ms[f"{n}-ref"] - base) * 1e-3)
    a, b = np.array(rows), np.array(excess)
    both = np.linalg.lstsq(a, b, rcond=None)[0] if len(pairs) >= 2 else np.zeros(2)
    if not (both > 0).all():
        den = float(a[:, 0] @ a[:, 0])
        both = np.array([float(a[:, 0] @ b) / den if den > 0 else 0.0, 0.0])
    fit = {KEY: float(both[0]), CALL_KEY: float(both[1])} if both[0] > 0 else {}
    cases_out.extend({"case": n, "preset": "fp32", "key": "packb", "measured_ms": measured_ms[n],
                      "reference_ms": measured_ms[f"{n}-ref"], "packb_s": fit.get(KEY, 0.0),
                      "packcall_s": fit.get(CALL_KEY, 0.0)} for n in pairs)
    return {k: v for k, v in fit.items() if v > 0}
