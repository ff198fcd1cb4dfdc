"""Calibration's packed-SGEMM case: what the weights an fp32 SGEMM of several rows reads from memory cost on this
CPU (roofline.PACKED_FAR_KEY, seconds per weight byte, in full beside the arithmetic).

A batch-1 MatMul (M = 1) streams its weights through MLAS's GEMV kernel; the memory chain times that rate
(`evicted_bandwidth_bytes_per_s`). With more rows MLAS packs B ahead of the run and its kernel walks the packed
panels row block by row block: on a Zen 5 VM (2 vCPUs, 32 MiB L3; 2026-12-06 13:49 UTC, thread CPU time, round-robin,
/work/h52attn/mlpchain2.py) 64 MLP pairs of Gemms ([M, C] -> [M, 4C] -> [M, C] with bias, own weights: 19-134 MB,
beyond the L3) took 1.19-1.37x their prediction at M = 8 and 49 (0.13-0.19 ns per weight over 8 pairs whose weights
stay in the L3, which read 0.98-1.03x), 1.00-1.06x at M = 196 and 0.97-0.98x at 784 (the arithmetic hides it), and
0.96-1.02x at M = 1. The cases are such chains at M = 8 and 49 (C = 168) sized past the whole last-level cache, each
timed with its `-ref` twin of REF_PAIRS pairs whose weights the cache keeps: the difference per pair is the memory
reads' cost alone, whatever the Gemms' arithmetic is priced at. Fitted on M = 8 and 49 the figure priced the M = 8
case +13% and M = 49 -5% in-sample (4.5e-11 s per byte): few rows overlap more of the reads with their arithmetic;
the cases sit where transformers' Gemms do (a Swin's last stage, a ViT's tokens) instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from compiler.graph import Graph
from simulator.calibration_models import Parts, add_case, rng_weights
from simulator.profiles import HardwareProfile
from simulator.roofline import PACKED_FAR_KEY

KEY = PACKED_FAR_KEY
# M of the cases (a Swin's last stage, a ViT's tokens); C of their MLPs (a 168 -> 672 -> 168 pair: 903 KB of weights)
ROWS, WIDTH = (49, 196), 168
REF_PAIRS = 8  # 7.2 MB: kept by a 32 MiB L3 between runs
PAIRS_MIN, PAIRS_MAX = 16, 512
PREFIX = "gemm-packed-far-"
UNIT = 1e-11  # s per byte: the figures the fit's slope is read between (the rule is linear above 0)


def pairs_for(llc_all: float) -> int:
    """MLP pairs whose weights are twice the whole last-level cache (`llc_all` bytes), so none stay between runs."""
    return min(PAIRS_MAX, max(PAIRS_MIN, math.ceil(2 * llc_all / (8 * WIDTH * WIDTH * 4)))) if llc_all else PAIRS_MIN


def mlp_chain(m: int, c: int, pairs: int) -> Parts:
    """`pairs` x (Gemm [m, c] -> [m, 4c], Gemm [m, 4c] -> [m, c]), each with its own weights and bias."""
    from onnx import TensorProto, helper, numpy_helper

    up, down, bias = rng_weights([c, 4 * c]), rng_weights([4 * c, c]), rng_weights([4 * c])
    nodes, inits, x = [], [], "v0"
    for p in range(pairs):
        inits += [numpy_helper.from_array(up(p), f"w1_{p}"), numpy_helper.from_array(bias(p), f"b1_{p}"),
                  numpy_helper.from_array(down(p), f"w2_{p}"), numpy_helper.from_array(bias(p)[:c], f"b2_{p}")]
        nodes += [helper.make_node("Gemm", [x, f"w1_{p}", f"b1_{p}"], [f"h{p}"], name=f"fc1_{p}"),
                  helper.make_node("Gemm", [f"h{p}", f"w2_{p}", f"b2_{p}"], [f"v{p + 1}"], name=f"fc2_{p}")]
        x = f"v{p + 1}"
    f = TensorProto.FLOAT
    return nodes, [helper.make_tensor_value_info("v0", f, [m, c])], [helper.make_tensor_value_info(x, f, [m, c])], inits


def build_packed_cases(tmp: Path, timings: dict[str, tuple[Path, str, int]], graphs: dict[str, Graph],
                       llc_all: float) -> tuple[str, ...]:
    """Save and compile the cases and their references into `tmp`, adding them to calibration's `timings` and
    `graphs`; the cases' names (none without a known last-level cache: nothing would come from memory)."""
    if not llc_all:
        return ()
    names = []
    for m in ROWS:
        name = f"{PREFIX}{m}x{WIDTH}"
        add_case(tmp, timings, graphs, name, mlp_chain(m, WIDTH, pairs_for(llc_all)))
        add_case(tmp, timings, graphs, f"{name}-ref", mlp_chain(m, WIDTH, REF_PAIRS))
        names.append(name)
    return tuple(names)


def fit_packed(names: Sequence[str], graphs: dict[str, Graph], measured_ms: dict[str, float], hw: HardwareProfile,
               predict_ms: Callable[[Graph, HardwareProfile], float], cases_out: list[dict[str, Any]]
               ) -> dict[str, float]:
    """{KEY: seconds per weight byte} from each case's time over its reference's scaled to the case's pairs
    (`measured_ms`, without the per-run cost) less what the rest of the profile prices that difference at, over what
    the figure adds (least squares over the cases); {} without the cases or where the fit is not positive (the rule
    is then off: such weights keep the memory chain's rate)."""
    pairs = [n for n in names if n in measured_ms and f"{n}-ref" in measured_ms]
    if not pairs:
        return {}

    def at(s: float) -> HardwareProfile:
        return hw.with_overrides({"units": {"cpu": {"kind_overhead_s": {KEY: s}}}})

    slope, excess = [], []
    for n in pairs:
        scale = len(graphs[n].nodes) / max(len(graphs[f"{n}-ref"].nodes), 1)  # the case's pairs over the reference's
        one, two = predict_ms(graphs[n], at(UNIT)), predict_ms(graphs[n], at(2 * UNIT))
        slope.append((two - one) * 1e-3 / UNIT)  # s per (s per byte)
        base = (one - (two - one)) - scale * predict_ms(graphs[f"{n}-ref"], at(UNIT))  # the difference at 0, as linear
        excess.append((measured_ms[n] - scale * measured_ms[f"{n}-ref"] - base) * 1e-3)
    den = sum(a * a for a in slope)
    s = sum(a * b for a, b in zip(slope, excess)) / den if den > 0 else 0.0
    cases_out.extend({"case": n, "preset": "fp32", "key": "packed_far", "measured_ms": measured_ms[n],
                      "reference_ms": measured_ms[f"{n}-ref"], "packed_far_s": max(s, 0.0)} for n in pairs)
    return {KEY: s} if s > 0 else {}
